#include "vision/image_preprocess.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace ringlm::vision {
namespace {

// Keys' cubic convolution kernel with a = -0.5 (PIL's bicubic_filter), support 2.
double bicubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

constexpr int kPrecisionBits = 32 - 8 - 2;  // PIL's PRECISION_BITS for 8-bit images

// One output sample's source window and fixed-point weights (PIL's precompute_coeffs and
// normalize_coeffs_8bpc).
struct Taps {
  int first = 0;
  int count = 0;
  std::vector<int> weights;
};

std::vector<Taps> make_taps(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 2.0 * filterscale;
  std::vector<Taps> taps(out_size);
  std::vector<double> k;
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    // C's truncating casts, as PIL writes them.
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    k.assign(static_cast<std::size_t>(std::max(xmax, 0)), 0.0);
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double w = bicubic((x + xmin - center + 0.5) * ss);
      k[x] = w;
      ww += w;
    }
    Taps& t = taps[xx];
    t.first = xmin;
    t.count = xmax;
    t.weights.resize(static_cast<std::size_t>(std::max(xmax, 0)));
    for (int x = 0; x < xmax; ++x) {
      const double w = ww != 0.0 ? k[x] / ww : k[x];
      const double fixed = w * (1 << kPrecisionBits);
      t.weights[x] = static_cast<int>(fixed < 0 ? fixed - 0.5 : fixed + 0.5);
    }
  }
  return taps;
}

std::uint8_t clip8(long long acc) {
  const long long v = acc >> kPrecisionBits;  // arithmetic shift, as PIL's int math
  return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

RgbImage resample_horizontal(const RgbImage& in, int out_w) {
  const std::vector<Taps> taps = make_taps(in.width, out_w);
  RgbImage out;
  out.width = out_w;
  out.height = in.height;
  out.rgb.resize(static_cast<std::size_t>(out_w) * in.height * 3);
  for (int y = 0; y < in.height; ++y) {
    const std::uint8_t* row = in.rgb.data() + static_cast<std::size_t>(y) * in.width * 3;
    std::uint8_t* dst = out.rgb.data() + static_cast<std::size_t>(y) * out_w * 3;
    for (int xx = 0; xx < out_w; ++xx) {
      const Taps& t = taps[xx];
      for (int c = 0; c < 3; ++c) {
        long long acc = 1ll << (kPrecisionBits - 1);
        for (int x = 0; x < t.count; ++x) acc += static_cast<long long>(row[(t.first + x) * 3 + c]) * t.weights[x];
        dst[xx * 3 + c] = clip8(acc);
      }
    }
  }
  return out;
}

RgbImage resample_vertical(const RgbImage& in, int out_h) {
  const std::vector<Taps> taps = make_taps(in.height, out_h);
  RgbImage out;
  out.width = in.width;
  out.height = out_h;
  const std::size_t stride = static_cast<std::size_t>(in.width) * 3;
  out.rgb.resize(stride * out_h);
  for (int yy = 0; yy < out_h; ++yy) {
    const Taps& t = taps[yy];
    std::uint8_t* dst = out.rgb.data() + yy * stride;
    for (std::size_t i = 0; i < stride; ++i) {
      long long acc = 1ll << (kPrecisionBits - 1);
      for (int y = 0; y < t.count; ++y) acc += static_cast<long long>(in.rgb[(t.first + y) * stride + i]) * t.weights[y];
      dst[i] = clip8(acc);
    }
  }
  return out;
}

}  // namespace

std::pair<int, int> target_image_size(int height, int width, int patch_size, int max_patches, int pooling_kernel,
                                      const std::string& source) {
  const double total_px = static_cast<double>(height) * width;
  const double target_px = static_cast<double>(max_patches) * patch_size * patch_size;
  const double factor = std::sqrt(target_px / total_px);
  const double ideal_h = factor * height, ideal_w = factor * width;
  const int side = pooling_kernel * patch_size;
  long long th = static_cast<long long>(std::floor(ideal_h / side)) * side;
  long long tw = static_cast<long long>(std::floor(ideal_w / side)) * side;
  if (th == 0 && tw == 0) fail(source, ": cannot resize a ", width, "x", height, " image to a non-empty patch grid");
  const long long max_side = static_cast<long long>(max_patches / (pooling_kernel * pooling_kernel)) * side;
  if (th == 0) {
    th = side;
    tw = std::min(static_cast<long long>(std::floor(static_cast<double>(width) / height)) * side, max_side);
  } else if (tw == 0) {
    tw = side;
    th = std::min(static_cast<long long>(std::floor(static_cast<double>(height) / width)) * side, max_side);
  }
  if (static_cast<double>(th) * tw > target_px)
    fail(source, ": resizing ", width, "x", height, " to ", tw, "x", th, " exceeds ", max_patches, " patches");
  return {static_cast<int>(th), static_cast<int>(tw)};
}

RgbImage resize_bicubic(const RgbImage& in, int out_width, int out_height) {
  RgbImage cur = in;
  if (out_width != in.width) cur = resample_horizontal(cur, out_width);
  if (out_height != in.height) cur = resample_vertical(cur, out_height);
  cur.source = in.source;
  cur.format = in.format;
  return cur;
}

PatchGrid preprocess_image(const RgbImage& image, const VisionConfig& config, int soft_tokens) {
  if (!is_soft_token_budget(soft_tokens))
    fail(image.source, ": image token budget ", soft_tokens, " is not one of 70, 140, 280, 560, 1120");
  const int p = config.patch_size, k = config.pooling_kernel_size;
  const int max_patches = soft_tokens * k * k;
  RgbImage resized;
  const RgbImage* img = &image;
  if (config.do_resize) {
    const auto [th, tw] = target_image_size(image.height, image.width, p, max_patches, k, image.source);
    if (th != image.height || tw != image.width) {
      resized = resize_bicubic(image, tw, th);
      img = &resized;
    }
  }
  if (img->width % (p * k) != 0 || img->height % (p * k) != 0)
    fail(image.source, ": ", img->width, "x", img->height, " is not a whole number of ", p * k, "-pixel pooling cells");
  PatchGrid g;
  g.patch_size = p;
  g.pooling_kernel = k;
  g.patches_w = img->width / p;
  g.patches_h = img->height / p;
  if (g.num_patches() > max_patches)
    fail(image.source, ": ", g.num_patches(), " patches exceed the budget of ", max_patches);
  const int dim = g.patch_dim();
  g.pixels.resize(static_cast<std::size_t>(g.num_patches()) * dim);
  for (int py = 0; py < g.patches_h; ++py)
    for (int px = 0; px < g.patches_w; ++px) {
      float* dst = g.pixels.data() + (static_cast<std::size_t>(py) * g.patches_w + px) * dim;
      for (int r = 0; r < p; ++r) {
        const std::uint8_t* src =
            img->rgb.data() + ((static_cast<std::size_t>(py) * p + r) * img->width + static_cast<std::size_t>(px) * p) * 3;
        // The processor rescales in float64 and stores float32.
        for (int i = 0; i < p * 3; ++i)
          dst[r * p * 3 + i] = static_cast<float>(static_cast<double>(src[i]) * config.rescale_factor);
      }
    }
  return g;
}

}  // namespace ringlm::vision
