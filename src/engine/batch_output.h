// Reading back a `ringlm extract` output file as its final state (one verdict per id, the
// last record written for it wins), and rewriting it for `extract --retry-failed` so that
// every id keeps exactly one final record. Complements batch_job.h, which appends.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace ringlm::engine {

// An id's last complete record: whether it has "ok": true, and the settings fingerprint it
// was made with ("" for records written before fingerprints existed).
struct RecordState {
  bool ok = false;
  std::string fingerprint;
};

// id -> its last complete record. Read-only: a missing file (or "-", standard output) is an
// empty state, a torn last line (no newline) is ignored. Throws ringlm::Error naming the
// line of a record that is not a JSON object with a string "id".
std::map<std::string, RecordState> read_output_state(const std::string& path);

// Refuses (ringlm::Error naming it) an output that cannot hold a job's state: one that
// exists and is not a regular file (a FIFO, a device, /dev/stdout on a pipe: "-" is the way
// to standard output), or one that is the same file as any of `inputs` (device and inode,
// whatever the spelling or link; "-" among them is standard input).
void check_output_path(const std::string& output, const std::vector<std::string>& inputs);

// Rewrites `path` keeping, for every id, only its last record, and no record at all for the
// ids in `redo` (rows about to be done again). The new content is written to a temporary
// file next to the file `path` leads to (a symlink is followed, and stays a symlink),
// given that file's mode and owner, flushed, and renamed over it, so a kill leaves either
// the old or the new file; the file is left alone when nothing would change. Returns how
// many ids were dropped.
std::size_t drop_records(const std::string& path, const std::set<std::string>& redo);

}  // namespace ringlm::engine
