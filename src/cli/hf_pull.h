// `ringlm pull ORG/NAME`: downloads a Hugging Face model repository into the local Hugging
// Face cache, in the layout huggingface_hub writes and `--model ORG/NAME` reads
// (model_locator.h): models--ORG--NAME/blobs/<etag>, snapshots/<commit>/<file> -> symlinks to
// the blobs, refs/<revision> = <commit>.
//
// Every file is checked against the Hub's own metadata (GET /api/models/ORG/NAME/revision/REV
// ?blobs=true): LFS files by their sha256, the others by their git blob sha1, and by size. A
// download goes to blobs/<etag>.incomplete first and resumes from where it stopped (HTTP
// Range), within a run when the connection drops and across runs when the process was killed;
// a file whose checksum does not match is removed and the pull fails naming it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ringlm::cli {

struct PullOptions {
  std::string repo;                    // ORG/NAME
  std::string revision = "main";       // branch, tag or commit
  std::string endpoint;                // e.g. https://huggingface.co (or $HF_ENDPOINT)
  std::string token;                   // Bearer token for gated or private repositories ("" = none)
  std::vector<std::string> include;    // glob patterns of files to fetch (empty = all)
  std::filesystem::path cache;         // the hub cache directory (model_locator's hf_hub_cache())
  int retries = 5;                     // resumed attempts per file after a dropped connection
};

// Returns the snapshot directory. Throws ringlm::Error naming the file at fault.
std::filesystem::path pull_model(const PullOptions& options);

// The paths of the files in the repository at options.revision (one metadata request; no
// --include filter), and the revision's commit.
std::vector<std::string> list_repo_files(const PullOptions& options, std::string& commit);

// models--ORG--NAME under options.cache: where pull_model puts the repository.
std::filesystem::path repo_cache_dir(const PullOptions& options);

// SHA-256 (kind "sha256") or git blob SHA-1 (kind "git-sha1") of a file, as lowercase hex.
std::string file_digest(const std::filesystem::path& file, const std::string& kind);

}  // namespace ringlm::cli
