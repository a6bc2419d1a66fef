#include "cli/hf_model.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "cli/model_locator.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace ringlm::cli {

namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// `word` in `name` (both upper case) with no letter, digit or '_' around it, so that Q4_K does
// not match Q4_K_M and Q4_0 does not match IQ4_0.
bool has_word(const std::string& name, const std::string& word) {
  auto part_of_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t at = name.find(word); at != std::string::npos; at = name.find(word, at + 1)) {
    const bool left = at == 0 || !part_of_word(name[at - 1]);
    const std::size_t end = at + word.size();
    const bool right = end == name.size() || !part_of_word(name[end]);
    if (left && right) return true;
  }
  return false;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string pick_model_file(const std::string& repo, const std::vector<std::string>& models, const std::string& quant) {
  const std::string want = upper(quant.empty() ? "Q4_K_M" : quant);
  std::vector<std::string> hits;
  for (const auto& m : models)
    if (has_word(upper(base_name(m)), want)) hits.push_back(m);
  if (hits.size() == 1) return hits[0];
  if (hits.size() > 1) {
    const bool split = std::all_of(hits.begin(), hits.end(), [](const std::string& h) { return h.find("-of-") != std::string::npos; });
    if (split) fail("-hf ", repo, ":", quant, ": that quantization is a split GGUF (", joined(hits), "), which ringlm does not read; merge it with llama-gguf-split --merge");
    fail("-hf ", repo, ":", quant, ": the tag matches several files (", joined(hits), "); give a longer tag");
  }
  if (quant.empty() && models.size() == 1) return models[0];
  if (quant.empty())
    fail("-hf ", repo, ": the repository has ", models.size(), " .gguf files and none is Q4_K_M; pick one with ",
         repo, ":QUANT: ", joined(models));
  fail("-hf ", repo, ":", quant, ": no .gguf file with that quantization; the repository has: ", joined(models));
}

// Everything in a snapshot that is a readable file (the cache's links resolve), as repository paths.
std::vector<std::string> snapshot_files(const fs::path& snapshot) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(snapshot, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (fs::is_regular_file(it->path(), ec)) out.push_back(it->path().lexically_relative(snapshot).generic_string());  // not fs::relative: it follows the links to blobs/
  return out;
}

// The model from the cache, when the cache alone can say which files the spec means and holds
// them. Without a tag only a cached Q4_K_M answers for sure (the Hub may have one the cache
// lacks); `lenient` (the Hub unreachable, or HF_HUB_OFFLINE) also takes the cache's only .gguf.
std::optional<HfModel> from_cache(const fs::path& repo_dir, const HfSpec& spec, bool lenient) {
  std::ifstream ref(repo_dir / "refs" / "main");  // written when a pull completed
  std::string commit;
  if (!ref || !std::getline(ref, commit) || commit.empty()) return std::nullopt;
  const fs::path snap = repo_dir / "snapshots" / commit;
  const auto files = snapshot_files(snap);
  std::vector<std::string> ggufs;
  try {
    ggufs = choose_gguf_files(spec.repo, files, spec.quant);
  } catch (const Error&) {
    return std::nullopt;  // not (all) here: the Hub's list decides
  }
  if (!ggufs.empty() && !lenient && spec.quant.empty() && !has_word(upper(base_name(ggufs[0])), "Q4_K_M"))
    return std::nullopt;
  if (!ggufs.empty()) return HfModel{snap / ggufs[0], ggufs.size() > 1 ? snap / ggufs[1] : fs::path()};
  const bool whole = spec.quant.empty() && std::count(files.begin(), files.end(), "config.json") == 1 &&
                     std::any_of(files.begin(), files.end(), [](const std::string& f) { return ends_with(f, ".safetensors"); });
  if (!whole) return std::nullopt;
  return HfModel{snap, {}};
}

std::string hub_token() {
  if (const char* t = std::getenv("HF_TOKEN"); t && *t) return t;
  std::string home;
  if (const char* h = std::getenv("HF_HOME"); h && *h) home = h;
  else if (const char* u = std::getenv("HOME"); u && *u) home = std::string(u) + "/.cache/huggingface";
  std::ifstream in(home + "/token");
  std::string token;
  std::getline(in, token);
  return token;
}

bool offline() {
  const char* v = std::getenv("HF_HUB_OFFLINE");
  return v && *v && std::string(v) != "0";
}

}  // namespace

std::string literal_glob(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

HfSpec parse_hf_spec(const std::string& spec) {
  HfSpec s;
  const auto colon = spec.find(':');
  s.repo = spec.substr(0, colon);
  if (colon != std::string::npos) s.quant = spec.substr(colon + 1);
  const auto slash = s.repo.find('/');
  const bool shaped = slash != std::string::npos && slash > 0 && slash + 1 < s.repo.size() &&
                      s.repo.find('/', slash + 1) == std::string::npos && s.repo.find("..") == std::string::npos;
  if (!shaped) fail("-hf ", spec, ": not a repository id (ORG/NAME, optionally :QUANT as in ORG/NAME:Q4_K_M)");
  if (colon != std::string::npos && s.quant.empty()) fail("-hf ", spec, ": empty quantization tag after ':'");
  return s;
}

std::vector<std::string> choose_gguf_files(const std::string& repo, const std::vector<std::string>& files,
                                           const std::string& quant) {
  std::vector<std::string> models, mmprojs;
  for (const auto& f : files) {
    const std::string b = upper(base_name(f));
    if (!ends_with(b, ".GGUF")) continue;
    (b.rfind("MMPROJ", 0) == 0 ? mmprojs : models).push_back(f);
  }
  if (models.empty()) return {};
  std::sort(models.begin(), models.end());
  std::sort(mmprojs.begin(), mmprojs.end());
  std::vector<std::string> out{pick_model_file(repo, models, quant)};
  if (!mmprojs.empty()) {
    auto f16 = std::find_if(mmprojs.begin(), mmprojs.end(), [](const std::string& m) { return has_word(upper(base_name(m)), "F16"); });
    out.push_back(f16 != mmprojs.end() ? *f16 : mmprojs.front());
  }
  return out;
}

PullOptions pull_options_from_env(const std::string& repo) {
  PullOptions o;
  o.repo = repo;
  const char* env = std::getenv("HF_ENDPOINT");
  o.endpoint = env && *env ? env : "https://huggingface.co";
  while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
  o.token = hub_token();
  o.cache = hf_hub_cache();
  return o;
}

HfModel resolve_hf_model(const std::string& text) {
  const HfSpec spec = parse_hf_spec(text);
  PullOptions o = pull_options_from_env(spec.repo);
  if (o.cache.empty()) fail("-hf ", text, ": no Hugging Face cache directory: set HF_HUB_CACHE, HF_HOME or HOME");
  auto cached = from_cache(repo_cache_dir(o), spec, /*lenient=*/offline());
  if (cached) {
    std::fprintf(stderr, "ringlm: -hf %s: %s (from the Hugging Face cache)\n", text.c_str(), cached->model.c_str());
    return *cached;
  }
  if (offline())
    fail("-hf ", text, ": not in the Hugging Face cache (", repo_cache_dir(o).string(), ") and HF_HUB_OFFLINE is set");
  std::string commit;
  std::vector<std::string> listing;
  try {
    listing = list_repo_files(o, commit);
  } catch (const Error& e) {
    cached = e.kind() == ErrorKind::io ? from_cache(repo_cache_dir(o), spec, /*lenient=*/true) : std::nullopt;
    if (!cached) throw;
    std::fprintf(stderr, "ringlm: -hf %s: the Hub did not answer (%s); using the cache's %s\n", text.c_str(), e.what(),
                 cached->model.c_str());
    return *cached;
  }
  const auto ggufs = choose_gguf_files(spec.repo, listing, spec.quant);
  if (ggufs.empty() && !spec.quant.empty())
    fail("-hf ", text, ": ", spec.repo, " has no .gguf files, so there is no quantization to pick (drop :", spec.quant, ")");
  for (const auto& g : ggufs) o.include.push_back(literal_glob(g));
  std::fprintf(stderr, "ringlm: -hf %s: fetching %s from %s\n", text.c_str(),
               ggufs.empty() ? "the repository" : joined(ggufs).c_str(), o.endpoint.c_str());
  const fs::path snap = pull_model(o);
  if (ggufs.empty()) return HfModel{resolve_model(snap.string()), {}};
  return HfModel{snap / ggufs[0], ggufs.size() > 1 ? snap / ggufs[1] : fs::path()};
}

CLI::Option* add_hf_option(CLI::App* sub, std::string& spec, CLI::Option* model_option) {
  auto* opt = sub->add_option("--hf-repo", spec,
                              "Hugging Face model ORG/NAME[:QUANT] (llama.cpp's -hf): fetched into the HF cache unless "
                              "there (resumable, checksum-verified), then loaded; :QUANT picks a GGUF file, default "
                              "Q4_K_M (docs/gguf.md)");
  if (model_option) opt->excludes(model_option);
  return opt;
}

}  // namespace ringlm::cli
