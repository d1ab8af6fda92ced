#include "quant/onednn_bf16.h"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#if defined(QUILL_HAVE_DNNL)
#include <dnnl.hpp>
#endif

namespace quill::quant {

#if defined(QUILL_HAVE_DNNL)
namespace {

struct Cache {
  std::mutex mu;
  std::unique_ptr<dnnl::engine> eng;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, dnnl::matmul> prims;
};

Cache& cache() {
  static Cache c;
  return c;
}

}  // namespace

bool onednn_bf16_available() { return true; }

Status onednn_bf16_matmul(const uint16_t* a, int64_t M, int64_t K, int64_t lda, const uint16_t* w, int64_t N,
                          float* y) {
  using namespace dnnl;
  try {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    if (!c.eng) c.eng = std::make_unique<engine>(engine::kind::cpu, 0);
    const memory::desc a_md({M, K}, memory::data_type::bf16, memory::dims{lda, 1});
    const memory::desc b_md({K, N}, memory::data_type::bf16, memory::dims{1, K});  // W [N, K] read as W^T
    const memory::desc c_md({M, N}, memory::data_type::f32, memory::dims{N, 1});
    auto key = std::make_tuple(M, K, N, lda);
    auto it = c.prims.find(key);
    if (it == c.prims.end()) {
#if DNNL_VERSION_MAJOR >= 3
      matmul mm(matmul::primitive_desc(*c.eng, a_md, b_md, c_md));
#else
      matmul mm(matmul::primitive_desc(matmul::desc(a_md, b_md, c_md), *c.eng));
#endif
      it = c.prims.emplace(key, mm).first;
    }
    memory am(a_md, *c.eng, const_cast<uint16_t*>(a)), bm(b_md, *c.eng, const_cast<uint16_t*>(w)), cm(c_md, *c.eng, y);
    stream st(*c.eng);
    it->second.execute(st, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    st.wait();
  } catch (const dnnl::error& e) {
    return internal_error("oneDNN bf16 matmul failed: ", e.what());
  }
  return Status::ok();
}
#else
bool onednn_bf16_available() { return false; }
Status onednn_bf16_matmul(const uint16_t*, int64_t, int64_t, int64_t, const uint16_t*, int64_t, float*) {
  return unsupported("built without oneDNN");
}
#endif

}  // namespace quill::quant
