#include "quant/prepacked_panels.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "core/mapped_file.h"

namespace quill::quant::detail {
namespace {

struct Entry {
  std::weak_ptr<const void> owner;  // expired: the weight is gone and the entry stale
  std::shared_ptr<const uint8_t> panels;
  size_t bytes = 0;
};

struct Cache {
  std::mutex mu;
  // By weight data pointer, shape and kernel set (which fix the panel size): views of one buffer with
  // other shapes are other weights.
  std::map<std::tuple<const void*, int64_t, int64_t, const KernelSet*>, Entry> entries;
  size_t bytes = 0;
};

Cache& cache() {
  static Cache c;
  return c;
}

std::atomic<int> prepack_for_tests{-1};

bool prepack_on() {
  const int forced = prepack_for_tests.load(std::memory_order_relaxed);
  if (forced >= 0) return forced != 0;
  static const bool on = [] {
    const char* v = std::getenv("QUILL_PREPACK");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

bool same_owner(const std::weak_ptr<const void>& a, const std::shared_ptr<const void>& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

std::shared_ptr<const uint8_t> pack(const KernelSet& ks, const WeightView& w, size_t sub_bytes, ThreadPool& pool,
                                    size_t* bytes) {
  const int64_t n_sub = (w.N + ks.nr - 1) / ks.nr;
  *bytes = size_t(n_sub) * sub_bytes;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, *bytes));
  if (!p) return nullptr;  // no room for a copy: the caller decodes per call
  std::shared_ptr<const uint8_t> panels(p, [](const uint8_t* q) { std::free(const_cast<uint8_t*>(q)); });
  pool.parallel_for(n_sub, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s)
      ks.decode(w, s * ks.nr, std::min<int64_t>(ks.nr, w.N - s * ks.nr), p + s * sub_bytes);
  });
  MappedFile::release_pages(w.data, size_t(w.N * w.row_bytes));
  return panels;
}

}  // namespace

std::shared_ptr<const uint8_t> prepacked_panels(const KernelSet& ks, const WeightView& w, size_t sub_bytes,
                                                const std::shared_ptr<const void>& owner, ThreadPool& pool) {
  if (!owner || !prepack_on()) return nullptr;
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  const auto key = std::make_tuple(static_cast<const void*>(w.data), w.N, w.K, &ks);
  if (auto hit = c.entries.find(key); hit != c.entries.end() && same_owner(hit->second.owner, owner))
    return hit->second.panels;
  // A weight to pack: first drop the copies of weights that are gone (a model unloaded before
  // another is loaded frees its copies here; until then they stay, as oneDNN's reordered ones do).
  for (auto it = c.entries.begin(); it != c.entries.end();) {
    if (it->second.owner.expired()) {
      c.bytes -= it->second.bytes;
      it = c.entries.erase(it);
    } else {
      ++it;
    }
  }
  Entry& e = c.entries[key];
  c.bytes -= e.bytes;
  size_t bytes = 0;
  std::shared_ptr<const uint8_t> panels = pack(ks, w, sub_bytes, pool, &bytes);
  if (!panels) {
    c.entries.erase(key);
    return nullptr;
  }
  e = Entry{owner, panels, bytes};
  c.bytes += bytes;
  return panels;
}

size_t prepacked_bytes() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.bytes;
}

void set_prepack_for_tests(int on) { prepack_for_tests.store(on); }

}  // namespace quill::quant::detail
