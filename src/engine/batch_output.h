// Reading back a `ringlm extract` output file as its final state (one verdict per id, the
// last record written for it wins), and rewriting it for `extract --retry-failed` so that
// every id keeps exactly one final record. Complements batch_job.h, which appends.
#pragma once

#include <map>
#include <set>
#include <string>

namespace ringlm::engine {

// id -> whether its last complete record has "ok": true. Read-only: a missing file is an
// empty state, a torn last line (no newline) is ignored. Throws ringlm::Error naming the
// line of a record that is not a JSON object with a string "id".
std::map<std::string, bool> read_output_state(const std::string& path);

// Rewrites `path` keeping, for every id, only its last record, and no record at all for the
// ids in `redo` (rows about to be done again). The new content is written to a temporary
// file, flushed, and renamed over `path`, so a kill leaves either the old or the new file;
// the file is left alone when nothing would change. Returns how many ids were dropped.
std::size_t drop_records(const std::string& path, const std::set<std::string>& redo);

}  // namespace ringlm::engine
