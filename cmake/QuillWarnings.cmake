function(quill_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers>)
endfunction()

# Per-file ISA flags: kernels for one instruction set live in files named *_avx2.cpp or
# *_avx512.cpp, so the rest of the library stays portable and dispatch happens at run time.
function(quill_set_isa_flags sources)
  if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
    return()
  endif()
  foreach(src IN LISTS sources)
    if(src MATCHES "_avx2\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
    elseif(src MATCHES "_amx\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mamx-tile;-mamx-int8;-mamx-bf16;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512bf16;-mavx2;-mfma")
    elseif(src MATCHES "_avx512\\.cpp$" AND QUILL_EMULATE_AVX512)
      # AVX2 code computing the AVX-512 intrinsics (SIMDe); -Wno-psabi: its 64-byte vector arguments.
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-Wno-psabi"
                                  COMPILE_DEFINITIONS QUILL_EMULATE_AVX512)
    elseif(src MATCHES "_avx512\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx512bf16;-mavx2;-mfma;-mf16c")
    elseif(src MATCHES "/cpu_features\\.cpp$" AND QUILL_EMULATE_AVX512)
      set_source_files_properties(${src} PROPERTIES COMPILE_DEFINITIONS QUILL_EMULATE_AVX512)
    endif()
  endforeach()
endfunction()
