#include "backend/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "backend/cuda/device_memory.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/lt_gemm.h"
#include "backend/cuda/weight_cache.h"
#include "core/function_ref.h"

namespace quill::cuda {

namespace {

constexpr size_t kAlign = 256;
constexpr size_t kNone = ~size_t(0);

size_t align_up(size_t v) { return (v + kAlign - 1) & ~(kAlign - 1); }

// One op's transfers: host inputs get device slots (copied in through pinned memory), scratch
// slots are device-only, and outputs are copied back from a slot into host memory after the
// kernels succeeded. Slots are offsets into one device buffer and one pinned buffer.
class Staging {
 public:
  size_t in(const void* host, size_t bytes) {
    if (!host) return kNone;
    const size_t slot = take(bytes);
    ins_.push_back({host, bytes, slot, pinned_});
    pinned_ = align_up(pinned_ + bytes);
    return slot;
  }
  size_t scratch(size_t bytes) { return take(bytes); }
  void out(size_t slot, void* host, size_t bytes) {
    outs_.push_back({host, bytes, slot, pinned_});
    pinned_ = align_up(pinned_ + bytes);
  }
  template <typename T>
  T* dev(size_t slot) const {
    return slot == kNone ? nullptr : reinterpret_cast<T*>(static_cast<unsigned char*>(base_) + slot);
  }

  struct Copy {
    const void* host;
    size_t bytes, slot, pinned;
  };
  size_t device_bytes() const { return device_; }
  size_t pinned_bytes() const { return pinned_; }
  const std::vector<Copy>& ins() const { return ins_; }
  const std::vector<Copy>& outs() const { return outs_; }
  void set_base(void* base) { base_ = base; }

 private:
  size_t take(size_t bytes) {
    const size_t slot = device_;
    device_ = align_up(device_ + bytes);
    return slot;
  }
  std::vector<Copy> ins_, outs_;
  size_t device_ = 0, pinned_ = 0;
  void* base_ = nullptr;
};

size_t floats(int64_t n) { return size_t(n) * sizeof(float); }
// Bytes of `rows` rows of `D` floats that are `stride` floats apart (a chunk of a modulation vector).
size_t strided_rows_bytes(int64_t rows, int64_t D, int64_t stride) { return floats((rows - 1) * stride + D); }

}  // namespace

struct CudaBackend::Impl {
  int device = 0;
  cudaDeviceProp props{};
  cudaStream_t stream = nullptr;
  std::unique_ptr<LtGemm> lt;
  WeightCache weights;
  DeviceBuffer activations;
  PinnedBuffer staging;
  std::mutex mu;  // one stream and one set of buffers: ops run one at a time
  Status broken;  // set once the CUDA context is unusable

  ~Impl() {
    weights.clear();
    lt.reset();
    if (stream) cudaStreamDestroy(stream);
  }

  // After a failed op: clear a non-sticky error; if the context itself is gone, remember it.
  void note_failure(const Status& st) {
    (void)cudaGetLastError();
    const cudaError_t e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess && broken.is_ok()) {
      broken = cuda_status(e, "checking the device after a failed op (the CUDA context is unusable)");
      broken.with_context(st.message());
    }
  }

  // Copy inputs in, run `kernels`, copy outputs back; host memory is written only on success.
  Status execute(Staging& st, FunctionRef<Status(const Staging&)> kernels, const char* what) {
    std::lock_guard<std::mutex> lock(mu);
    if (!broken.is_ok()) return broken;
    Status s = execute_locked(st, kernels, what);
    if (!s.is_ok()) note_failure(s);
    return s;
  }

  Status execute_locked(Staging& st, FunctionRef<Status(const Staging&)> kernels, const char* what) {
    QUILL_CUDA_TRY(cudaSetDevice(device), "selecting the device");
    QUILL_RETURN_IF_ERROR(activations.reserve(st.device_bytes()));
    QUILL_RETURN_IF_ERROR(staging.reserve(st.pinned_bytes()));
    st.set_base(activations.data());
    auto* pinned = static_cast<unsigned char*>(staging.data());
    for (const auto& c : st.ins()) {
      std::memcpy(pinned + c.pinned, c.host, c.bytes);
      QUILL_CUDA_TRY(cudaMemcpyAsync(st.dev<void>(c.slot), pinned + c.pinned, c.bytes, cudaMemcpyHostToDevice, stream),
                     what);
    }
    QUILL_RETURN_IF_ERROR(kernels(st));
    for (const auto& c : st.outs())
      QUILL_CUDA_TRY(cudaMemcpyAsync(pinned + c.pinned, st.dev<void>(c.slot), c.bytes, cudaMemcpyDeviceToHost, stream),
                     what);
    QUILL_CUDA_TRY(cudaStreamSynchronize(stream), what);
    for (const auto& c : st.outs()) std::memcpy(const_cast<void*>(c.host), pinned + c.pinned, c.bytes);
    return Status::ok();
  }

  Result<const DeviceWeight*> weight(const Tensor& W) {
    std::lock_guard<std::mutex> lock(mu);
    if (!broken.is_ok()) return broken;
    QUILL_CUDA_TRY(cudaSetDevice(device), "selecting the device");
    auto r = weights.get(W, stream, staging);
    if (!r.is_ok()) note_failure(r.status());
    return r;
  }
};

int CudaBackend::device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(int device) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda_status(e, "looking for a CUDA device (no usable driver or device; the engine stays on the CPU)");
  }
  if (count == 0) return make_error(ErrorCode::kDevice, "no CUDA device found; the engine stays on the CPU");
  if (device < 0 || device >= count)
    return invalid_argument("CUDA device ", device, " does not exist (", count, " device(s))");
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  QUILL_CUDA_TRY(cudaSetDevice(device), "selecting the device");
  QUILL_CUDA_TRY(cudaGetDeviceProperties(&impl->props, device), "reading the device properties");
  if (impl->props.major < 8)
    return unsupported("CUDA device ", device, " (", impl->props.name, ") is sm_", impl->props.major, impl->props.minor,
                       "; Quill's CUDA kernels need sm_80 or later");
  QUILL_CUDA_TRY(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking), "creating a stream");
  QUILL_ASSIGN_OR_RETURN(impl->lt, LtGemm::create());
  return std::unique_ptr<CudaBackend>(new CudaBackend(std::move(impl)));
}

CudaBackend::CudaBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaBackend::~CudaBackend() = default;

std::string CudaBackend::description() const {
  const auto& p = impl_->props;
  return str_cat(p.name, " (sm_", p.major, p.minor, ", ", p.multiProcessorCount, " SMs, ",
                 double(p.totalGlobalMem) / double(1ull << 30), " GiB)");
}
size_t CudaBackend::resident_weight_bytes() const { return impl_->weights.resident_bytes(); }
int64_t CudaBackend::weight_uploads() const { return impl_->weights.uploads(); }
void CudaBackend::clear_weights() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->weights.clear();
}

bool CudaBackend::supports(OpKind kind, const Tensor* weight) const {
  switch (kind) {
    case OpKind::kLinear:
      return weight && WeightCache::can_hold(*weight);
    case OpKind::kAttention:
    case OpKind::kLayerNorm:
    case OpKind::kRmsNorm:
    case OpKind::kActivation:  // gelu_tanh, silu (relu answers kUnsupported and runs on the CPU)
    case OpKind::kResidual:
      return true;
    default:  // no CUDA kernel yet: the Dispatcher runs these on the CPU
      return false;
  }
}

Status CudaBackend::linear(const float* x, int64_t M, const Tensor& W, const float* bias, float* y, const OpScratch&) {
  if (!WeightCache::can_hold(W)) return unsupported("CUDA linear: weight ", W.describe());
  QUILL_ASSIGN_OR_RETURN(const DeviceWeight* w, impl_->weight(W));
  const int64_t N = w->N, K = w->K;
  Staging st;
  const size_t xs = st.in(x, floats(M * K));
  const size_t bs = st.in(bias, floats(N));
  const size_t xb = st.scratch(size_t(M * K) * 2);
  const size_t ys = st.scratch(floats(M * N));
  st.out(ys, y, floats(M * N));
  return impl_->execute(
      st,
      [&](const Staging& s) -> Status {
        auto* x_bf16 = s.dev<uint16_t>(xb);
        QUILL_CUDA_TRY(f32_to_bf16(s.dev<float>(xs), x_bf16, M * K, impl_->stream), "converting x to bf16");
        if (w->format == DeviceWeight::Format::kTernary) {
          QUILL_CUDA_TRY(ternary_gemm(x_bf16, w->data.as<uint8_t>(), w->scales.as<uint16_t>(), s.dev<float>(bs),
                                      s.dev<float>(ys), M, N, K, impl_->stream),
                         "launching the ternary GEMM");
          return Status::ok();
        }
        QUILL_RETURN_IF_ERROR(
            impl_->lt->bf16_linear(x_bf16, w->data.as<uint16_t>(), s.dev<float>(ys), M, N, K, impl_->stream));
        if (bias) QUILL_CUDA_TRY(add_bias(s.dev<float>(ys), s.dev<float>(bs), M, N, impl_->stream), "adding the bias");
        return Status::ok();
      },
      "running linear");
}

Status CudaBackend::attention(const float* q, const float* k, const float* v, float* out, int64_t B, int64_t Sq,
                              int64_t Skv, int64_t H, int64_t Dh, float scale, const OpScratch&) {
  const bool flash = flash_attention_supports(Dh);
  if (!flash && Dh > kAttentionF32MaxHeadDim)
    return unsupported("CUDA attention: head dim ", Dh, " (at most ", kAttentionF32MaxHeadDim, ")");
  const int64_t nq = B * Sq * H * Dh, nkv = B * Skv * H * Dh;
  Staging st;
  const size_t qs = st.in(q, floats(nq)), ks = st.in(k, floats(nkv)), vs = st.in(v, floats(nkv));
  const size_t os = st.scratch(floats(nq));
  size_t qb = kNone, kb = kNone, vb = kNone;
  if (flash) {
    qb = st.scratch(size_t(nq) * 2);
    kb = st.scratch(size_t(nkv) * 2);
    vb = st.scratch(size_t(nkv) * 2);
  }
  st.out(os, out, floats(nq));
  return impl_->execute(
      st,
      [&](const Staging& s) -> Status {
        cudaStream_t str = impl_->stream;
        if (!flash) {
          QUILL_CUDA_TRY(attention_f32(s.dev<float>(qs), s.dev<float>(ks), s.dev<float>(vs), s.dev<float>(os), B, Sq,
                                       Skv, H, Dh, scale, str),
                         "launching f32 attention");
          return Status::ok();
        }
        QUILL_CUDA_TRY(f32_to_bf16(s.dev<float>(qs), s.dev<uint16_t>(qb), nq, str), "converting q to bf16");
        QUILL_CUDA_TRY(f32_to_bf16(s.dev<float>(ks), s.dev<uint16_t>(kb), nkv, str), "converting k to bf16");
        QUILL_CUDA_TRY(f32_to_bf16(s.dev<float>(vs), s.dev<uint16_t>(vb), nkv, str), "converting v to bf16");
        QUILL_CUDA_TRY(flash_attention_bf16(s.dev<uint16_t>(qb), s.dev<uint16_t>(kb), s.dev<uint16_t>(vb),
                                            s.dev<float>(os), B, Sq, Skv, H, Dh, scale, str),
                       "launching flash attention");
        return Status::ok();
      },
      "running attention");
}

Status CudaBackend::layer_norm_modulate(const float* x, float* y, int64_t B, int64_t S, int64_t D, float eps,
                                        const float* shift, const float* scale, int64_t mod_stride) {
  if (B * S * D == 0) return Status::ok();
  Staging st;
  const size_t xs = st.in(x, floats(B * S * D));
  const size_t sh = st.in(shift, strided_rows_bytes(B, D, mod_stride));
  const size_t sc = st.in(scale, strided_rows_bytes(B, D, mod_stride));
  st.out(xs, y, floats(B * S * D));  // in place on the device
  return impl_->execute(
      st,
      [&](const Staging& s) -> Status {
        QUILL_CUDA_TRY(cuda::layer_norm_modulate(s.dev<float>(xs), s.dev<float>(xs), B, S, D, eps, s.dev<float>(sh),
                                                 s.dev<float>(sc), mod_stride, impl_->stream),
                       "launching layer_norm_modulate");
        return Status::ok();
      },
      "running layer_norm_modulate");
}

Status CudaBackend::layer_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w,
                               const float* b) {
  Staging st;
  const size_t xs = st.in(x, floats(rows * D));
  const size_t ws = st.in(w, floats(D)), bs = st.in(b, floats(D));
  st.out(xs, y, floats(rows * D));
  return impl_->execute(
      st,
      [&](const Staging& s) -> Status {
        QUILL_CUDA_TRY(cuda::layer_norm(s.dev<float>(xs), s.dev<float>(xs), rows, D, eps, s.dev<float>(ws),
                                        s.dev<float>(bs), impl_->stream),
                       "launching layer_norm");
        return Status::ok();
      },
      "running layer_norm");
}

Status CudaBackend::rms_norm(const float* x, float* y, int64_t rows, int64_t D, float eps, const float* w) {
  Staging st;
  const size_t xs = st.in(x, floats(rows * D));
  const size_t ws = st.in(w, floats(D));
  st.out(xs, y, floats(rows * D));
  return impl_->execute(
      st,
      [&](const Staging& s) -> Status {
        QUILL_CUDA_TRY(
            cuda::rms_norm(s.dev<float>(xs), s.dev<float>(xs), rows, D, eps, s.dev<float>(ws), impl_->stream),
            "launching rms_norm");
        return Status::ok();
      },
      "running rms_norm");
}

Status CudaBackend::gelu_tanh(float* x, int64_t n) {
  Staging st;
  const size_t xs = st.in(x, floats(n));
  st.out(xs, x, floats(n));
  return impl_->execute(
      st,
      [&](const Staging& s) -> Status {
        QUILL_CUDA_TRY(cuda::gelu_tanh(s.dev<float>(xs), n, impl_->stream), "launching gelu_tanh");
        return Status::ok();
      },
      "running gelu_tanh");
}

Status CudaBackend::silu(float* x, int64_t n) {
  Staging st;
  const size_t xs = st.in(x, floats(n));
  st.out(xs, x, floats(n));
  return impl_->execute(
      st,
      [&](const Staging& s) -> Status {
        QUILL_CUDA_TRY(cuda::silu(s.dev<float>(xs), n, impl_->stream), "launching silu");
        return Status::ok();
      },
      "running silu");
}

Status CudaBackend::gated_residual(float* x, const float* y, const float* gate, int64_t B, int64_t S, int64_t D,
                                   int64_t gate_stride) {
  if (B * S * D == 0) return Status::ok();
  Staging st;
  const size_t xs = st.in(x, floats(B * S * D));
  const size_t ys = st.in(y, floats(B * S * D));
  const size_t gs = st.in(gate, strided_rows_bytes(B, D, gate_stride));
  st.out(xs, x, floats(B * S * D));
  return impl_->execute(
      st,
      [&](const Staging& s) -> Status {
        QUILL_CUDA_TRY(cuda::gated_residual(s.dev<float>(xs), s.dev<float>(ys), s.dev<float>(gs), B, S, D, gate_stride,
                                            impl_->stream),
                       "launching gated_residual");
        return Status::ok();
      },
      "running gated_residual");
}

}  // namespace quill::cuda
