// libFuzzer target: the service's request parser, as POST /v1/lines, /v1/jobs and
// /v1/images/generations run it (serve/line_request.h), with the shipped line model behind it.
// The first input byte picks the endpoint (bit 0: OpenAI images) and the body's form (bit 1:
// multipart fields as "name=value" lines, else a JSON text); after an optional NUL comes the
// bytes of an uploaded style file. A refusal must be a 4xx naming what it refused (never a 5xx,
// a crash or an exception); an accepted request must be inside every limit.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "quill/line_studio.h"
#include "serve/line_request.h"
#include "serve/style_store.h"

using namespace quill;
using namespace quill::serve;

namespace {

struct World {
  ServeOptions limits;
  std::unique_ptr<LineStudio> studio;
  std::unique_ptr<StyleStore> styles;
};

World& world() {
  static World* w = [] {
    auto* x = new World;
    x->limits.max_style_pixels = 256 * 256;  // keep style decodes fast
    LineStudioOptions o;                     // the default model: the one `quill serve` serves
    o.threads = 1;
    auto s = LineStudio::open(o);
    if (!s) {
      std::fprintf(stderr, "cannot open the line model: %s\n", s.status().to_string().c_str());
      std::abort();
    }
    x->studio = std::move(*s);
    x->styles = std::make_unique<StyleStore>(*x->studio, 8, x->limits.max_style_pixels);
    return x;
  }();
  return *w;
}

FormData parse_form(const std::string& text) {
  FormData form;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) form.fields[line.substr(0, eq)] = line.substr(eq + 1);
    pos = end + 1;
  }
  return form;
}

void check_refusal(const ApiError& e) {
  if (e.status < 400 || e.status > 499) fuzz::fail("a request was refused with a status outside 4xx");
  if (e.code.empty() || e.message.empty()) fuzz::fail("a refusal has no code or message");
}

void check_accepted(const ParsedLineRequest& r, RequestKind kind, const ServeOptions& limits) {
  const LineJobSpec& s = r.spec;
  if (s.text.empty()) fuzz::fail("accepted an empty text");
  size_t chars = 0;
  for (unsigned char c : s.text) chars += (c & 0xC0) != 0x80;
  if (chars > size_t(limits.max_text_chars)) fuzz::fail("accepted a text over the limit");
  const LineSampling& p = s.sampling;
  if (p.steps < 1 || p.steps > limits.max_steps) fuzz::fail("accepted steps out of range");
  auto in = [](float v, SettingRange rg) { return std::isfinite(v) && v >= rg.lo && v <= rg.hi; };
  if (!in(p.guidance_scale, kLineGuidanceRange) || !in(p.start_sigma, kLineStartSigmaRange) ||
      !in(p.shift, kLineShiftRange))
    fuzz::fail("accepted sampling settings out of range");
  if (r.n < 1 || r.n > (kind == RequestKind::kLines ? 1 : limits.max_n)) fuzz::fail("accepted n out of range");
  if (s.bucket_width <= 0 || s.bucket_width > world().studio->max_line_width())
    fuzz::fail("accepted a line wider than the model");
  if (s.style_id.empty()) fuzz::fail("accepted request has no style id");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  World& w = world();
  const RequestKind kind = (data[0] & 1) ? RequestKind::kOpenAIImages : RequestKind::kLines;
  const bool form = (data[0] & 2) != 0;
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nul = rest.find('\0');
  const std::string body_text = rest.substr(0, nul);
  std::vector<uint8_t> file;
  if (nul != std::string::npos) file.assign(rest.begin() + std::ptrdiff_t(nul) + 1, rest.end());
  const std::vector<uint8_t>* style_file = nul != std::string::npos ? &file : nullptr;

  nlohmann::json body;
  if (form) {
    if (ApiError e = form_to_json(parse_form(body_text), kind, &body)) {
      check_refusal(e);
      return 0;
    }
  } else {
    body = nlohmann::json::parse(body_text, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) return 0;  // the server answers 400 before the parser runs
  }
  ParsedLineRequest parsed;
  try {
    if (ApiError e = parse_line_request(body, style_file, kind, w.limits, *w.studio, *w.styles, 12345, &parsed)) {
      check_refusal(e);
      return 0;
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "exception: %s\n", ex.what());
    fuzz::fail("the request parser threw");
  }
  check_accepted(parsed, kind, w.limits);
  return 0;
}
