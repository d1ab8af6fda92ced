// libFuzzer target: the checked JSON parser used for config.json, index.json, safetensors
// headers and quill.config; what parses must dump and re-parse to the same value.
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "io/json_util.h"

using namespace quill;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto j = parse_json_checked(text, "config.json");
  if (!j) {
    (void)j.status().to_string();
    return 0;
  }
  const std::string dumped = dump_json(*j);
  auto again = parse_json_checked(dumped, "dumped");
  if (!again) fuzz::fail("dumped JSON does not parse");
  if (dump_json(*again) != dumped) fuzz::fail("dump is not stable");
  return 0;
}
