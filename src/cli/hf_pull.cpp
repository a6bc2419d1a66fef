#include "cli/hf_pull.h"

#include <fnmatch.h>
#include <httplib.h>
#include <openssl/evp.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "util/error.h"

namespace fs = std::filesystem;

namespace ringlm::cli {

namespace {

struct RemoteFile {
  std::string name;    // path in the repository ("config.json", "sub/x.bin")
  std::string etag;    // the blob's name in the cache: sha256 for LFS files, git blob sha1 otherwise
  std::string digest;  // "sha256" or "git-sha1"
  std::uint64_t size = 0;
};

std::string mb(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// Percent-encodes a path segment (keeps '/' between segments).
std::string url_path(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::unique_ptr<httplib::Client> client_for(const PullOptions& o) {
  auto c = std::make_unique<httplib::Client>(o.endpoint);
  if (!c->is_valid()) fail("--endpoint ", o.endpoint, ": not a usable http:// or https:// URL");
  c->set_follow_location(true);  // the Hub redirects LFS files to its CDN
  c->set_connection_timeout(30);
  c->set_read_timeout(60);
  if (!o.token.empty()) c->set_bearer_token_auth(o.token);
  return c;
}

// The file list of one revision with sizes and checksums, and its commit.
std::vector<RemoteFile> list_files(httplib::Client& http, const PullOptions& o, std::string& commit) {
  const std::string path = "/api/models/" + url_path(o.repo) + "/revision/" + url_path(o.revision) + "?blobs=true";
  auto res = http.Get(path);
  if (!res) fail_as(ErrorKind::io, o.endpoint, path, ": ", httplib::to_string(res.error()));
  if (res->status == 401 || res->status == 403)
    fail(o.repo, ": the Hub refused access (HTTP ", res->status, "): a gated or private repository needs HF_TOKEN");
  if (res->status == 404) fail(o.repo, ": no such repository or revision '", o.revision, "' on ", o.endpoint);
  if (res->status != 200) fail_as(ErrorKind::io, o.endpoint, path, ": HTTP ", res->status);
  const auto j = nlohmann::json::parse(res->body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("sha") || !j["sha"].is_string() || !j.contains("siblings") ||
      !j["siblings"].is_array())
    fail_as(ErrorKind::io, o.endpoint, path, ": not the Hub's model info (no sha and siblings)");
  commit = j["sha"].get<std::string>();
  std::vector<RemoteFile> files;
  for (const auto& s : j["siblings"]) {
    RemoteFile f;
    f.name = s.value("rfilename", "");
    if (f.name.empty() || f.name.find("..") != std::string::npos || f.name[0] == '/')
      fail_as(ErrorKind::io, path, ": unusable file name '", f.name, "'");
    if (!o.include.empty()) {
      bool wanted = false;
      for (const auto& g : o.include) wanted = wanted || fnmatch(g.c_str(), f.name.c_str(), 0) == 0;
      if (!wanted) continue;
    }
    if (s.contains("lfs") && s["lfs"].is_object()) {
      f.etag = s["lfs"].value("sha256", "");
      f.size = s["lfs"].value("size", std::uint64_t{0});
      f.digest = "sha256";
    } else {
      f.etag = s.value("blobId", "");
      f.size = s.value("size", std::uint64_t{0});
      f.digest = "git-sha1";
    }
    if (f.etag.size() < 40 || f.etag.find_first_not_of("0123456789abcdef") != std::string::npos)
      fail_as(ErrorKind::io, path, ": ", f.name, ": no checksum in the Hub's metadata (asked with blobs=true)");
    files.push_back(std::move(f));
  }
  if (files.empty()) fail(o.repo, ": no file matches --include");
  return files;
}

// One GET from `offset` appended to `part`; returns the bytes now in it (may stop short when
// the connection drops).
std::uint64_t fetch_from(httplib::Client& http, const std::string& url, const fs::path& part, std::uint64_t offset,
                         std::string& problem) {
  httplib::Headers headers;
  if (offset > 0) headers.emplace("Range", "bytes=" + std::to_string(offset) + "-");
  std::ofstream out;
  out.rdbuf()->pubsetbuf(nullptr, 0);  // unbuffered: what arrived is on disk if the process is killed
  std::uint64_t have = offset;
  int status = 0;
  auto res = http.Get(
      url, headers,
      [&](const httplib::Response& r) {
        status = r.status;
        if (status == 206 && offset > 0) {
          out.open(part, std::ios::binary | std::ios::app);
        } else if (status == 200) {  // the server ignored Range: start over
          have = 0;
          out.open(part, std::ios::binary | std::ios::trunc);
        } else {
          return false;
        }
        return static_cast<bool>(out);
      },
      [&](const char* data, std::size_t n) {
        out.write(data, static_cast<std::streamsize>(n));
        have += n;
        return static_cast<bool>(out);
      });
  out.close();
  if (status == 416) problem = "the server has no bytes after " + std::to_string(offset);
  else if (status != 0 && status != 200 && status != 206) problem = "HTTP " + std::to_string(status);
  else if (!res) problem = httplib::to_string(res.error());
  return have;
}

// Downloads one file into blobs/<etag> (resuming blobs/<etag>.incomplete) and checks it.
void download(httplib::Client& http, const PullOptions& o, const std::string& commit, const RemoteFile& f,
              const fs::path& blob) {
  const fs::path part = blob.string() + ".incomplete";
  const std::string url = "/" + url_path(o.repo) + "/resolve/" + commit + "/" + url_path(f.name);
  std::error_code ec;
  std::uint64_t have = fs::exists(part, ec) ? fs::file_size(part, ec) : 0;
  if (have > f.size) fs::remove(part, ec), have = 0;
  if (have > 0) std::fprintf(stderr, "ringlm pull: %s: resuming at %s of %s\n", f.name.c_str(), mb(have).c_str(), mb(f.size).c_str());
  for (int attempt = 0; have < f.size || !fs::exists(part, ec); ++attempt) {
    std::string problem;
    const std::uint64_t before = have;
    have = fetch_from(http, url, part, have, problem);
    if (have >= f.size && fs::exists(part, ec)) break;
    if (!problem.empty() && problem.rfind("HTTP 4", 0) == 0) fail_as(ErrorKind::io, f.name, ": ", url, ": ", problem);
    if (attempt >= o.retries)
      fail_as(ErrorKind::io, f.name, ": download stopped at ", mb(have), " of ", mb(f.size), " (", problem,
              "); run `ringlm pull` again to resume");
    std::fprintf(stderr, "ringlm pull: %s: connection lost at %s of %s (%s); resuming\n", f.name.c_str(), mb(have).c_str(),
                 mb(f.size).c_str(), problem.empty() ? "short read" : problem.c_str());
    if (have == before) std::this_thread::sleep_for(std::chrono::seconds(1 << std::min(attempt, 4)));
  }
  have = fs::file_size(part, ec);
  const std::string got = file_digest(part, f.digest);
  if (have != f.size || got != f.etag) {
    fs::remove(part, ec);
    fail_as(ErrorKind::io, f.name, ": checksum mismatch: the Hub lists ", f.digest, " ", f.etag, " (", f.size,
            " bytes), the download has ", got, " (", have, " bytes); the download was removed, run `ringlm pull` again");
  }
  fs::rename(part, blob, ec);
  if (ec) fail_as(ErrorKind::io, blob.string(), ": ", ec.message());
  std::fprintf(stderr, "ringlm pull: %s: %s, %s verified\n", f.name.c_str(), mb(f.size).c_str(), f.digest.c_str());
}

void link_into_snapshot(const fs::path& repo_dir, const std::string& commit, const RemoteFile& f) {
  const fs::path link = repo_dir / "snapshots" / commit / f.name;
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  // Relative, as huggingface_hub writes it: one ".." per directory level up to the repo.
  fs::path target = "..";
  for (auto p = fs::path(f.name).parent_path(); !p.empty(); p = p.parent_path()) target /= "..";
  target = target / ".." / "blobs" / f.etag;
  fs::remove(link, ec);
  fs::create_symlink(target, link, ec);
  if (ec) fail_as(ErrorKind::io, link.string(), ": cannot create the snapshot link: ", ec.message());
}

}  // namespace

std::string file_digest(const fs::path& file, const std::string& kind) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail_as(ErrorKind::io, file.string(), ": cannot open");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || !EVP_DigestInit_ex(ctx.get(), kind == "sha256" ? EVP_sha256() : EVP_sha1(), nullptr))
    fail_internal("EVP_DigestInit_ex failed");
  if (kind == "git-sha1") {  // git hashes "blob <size>\0" + content
    const std::string head = "blob " + std::to_string(fs::file_size(file)) + std::string(1, '\0');
    EVP_DigestUpdate(ctx.get(), head.data(), head.size());
  }
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) fail_as(ErrorKind::io, file.string(), ": read error");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", md[i]);
    hex += b;
  }
  return hex;
}

std::vector<std::string> list_repo_files(const PullOptions& o, std::string& commit) {
  auto http = client_for(o);
  PullOptions all = o;
  all.include.clear();
  std::vector<std::string> names;
  for (const auto& f : list_files(*http, all, commit)) names.push_back(f.name);
  return names;
}

fs::path repo_cache_dir(const PullOptions& o) {
  std::string dir_name = "models--" + o.repo;
  for (std::size_t p = dir_name.find('/'); p != std::string::npos; p = dir_name.find('/')) dir_name.replace(p, 1, "--");
  return o.cache / dir_name;
}

fs::path pull_model(const PullOptions& o) {
  if (o.cache.empty()) fail("no Hugging Face cache directory: set HF_HUB_CACHE, HF_HOME or HOME");
  auto http = client_for(o);
  std::string commit;
  const auto files = list_files(*http, o, commit);
  const fs::path repo_dir = repo_cache_dir(o);
  std::error_code ec;
  fs::create_directories(repo_dir / "blobs", ec);
  if (ec) fail_as(ErrorKind::io, (repo_dir / "blobs").string(), ": ", ec.message());
  std::uint64_t total = 0;
  for (const auto& f : files) total += f.size;
  std::fprintf(stderr, "ringlm pull: %s@%s (commit %s): %zu files, %s, into %s\n", o.repo.c_str(), o.revision.c_str(),
               commit.c_str(), files.size(), mb(total).c_str(), repo_dir.c_str());
  for (const auto& f : files) {
    const fs::path blob = repo_dir / "blobs" / f.etag;
    if (fs::exists(blob, ec) && fs::file_size(blob, ec) == f.size) {
      std::fprintf(stderr, "ringlm pull: %s: already in the cache\n", f.name.c_str());
    } else {
      download(*http, o, commit, f, blob);
    }
    link_into_snapshot(repo_dir, commit, f);
  }
  if (o.revision != commit) {
    fs::create_directories(repo_dir / "refs" / fs::path(o.revision).parent_path(), ec);
    std::ofstream(repo_dir / "refs" / o.revision, std::ios::trunc) << commit;
  }
  return repo_dir / "snapshots" / commit;
}

}  // namespace ringlm::cli
