#include "io/architecture.h"

#include <vector>

namespace quill {

namespace {

bool any_contains(const std::vector<std::string>& names, std::string_view needle) {
  for (const auto& n : names)
    if (n.find(needle) != std::string::npos) return true;
  return false;
}
bool any_starts_with(const std::vector<std::string>& names, std::string_view prefix) {
  for (const auto& n : names)
    if (n.compare(0, prefix.size(), prefix) == 0) return true;
  return false;
}

// Weight-name fingerprints of the architectures Quill knows (diffusers / transformers naming,
// and BFL's original naming for FLUX).
std::string from_tensor_names(const std::vector<std::string>& names) {
  const bool mmdit_blocks = any_contains(names, "transformer_blocks.") && any_contains(names, ".attn.add_q_proj");
  if (any_contains(names, "double_stream_modulation_img") || any_contains(names, "single_stream_modulation"))
    return "Flux2Transformer2DModel";
  if (any_starts_with(names, "single_transformer_blocks.")) return "FluxTransformer2DModel";
  if (any_starts_with(names, "double_blocks.") && any_starts_with(names, "single_blocks."))
    return any_contains(names, "modulation_img") || any_contains(names, "double_stream_modulation")
               ? "Flux2Transformer2DModel"
               : "FluxTransformer2DModel";
  if (mmdit_blocks && any_starts_with(names, "context_embedder.") && any_starts_with(names, "pos_embed.pos_embed"))
    return "SD3Transformer2DModel";
  if (any_starts_with(names, "decoder.conv_in.")) {
    if (any_starts_with(names, "bn.running_mean")) return "AutoencoderKLFlux2";
    return "AutoencoderKL";
  }
  if (any_contains(names, "embeddings.cls_token")) {
    if (any_contains(names, "embeddings.register_tokens")) return "Dinov2WithRegistersModel";
    return "Dinov2Model";
  }
  return {};
}

}  // namespace

ArchitectureGuess detect_architecture(const ModelFiles& files) {
  const auto& c = files.config();
  if (auto it = c.find("_class_name"); it != c.end() && it->is_string() && !it->get_ref<const std::string&>().empty())
    return {it->get<std::string>(), "config _class_name"};
  if (auto it = c.find("architectures"); it != c.end() && it->is_array() && !it->empty() && (*it)[0].is_string())
    return {(*it)[0].get<std::string>(), "config architectures"};
  std::string by_names = from_tensor_names(files.tensor_names());
  if (!by_names.empty()) return {by_names, "tensor names"};
  if (auto it = c.find("general.architecture"); it != c.end() && it->is_string())
    return {it->get<std::string>(), "gguf general.architecture"};
  return {"unknown", ""};
}

}  // namespace quill
