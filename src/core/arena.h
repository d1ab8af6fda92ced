// An aligned bump allocator. A plan sizes one arena for a whole forward pass up front, so the
// forward itself never touches the heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace quill {

class Arena {
 public:
  static constexpr size_t kAlign = 64;

  Arena() = default;
  explicit Arena(size_t capacity) { reserve(capacity); }

  // (Re)allocate the backing block; drops all previous allocations.
  void reserve(size_t capacity);
  // Returns nullptr when the arena is exhausted (callers size it first; see Planner).
  void* allocate(size_t bytes, size_t align = kAlign);
  template <typename T>
  T* allocate_n(size_t n) {
    return static_cast<T*>(allocate(n * sizeof(T), alignof(T) > kAlign ? alignof(T) : kAlign));
  }
  void reset() { used_ = 0; }
  // Touches every page (contents unchanged) so the memory is resident now, not on first use: a
  // server's footprint is then set at warm-up and stays flat under load.
  void commit();

  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }
  size_t high_water() const { return high_water_; }
  // Mark/rewind for scoped scratch use.
  size_t mark() const { return used_; }
  void rewind(size_t mark) { used_ = mark; }

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, FreeDeleter> block_;
  size_t capacity_ = 0, used_ = 0, high_water_ = 0;
};

// Counts bytes like an Arena without memory, to size one before a forward.
class ArenaSizer {
 public:
  size_t add(size_t bytes, size_t align = Arena::kAlign) {
    used_ = (used_ + align - 1) / align * align;
    const size_t at = used_;
    used_ += bytes;
    if (used_ > peak_) peak_ = used_;
    return at;
  }
  size_t mark() const { return used_; }
  void rewind(size_t m) { used_ = m; }
  size_t peak() const { return peak_; }

 private:
  size_t used_ = 0, peak_ = 0;
};

}  // namespace quill
