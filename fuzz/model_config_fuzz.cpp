// libFuzzer target: the model and scheduler config parsers behind every model folder Quill opens
// (diffusers / transformers config.json files): the first input byte picks the parser, the rest is
// the JSON text. A config that parses must describe positive sizes (no overflow when they are
// multiplied out); one that does not must be an error that describes itself. Nothing may throw.
#include <cmath>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "io/json_util.h"
#include "models/autoencoder_kl.h"
#include "models/flux2_transformer.h"
#include "models/qwen3_encoder.h"
#include "models/sd3_mmdit.h"
#include "pipeline/flow_match_euler.h"

using namespace quill;

namespace {

template <typename T>
bool refused(const Result<T>& r) {
  if (r) return false;
  if (r.status().to_string().empty()) fuzz::fail("a refusal without a message");
  return true;
}

void positive(int64_t v, const char* what) {
  if (v <= 0) fuzz::fail(what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto j = parse_json_checked(text, "config.json");
  if (!j) return 0;
  try {
    switch (data[0] % 5) {
      case 0: {
        auto c = SD3Config::from_json(*j, "config.json");
        if (refused(c)) return 0;
        positive(c->inner_dim(), "SD3 config accepted with a non-positive inner dim");
        break;
      }
      case 1: {
        auto c = Flux2Config::from_json(*j, "config.json");
        if (refused(c)) return 0;
        positive(c->inner_dim(), "FLUX.2 config accepted with a non-positive inner dim");
        positive(c->mlp_hidden(), "FLUX.2 config accepted with a non-positive MLP width");
        positive(c->id_axes(), "FLUX.2 config accepted without RoPE axes");
        break;
      }
      case 2: {
        auto c = Qwen3Config::from_json(*j, "config.json");
        (void)refused(c);
        break;
      }
      case 3: {
        auto c = AutoencoderKLConfig::from_json(*j);
        if (refused(c)) return 0;
        positive(c->downscale(), "VAE config accepted with a non-positive downscale");
        break;
      }
      default: {
        auto c = FlowMatchEulerConfig::from_json(*j);
        if (refused(c)) return 0;
        if (!std::isfinite(c->shift) || c->num_train_timesteps <= 0)
          fuzz::fail("scheduler config accepted with a non-finite shift or no timesteps");
        break;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    fuzz::fail("a config parser threw");
  }
  return 0;
}
