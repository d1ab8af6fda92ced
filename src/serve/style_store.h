// Style references the server knows: "default" (the model's own reference hand, when it ships
// one), "none" (unconditional) and uploads. An upload is embedded once and kept under an id derived
// from its bytes, so the same picture uploaded twice is one entry; at most `max_styles` uploads
// are kept (the least recently used goes first). Images are size-checked before decoding.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "quill/line_studio.h"
#include "serve/api_error.h"

namespace quill::serve {

struct StyleInfo {
  std::string id, name;
  int64_t width = 0, height = 0;
  bool builtin = false;
};

class StyleStore {
 public:
  StyleStore(LineStudio& studio, int max_styles, int64_t max_pixels);

  // Decodes and embeds `bytes` (PNG or JPEG) and keeps it; `field` names the request field in errors.
  ApiError add(const std::vector<uint8_t>& bytes, const std::string& name, const std::string& field, StyleInfo* info);
  // Embeds an image without keeping it (a style sent inline with one request).
  ApiError embed_inline(const std::vector<uint8_t>& bytes, const std::string& field, StyleEmbedding* out);
  // The embedding of a known id; false when unknown.
  bool get(const std::string& id, StyleEmbedding* out);
  std::vector<StyleInfo> list() const;
  size_t size() const;

 private:
  ApiError decode_and_embed(const std::vector<uint8_t>& bytes, const std::string& field, StyleEmbedding* out,
                            int64_t* w, int64_t* h);
  struct Entry {
    StyleInfo info;
    StyleEmbedding embedding;
  };
  LineStudio& studio_;
  const int max_styles_;
  const int64_t max_pixels_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // uploaded ids, most recent first
};

}  // namespace quill::serve
