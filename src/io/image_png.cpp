// PNG decode/encode with libpng. libpng reports errors by longjmp; every decode/encode keeps its
// C++ state in a context struct created before setjmp, so the jump skips no destructors.
#include <png.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

#include "io/image_codecs.h"
#include "io/output_file.h"

namespace quill {
namespace {

struct PngContext {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  bool truncated = false;
  bool too_large = false;
  char message[256] = {};
  Image image;
  std::vector<png_bytep> rows;
  Status size_status;
};

void png_on_error(png_structp png, png_const_charp msg) {
  auto* ctx = static_cast<PngContext*>(png_get_error_ptr(png));
  std::snprintf(ctx->message, sizeof(ctx->message), "%s", msg ? msg : "unknown libpng error");
  png_longjmp(png, 1);
}
void png_on_warning(png_structp, png_const_charp) {}  // libpng warnings are not worth a line

void png_read_from_memory(png_structp png, png_bytep out, size_t n) {
  auto* ctx = static_cast<PngContext*>(png_get_io_ptr(png));
  if (n > ctx->size - ctx->pos) {
    ctx->truncated = true;
    png_error(png, "unexpected end of data");
  }
  std::memcpy(out, ctx->data + ctx->pos, n);
  ctx->pos += n;
}

// The libpng part; returns false after a libpng error (ctx->message says which).
bool decode_png_into(PngContext* ctx, const std::string& name) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, ctx, png_on_error, png_on_warning);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, ctx, png_read_from_memory);
  png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_ERROR_QUIT);
  png_read_info(png, info);

  const png_uint_32 w = png_get_image_width(png, info);
  const png_uint_32 h = png_get_image_height(png, info);
  ctx->size_status = check_image_size(w, h, name);
  if (!ctx->size_status.is_ok()) {
    ctx->too_large = true;
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }

  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  if (depth == 16) png_set_scale_16(png);  // rounds (v / 257), unlike strip_16's truncation
  png_set_interlace_handling(png);
  png_read_update_info(png, info);

  const int channels = png_get_channels(png, info);
  if (channels < 1 || channels > 4 || png_get_bit_depth(png, info) != 8) {
    std::snprintf(ctx->message, sizeof(ctx->message), "unexpected PNG layout after conversion");
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  Image& img = ctx->image;
  img.width = int(w);
  img.height = int(h);
  img.channels = channels;
  img.pixels.resize(size_t(w) * h * size_t(channels));
  ctx->rows.resize(h);
  for (png_uint_32 y = 0; y < h; ++y) ctx->rows[y] = img.pixels.data() + size_t(y) * w * size_t(channels);
  png_read_image(png, ctx->rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

struct PngWriteContext {
  char message[256] = {};
  std::vector<png_bytep> rows;
};

void png_on_write_error(png_structp png, png_const_charp msg) {
  auto* ctx = static_cast<PngWriteContext*>(png_get_error_ptr(png));
  std::snprintf(ctx->message, sizeof(ctx->message), "%s", msg ? msg : "unknown libpng error");
  png_longjmp(png, 1);
}

void png_append(png_structp png, png_bytep data, png_size_t n) {
  auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}
void png_no_flush(png_structp) {}

// Into the file `f`, or into `mem` when it is set.
bool encode_png_to(PngWriteContext* ctx, std::FILE* f, std::vector<uint8_t>* mem, const Image& img) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, ctx, png_on_write_error, png_on_warning);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  static constexpr int kColor[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                    PNG_COLOR_TYPE_RGB_ALPHA};
  if (mem)
    png_set_write_fn(png, mem, png_append, png_no_flush);
  else
    png_init_io(png, f);
  png_set_IHDR(png, info, png_uint_32(img.width), png_uint_32(img.height), 8, kColor[img.channels], PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const size_t stride = size_t(img.width) * size_t(img.channels);
  ctx->rows.resize(size_t(img.height));
  for (int y = 0; y < img.height; ++y)
    ctx->rows[size_t(y)] = const_cast<png_bytep>(img.pixels.data() + size_t(y) * stride);
  png_write_image(png, ctx->rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

namespace detail {

Result<Image> decode_png(const uint8_t* data, size_t size, const std::string& name) {
  // IHDR is always first: check the size before libpng reads further (or allocates anything).
  if (auto dims = peek_image_dimensions(data, size, name))
    QUILL_RETURN_IF_ERROR(check_image_size(dims->width, dims->height, name));
  auto ctx = std::make_unique<PngContext>();
  ctx->data = data;
  ctx->size = size;
  if (decode_png_into(ctx.get(), name)) return std::move(ctx->image);
  if (ctx->too_large) return ctx->size_status;
  if (ctx->truncated) return invalid_file("truncated PNG (", ctx->message, ")").with_file(name);
  if (!ctx->message[0]) return internal_error("libpng could not allocate its state").with_file(name);
  return invalid_file("corrupt PNG: ", ctx->message).with_file(name);
}

}  // namespace detail

namespace {
Status check_png_input(const Image& img, const std::string& path) {
  if (img.channels < 1 || img.channels > 4)
    return invalid_argument("write_png: channels must be 1, 2, 3 or 4, got ", img.channels).with_file(path);
  if (img.width < 1 || img.height < 1)
    return invalid_argument("write_png: empty image ", img.width, "x", img.height).with_file(path);
  QUILL_RETURN_IF_ERROR(check_image_size(img.width, img.height, path));
  const size_t expected = size_t(img.width) * size_t(img.height) * size_t(img.channels);
  if (img.pixels.size() != expected)
    return invalid_argument("write_png: pixel buffer has ", img.pixels.size(), " bytes, ", img.width, "x", img.height,
                            "x", img.channels, " needs ", expected)
        .with_file(path);
  return Status::ok();
}
}  // namespace

Result<std::vector<uint8_t>> encode_png(const Image& img) {
  QUILL_RETURN_IF_ERROR(check_png_input(img, "<memory>"));
  std::vector<uint8_t> out;
  auto ctx = std::make_unique<PngWriteContext>();
  if (!encode_png_to(ctx.get(), nullptr, &out, img))
    return internal_error("PNG encode failed: ", ctx->message[0] ? ctx->message : "libpng could not allocate");
  return out;
}

Status write_png(const std::string& path, const Image& img) {
  QUILL_RETURN_IF_ERROR(check_png_input(img, path));

  return write_output_file(path, [&](std::FILE* f) -> Status {
    auto ctx = std::make_unique<PngWriteContext>();
    if (!encode_png_to(ctx.get(), f, nullptr, img))
      return io_error("PNG write failed: ", ctx->message[0] ? ctx->message : "libpng could not allocate");
    return Status::ok();
  });
}

}  // namespace quill
