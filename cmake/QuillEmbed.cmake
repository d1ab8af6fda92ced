# quill_embed_text(target file function): compiles `file` into `target` as
# `std::string_view quill::serve::<function>()` (the studio page and the OpenAPI document ship
# inside the binary). Editing the file re-runs the configure step.
function(quill_embed_text target file function)
  file(READ ${file} content)
  string(FIND "${content}" ")QUILL_ASSET\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${file} contains the raw-string delimiter )QUILL_ASSET\"")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  set(out ${CMAKE_BINARY_DIR}/generated/${function}.cpp)
  file(CONFIGURE OUTPUT ${out} CONTENT "// Generated from ${file} by cmake/QuillEmbed.cmake.
#include <string_view>
namespace quill::serve {
std::string_view ${function}() {
  static constexpr std::string_view text = R\"QUILL_ASSET(@content@)QUILL_ASSET\";
  return text;
}
}  // namespace quill::serve
" @ONLY)
  target_sources(${target} PRIVATE ${out})
endfunction()
