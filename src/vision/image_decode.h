// Decodes a JPEG, PNG or WebP image (sniffed by its magic bytes, not by the file name) into
// 8-bit RGB with Debian's libjpeg-turbo, libpng and libwebp, the way the Hugging Face
// processor sees an image after PIL's convert("RGB"): grey is replicated, a palette is
// looked up, alpha is dropped (not composited), 16-bit samples keep their high byte.
//
// Images are hostile input. The dimensions are read from the header and checked against
// ImageLimits before any pixel buffer is allocated or any pixel is decoded, so a
// decompression bomb costs nothing; a truncated or corrupt file, an animated WebP or a CMYK
// JPEG is refused. Every error is a ringlm::Error that names the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ringlm::vision {

struct ImageLimits {
  std::uint64_t max_file_bytes = 256ull << 20;
  // PIL's own bomb threshold (Image.MAX_IMAGE_PIXELS).
  std::uint64_t max_pixels = 89478485;
  int max_side = 32768;
};

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;  // [height][width][3]
  std::string source;             // file name (or "<data URL>"), for messages
  std::string format;             // "jpeg", "png" or "webp"
};

// What an image's header says, read without decoding a pixel.
struct ImageInfo {
  int width = 0;
  int height = 0;
  const char* format = "";  // "jpeg", "png" or "webp"
};

// The format and dimensions from the header alone (a JPEG's frame header, a PNG's IHDR, a
// WebP's VP8/VP8L/VP8X chunk), checked against `limits` as decode_image would: microseconds
// and no pixel memory, so a server can budget an image before decoding it. Throws
// ringlm::Error naming `name` for what decode_image would refuse from the header.
ImageInfo probe_image(const std::uint8_t* data, std::size_t size, const std::string& name,
                      const ImageLimits& limits = {});

// `name` is used in error messages only.
RgbImage decode_image(const std::uint8_t* data, std::size_t size, const std::string& name,
                      const ImageLimits& limits = {});
RgbImage read_image_file(const std::filesystem::path& path, const ImageLimits& limits = {});

// The format the magic bytes say ("jpeg", "png", "webp"), or "" when none matches.
const char* sniff_image_format(const std::uint8_t* data, std::size_t size);

}  // namespace ringlm::vision
