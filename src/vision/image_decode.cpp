#include "vision/image_decode.h"

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>

// libjpeg's header needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>
#include <png.h>
#include <webp/decode.h>

#include "util/error.h"

namespace ringlm::vision {
namespace {

void check_dimensions(const std::string& name, const char* format, std::uint64_t w, std::uint64_t h,
                      const ImageLimits& limits) {
  if (w == 0 || h == 0) fail(name, ": ", format, " image has a zero dimension (", w, "x", h, ")");
  if (w > static_cast<std::uint64_t>(limits.max_side) || h > static_cast<std::uint64_t>(limits.max_side))
    fail(name, ": ", format, " image is ", w, "x", h, " pixels; the limit is ", limits.max_side, " per side");
  if (w * h > limits.max_pixels)
    fail(name, ": ", format, " image is ", w, "x", h, " = ", w * h, " pixels; the limit is ", limits.max_pixels,
         " (a decompression bomb?)");
}

// ---- JPEG -----------------------------------------------------------------------------

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// libjpeg reports a file that ends early as a warning and fills the rest with grey; PIL
// refuses such a file ("image file is truncated"), and so do we. Other warnings pass.
void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_on_error(cinfo);
}

RgbImage decode_jpeg(const std::uint8_t* data, std::size_t size, const std::string& name, const ImageLimits& limits) {
  RgbImage out;
  out.source = name;
  out.format = "jpeg";
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_on_error;
  err.mgr.emit_message = jpeg_on_message;
  err.message[0] = 0;
  // Everything below that longjmp can skip holds no C++ object with a destructor.
  std::uint8_t* pixels = nullptr;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    fail(name, ": corrupt or truncated JPEG: ", err.message);
  }
  jpeg_create_decompress(&cinfo);
  // libjpeg's own working memory (progressive coefficient buffers) stays bounded too.
  cinfo.mem->max_memory_to_use = 1024L << 20;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  const std::uint64_t w = cinfo.image_width, h = cinfo.image_height;
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    fail(name, ": CMYK JPEG images are not supported (convert it to RGB)");
  }
  {
    // check_dimensions throws; keep the libjpeg state consistent first.
    const bool bad = w == 0 || h == 0 || w > static_cast<std::uint64_t>(limits.max_side) ||
                     h > static_cast<std::uint64_t>(limits.max_side) || w * h > limits.max_pixels;
    if (bad) {
      jpeg_destroy_decompress(&cinfo);
      check_dimensions(name, "JPEG", w, h, limits);
    }
  }
  cinfo.out_color_space = JCS_RGB;  // grey is replicated by libjpeg
  out.width = static_cast<int>(w);
  out.height = static_cast<int>(h);
  out.rgb.resize(static_cast<std::size_t>(w * h * 3));
  pixels = out.rgb.data();
  jpeg_start_decompress(&cinfo);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = pixels + static_cast<std::size_t>(cinfo.output_scanline) * w * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return out;
}

// ---- PNG ------------------------------------------------------------------------------

struct PngReadState {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t pos;
  char message[256];
};

void png_on_read(png_structp png, png_bytep out, png_size_t n) {
  auto* s = static_cast<PngReadState*>(png_get_io_ptr(png));
  if (n > s->size - s->pos) png_error(png, "file ends early (truncated)");
  std::memcpy(out, s->data + s->pos, n);
  s->pos += n;
}

void png_on_error(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngReadState*>(png_get_error_ptr(png));
  std::snprintf(s->message, sizeof s->message, "%s", msg);
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {}

// Walks the chunk list up to IEND (or the end of the file) and refuses a chunk that claims
// more bytes than the file has left. libpng allocates a text or profile chunk's declared size
// before it reads the data and does not always apply png_set_chunk_malloc_max to it: a
// 100-byte file declaring a 1.4 GB tEXt chunk made it allocate 1.4 GB (fuzz finding).
void check_png_chunk_lengths(const std::uint8_t* data, std::size_t size, const std::string& name) {
  std::size_t at = 8;  // after the signature
  while (size - at >= 8) {
    const std::uint64_t length = (std::uint64_t{data[at]} << 24) | (std::uint64_t{data[at + 1]} << 16) |
                                 (std::uint64_t{data[at + 2]} << 8) | std::uint64_t{data[at + 3]};
    std::string kind;
    for (std::size_t i = at + 4; i < at + 8; ++i) {
      const char c = static_cast<char>(data[i]);
      kind += std::isalpha(static_cast<unsigned char>(c)) ? std::string(1, c) : "?";
    }
    const std::size_t left = size - at - 8;  // data and CRC of this chunk and everything after
    if (length + 4 > left)
      fail(name, ": corrupt or truncated PNG: chunk '", kind, "' at byte offset ", at, " declares ", length,
           " bytes of data but the file has ", left < 4 ? 0 : left - 4, " left");
    at += 8 + static_cast<std::size_t>(length) + 4;
    if (kind == "IEND") return;
  }
}

RgbImage decode_png(const std::uint8_t* data, std::size_t size, const std::string& name, const ImageLimits& limits) {
  RgbImage out;
  out.source = name;
  out.format = "png";
  check_png_chunk_lengths(data, size, name);
  // The IHDR chunk comes first at a fixed offset: check the size before libpng starts.
  if (size >= 24 && std::memcmp(data + 12, "IHDR", 4) == 0) {
    auto be32 = [&](std::size_t at) {
      return (std::uint64_t{data[at]} << 24) | (std::uint64_t{data[at + 1]} << 16) | (std::uint64_t{data[at + 2]} << 8) |
             std::uint64_t{data[at + 3]};
    };
    check_dimensions(name, "PNG", be32(16), be32(20), limits);
  }
  PngReadState state{data, size, 0, {0}};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, png_on_error, png_on_warning);
  if (!png) fail(name, ": cannot start the PNG decoder");
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    fail(name, ": cannot start the PNG decoder");
  }
  std::vector<png_bytep>* rows = new std::vector<png_bytep>();  // freed on both paths
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    delete rows;
    fail(name, ": corrupt or truncated PNG: ", state.message);
  }
  png_set_read_fn(png, &state, png_on_read);
  // libpng refuses larger images in png_read_info itself; the side limit is ours.
  png_set_user_limits(png, static_cast<png_uint_32>(limits.max_side), static_cast<png_uint_32>(limits.max_side));
  png_set_chunk_cache_max(png, 1000);
  png_set_chunk_malloc_max(png, 64u << 20);
  png_read_info(png, info);
  const std::uint64_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  if (w * h > limits.max_pixels) {
    png_destroy_read_struct(&png, &info, nullptr);
    delete rows;
    check_dimensions(name, "PNG", w, h, limits);
  }
  const int color = png_get_color_type(png, info);
  png_set_expand(png);       // palette -> RGB, grey < 8 bits -> 8 bits, tRNS -> alpha
  png_set_strip_16(png);     // 16-bit samples: the high byte, as PIL's RGB;16B unpacker
  png_set_strip_alpha(png);  // PIL's convert("RGB") drops alpha
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != w * 3) png_error(png, "unexpected row layout after conversion to RGB");
  out.width = static_cast<int>(w);
  out.height = static_cast<int>(h);
  out.rgb.resize(static_cast<std::size_t>(w * h * 3));
  rows->resize(static_cast<std::size_t>(h));
  for (std::uint64_t y = 0; y < h; ++y) (*rows)[y] = out.rgb.data() + y * w * 3;
  png_read_image(png, rows->data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  delete rows;
  return out;
}

// ---- WebP -----------------------------------------------------------------------------

RgbImage decode_webp(const std::uint8_t* data, std::size_t size, const std::string& name, const ImageLimits& limits) {
  WebPBitstreamFeatures f;
  if (WebPGetFeatures(data, size, &f) != VP8_STATUS_OK) fail(name, ": corrupt or truncated WebP header");
  if (f.has_animation) fail(name, ": animated WebP images are not supported");
  check_dimensions(name, "WebP", static_cast<std::uint64_t>(f.width), static_cast<std::uint64_t>(f.height), limits);
  RgbImage out;
  out.source = name;
  out.format = "webp";
  out.width = f.width;
  out.height = f.height;
  out.rgb.resize(static_cast<std::size_t>(f.width) * f.height * 3);
  if (!WebPDecodeRGBInto(data, size, out.rgb.data(), out.rgb.size(), f.width * 3))
    fail(name, ": corrupt or truncated WebP image data");
  return out;
}

}  // namespace

const char* sniff_image_format(const std::uint8_t* d, std::size_t n) {
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return "jpeg";
  static const std::uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (n >= 8 && std::memcmp(d, kPng, 8) == 0) return "png";
  if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return "webp";
  return "";
}

namespace {

// The JPEG's frame header through libjpeg (jpeg_read_header stops before any scan data).
ImageInfo probe_jpeg(const std::uint8_t* data, std::size_t size, const std::string& name) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_on_error;
  err.mgr.emit_message = jpeg_on_message;
  err.message[0] = 0;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    fail(name, ": corrupt or truncated JPEG: ", err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  const ImageInfo info{static_cast<int>(std::min<JDIMENSION>(cinfo.image_width, 1u << 30)),
                       static_cast<int>(std::min<JDIMENSION>(cinfo.image_height, 1u << 30)), "jpeg"};
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  jpeg_destroy_decompress(&cinfo);
  if (cmyk) fail(name, ": CMYK JPEG images are not supported (convert it to RGB)");
  return info;
}

}  // namespace

ImageInfo probe_image(const std::uint8_t* data, std::size_t size, const std::string& name, const ImageLimits& limits) {
  if (size > limits.max_file_bytes) fail(name, ": image is ", size, " bytes; the limit is ", limits.max_file_bytes);
  const std::string format = sniff_image_format(data, size);
  ImageInfo info;
  if (format == "jpeg") {
    info = probe_jpeg(data, size, name);
  } else if (format == "png") {
    // IHDR is the first chunk, at a fixed offset (the PNG specification requires it).
    if (size < 24 || std::memcmp(data + 12, "IHDR", 4) != 0) fail(name, ": corrupt PNG: no IHDR chunk first");
    auto be32 = [&](std::size_t at) {
      return (std::uint32_t{data[at]} << 24) | (std::uint32_t{data[at + 1]} << 16) | (std::uint32_t{data[at + 2]} << 8) |
             std::uint32_t{data[at + 3]};
    };
    info = {static_cast<int>(std::min<std::uint32_t>(be32(16), 1u << 30)),
            static_cast<int>(std::min<std::uint32_t>(be32(20), 1u << 30)), "png"};
  } else if (format == "webp") {
    WebPBitstreamFeatures f;
    if (WebPGetFeatures(data, size, &f) != VP8_STATUS_OK) fail(name, ": corrupt or truncated WebP header");
    if (f.has_animation) fail(name, ": animated WebP images are not supported");
    info = {f.width, f.height, "webp"};
  } else {
    fail(name, ": not a JPEG, PNG or WebP image (", size == 0 ? "empty file" : "unknown magic bytes", ")");
  }
  check_dimensions(name, info.format, static_cast<std::uint64_t>(info.width), static_cast<std::uint64_t>(info.height),
                   limits);
  return info;
}

RgbImage decode_image(const std::uint8_t* data, std::size_t size, const std::string& name, const ImageLimits& limits) {
  if (size > limits.max_file_bytes) fail(name, ": image is ", size, " bytes; the limit is ", limits.max_file_bytes);
  const std::string format = sniff_image_format(data, size);
  if (format == "jpeg") return decode_jpeg(data, size, name, limits);
  if (format == "png") return decode_png(data, size, name, limits);
  if (format == "webp") return decode_webp(data, size, name, limits);
  fail(name, ": not a JPEG, PNG or WebP image (", size == 0 ? "empty file" : "unknown magic bytes", ")");
}

RgbImage read_image_file(const std::filesystem::path& path, const ImageLimits& limits) {
  const std::string name = path.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail(name, ": no such image file");
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) fail(name, ": cannot read its size: ", ec.message());
  if (size > limits.max_file_bytes) fail(name, ": image file is ", size, " bytes; the limit is ", limits.max_file_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(name, ": cannot open");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  if (size && !in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size)))
    fail(name, ": read failed");
  return decode_image(bytes.data(), bytes.size(), name, limits);
}

}  // namespace ringlm::vision
