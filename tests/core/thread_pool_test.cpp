#include "core/thread_pool.h"
#include "core/arena.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace quill {
namespace {

TEST(ThreadPool, CoversRangeExactlyOnce) {
  ThreadPool pool(4);
  for (int64_t n : {1, 7, 64, 1000, 12345}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.parallel_for(n, 3, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, NestedCallsRunSerially) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  pool.parallel_for(10, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) pool.parallel_for(10, 1, [&](int64_t b2, int64_t e2) { total += e2 - b2; });
  });
  EXPECT_EQ(total.load(), 100);
}

TEST(ThreadPool, RunOnAllGivesEachIndexOnce) {
  ThreadPool pool(5);
  std::vector<std::atomic<int>> seen(5);
  pool.run_on_all([&](int i) { seen[size_t(i)]++; });
  for (auto& s : seen) EXPECT_EQ(s.load(), 1);
}

TEST(Arena, AlignsAndRefusesOverflow) {
  Arena a(1024);
  void* p = a.allocate(10);
  void* q = a.allocate(10);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 64, 0u);
  EXPECT_EQ(a.allocate(2000), nullptr);
  const size_t m = a.mark();
  a.allocate(100);
  a.rewind(m);
  EXPECT_EQ(a.used(), m);
  ArenaSizer s;
  s.add(10);
  s.add(10);
  EXPECT_EQ(s.peak(), 74u);
}

}  // namespace
}  // namespace quill
