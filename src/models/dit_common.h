// Pieces every diffusers-style DiT shares: the sinusoidal timestep features, patchify (a conv with
// kernel = stride = p, as patches for a Linear) and unpatchify.
#pragma once

#include <cstdint>

namespace quill {

// diffusers get_timestep_embedding(t, dim, flip_sin_to_cos=True, downscale_freq_shift=0) in f32:
// out[n] = [cos(t f_0..f_{h-1}), sin(t f_0..f_{h-1})], f_i = exp(-ln(10000) i / h), h = dim / 2,
// and a final 0 when dim is odd.
void timestep_sinusoid(const float* t, int64_t B, int64_t dim, float* out);

// x [B, C, H, W] -> patches [B, (H/p)(W/p), C*p*p] in (c, ky, kx) order (a conv weight's layout).
// token_stride (floats per token row, default C*p*p) and channel_offset let two tensors be
// patchified into one row as if concatenated along channels (torch.cat(dim=1) then patchify).
void patchify(const float* x, int64_t B, int64_t C, int64_t H, int64_t W, int64_t p, float* patches,
              int64_t token_stride = 0, int64_t channel_offset = 0);

// tokens [B, (H/p)(W/p), p*p*C] in (ky, kx, c) order -> out [B, C, H, W]  (einsum nhwpqc->nchpwq).
void unpatchify(const float* tokens, int64_t B, int64_t C, int64_t H, int64_t W, int64_t p, float* out);

}  // namespace quill
