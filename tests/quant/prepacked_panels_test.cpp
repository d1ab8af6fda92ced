// bf16 weights packed once into their kernel set's panels (quant/prepacked_panels.h): the same bits
// as decoding per call, dropped with their weight, and a memory-mapped weight's bytes intact after
// its pages are given back.
#include "quant/prepacked_panels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "../backend/op_test_util.h"
#include "../io/io_test_util.h"
#include "core/mapped_file.h"
#include "quant/formats.h"
#include "quant/quant_linear.h"

namespace quill::quant {
namespace {

using test::nan_filled;
using test::random_normal;

struct Prepack {
  explicit Prepack(bool on) { detail::set_prepack_for_tests(on ? 1 : 0); }
  ~Prepack() { detail::set_prepack_for_tests(-1); }
};

Tensor bf16_weight(int64_t N, int64_t K, uint32_t seed) {
  const std::vector<float> w = random_normal(size_t(N * K), seed, 0.05f);
  auto q = quantize_tensor(Tensor(const_cast<float*>(w.data()), DType::kF32, Shape{N, K}), DType::kBF16);
  EXPECT_TRUE(q.is_ok());
  return *q;
}

std::vector<float> run(const Tensor& W, const std::vector<float>& x, int64_t M, QuantMode mode, ThreadPool& pool) {
  std::vector<uint8_t> scratch(quant_linear_scratch_bytes(M, W, mode, pool));
  std::vector<float> y = nan_filled(size_t(M * W.dim(0)));
  const Status st = quant_linear(x.data(), M, W, nullptr, nullptr, y.data(), scratch.data(), mode, pool);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return y;
}

// Whether this machine's bf16 A8 route packs at all (the AVX-512 vdpbf16ps set; not oneDNN's route).
bool packs_here() {
  const detail::QuantPlan& p = cpu::kernel_table().quant.plan[size_t(DType::kBF16)][size_t(QuantMode::kA8)];
  return p.kernels && p.kernels->prepack && !p.onednn;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Packed panels are the decoded panels, kept: every level's bf16 A8 output is the same bits with
// packing off, on its first call (which packs) and on the next (which reuses), over row counts
// from one row to many tiles with a remainder.
TEST(PrepackedPanels, SameBitsAsDecodingPerCall) {
  ThreadPool pool(2);
  const int64_t K = 2304, N = 77;  // N: a partly filled last sub-panel
  const Tensor W = bf16_weight(N, K, 3);
  bool packed_somewhere = false;
  for (int64_t M : {1, 12, 29, 530}) {
    const std::vector<float> x = random_normal(size_t(M * K), uint32_t(M));
    for (CpuIsa isa : testing_ops::testable_isas()) {
      const testing_ops::IsaScope scope(isa);
      std::vector<float> per_call;
      {
        const Prepack off(false);
        per_call = run(W, x, M, QuantMode::kA8, pool);
      }
      const Prepack on(true);
      packed_somewhere |= packs_here();
      for (int call = 0; call < 2; ++call)
        EXPECT_TRUE(same_bits(run(W, x, M, QuantMode::kA8, pool), per_call))
            << cpu_isa_name(isa) << " M=" << M << " call " << call;
    }
  }
  if (!packed_somewhere) GTEST_SKIP() << "no level here packs: the per-call decode was compared with itself";
}

// The packed copy lives as long as its weight: packing adds its bytes, and once the weight is freed
// the next packing gives them back.
TEST(PrepackedPanels, DroppedWithTheirWeight) {
  if (!packs_here()) GTEST_SKIP() << "this CPU's bf16 A8 route does not pack (no AVX-512 bf16 set, or oneDNN)";
  ThreadPool pool(2);
  const Prepack on(true);
  const int64_t K = 512, N = 64, M = 3;
  const std::vector<float> x = random_normal(size_t(M * K), 5);
  const Tensor other = bf16_weight(N, K, 6);
  run(other, x, M, QuantMode::kA8, pool);
  const size_t before = detail::prepacked_bytes();
  {
    const Tensor W = bf16_weight(N, K, 7);
    run(W, x, M, QuantMode::kA8, pool);
    EXPECT_EQ(detail::prepacked_bytes(), before + size_t(N * K * 2)) << "N = 64 rows: two sub-panels, no padding";
  }
  run(other, x, M, QuantMode::kA8, pool);
  EXPECT_EQ(detail::prepacked_bytes(), before + size_t(N * K * 2)) << "a hit packs nothing and frees nothing";
  const Tensor next = bf16_weight(N / 2, K, 8);  // another shape: never W's entry, even at W's address
  run(next, x, M, QuantMode::kA8, pool);
  EXPECT_EQ(detail::prepacked_bytes(), before + size_t(N / 2 * K * 2)) << "W's copy freed, next's added";
}

// A weight viewed straight from a memory-mapped file: packing gives its pages back, and both the
// packed route and a later reader of the original bytes (the exact route) still see the file's
// values: the same bits as the same weight held in heap memory.
TEST(PrepackedPanels, MappedWeightKeepsItsValuesAfterItsPagesAreGivenBack) {
  if (!packs_here()) GTEST_SKIP() << "this CPU's bf16 A8 route does not pack (no AVX-512 bf16 set, or oneDNN)";
  ThreadPool pool(2);
  const int64_t K = 4096, N = 96, M = 5;  // 768 KB of weight: whole pages to give back
  const Tensor heap = bf16_weight(N, K, 9);
  quill::testing::TempDir dir;
  const std::string path = dir.file("w.bin");
  const size_t offset = 100;  // the weight starts mid-page, as tensors in a safetensors file do
  {
    std::ofstream f(path, std::ios::binary);
    f << std::string(offset, 'h');
    f.write(static_cast<const char*>(heap.data()), std::streamsize(heap.nbytes()));
  }
  auto mapped = MappedFile::open(path);
  ASSERT_TRUE(mapped.is_ok()) << mapped.status().to_string();
  const std::shared_ptr<MappedFile> file = *mapped;
  const Tensor view(const_cast<uint8_t*>(file->data() + offset), DType::kBF16, Shape{N, K}, Device::kCPU, file);
  const std::vector<float> x = random_normal(size_t(M * K), 10);
  std::vector<float> a8, exact;
  {
    const Prepack off(false);
    a8 = run(heap, x, M, QuantMode::kA8, pool);
    exact = run(heap, x, M, QuantMode::kExact, pool);
  }
  const Prepack on(true);
  EXPECT_TRUE(same_bits(run(view, x, M, QuantMode::kA8, pool), a8));
  EXPECT_TRUE(same_bits(run(view, x, M, QuantMode::kA8, pool), a8)) << "second call, from the packed copy";
  EXPECT_TRUE(same_bits(run(view, x, M, QuantMode::kExact, pool), exact)) << "the original bytes, read again";
  EXPECT_EQ(0, std::memcmp(file->data() + offset, heap.data(), size_t(heap.nbytes())));
}

}  // namespace
}  // namespace quill::quant
