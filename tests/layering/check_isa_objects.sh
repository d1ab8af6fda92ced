#!/usr/bin/env bash
# The ISA-file rule (docs/ARCHITECTURE.md): *_avx2.cpp, *_avx512.cpp and *_amx.cpp are built with
# their instruction set's flags, so any code in them may use those instructions and must run only
# after dispatch chose that ISA. Two ways such code escapes to every CPU, both checked in the
# library archive:
#   - a weak (inline or template) function: the linker keeps ONE copy for the whole program, and
#     may keep this file's, so portable callers would run AVX-512 code;
#   - a static initializer: it runs when the program loads.
# Usage: check_isa_objects.sh LIBQUILL.a   (not for sanitizer builds, which add initializers)
set -euo pipefail
lib=${1:?usage: check_isa_objects.sh LIBQUILL.a}
members=$(ar t "$lib" | grep -E '_(avx2|avx512|amx)\.cpp\.o$' || true)
if [ -z "$members" ]; then
  echo "isa objects: none in $lib (not an x86-64 build?)"
  exit 0
fi
fail=0
# nm -A: "archive:member:address type name". W / V / u: weak or unique global definitions
# (DW.ref.__gxx_personality_v0 is a data word, not code); _GLOBAL__sub_I_*: static initializers.
hits=$(nm -A -C --defined-only "$lib" 2>/dev/null |
  awk -F: '$2 ~ /_(avx2|avx512|amx)\.cpp\.o$/' |
  grep -E ' [WVu] | _GLOBAL__sub_I_' | grep -v 'DW\.ref\.__gxx_personality_v0' || true)
if [ -n "$hits" ]; then
  echo "ISA-flagged objects must not define weak functions or static initializers (they could run on any CPU):"
  echo "$hits"
  fail=1
fi
if [ "$fail" -eq 0 ]; then echo "isa objects: ok ($(echo "$members" | wc -l) checked)"; fi
exit "$fail"
