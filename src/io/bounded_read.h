// Reading a whole small file (a schema, a template) with a size bound, so that a name like
// /dev/zero or /dev/urandom, or a pipe that never ends, fails with a message instead of
// growing a string until the allocator gives up. Folders and devices are refused up front;
// pipes and FIFOs (`<(...)`) are read up to the bound.
#pragma once

#include <cstddef>
#include <string>

namespace ringlm::io {

// The file's bytes ("-": standard input). Throws ringlm::Error naming `path` (and `what`, the
// flag it came from) when it cannot be read, is a folder or a device, or holds more than
// max_bytes.
std::string read_bounded_file(const std::string& path, std::size_t max_bytes, const std::string& what);

}  // namespace ringlm::io
