#include "models/time_text_embed.h"

#include <algorithm>
#include <cstring>

#include "models/dit_common.h"

namespace quill {

Result<TimeTextEmbed> TimeTextEmbed::load(const ModelFiles& f, int64_t D, int64_t pooled_dim) {
  TimeTextEmbed e;
  e.dim = D;
  QUILL_ASSIGN_OR_RETURN(e.time_linear_1,
                         load_linear(f, "time_text_embed.timestep_embedder.linear_1", kTimeChannels, D, true));
  QUILL_ASSIGN_OR_RETURN(e.time_linear_2, load_linear(f, "time_text_embed.timestep_embedder.linear_2", D, D, true));
  QUILL_ASSIGN_OR_RETURN(e.text_linear_1,
                         load_linear(f, "time_text_embed.text_embedder.linear_1", pooled_dim, D, true));
  QUILL_ASSIGN_OR_RETURN(e.text_linear_2, load_linear(f, "time_text_embed.text_embedder.linear_2", D, D, true));
  return e;
}

size_t TimeTextEmbed::linear_scratch_floats(const ThreadPool& pool) const {
  size_t s = 0;
  for (const Linear* l : {&time_linear_1, &time_linear_2, &text_linear_1, &text_linear_2})
    s = std::max(s, op_linear_scratch_floats(l->weight, pool));
  return s;
}

Status TimeTextEmbed::forward(const float* timestep, const float* pooled, int64_t B, float* tproj, float* tmp,
                              float* temb, float* temb_act, Dispatcher& ops) const {
  const int64_t D = dim;
  timestep_sinusoid(timestep, B, kTimeChannels, tproj);
  QUILL_RETURN_IF_ERROR(ops.linear(tproj, B, time_linear_1.weight, time_linear_1.bias_ptr(), temb_act));
  QUILL_RETURN_IF_ERROR(ops.silu(temb_act, B * D));
  QUILL_RETURN_IF_ERROR(ops.linear(temb_act, B, time_linear_2.weight, time_linear_2.bias_ptr(), temb));
  QUILL_RETURN_IF_ERROR(ops.linear(pooled, B, text_linear_1.weight, text_linear_1.bias_ptr(), temb_act));
  QUILL_RETURN_IF_ERROR(ops.silu(temb_act, B * D));
  QUILL_RETURN_IF_ERROR(ops.linear(temb_act, B, text_linear_2.weight, text_linear_2.bias_ptr(), tmp));
  QUILL_RETURN_IF_ERROR(ops.add(temb, tmp, B, D, B));
  std::memcpy(temb_act, temb, size_t(B * D) * sizeof(float));
  return ops.silu(temb_act, B * D);
}

}  // namespace quill
