#include "backend/device.h"

namespace ringlm::backend {

const char* weight_layout_name(WeightLayout l) {
  switch (l) {
    case WeightLayout::f32: return "f32";
    case WeightLayout::f16: return "f16";
    case WeightLayout::bf16: return "bf16";
    case WeightLayout::q4p16: return "q4p16";
  }
  return "?";
}

}  // namespace ringlm::backend
