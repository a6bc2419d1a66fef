// quantize_row_q4_0_fast (q4_formats.h): the reference q4_0 rule on the fastest path the
// active ISA has. Kept apart from q4_formats.cpp so the plain formats need no dispatch (the
// fuzz targets link q4_formats.cpp alone).
#include "kernels/dispatch.h"
#include "kernels/q4_formats.h"

namespace ringlm::kernels {

void quantize_row_q4_0_fast(const float* x, BlockQ4_0* y, std::size_t k) {
#if defined(__x86_64__)
  const Isa isa = active_isa();
  if (isa == Isa::avx512 || isa == Isa::avx512vnni || isa == Isa::amx) return quantize_row_q4_0_avx512(x, y, k);
#endif
  quantize_row_q4_0_ref(x, y, k);
}

}  // namespace ringlm::kernels
