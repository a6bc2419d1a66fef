// libFuzzer target for the request -> admission path (issue #28): a body the request parser
// accepts must be one the engine can admit. The oracles, each an abort:
// - the sampling parameters it accepted build a Sampler (no throw: the crash of issue #28 was
//   a request the parser took and the sampler refused after a slot was taken), and sampling
//   a row with them yields a token of the row;
// - each media part's header probe either refuses it (ringlm::Error) or reports dimensions
//   that decoding, when it succeeds on a small image, agrees with;
// - a response_format schema the parser kept re-parses with the linear JSON parser.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "audio/audio_decode.h"
#include "sampling/sampler.h"
#include "server/api_error.h"
#include "server/request.h"
#include "util/error.h"
#include "util/json_parse.h"
#include "vision/image_decode.h"

namespace {

using namespace ringlm;

void check_sampling(const sampling::SamplerParams& p) {
  constexpr std::int32_t kVocab = 40;
  sampling::SamplerParams q = p;
  sampling::Sampler* s = nullptr;
  try {
    s = new sampling::Sampler(q, kVocab);
  } catch (const Error&) {
    std::abort();  // accepted by the request parser, refused by the sampler
  }
  std::vector<float> row(kVocab);
  for (std::int32_t i = 0; i < kVocab; ++i) row[i] = static_cast<float>((i * 7919) % 23) * 0.5f - 4.0f;
  const std::vector<std::int32_t> recent = {1, 2, 3, 2};
  const std::int32_t id = s->sample(row, nullptr, recent);
  if (id < 0 || id >= kVocab) std::abort();
  delete s;
}

void check_media(const std::vector<server::MediaRef>& media) {
  for (const auto& m : media) {
    if (m.data.empty()) continue;  // a path: resolved by the server, not here
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(m.data.data());
    if (m.kind == server::MediaKind::audio) {
      try {
        (void)audio::probe_audio(bytes, m.data.size(), "part");
      } catch (const Error&) {
      }
      continue;
    }
    vision::ImageInfo info;
    try {
      info = vision::probe_image(bytes, m.data.size(), "part");
    } catch (const Error&) {
      continue;
    }
    if (info.width <= 0 || info.height <= 0) std::abort();
    if (static_cast<std::uint64_t>(info.width) * static_cast<std::uint64_t>(info.height) > (1u << 20)) continue;
    try {
      const vision::RgbImage img = vision::decode_image(bytes, m.data.size(), "part");
      if (img.width != info.width || img.height != info.height) std::abort();
    } catch (const Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  nlohmann::ordered_json j;
  try {
    j = server::parse_body(body);
  } catch (const server::ApiError& e) {
    if (e.status() < 400 || e.status() >= 500) std::abort();
    return 0;
  }
  try {
    const server::ChatRequest r = server::parse_chat_request(j);
    check_sampling(r.params.sampling);
    check_media(r.media);
    if (!r.params.json_schema.empty()) (void)parse_json(r.params.json_schema);
  } catch (const server::ApiError& e) {
    if (e.status() < 400 || e.status() >= 500) std::abort();
  }
  try {
    const server::CompletionRequest r = server::parse_completion_request(j);
    check_sampling(r.params.sampling);
  } catch (const server::ApiError& e) {
    if (e.status() < 400 || e.status() >= 500) std::abort();
  }
  return 0;
}
