// libFuzzer target: the safetensors parser on arbitrary bytes, from memory.
#include <cstdint>
#include <cstring>

#include "fuzz_util.h"
#include "io/safetensors.h"

using namespace quill;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = SafetensorsFile::parse(FileBytes::borrowed(data, size, "fuzz.safetensors"));
  if (!f) {
    (void)f.status().to_string();
    return 0;
  }
  uint64_t end_of_last = 0;
  for (const auto& info : (*f)->tensors()) {
    auto t = (*f)->tensor(info.name);
    if (!t) fuzz::fail("a listed tensor cannot be viewed");
    if (uint64_t(t->nbytes()) != info.nbytes) fuzz::fail("view size differs from the header's");
    if (info.offset + info.nbytes > size) fuzz::fail("tensor outside the input");
    if (info.nbytes && info.offset < end_of_last) fuzz::fail("tensors overlap");
    if (info.nbytes) end_of_last = info.offset + info.nbytes;
    fuzz::touch(*t);
  }
  return 0;
}
