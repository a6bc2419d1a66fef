#include "backend/device.h"

namespace ringlm::backend {

const char* weight_layout_name(WeightLayout l) {
  switch (l) {
    case WeightLayout::f32: return "f32";
    case WeightLayout::f16: return "f16";
    case WeightLayout::bf16: return "bf16";
    case WeightLayout::q4p16: return "q4p16";
    case WeightLayout::q8_0: return "Q8_0";
    case WeightLayout::q4_1: return "Q4_1";
    case WeightLayout::q5_0: return "Q5_0";
    case WeightLayout::q5_1: return "Q5_1";
    case WeightLayout::q4_k: return "Q4_K";
    case WeightLayout::q5_k: return "Q5_K";
    case WeightLayout::q6_k: return "Q6_K";
    case WeightLayout::iq4_nl: return "IQ4_NL";
    case WeightLayout::iq4_xs: return "IQ4_XS";
  }
  return "?";
}

}  // namespace ringlm::backend
