// Quantized variants of a line model, used only where they passed the model's quality gate
// (issue 20): <model>/variants.json records, per weight type, the evaluation of that variant next to
// the f32 weights (tools/gate_variants.py) and the FNV-1a 64 hash of the model.safetensors it was
// made from, so a retrained model does not inherit an old verdict. Variants are quantized in memory
// at load (quant::quantize_in_memory, `quill quantize`'s default policy); no file is stored for them.
#pragma once

#include <cstdint>
#include <string>

#include "quill/dtype.h"
#include "quill/status.h"

namespace quill {

// The weight type `weights` names ("" or "f32": the model's own f32 weights; else q8_0, fp8_e4m3,
// tq2_0_g128, bf16, f16) when variants.json says that variant passed for this model.safetensors.
// `ungated`: skip the check (how the gate itself evaluates a variant). Errors say what to do.
Result<DType> line_weights_for(const std::string& model_dir, const std::string& weights, bool ungated);

// FNV-1a 64 over a file's bytes (tools/gate_variants.py computes the same).
Result<uint64_t> fnv1a64_file(const std::string& path);

}  // namespace quill
