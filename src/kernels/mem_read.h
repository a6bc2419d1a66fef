// A streaming read of a buffer at full vector width (for measuring memory read bandwidth,
// the floor the GEMV kernels are compared with). Returns a checksum so the reads are kept.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringlm::kernels {

std::uint64_t mem_read_checksum(const std::uint8_t* data, std::size_t bytes);

}  // namespace ringlm::kernels
