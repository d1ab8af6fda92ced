// The portable attention tile (attention_generic.inl) compiled with AVX2 + FMA.
#if defined(__x86_64__)
#define QUILL_ATTENTION_GENERIC_NS avx2
#include "backend/cpu/attention_generic.inl"
#undef QUILL_ATTENTION_GENERIC_NS
#endif
