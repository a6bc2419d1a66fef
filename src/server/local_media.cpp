#include "server/local_media.h"

#include <algorithm>
#include <fstream>
#include <system_error>

#include "server/api_error.h"

namespace ringlm::server {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad(const MediaRef& ref, const std::string& message, const char* code = "invalid_value") {
  throw ApiError(400, "'" + ref.param + "': " + message, ref.param, code);
}

bool inside(const fs::path& root, const fs::path& p) {
  auto [r, q] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
  return r == root.end();
}

std::string read_local(const MediaRef& ref, const MediaPolicy& policy) {
  if (policy.allow_dir.empty())
    bad(ref, "local files are refused (start the server with --allow-local-media DIR to allow files under DIR)",
        "local_media_disabled");
  std::error_code ec;
  const fs::path root = fs::canonical(policy.allow_dir, ec);
  if (ec) bad(ref, "the --allow-local-media folder cannot be resolved: " + ec.message());
  const fs::path asked = fs::path(ref.path).is_absolute() ? fs::path(ref.path) : root / ref.path;
  // Containment first (on the resolved existing prefix), so a path outside is refused the
  // same way whether or not it exists.
  const fs::path weak = fs::weakly_canonical(asked, ec);
  if (ec || !inside(root, weak)) bad(ref, "'" + ref.path + "' is outside the --allow-local-media folder", "local_media_refused");
  const fs::path real = fs::canonical(asked, ec);
  if (ec) bad(ref, "'" + ref.path + "': no such file");
  if (!inside(root, real)) bad(ref, "'" + ref.path + "' is outside the --allow-local-media folder", "local_media_refused");
  if (!fs::is_regular_file(real, ec)) bad(ref, "'" + ref.path + "' is not a regular file");
  const auto size = fs::file_size(real, ec);
  if (ec) bad(ref, "'" + ref.path + "': cannot read its size");
  if (size > policy.max_bytes)
    bad(ref, "'" + ref.path + "' is " + std::to_string(size) + " bytes; the limit is " + std::to_string(policy.max_bytes) +
                 " (--max-media-bytes)", "media_too_large");
  std::ifstream in(real, std::ios::binary);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (!in || !in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    bad(ref, "'" + ref.path + "': read failed");
  return bytes;
}

}  // namespace

std::vector<MediaInput> load_media(const std::vector<MediaRef>& refs, const MediaPolicy& policy) {
  std::vector<MediaInput> out;
  out.reserve(refs.size());
  for (const auto& ref : refs) {
    MediaInput in;
    in.kind = ref.kind;
    in.soft_tokens = ref.soft_tokens;
    in.format = ref.format;
    in.param = ref.param;
    if (ref.path.empty()) {
      if (ref.data.size() > policy.max_bytes)
        bad(ref, "the " + std::string(media_kind_name(ref.kind)) + " is " + std::to_string(ref.data.size()) +
                     " bytes; the limit is " + std::to_string(policy.max_bytes) + " (--max-media-bytes)",
            "media_too_large");
      in.bytes = ref.data;
      in.name = ref.param + (ref.kind == MediaKind::audio ? " (" + ref.format + " audio data)" : " (" + ref.mime + " data URL)");
    } else {
      in.bytes = read_local(ref, policy);
      in.name = ref.param + " ('" + ref.path + "')";
    }
    out.push_back(std::move(in));
  }
  return out;
}

}  // namespace ringlm::server
