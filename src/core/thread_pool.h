// A fixed pool of worker threads with a blocking parallel-for. The calling thread takes part, so
// a pool of N threads uses N-1 workers. Dispatch does not allocate. Workers spin briefly for the
// next job before sleeping on a condition variable (and the caller for the last worker), so the
// back-to-back small ops of a small model's forward do not pay a futex wake-up each.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "core/function_ref.h"

namespace quill {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n), each at least `grain` long (except
  // the last), from up to num_threads() threads. Returns when all chunks are done. Nested calls
  // from inside a task run serially on the calling thread.
  void parallel_for(int64_t n, int64_t grain, FunctionRef<void(int64_t, int64_t)> fn);

  // Calls fn(thread_index) once on each of num_threads() threads (index 0 is the caller).
  void run_on_all(FunctionRef<void(int)> fn);

  // Process-wide pool; size from QUILL_THREADS or the hardware concurrency. set_global_threads
  // replaces it (not while a parallel_for is running).
  static ThreadPool& global();
  static void set_global_threads(int n);

 private:
  void worker_loop(int index);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_work_, cv_done_;
  // Written under mu_, read lock-free by spinning threads.
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  // The job being run.
  FunctionRef<void(int)>* job_ = nullptr;
  std::atomic<int> pending_{0};
};

// Threads to use by default: QUILL_THREADS if set, else std::thread::hardware_concurrency().
int default_thread_count();

}  // namespace quill
