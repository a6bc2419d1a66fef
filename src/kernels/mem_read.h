// A streaming read of a buffer at full vector width (for measuring memory read bandwidth,
// the floor the GEMV kernels are compared with). Returns a checksum so the reads are kept.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringlm::kernels {

std::uint64_t mem_read_checksum(const std::uint8_t* data, std::size_t bytes);

// Read bandwidth in GB/s (1e9 bytes/s): `threads` threads stream disjoint slices of one
// `bytes`-byte buffer (touched first, so it is resident); best of `repeats` passes. The
// buffer is allocated and freed here, so callers that track peak RSS should run this in a
// child process (ringlm bench does).
double measure_read_bandwidth_gbs(std::size_t bytes, int threads, int repeats = 5);

}  // namespace ringlm::kernels
