// Linear over quantized (and half-precision) weights:
//   y[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]),  x f32 [M, K], W [N, K], y f32 [M, N].
//
// Weight types and modes:
//   tq2_0_g128  kExact: f32 activations x exactly decoded weights (f32 FMA; on AVX-512 VNNI the
//                       activations as 22-bit integers per 128-group in three int8 digits, exact
//                       integer sums; on AMX a bf16x3 split).
//               kA8:    activations quantized per row to int8 (absmax / 127), int8 x ternary dot
//                       products per 128-group in int32 (VNNI), times the group scale, in f32.
//   q8_0        kExact: f32 x decoded weights.  kA8: as tq2 with 32-groups (int8 x int8 VNNI).
//   bf16        kExact: f32 x decoded weights.  kA8: activations rounded to bf16 (nearest even),
//                       bf16 pair products accumulated in f32 (AVX512_BF16 dpbf16).
//   f16         f32 x decoded weights (both modes).
//   f8_e4m3     f32 x decoded weights times the per-row scale `w_scale` (both modes).
// Every path has a scalar reference; the AVX-512, AVX2 and AMX kernels are chosen once per ISA level
// (backend/cpu/kernel_table.cpp).
// quant_linear allocates nothing per call: `scratch` holds quant_linear_scratch_bytes(M, ...) bytes
// (any M' >= M works too; the work is chunked so scratch does not grow past kQuantMChunk rows). The
// one exception is a weight's first call on a kernel set that packs its panels once (bf16 weights
// in A8 mode on AVX-512: prepacked_panels.h), which allocates that weight's packed copy.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/thread_pool.h"
#include "quill/status.h"
#include "quill/tensor.h"

namespace quill::quant {

enum class QuantMode { kExact, kA8 };
const char* quant_mode_name(QuantMode m);

// Rows of x processed per pass (int8 activations: 2048, so a big GEMM decodes each weight panel
// fewer times; wider activation formats: 512); scratch for activations never exceeds this many rows.
inline constexpr int64_t kQuantMChunk = 2048;

bool quant_linear_supports(DType dtype);
size_t quant_linear_scratch_bytes(int64_t M, const Tensor& W, QuantMode mode, const ThreadPool& pool);
Status quant_linear(const float* x, int64_t M, const Tensor& W, const float* w_scale, const float* bias, float* y,
                    void* scratch, QuantMode mode, ThreadPool& pool);

// The mode a model's linear with weights of `dtype` runs in: QUILL_TERNARY_MODE=exact chooses exact
// for every type, =a8 chooses A8 (int8 activations for tq2_0_g128 / q8_0, bf16 ones for bf16) for
// every type the CPU level has an A8 kernel for, the rest exact; unset, tq2_0_g128 runs A8 where
// the CPU has an int8 kernel for it (AVX-512 VNNI, AMX or AVX2; ternary models are trained with int8
// activations, BitNet-style; docs/FORMATS.md has the measurements behind this default) and every
// other type exact.
QuantMode quant_mode_for(DType dtype);

// Whether this CPU's kernel level has an A8 kernel (not only the scalar reference) for `dtype`.
bool has_a8_kernel(DType dtype);

}  // namespace quill::quant
