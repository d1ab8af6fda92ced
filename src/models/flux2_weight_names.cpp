#include "models/flux2_weight_names.h"

#include <cmath>
#include <utility>

namespace quill {

namespace {

constexpr const char* kBflPrefix = "model.diffusion_model.";

// Top-level modules: diffusers name -> BFL name.
constexpr std::pair<const char*, const char*> kTopLevel[] = {
    {"x_embedder", "img_in"},
    {"context_embedder", "txt_in"},
    {"time_guidance_embed.timestep_embedder.linear_1", "time_in.in_layer"},
    {"time_guidance_embed.timestep_embedder.linear_2", "time_in.out_layer"},
    {"time_guidance_embed.guidance_embedder.linear_1", "guidance_in.in_layer"},
    {"time_guidance_embed.guidance_embedder.linear_2", "guidance_in.out_layer"},
    {"double_stream_modulation_img.linear", "double_stream_modulation_img.lin"},
    {"double_stream_modulation_txt.linear", "double_stream_modulation_txt.lin"},
    {"single_stream_modulation.linear", "single_stream_modulation.lin"},
    {"norm_out.linear", "final_layer.adaLN_modulation.1"},
    {"proj_out", "final_layer.linear"},
};

struct BlockName {
  const char* diffusers;
  const char* bfl;
  int part;
};
constexpr BlockName kDoubleBlock[] = {
    {"attn.to_q", "img_attn.qkv", 0},
    {"attn.to_k", "img_attn.qkv", 1},
    {"attn.to_v", "img_attn.qkv", 2},
    {"attn.add_q_proj", "txt_attn.qkv", 0},
    {"attn.add_k_proj", "txt_attn.qkv", 1},
    {"attn.add_v_proj", "txt_attn.qkv", 2},
    {"attn.to_out.0", "img_attn.proj", -1},
    {"attn.to_add_out", "txt_attn.proj", -1},
    {"ff.linear_in", "img_mlp.0", -1},
    {"ff.linear_out", "img_mlp.2", -1},
    {"ff_context.linear_in", "txt_mlp.0", -1},
    {"ff_context.linear_out", "txt_mlp.2", -1},
    {"attn.norm_q", "img_attn.norm.query_norm", -1},
    {"attn.norm_k", "img_attn.norm.key_norm", -1},
    {"attn.norm_added_q", "txt_attn.norm.query_norm", -1},
    {"attn.norm_added_k", "txt_attn.norm.key_norm", -1},
};
constexpr BlockName kSingleBlock[] = {
    {"attn.to_qkv_mlp_proj", "linear1", -1},
    {"attn.to_out", "linear2", -1},
    {"attn.norm_q", "norm.query_norm", -1},
    {"attn.norm_k", "norm.key_norm", -1},
};

// "transformer_blocks.3.attn.to_q" with block prefix "transformer_blocks." -> ("3", "attn.to_q").
bool split_block(const std::string& name, const std::string& block, std::string* index, std::string* rest) {
  if (name.rfind(block, 0) != 0) return false;
  const size_t dot = name.find('.', block.size());
  if (dot == std::string::npos) return false;
  *index = name.substr(block.size(), dot - block.size());
  *rest = name.substr(dot + 1);
  return true;
}

}  // namespace

Flux2WeightReader::Flux2WeightReader(const ModelFiles& files) : files_(files) {
  if (files.has("img_in.weight")) {
    bfl_ = true;
  } else if (files.has(std::string(kBflPrefix) + "img_in.weight")) {
    bfl_ = true;
    prefix_ = kBflPrefix;
  }
}

Flux2WeightReader::Source Flux2WeightReader::source(const std::string& name) const {
  if (!bfl_) return {name, -1};
  for (const auto& [d, b] : kTopLevel)
    if (name == d) return {prefix_ + b, -1};
  std::string index, rest;
  if (split_block(name, "transformer_blocks.", &index, &rest)) {
    for (const BlockName& n : kDoubleBlock)
      if (rest == n.diffusers) return {str_cat(prefix_, "double_blocks.", index, ".", n.bfl), n.part};
  } else if (split_block(name, "single_transformer_blocks.", &index, &rest)) {
    for (const BlockName& n : kSingleBlock)
      if (rest == n.diffusers) return {str_cat(prefix_, "single_blocks.", index, ".", n.bfl), n.part};
  }
  return {prefix_ + name, -1};  // not a FLUX.2 weight: reported missing under its own name
}

bool Flux2WeightReader::has_linear(const std::string& name) const {
  return files_.has(source(name).name + ".weight");
}

Result<Linear> Flux2WeightReader::linear(const std::string& name, int64_t in, int64_t out) const {
  const Source s = source(name);
  if (s.part < 0) return load_linear(files_, s.name, in, out, false);
  // A third of a fused qkv [3 * out, in].
  const std::string fused = s.name + ".weight";
  QUILL_ASSIGN_OR_RETURN(Tensor w, files_.get(fused));
  if (w.shape() != Shape({3 * out, in}))
    return invalid_file("fused q/k/v weight shape mismatch")
        .with_tensor(fused)
        .with_file(files_.path())
        .with_expected_found(Shape({3 * out, in}).to_string(), w.shape().to_string());
  if (w.dtype() == DType::kF8E4M3) {
    QUILL_ASSIGN_OR_RETURN(std::vector<float> scale, load_f32(files_, fused + "_scale", {3 * out}));
    w = w.with_row_scale(std::make_shared<const std::vector<float>>(std::move(scale)));
  }
  Linear l;
  l.in = in;
  l.out = out;
  QUILL_ASSIGN_OR_RETURN(l.weight, weight_rows(w, s.part * out, (s.part + 1) * out));
  return l;
}

Result<std::vector<float>> Flux2WeightReader::norm(const std::string& name, int64_t dim) const {
  const Source s = source(name);
  return load_f32(files_, s.name + (bfl_ ? ".scale" : ".weight"), {dim});
}

Result<nlohmann::json> Flux2WeightReader::infer_config() const {
  auto shape_of = [&](const std::string& name) -> Result<Shape> {
    QUILL_ASSIGN_OR_RETURN(Tensor t, files_.get(prefix_ + name));
    return t.shape();
  };
  auto matrix = [&](const std::string& name) -> Result<Shape> {
    QUILL_ASSIGN_OR_RETURN(Shape s, shape_of(name));
    if (s.rank() != 2 || s[0] <= 0 || s[1] <= 0)
      return invalid_file("expected a 2-D weight, found ", s.to_string()).with_tensor(prefix_ + name).with_file(files_.path());
    return s;
  };
  QUILL_ASSIGN_OR_RETURN(Shape img_in, matrix("img_in.weight"));
  QUILL_ASSIGN_OR_RETURN(Shape txt_in, matrix("txt_in.weight"));
  QUILL_ASSIGN_OR_RETURN(Shape time_in, matrix("time_in.in_layer.weight"));
  QUILL_ASSIGN_OR_RETURN(Shape final_linear, matrix("final_layer.linear.weight"));
  const int64_t D = img_in[0];
  int64_t doubles = 0, singles = 0;
  while (files_.has(str_cat(prefix_, "double_blocks.", doubles, ".img_attn.qkv.weight"))) ++doubles;
  while (files_.has(str_cat(prefix_, "single_blocks.", singles, ".linear1.weight"))) ++singles;
  const std::string q_norm =
      doubles > 0 ? "double_blocks.0.img_attn.norm.query_norm.scale" : "single_blocks.0.norm.query_norm.scale";
  QUILL_ASSIGN_OR_RETURN(Shape qn, shape_of(q_norm));
  const int64_t head_dim = qn.rank() == 1 ? qn[0] : 0;
  if (head_dim <= 0 || head_dim % 8 || D % head_dim)
    return invalid_file("cannot infer the head layout: q norm [", head_dim, "] against width ", D,
                        " (needs head_dim a multiple of 8 dividing the width)")
        .with_file(files_.path());
  int64_t F = 0;
  if (doubles > 0) {
    QUILL_ASSIGN_OR_RETURN(Shape mlp_in, matrix("double_blocks.0.img_mlp.0.weight"));
    F = mlp_in[0] / 2;
  } else if (singles > 0) {
    QUILL_ASSIGN_OR_RETURN(Shape l1, matrix("single_blocks.0.linear1.weight"));
    F = (l1[0] - 3 * D) / 2;
  }
  if (F <= 0) return invalid_file("cannot infer the MLP width (no blocks?)").with_file(files_.path());
  // diffusers sizes the MLP as int(D * mlp_ratio): pick the ratio that gives F back exactly.
  double ratio = double(F) / double(D);
  while (int64_t(double(D) * ratio) < F) ratio = std::nextafter(ratio, 1e9);
  nlohmann::json c = {{"_class_name", "Flux2Transformer2DModel"},
                      {"patch_size", 1},
                      {"in_channels", img_in[1]},
                      {"out_channels", final_linear[0]},
                      {"num_layers", doubles},
                      {"num_single_layers", singles},
                      {"attention_head_dim", head_dim},
                      {"num_attention_heads", D / head_dim},
                      {"joint_attention_dim", txt_in[1]},
                      {"timestep_guidance_channels", time_in[1]},
                      {"mlp_ratio", ratio},
                      {"axes_dims_rope", std::vector<int64_t>(4, head_dim / 4)},
                      {"rope_theta", 2000},
                      {"eps", 1e-6},
                      {"guidance_embeds", files_.has(prefix_ + "guidance_in.in_layer.weight")}};
  return c;
}

}  // namespace quill
