// The Gemma 4 image processor (transformers' Gemma4ImageProcessor / Gemma4ImageProcessorPil):
// an aspect-ratio-preserving resize to the largest size whose sides are multiples of
// pooling_kernel x patch_size and whose patch count fits the soft-token budget, PIL's
// bicubic resampling, rescaling to [0, 1], and cutting into patch_size^2 patches.
//
// The resize is PIL's Image.resize(BICUBIC) exactly: a separable filter (Keys' cubic with
// a = -0.5, widened by the scale factor when shrinking, i.e. antialiased), horizontal pass
// first, each pass in PIL's 8-bit fixed point (22 fraction bits) rounded to uint8. The
// processor's torchvision backend (tvF.resize, antialias=True, on uint8) uses the same
// filter in its own fixed point, so it may differ from this by one level on some pixels.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "vision/image_decode.h"
#include "vision/vision_config.h"

namespace ringlm::vision {

// The patches of one image, in the processor's order: patch n = row * patches_w + col holds
// pixel (r, c, channel) of its patch at [(r * patch_size + c) * 3 + channel], in [0, 1].
struct PatchGrid {
  int patches_w = 0;
  int patches_h = 0;
  int patch_size = 0;
  int pooling_kernel = 0;
  std::vector<float> pixels;  // [patches_h * patches_w][patch_size * patch_size * 3]

  int num_patches() const { return patches_w * patches_h; }
  int soft_tokens() const { return num_patches() / (pooling_kernel * pooling_kernel); }
  int patch_dim() const { return patch_size * patch_size * 3; }
};

// get_aspect_ratio_preserving_size: {height, width} in pixels. Throws ringlm::Error naming
// `source` when the image cannot be fitted (as the processor raises ValueError).
std::pair<int, int> target_image_size(int height, int width, int patch_size, int max_patches, int pooling_kernel,
                                      const std::string& source);

// PIL's bicubic resize of an 8-bit RGB image.
RgbImage resize_bicubic(const RgbImage& in, int out_width, int out_height);

// The whole processor for one image with `soft_tokens` (one of kSoftTokenBudgets) as budget.
PatchGrid preprocess_image(const RgbImage& image, const VisionConfig& config, int soft_tokens);

}  // namespace ringlm::vision
