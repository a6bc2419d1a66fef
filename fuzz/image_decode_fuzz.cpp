// libFuzzer target for the image decoders (JPEG, PNG, WebP through Debian's libraries) and
// PIL-style resampling: any bytes must either decode to an image of the size the header
// promised, within the limits, or raise ringlm::Error; never crash, leak or read out of
// bounds. Small decoded images are also resized, shrinking one axis and growing the other.
#include <cstddef>
#include <cstdint>

#include "util/error.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ringlm;
  vision::ImageLimits limits;
  limits.max_pixels = 4u << 20;  // keep each run fast; the limit logic is the same
  limits.max_side = 4096;
  try {
    const vision::RgbImage img = vision::decode_image(data, size, "fuzz-input", limits);
    if (img.width <= 0 || img.height <= 0 ||
        img.rgb.size() != static_cast<std::size_t>(img.width) * img.height * 3)
      __builtin_trap();
    if (static_cast<std::uint64_t>(img.width) * img.height <= 4096) {
      const vision::RgbImage r = vision::resize_bicubic(img, img.width / 2 + 1, img.height * 2 + 1);
      if (r.rgb.size() != static_cast<std::size_t>(r.width) * r.height * 3) __builtin_trap();
    }
  } catch (const Error&) {
  }
  return 0;
}
