#include "server/local_media.h"

#include "io/beneath.h"
#include "server/api_error.h"

namespace ringlm::server {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad(const MediaRef& ref, const std::string& message, const char* code = "invalid_value") {
  throw ApiError(400, "'" + ref.param + "': " + message, ref.param, code);
}

std::string read_local(const MediaRef& ref, const MediaPolicy& policy) {
  if (policy.allow_dir.empty())
    bad(ref, "local files are refused (start the server with --allow-local-media DIR to allow files under DIR)",
        "local_media_disabled");
  // Outside is decided on the spelling alone, so a path outside gets the same answer whether
  // or not it exists; then the kernel resolves the rest beneath DIR (io/beneath.h).
  bool outside = false;
  const fs::path rel = io::relative_beneath(policy.allow_dir, ref.path, {}, &outside);
  const std::string shown = "'" + ref.path + "'";
  if (outside) bad(ref, shown + " is outside the --allow-local-media folder", "local_media_refused");
  io::BeneathRead r = io::read_beneath(policy.allow_dir, rel, policy.max_bytes);
  switch (r.status) {
    case io::BeneathStatus::ok: return std::move(r.bytes);
    case io::BeneathStatus::outside:
      bad(ref, shown + " is outside the --allow-local-media folder (symlinks below it are refused)", "local_media_refused");
    case io::BeneathStatus::too_large:
      bad(ref, shown + " is " + std::to_string(r.size) + " bytes; the limit is " + std::to_string(policy.max_bytes) +
                   " (--max-media-bytes)", "media_too_large");
    case io::BeneathStatus::no_root: bad(ref, "the --allow-local-media folder cannot be opened: " + r.detail);
    default: bad(ref, io::describe(r, ref.path, "the --allow-local-media folder"));
  }
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
