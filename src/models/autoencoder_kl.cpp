// AutoencoderKL: config and weight loading. The forward passes are in autoencoder_kl_forward.cpp,
// tiled decoding in autoencoder_kl_tiled.cpp.
#include "models/autoencoder_kl.h"

#include "io/json_util.h"

namespace quill {

namespace {
Status read_key(const nlohmann::json& j, const char* key, auto& out) {
  return read_json_key(j, key, out, "AutoencoderKL config");
}
}  // namespace

Result<AutoencoderKLConfig> AutoencoderKLConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_file("AutoencoderKL config must be a JSON object");
  AutoencoderKLConfig c;
  QUILL_RETURN_IF_ERROR(read_key(j, "in_channels", c.in_channels));
  QUILL_RETURN_IF_ERROR(read_key(j, "out_channels", c.out_channels));
  QUILL_RETURN_IF_ERROR(read_key(j, "block_out_channels", c.block_out_channels));
  QUILL_RETURN_IF_ERROR(read_key(j, "layers_per_block", c.layers_per_block));
  QUILL_RETURN_IF_ERROR(read_key(j, "latent_channels", c.latent_channels));
  QUILL_RETURN_IF_ERROR(read_key(j, "norm_num_groups", c.norm_num_groups));
  QUILL_RETURN_IF_ERROR(read_key(j, "scaling_factor", c.scaling_factor));
  QUILL_RETURN_IF_ERROR(read_key(j, "shift_factor", c.shift_factor));
  QUILL_RETURN_IF_ERROR(read_key(j, "use_quant_conv", c.use_quant_conv));
  QUILL_RETURN_IF_ERROR(read_key(j, "use_post_quant_conv", c.use_post_quant_conv));
  QUILL_RETURN_IF_ERROR(read_key(j, "mid_block_add_attention", c.mid_block_add_attention));
  if (auto it = j.find("sample_size"); it != j.end() && !it->is_null()) {
    // diffusers accepts an int or a [h, w] pair and tiles with the first value.
    const auto& v = it->is_array() && !it->empty() ? (*it)[0] : *it;
    if (!v.is_number_integer()) return invalid_file("AutoencoderKL config key 'sample_size' must be an integer");
    c.sample_size = v.get<int64_t>();
  }
  // AutoencoderKLFlux2 may give its decoder other widths; Quill's decoder uses block_out_channels.
  if (auto it = j.find("decoder_block_out_channels"); it != j.end() && !it->is_null()) {
    std::vector<int64_t> dec;
    QUILL_RETURN_IF_ERROR(read_key(j, "decoder_block_out_channels", dec));
    if (dec != c.block_out_channels)
      return unsupported("AutoencoderKL decoder_block_out_channels different from block_out_channels");
  }
  std::string act = "silu";
  QUILL_RETURN_IF_ERROR(read_key(j, "act_fn", act));
  if (act != "silu") return unsupported("AutoencoderKL act_fn '", act, "' (only silu)");
  for (const char* key : {"down_block_types", "up_block_types"}) {
    std::vector<std::string> types;
    QUILL_RETURN_IF_ERROR(read_key(j, key, types));
    const std::string want = key[0] == 'd' ? "DownEncoderBlock2D" : "UpDecoderBlock2D";
    if (!types.empty() && types.size() != c.block_out_channels.size())
      return invalid_file("AutoencoderKL config: ", key, " has ", types.size(), " entries, block_out_channels ",
                          c.block_out_channels.size());
    for (const auto& t : types)
      if (t != want) return unsupported("AutoencoderKL block type '", t, "' (only ", want, ")");
  }
  QUILL_RETURN_IF_ERROR(c.validate());
  return c;
}

Status AutoencoderKLConfig::validate() const {
  if (block_out_channels.empty() || block_out_channels.size() > 8)
    return invalid_file("AutoencoderKL config: block_out_channels must have 1 to 8 entries");
  if (norm_num_groups <= 0 || layers_per_block <= 0 || latent_channels <= 0 || in_channels <= 0 || out_channels <= 0)
    return invalid_file("AutoencoderKL config: channel counts, layers_per_block and norm_num_groups must be positive");
  for (int64_t ch : block_out_channels)
    if (ch <= 0 || ch % norm_num_groups != 0)
      return invalid_file("AutoencoderKL config: block channel count ", ch,
                          " is not a positive multiple of norm_num_groups ", norm_num_groups);
  if (!(scaling_factor != 0.0)) return invalid_file("AutoencoderKL config: scaling_factor must not be 0");
  if (sample_size <= 0) return invalid_file("AutoencoderKL config: sample_size must be positive");
  return Status::ok();
}

namespace {

// Reads the weights of one module tree, naming every tensor the diffusers way.
struct Loader {
  const VaeWeightSource& src;

  Result<Tensor> get(const std::string& name, const Shape& shape) {
    QUILL_ASSIGN_OR_RETURN(Tensor t, src(name, shape));
    // Old checkpoints store the attention projections as 1x1 convolutions.
    if (t.shape() != shape && t.numel() == shape.numel() && t.rank() == 4 && shape.rank() == 2 &&
        t.dim(0) == shape[0] && t.dim(2) == 1 && t.dim(3) == 1 && t.is_contiguous())
      t = t.reshape(shape);
    if (t.shape() != shape)
      return invalid_file("weight shape mismatch")
          .with_tensor(name)
          .with_expected_found(shape.to_string(), t.shape().to_string());
    return t;
  }
  Result<Conv2dWeights> conv(const std::string& p, int64_t in, int64_t out, int64_t k, int64_t stride = 1,
                             int64_t pad = -1) {
    QUILL_ASSIGN_OR_RETURN(Tensor w, get(p + ".weight", {out, in, k, k}));
    QUILL_ASSIGN_OR_RETURN(Tensor b, get(p + ".bias", {out}));
    if (pad < 0) pad = k / 2;
    return Conv2dWeights::create(w, b, stride, pad, p);
  }
  // diffusers' Downsample2D(padding=0): F.pad(x, (0, 1, 0, 1)) then a stride-2 3x3 convolution.
  Result<Conv2dWeights> downsample_conv(const std::string& p, int64_t ch) {
    QUILL_ASSIGN_OR_RETURN(Tensor w, get(p + ".weight", {ch, ch, 3, 3}));
    QUILL_ASSIGN_OR_RETURN(Tensor b, get(p + ".bias", {ch}));
    return Conv2dWeights::create(w, b, 2, 0, 0, 1, 1, p);
  }
  Result<Conv2dWeights> linear_as_conv(const std::string& p, int64_t ch) {
    QUILL_ASSIGN_OR_RETURN(Tensor w, get(p + ".weight", {ch, ch}));
    QUILL_ASSIGN_OR_RETURN(Tensor b, get(p + ".bias", {ch}));
    return Conv2dWeights::create(w.reshape({ch, ch, 1, 1}), b, 1, 0, p);
  }
  Status f32(const std::string& name, int64_t n, std::vector<float>& out) {
    QUILL_ASSIGN_OR_RETURN(Tensor t, get(name, {n}));
    out.resize(static_cast<size_t>(n));
    if (!t.is_contiguous() || !convert_to_f32(t.dtype(), t.data(), out.data(), n))
      return unsupported("cannot convert ", t.describe(), " to f32").with_tensor(name);
    return Status::ok();
  }
  Status norm(const std::string& p, int64_t ch, vae::GroupNormParams& g) {
    QUILL_RETURN_IF_ERROR(f32(p + ".weight", ch, g.gamma));
    return f32(p + ".bias", ch, g.beta);
  }
  Status resnet(const std::string& p, int64_t in, int64_t out, vae::ResnetBlock& r) {
    r.in = in;
    r.out = out;
    QUILL_RETURN_IF_ERROR(norm(p + ".norm1", in, r.norm1));
    QUILL_ASSIGN_OR_RETURN(r.conv1, conv(p + ".conv1", in, out, 3));
    QUILL_RETURN_IF_ERROR(norm(p + ".norm2", out, r.norm2));
    QUILL_ASSIGN_OR_RETURN(r.conv2, conv(p + ".conv2", out, out, 3));
    if (in != out) {
      QUILL_ASSIGN_OR_RETURN(r.conv_shortcut, conv(p + ".conv_shortcut", in, out, 1));
    }
    return Status::ok();
  }
  Status mid(const std::string& p, int64_t ch, bool attention, vae::MidBlock& m) {
    QUILL_RETURN_IF_ERROR(resnet(p + ".resnets.0", ch, ch, m.resnet0));
    m.has_attention = attention;
    if (attention) {
      auto& a = m.attention;
      const std::string q = p + ".attentions.0";
      a.channels = ch;
      QUILL_RETURN_IF_ERROR(norm(q + ".group_norm", ch, a.group_norm));
      QUILL_ASSIGN_OR_RETURN(a.to_q, linear_as_conv(q + ".to_q", ch));
      QUILL_ASSIGN_OR_RETURN(a.to_k, linear_as_conv(q + ".to_k", ch));
      QUILL_ASSIGN_OR_RETURN(a.to_v, linear_as_conv(q + ".to_v", ch));
      QUILL_ASSIGN_OR_RETURN(a.to_out, linear_as_conv(q + ".to_out.0", ch));
    }
    return resnet(p + ".resnets.1", ch, ch, m.resnet1);
  }
};

Status load_decoder(Loader& L, const AutoencoderKLConfig& c, vae::Coder& d) {
  const auto& ch = c.block_out_channels;
  const int64_t n = int64_t(ch.size());
  QUILL_ASSIGN_OR_RETURN(d.conv_in, L.conv("decoder.conv_in", c.latent_channels, ch.back(), 3));
  QUILL_RETURN_IF_ERROR(L.mid("decoder.mid_block", ch.back(), c.mid_block_add_attention, d.mid));
  int64_t prev = ch.back();
  d.blocks.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t out = ch[size_t(n - 1 - i)];
    const std::string p = str_cat("decoder.up_blocks.", i);
    auto& b = d.blocks[size_t(i)];
    b.resnets.resize(size_t(c.layers_per_block + 1));
    for (int64_t r = 0; r <= c.layers_per_block; ++r)
      QUILL_RETURN_IF_ERROR(L.resnet(str_cat(p, ".resnets.", r), r == 0 ? prev : out, out, b.resnets[size_t(r)]));
    b.has_resample = i != n - 1;
    if (b.has_resample) {
      QUILL_ASSIGN_OR_RETURN(b.resample_conv, L.conv(p + ".upsamplers.0.conv", out, out, 3));
    }
    prev = out;
  }
  QUILL_RETURN_IF_ERROR(L.norm("decoder.conv_norm_out", ch.front(), d.norm_out));
  QUILL_ASSIGN_OR_RETURN(d.conv_out, L.conv("decoder.conv_out", ch.front(), c.out_channels, 3));
  return Status::ok();
}

Status load_encoder(Loader& L, const AutoencoderKLConfig& c, vae::Coder& e) {
  const auto& ch = c.block_out_channels;
  const int64_t n = int64_t(ch.size());
  QUILL_ASSIGN_OR_RETURN(e.conv_in, L.conv("encoder.conv_in", c.in_channels, ch.front(), 3));
  int64_t prev = ch.front();
  e.blocks.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t out = ch[size_t(i)];
    const std::string p = str_cat("encoder.down_blocks.", i);
    auto& b = e.blocks[size_t(i)];
    b.resnets.resize(size_t(c.layers_per_block));
    for (int64_t r = 0; r < c.layers_per_block; ++r)
      QUILL_RETURN_IF_ERROR(L.resnet(str_cat(p, ".resnets.", r), r == 0 ? prev : out, out, b.resnets[size_t(r)]));
    b.has_resample = i != n - 1;
    if (b.has_resample) {
      QUILL_ASSIGN_OR_RETURN(b.resample_conv, L.downsample_conv(p + ".downsamplers.0.conv", out));
    }
    prev = out;
  }
  QUILL_RETURN_IF_ERROR(L.mid("encoder.mid_block", ch.back(), c.mid_block_add_attention, e.mid));
  QUILL_RETURN_IF_ERROR(L.norm("encoder.conv_norm_out", ch.back(), e.norm_out));
  QUILL_ASSIGN_OR_RETURN(e.conv_out, L.conv("encoder.conv_out", ch.back(), 2 * c.latent_channels, 3));
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<AutoencoderKL>> AutoencoderKL::load(const AutoencoderKLConfig& config,
                                                           const VaeWeightSource& source, bool with_encoder) {
  QUILL_RETURN_IF_ERROR(config.validate());
  std::unique_ptr<AutoencoderKL> m(new AutoencoderKL());
  m->config_ = config;
  Loader L{source};
  const int64_t lc = config.latent_channels;
  QUILL_RETURN_IF_ERROR(load_decoder(L, config, m->decoder_));
  if (config.use_post_quant_conv) {
    QUILL_ASSIGN_OR_RETURN(m->post_quant_conv_, L.conv("post_quant_conv", lc, lc, 1));
  }
  if (with_encoder) {
    QUILL_RETURN_IF_ERROR(load_encoder(L, config, m->encoder_));
    if (config.use_quant_conv) {
      QUILL_ASSIGN_OR_RETURN(m->quant_conv_, L.conv("quant_conv", 2 * lc, 2 * lc, 1));
    }
    m->has_encoder_ = true;
  }
  return m;
}

}  // namespace quill
