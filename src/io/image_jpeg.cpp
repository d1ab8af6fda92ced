// JPEG decode with libjpeg-turbo. libjpeg's default error handler prints and calls exit(); ours
// formats the message into the context and longjmps back, so corrupt files become a Status.
#include <cstdio>  // jpeglib.h needs FILE and size_t declared first

#include <jerror.h>  // JWRN_JPEG_EOF
#include <jpeglib.h>

#include <csetjmp>
#include <memory>

#include "io/image_codecs.h"

namespace quill {
namespace {

struct JpegContext {
  jpeg_error_mgr err;  // first member: libjpeg hands us back a jpeg_error_mgr*
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
  bool premature_end = false;
  bool unsupported_color = false;
  bool too_large = false;
  Status size_status;
  Image image;
  jpeg_decompress_struct cinfo;  // here, not on the stack: it changes between setjmp and longjmp
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* ctx = reinterpret_cast<JpegContext*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, ctx->message);
  std::longjmp(ctx->jump, 1);
}

// Warnings are silent, except that running out of data makes libjpeg pad the rest of the image
// with gray: we treat that as a truncated file instead of returning a half-gray picture.
void jpeg_on_message(j_common_ptr cinfo, int level) {
  auto* ctx = reinterpret_cast<JpegContext*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) ctx->premature_end = true;
}

bool decode_jpeg_into(JpegContext* ctx, const uint8_t* data, size_t size, const std::string& name) {
  jpeg_decompress_struct& cinfo = ctx->cinfo;
  cinfo.err = jpeg_std_error(&ctx->err);
  ctx->err.error_exit = jpeg_on_error;
  ctx->err.emit_message = jpeg_on_message;
  if (setjmp(ctx->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);

  ctx->size_status = check_image_size(cinfo.image_width, cinfo.image_height, name);
  if (!ctx->size_status.is_ok()) {
    ctx->too_large = true;
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    ctx->unsupported_color = true;
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  if (ctx->premature_end) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  Image& img = ctx->image;
  img.width = int(cinfo.output_width);
  img.height = int(cinfo.output_height);
  img.channels = cinfo.output_components;
  const size_t stride = size_t(img.width) * size_t(img.channels);
  img.pixels.resize(stride * size_t(img.height));
  while (cinfo.output_scanline < cinfo.output_height && !ctx->premature_end) {
    JSAMPROW row = img.pixels.data() + size_t(cinfo.output_scanline) * stride;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  if (!ctx->premature_end) jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return !ctx->premature_end;
}

}  // namespace

namespace detail {

Result<Image> decode_jpeg(const uint8_t* data, size_t size, const std::string& name) {
  auto ctx = std::make_unique<JpegContext>();
  if (decode_jpeg_into(ctx.get(), data, size, name)) return std::move(ctx->image);
  if (ctx->too_large) return ctx->size_status;
  if (ctx->unsupported_color)
    return unsupported("CMYK/YCCK JPEG is not supported; convert the image to RGB first").with_file(name);
  if (ctx->premature_end) return invalid_file("truncated JPEG (premature end of data)").with_file(name);
  return invalid_file("corrupt JPEG: ", ctx->message).with_file(name);
}

}  // namespace detail
}  // namespace quill
