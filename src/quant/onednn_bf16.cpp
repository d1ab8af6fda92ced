#include "quant/onednn_bf16.h"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#if defined(QUILL_HAVE_DNNL)
#include <dnnl.hpp>
#endif

namespace quill::quant {

#if defined(QUILL_HAVE_DNNL)
namespace {

using dnnl::memory;

struct Prim {
  dnnl::matmul mm;
  memory::desc weights;  // the layout this primitive wants its weights in
};

struct Reordered {
  const uint16_t* src;
  std::weak_ptr<const void> owner;  // the weight's storage; expired = the entry is stale
  int64_t N, K;
  memory::desc desc;
  memory mem;
};

bool same_owner(const std::weak_ptr<const void>& a, const std::shared_ptr<const void>& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

struct Cache {
  std::mutex mu;
  std::unique_ptr<dnnl::engine> eng;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, bool>, Prim> prims;
  std::vector<Reordered> weights;
};

Cache& cache() {
  static Cache c;
  return c;
}

memory reorder_weights(Cache& c, const uint16_t* w, int64_t N, int64_t K, const memory::desc& want) {
  const memory::desc plain({K, N}, memory::data_type::bf16, memory::dims{1, K});  // W [N, K] read as W^T
  memory src(plain, *c.eng, const_cast<uint16_t*>(w)), dst(want, *c.eng);
  dnnl::stream st(*c.eng);
  dnnl::reorder(src, dst).execute(st, src, dst);
  st.wait();
  return dst;
}

// The reordered copy of weight `w`, made on first use and kept while its owner lives.
memory reordered_weights(Cache& c, const uint16_t* w, const std::shared_ptr<const void>& owner, int64_t N, int64_t K,
                         const memory::desc& want) {
  if (!owner) return reorder_weights(c, w, N, K, want);
  std::erase_if(c.weights, [](const Reordered& r) { return r.owner.expired(); });
  for (const Reordered& r : c.weights)
    if (r.src == w && same_owner(r.owner, owner) && r.N == N && r.K == K && r.desc == want) return r.mem;
  memory dst = reorder_weights(c, w, N, K, want);
  c.weights.push_back({w, owner, N, K, want, dst});
  return dst;
}

// A matmul primitive descriptor for a . b (+ bias) -> c, in either oneDNN API; throws dnnl::error
// where this oneDNN has no such matmul on this CPU.
dnnl::matmul::primitive_desc matmul_desc(const dnnl::engine& eng, const memory::desc& a, const memory::desc& b,
                                         const memory::desc* bias, const memory::desc& c) {
#if DNNL_VERSION_MAJOR >= 3
  return bias ? dnnl::matmul::primitive_desc(eng, a, b, *bias, c) : dnnl::matmul::primitive_desc(eng, a, b, c);
#else
  return bias ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, *bias, c), eng)
              : dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), eng);
#endif
}

}  // namespace

// Whether this oneDNN, on this CPU, has a bf16 matmul at all: it has none on CPUs without bf16
// support (or capped below it by ONEDNN_MAX_CPU_ISA), and the call would then fail in the forward.
// Asked once, with the layouts the real calls use.
bool onednn_bf16_available() {
  static const bool available = [] {
    try {
      const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
      const int64_t M = 1, K = 64, N = 32;
      const memory::desc a_md({M, K}, memory::data_type::bf16, memory::dims{K, 1});
      const memory::desc b_any({K, N}, memory::data_type::bf16, memory::format_tag::any);
      const memory::desc c_md({M, N}, memory::data_type::f32, memory::dims{N, 1});
      (void)matmul_desc(eng, a_md, b_any, nullptr, c_md);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return available;
}

Status onednn_bf16_matmul(const uint16_t* a, int64_t M, int64_t K, int64_t lda, const uint16_t* w,
                          const std::shared_ptr<const void>& w_owner, int64_t N, const float* bias, float* y) {
  using namespace dnnl;
  try {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    if (!c.eng) c.eng = std::make_unique<engine>(engine::kind::cpu, 0);
    const memory::desc a_md({M, K}, memory::data_type::bf16, memory::dims{lda, 1});
    const memory::desc c_md({M, N}, memory::data_type::f32, memory::dims{N, 1});
    const memory::desc bias_md({1, N}, memory::data_type::f32, memory::dims{N, 1});
    auto key = std::make_tuple(M, K, N, lda, bias != nullptr);
    auto it = c.prims.find(key);
    if (it == c.prims.end()) {
      const memory::desc b_any({K, N}, memory::data_type::bf16, memory::format_tag::any);
      const matmul::primitive_desc pd = matmul_desc(*c.eng, a_md, b_any, bias ? &bias_md : nullptr, c_md);
      it = c.prims.emplace(key, Prim{matmul(pd), pd.weights_desc()}).first;
    }
    const memory wm = reordered_weights(c, w, w_owner, N, K, it->second.weights);
    memory am(a_md, *c.eng, const_cast<uint16_t*>(a)), cm(c_md, *c.eng, y);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, cm}};
    if (bias) args.emplace(DNNL_ARG_BIAS, memory(bias_md, *c.eng, const_cast<float*>(bias)));
    stream st(*c.eng);
    it->second.mm.execute(st, args);
    st.wait();
  } catch (const dnnl::error& e) {
    return internal_error("oneDNN bf16 matmul failed: ", e.what());
  }
  return Status::ok();
}
#else
bool onednn_bf16_available() { return false; }
Status onednn_bf16_matmul(const uint16_t*, int64_t, int64_t, int64_t, const uint16_t*,
                          const std::shared_ptr<const void>&, int64_t, const float*, float*) {
  return unsupported("built without oneDNN");
}
#endif

}  // namespace quill::quant
