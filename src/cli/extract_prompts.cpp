#include "cli/extract_prompts.h"

#include "io/beneath.h"
#include "util/error.h"

namespace ringlm::cli {

namespace fs = std::filesystem;
using OrderedJson = nlohmann::ordered_json;

namespace {

// The folder of the input file (the current folder for standard input), absolute.
fs::path input_folder(const std::string& input) {
  if (input == "-") return fs::current_path();
  return fs::absolute(fs::path(input)).parent_path();
}

// Media files are read whole before decoding; the decoders' own file limit.
constexpr std::size_t kMaxMediaFileBytes = std::size_t{256} << 20;

}  // namespace

RowPrompts::RowPrompts(engine::Engine& engine, const ExtractOptions& o, const nlohmann::json& schema)
    : engine_(engine),
      o_(o),
      media_(engine),
      input_dir_(input_folder(o.input)),
      media_root_(o.allow_local_media.empty() ? input_dir_ : fs::absolute(o.allow_local_media)),
      system_message_({{"role", "system"},
                       {"content", o.schema_in_prompt ? o.instructions + "\n" + schema.dump() : o.instructions}}) {}

std::vector<std::int32_t> RowPrompts::render(const std::string& user) {
  return engine_.encode_chat(chat_request(user), o_.trust_control_tokens);
}

// Rows may name images ("image": path, or "images": [paths]) and audio clips ("audio" /
// "audios"), relative to the input file. Returns {path as written, bytes} per file.
std::vector<std::pair<std::string, std::string>> RowPrompts::row_files(const OrderedJson& row, const char* one,
                                                                       const char* many) const {
  std::vector<std::string> paths;
  for (const char* key : {one, many}) {
    if (!row.contains(key)) continue;
    const OrderedJson& v = row[key];
    if (v.is_string()) paths.push_back(v.get<std::string>());
    else if (v.is_array())
      for (const OrderedJson& p : v) {
        if (!p.is_string()) fail("field ", key, ": expected file names (strings)");
        paths.push_back(p.get<std::string>());
      }
    else if (!v.is_null()) fail("field ", key, ": expected a file name or a list of file names");
  }
  const std::string where = o_.allow_local_media.empty()
                                ? "the input file's folder " + input_dir_.string() + " (--allow-local-media DIR widens it)"
                                : "the --allow-local-media folder " + media_root_.string();
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : paths) {
    bool outside = false;
    const fs::path rel = io::relative_beneath(media_root_, p, input_dir_, &outside);
    io::BeneathRead r;
    if (outside) r.status = io::BeneathStatus::outside;
    else r = io::read_beneath(media_root_, rel, kMaxMediaFileBytes);
    if (r.status == io::BeneathStatus::too_large)
      fail("'", p, "' is ", r.size, " bytes; the limit is ", kMaxMediaFileBytes, " per file");
    if (r.status != io::BeneathStatus::ok) fail(io::describe(r, p, where));
    out.emplace_back(p, std::move(r.bytes));
  }
  return out;
}

engine::SequenceRequest RowPrompts::request(const engine::InputRow& row, const engine::GenerationParams& params,
                                            int* image_tokens, int* audio_tokens) {
  engine::SequenceRequest req;
  const std::string user = engine::fill_prompt_template(o_.prompt_template, row.data);
  std::vector<vision::RgbImage> images;
  for (const auto& [name, bytes] : row_files(row.data, "image", "images"))
    images.push_back(vision::decode_image(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), name));
  std::vector<audio::AudioClip> audios;
  for (const auto& [name, bytes] : row_files(row.data, "audio", "audios"))
    audios.push_back(audio::decode_audio(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), name, 0));
  req.params = params;
  if (images.empty() && audios.empty()) {
    req.prompt = render(user);
    return req;
  }
  // Media rows: the template renders one placeholder per image and per clip before the
  // text, and the soft tokens replace those rows' embeddings while the prompt runs.
  OrderedJson parts = OrderedJson::array();
  for (std::size_t i = 0; i < images.size(); ++i) parts.push_back({{"type", "image"}});
  for (std::size_t i = 0; i < audios.size(); ++i) parts.push_back({{"type", "audio"}});
  parts.push_back({{"type", "text"}, {"text", user}});
  engine::MediaPrompt mp = media_.build_chat(chat_request(parts), o_.trust_control_tokens, images, audios, o_.image_tokens);
  req.prompt = std::move(mp.ids);
  req.params.prompt_embeddings = mp.embeddings;
  *image_tokens = mp.image_tokens;
  *audio_tokens = mp.audio_tokens;
  return req;
}

chat::ChatRequest RowPrompts::chat_request(const OrderedJson& content) const {
  chat::ChatRequest req;
  req.messages.push_back(system_message_);
  req.messages.push_back({{"role", "user"}, {"content", content}});
  req.add_generation_prompt = true;
  return req;
}

}  // namespace ringlm::cli
