#include "core/arena.h"

#include <cstdlib>
#include <new>

namespace quill {

void Arena::FreeDeleter::operator()(void* p) const { std::free(p); }

void Arena::reserve(size_t capacity) {
  const size_t rounded = (capacity + kAlign - 1) / kAlign * kAlign;
  block_.reset();
  capacity_ = used_ = high_water_ = 0;
  if (rounded == 0) return;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) throw std::bad_alloc();
  block_.reset(p);
  capacity_ = rounded;
}

void Arena::commit() {
  auto* bytes = static_cast<volatile char*>(block_.get());
  for (size_t i = 0; i < capacity_; i += 4096) bytes[i] = bytes[i];
}

void* Arena::allocate(size_t bytes, size_t align) {
  const size_t start = (used_ + align - 1) / align * align;
  if (start > capacity_ || bytes > capacity_ - start) return nullptr;
  used_ = start + bytes;
  if (used_ > high_water_) high_water_ = used_;
  return static_cast<char*>(block_.get()) + start;
}

}  // namespace quill
