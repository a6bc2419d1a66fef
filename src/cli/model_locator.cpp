#include "cli/model_locator.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "util/error.h"

namespace fs = std::filesystem;

namespace ringlm::cli {

fs::path hf_hub_cache() {
  if (const char* c = std::getenv("HF_HUB_CACHE"); c && *c) return c;
  if (const char* h = std::getenv("HF_HOME"); h && *h) return fs::path(h) / "hub";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "huggingface" / "hub";
  return {};
}

namespace {

bool looks_like_repo_id(const std::string& s) {
  const auto slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == s.size() || s.find('/', slash + 1) != std::string::npos)
    return false;
  if (s[0] == '.' || s[0] == '~') return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/'; });
}

// models--owner--name/snapshots/<rev> for refs/main, else the most recently written snapshot.
fs::path snapshot_of(const fs::path& repo_dir) {
  std::error_code ec;
  std::ifstream ref(repo_dir / "refs" / "main");
  std::string rev;
  if (ref && std::getline(ref, rev) && !rev.empty() && fs::is_directory(repo_dir / "snapshots" / rev, ec))
    return repo_dir / "snapshots" / rev;
  fs::path best;
  fs::file_time_type best_t{};
  for (const auto& e : fs::directory_iterator(repo_dir / "snapshots", ec)) {
    if (!e.is_directory(ec)) continue;
    const auto t = e.last_write_time(ec);
    if (best.empty() || t > best_t) best = e.path(), best_t = t;
  }
  return best;
}

// The weights inside a snapshot or model directory: itself if it holds config.json, else
// its single .gguf file, else "".
fs::path model_in(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "config.json", ec)) return dir;
  fs::path gguf;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".gguf") {
      if (!gguf.empty()) return {};  // several: the user must pick the file
      gguf = e.path();
    }
  return gguf;
}

std::uintmax_t weight_bytes(const fs::path& p) {
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return fs::file_size(p, ec);
  std::uintmax_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(p, fs::directory_options::follow_directory_symlink, ec)) {
    const auto ext = e.path().extension();
    if (ext == ".safetensors" || ext == ".gguf" || ext == ".rlpk" || ext == ".i8" || ext == ".f32") {
      const auto sz = fs::file_size(e.path(), ec);  // follows the HF cache's symlinks to blobs
      if (!ec) n += sz;
    }
  }
  return n;
}

}  // namespace

fs::path resolve_model(const std::string& model) {
  std::error_code ec;
  if (fs::exists(model, ec)) return model;
  if (!looks_like_repo_id(model)) fail("--model ", model, ": no such file or directory");
  const fs::path cache = hf_hub_cache();
  const std::string owner = model.substr(0, model.find('/')), name = model.substr(model.find('/') + 1);
  const fs::path repo = cache / ("models--" + owner + "--" + name);
  if (!fs::is_directory(repo, ec))
    fail("--model ", model, ": no such file or directory, and not in the Hugging Face cache (looked for ", repo.string(),
         "; set HF_HOME or HF_HUB_CACHE, or download it with `huggingface-cli download ", model, "`)");
  const fs::path snap = snapshot_of(repo);
  if (snap.empty()) fail("--model ", model, ": ", repo.string(), " has no snapshot (an interrupted download?)");
  const fs::path m = model_in(snap);
  if (m.empty()) fail("--model ", model, ": ", snap.string(), " holds neither config.json nor exactly one .gguf file");
  return m;
}

std::vector<ModelEntry> list_models(const fs::path& models_dir) {
  std::vector<ModelEntry> out;
  std::error_code ec;
  const fs::path cache = hf_hub_cache();
  for (const auto& e : fs::directory_iterator(cache, ec)) {
    const std::string dn = e.path().filename().string();
    if (dn.rfind("models--", 0) != 0 || !e.is_directory(ec)) continue;
    std::string id = dn.substr(8);
    if (auto p = id.find("--"); p != std::string::npos) id = id.substr(0, p) + "/" + id.substr(p + 2);
    const fs::path snap = snapshot_of(e.path());
    if (snap.empty()) continue;
    const fs::path m = model_in(snap);
    if (m.empty()) continue;
    out.push_back({id, m, "hf-cache", weight_bytes(m)});
  }
  if (!models_dir.empty()) {
    for (const auto& e : fs::directory_iterator(models_dir, ec)) {
      if (e.is_directory(ec) && fs::exists(e.path() / "config.json", ec))
        out.push_back({e.path().filename().string(), e.path(), "dir", weight_bytes(e.path())});
      else if (e.path().extension() == ".gguf")
        out.push_back({e.path().filename().string(), e.path(), "gguf", weight_bytes(e.path())});
    }
    if (ec) fail("--models-dir ", models_dir.string(), ": ", ec.message());
  }
  std::sort(out.begin(), out.end(), [](const ModelEntry& a, const ModelEntry& b) { return a.name < b.name; });
  return out;
}

}  // namespace ringlm::cli
