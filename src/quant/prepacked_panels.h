// Weight panels decoded once and kept, for the kernel sets whose panels are a permutation of the
// weight's bytes (the AVX-512 bf16 set: pairs (k, k + 1) of 32 rows interleaved, the same bytes as
// the bf16 rows). Decoding per call read the weights from memory on every pass: 4-5 % of an
// AVX-512 bf16 GEMM at M = 512 (docs/PERFORMANCE.md, "bf16 weights packed once").
//
// A weight is packed on its first use, keyed by its data pointer and owner: weights are immutable
// views of a memory map or of the model's own storage, and an entry whose owner has expired is
// dropped, so a new weight at a freed weight's address is packed anew. A weight without an owner
// (lifetime unknown) is never cached: the caller decodes it per call. Where the weight lies in a
// file mapping (MappedFile), its pages are given back once packed, so the process holds one copy;
// a later reader of the original bytes faults them in again from the file.
// The copies of weights that are gone are freed when the next weight is packed. A weight in heap
// memory (no file to give its pages back to) is held twice while packed. QUILL_PREPACK=0 turns
// packing off (every call decodes, as before). Packing holds a global lock, so callers on other
// threads wait for a first use to finish; a hit is one map lookup under it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/thread_pool.h"
#include "quant/quant_kernels.h"

namespace quill::quant::detail {

// The panels of `w` for `ks` (sub-panel s at s * sub_bytes), decoded now on `pool` if this is the
// weight's first use; null where the weight has no owner or packing is off. The pointer keeps the
// panels alive for the call even if the weight's owner expires meanwhile.
std::shared_ptr<const uint8_t> prepacked_panels(const KernelSet& ks, const WeightView& w, size_t sub_bytes,
                                                const std::shared_ptr<const void>& owner, ThreadPool& pool);

// Bytes of packed panels held now (weights whose owners have expired count until the next packing).
size_t prepacked_bytes();

// Tests only: 1 packs, 0 does not, -1 goes back to QUILL_PREPACK.
void set_prepack_for_tests(int on);

}  // namespace quill::quant::detail
