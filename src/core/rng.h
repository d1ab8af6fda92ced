// Seeded, platform-independent random numbers for initial latents: Philox4x32-10 (counter based,
// so element i of a tensor depends only on (seed, i)), mapped to normals with Box-Muller in double
// precision and rounded to f32. Same seed -> same latents on every run, thread count and machine.
#pragma once

#include <cstdint>

namespace quill {

// Fills out[0..n) with N(0, 1) samples for `seed`; element i is a pure function of (seed, i).
void fill_normal(uint64_t seed, float* out, int64_t n);

// The four 32-bit outputs of Philox4x32-10 for (counter, key): exposed for the known-answer test.
void philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

}  // namespace quill
