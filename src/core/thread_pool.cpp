#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>

namespace quill {

namespace {
thread_local bool t_inside_pool_task = false;

// How long a thread spins for the next job / the last worker before sleeping: long enough to
// bridge the gap between two ops of a forward (microseconds), short enough that an idle pool
// stops burning its cores at once.
constexpr auto kSpin = std::chrono::microseconds(100);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until pred() or kSpin has passed; true if pred() held.
template <typename Pred>
bool spin_until(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (pred()) return true;
    cpu_relax();
    if ((i & 63) == 63) {
      if (std::chrono::steady_clock::now() > deadline) return pred();
      std::this_thread::yield();  // give the core away if another thread wants it (oversubscription)
    }
  }
}
std::unique_ptr<ThreadPool>& global_slot() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}
}  // namespace

int default_thread_count() {
  if (const char* e = std::getenv("QUILL_THREADS")) {
    const int n = std::atoi(e);
    if (n > 0) return std::min(n, 1024);
  }
  const unsigned hc = std::thread::hardware_concurrency();
  return hc ? int(hc) : 1;
}

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  workers_.reserve(size_t(num_threads_ - 1));
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_work_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    auto has_work = [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
    FunctionRef<void(int)>* job;
    if (!spin_until(has_work)) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_work_.wait(lock, has_work);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);  // job_ and generation_ are published together under mu_
      if (stop_.load()) return;
      seen = generation_.load();
      job = job_;
    }
    t_inside_pool_task = true;
    (*job)(index);
    t_inside_pool_task = false;
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);  // the caller checks pending_ under mu_ before sleeping
      cv_done_.notify_one();
    }
  }
}

void ThreadPool::run_on_all(FunctionRef<void(int)> fn) {
  if (num_threads_ == 1 || t_inside_pool_task) {
    for (int i = 0; i < num_threads_; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    pending_.store(num_threads_ - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_work_.notify_all();  // no system call when every worker is spinning
  t_inside_pool_task = true;
  fn(0);
  t_inside_pool_task = false;
  auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(done)) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_done_.wait(lock, done);
  }
  std::lock_guard<std::mutex> lock(mu_);
  job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t max_chunks = (n + grain - 1) / grain;
  if (num_threads_ == 1 || max_chunks == 1 || t_inside_pool_task) {
    fn(0, n);
    return;
  }
  // Dynamic scheduling over chunks: a few chunks per thread balance uneven work.
  const int64_t chunks = std::min<int64_t>(max_chunks, int64_t(num_threads_) * 4);
  const int64_t chunk = (n + chunks - 1) / chunks;
  std::atomic<int64_t> next{0};
  auto body = [&](int) {
    for (;;) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      const int64_t b = c * chunk;
      if (b >= n) break;
      fn(b, std::min(n, b + chunk));
    }
  };
  run_on_all(body);
}

ThreadPool& ThreadPool::global() {
  auto& slot = global_slot();
  if (!slot) slot = std::make_unique<ThreadPool>(default_thread_count());
  return *slot;
}

void ThreadPool::set_global_threads(int n) {
  auto& slot = global_slot();
  if (slot && slot->num_threads() == n) return;
  slot = std::make_unique<ThreadPool>(n);
}

}  // namespace quill
