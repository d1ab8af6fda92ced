#include "pipeline/style_encoder_dinov2.h"

#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/input_files.h"
#include "core/mapped_file.h"
#include "io/image.h"
#include "io/json_util.h"

namespace quill {
namespace {

// style_encoder/style_layout.json: {"layout": "squash" | "wrap", "row_height": N}. Absent: squash (the
// layout every model had before the file existed).
Result<StyleLayout> read_style_layout(const std::string& dir, int square) {
  const std::string path = dir + "/style_layout.json";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return StyleLayout{};
  note_input_file(path);
  QUILL_ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  auto parsed = parse_json_checked(
      std::string_view(reinterpret_cast<const char*>(file->data()), size_t(file->size())), "style_layout.json");
  if (!parsed) return parsed.take_status().with_file(path);
  const nlohmann::json& j = *parsed;
  if (!j.is_object()) return invalid_file("style_layout.json must be a JSON object").with_file(path);
  for (const auto& [key, value] : j.items())
    if (key != "layout" && key != "row_height")
      return invalid_file("style_layout.json has an unknown key '", key, "' (known: layout, row_height)").with_file(path);
  StyleLayout layout;
  const auto kind = j.find("layout");
  if (kind == j.end() || !kind->is_string() || (*kind != "squash" && *kind != "wrap"))
    return invalid_file("style_layout.json 'layout' must be \"squash\" or \"wrap\"")
        .with_file(path)
        .with_expected_found("\"squash\" or \"wrap\"", kind == j.end() ? "nothing" : dump_json(*kind));
  layout.kind = *kind == "wrap" ? StyleLayout::Kind::kWrap : StyleLayout::Kind::kSquash;
  if (layout.kind == StyleLayout::Kind::kWrap) {
    const auto rh = j.find("row_height");
    if (rh == j.end() || !rh->is_number_integer() || rh->get<int64_t>() < 1 || rh->get<int64_t>() > square ||
        square % rh->get<int64_t>() != 0)
      return invalid_file("style_layout.json 'row_height' must be a whole number dividing the encoder's image size ",
                          square)
          .with_file(path)
          .with_expected_found(str_cat("a divisor of ", square), rh == j.end() ? "nothing" : dump_json(*rh));
    layout.row_height = int(rh->get<int64_t>());
  }
  return layout;
}

}  // namespace

Result<std::unique_ptr<StyleEncoder>> Dinov2StyleEncoder::open_if_present(const std::string& model_dir,
                                                                          ThreadPool& pool) {
  const std::string dir = model_dir + "/style_encoder";
  struct stat sb {};
  if (::stat((dir + "/config.json").c_str(), &sb) != 0) return std::unique_ptr<StyleEncoder>();
  QUILL_ASSIGN_OR_RETURN(auto files, ModelFiles::open(dir));
  auto enc = std::make_unique<Dinov2StyleEncoder>();
  QUILL_ASSIGN_OR_RETURN(enc->encoder_, Dinov2Encoder::load(files, pool));
  QUILL_ASSIGN_OR_RETURN(int size, enc->square_size());
  QUILL_ASSIGN_OR_RETURN(enc->layout_, read_style_layout(dir, size));
  return std::unique_ptr<StyleEncoder>(std::move(enc));
}

Result<int> Dinov2StyleEncoder::square_size() const {
  const int size = int(encoder_->config().image_h);  // square references; the config may say otherwise
  if (encoder_->config().image_w != size)
    return unsupported("style encoders with non-square image size (", encoder_->config().image_h, "x",
                       encoder_->config().image_w, ") are not supported");
  return size;
}

Result<std::vector<float>> Dinov2StyleEncoder::embed_pixels(const Tensor& pixels) {
  std::vector<float> pooled(static_cast<size_t>(encoder_->hidden_size()));
  QUILL_RETURN_IF_ERROR(encoder_->encode(pixels.reshape({1, 3, pixels.dim(1), pixels.dim(2)}), pooled.data()));
  return pooled;
}

Result<std::vector<float>> Dinov2StyleEncoder::embed(const std::string& image_path) {
  QUILL_ASSIGN_OR_RETURN(int size, square_size());
  QUILL_ASSIGN_OR_RETURN(Tensor pixels, load_style_reference(image_path, size, layout_));
  return embed_pixels(pixels);
}

Result<std::vector<float>> Dinov2StyleEncoder::embed_image(const Image& image) {
  QUILL_ASSIGN_OR_RETURN(int size, square_size());
  QUILL_ASSIGN_OR_RETURN(Tensor pixels, style_reference_from_image(image, size, layout_));
  return embed_pixels(pixels);
}

}  // namespace quill
