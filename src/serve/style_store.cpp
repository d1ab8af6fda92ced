#include "serve/style_store.h"

#include <algorithm>
#include <cstdio>

#include "io/image.h"

namespace quill::serve {

StyleStore::StyleStore(LineStudio& studio, int max_styles, int64_t max_pixels)
    : studio_(studio), max_styles_(max_styles), max_pixels_(max_pixels) {
  if (studio_.has_style_encoder() && !studio_.default_style_path().empty()) {
    auto e = studio_.embed_style(LineStyle::model_default());
    if (e) entries_["default"] = {{"default", "the model's reference hand", 0, 0, true}, *e};
  }
  entries_["none"] = {{"none", "no style: the model's own average hand", 0, 0, true}, nullptr};
}

ApiError StyleStore::decode_and_embed(const std::vector<uint8_t>& bytes, const std::string& field,
                                      StyleEmbedding* out, int64_t* w, int64_t* h) {
  if (!studio_.has_style_encoder())
    return api_error(422, "no_style_encoder", "this model has no style encoder; style images cannot be used", field);
  if (bytes.empty()) return api_error(422, "invalid_image", "the style image is empty", field);
  auto dims = peek_image_dimensions(bytes.data(), bytes.size(), field);
  if (!dims) return api_error(422, "invalid_image", dims.status().to_string(), field);
  if (dims->width <= 0 || dims->height <= 0)
    return api_error(422, "invalid_image",
                     str_cat("the style image header claims ", dims->width, "x", dims->height, " pixels"), field);
  if (dims->width > max_pixels_ / dims->height)  // width x height > max, without the overflow
    return api_error(413, "image_too_large",
                     str_cat("the style image is ", dims->width, "x", dims->height, " pixels; the limit is ",
                             max_pixels_, " pixels"),
                     field);
  auto img = decode_image(bytes.data(), bytes.size(), field);
  if (!img) return api_error(422, "invalid_image", img.status().to_string(), field);
  LineStyle s;
  s.kind = LineStyle::Kind::kPixels;
  s.width = img->width;
  s.height = img->height;
  s.channels = img->channels;
  s.pixels = std::move(img->pixels);
  auto e = studio_.embed_style(s);
  if (!e) return api_error_from(e.status(), field);
  *out = *e;
  *w = s.width;
  *h = s.height;
  return {};
}

ApiError StyleStore::embed_inline(const std::vector<uint8_t>& bytes, const std::string& field, StyleEmbedding* out) {
  int64_t w = 0, h = 0;
  return decode_and_embed(bytes, field, out, &w, &h);
}

ApiError StyleStore::add(const std::vector<uint8_t>& bytes, const std::string& name, const std::string& field,
                         StyleInfo* info) {
  // FNV-1a over the bytes: the same upload maps to the same id.
  uint64_t hash = 14695981039346656037ull;
  for (uint8_t b : bytes) hash = (hash ^ b) * 1099511628211ull;
  char id[24];
  std::snprintf(id, sizeof(id), "s%016llx", static_cast<unsigned long long>(hash));
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(id);
    if (it != entries_.end()) {
      lru_.remove(id);
      lru_.push_front(id);
      *info = it->second.info;
      return {};
    }
  }
  Entry e;
  if (ApiError err = decode_and_embed(bytes, field, &e.embedding, &e.info.width, &e.info.height)) return err;
  e.info.id = id;
  e.info.name = name.substr(0, 200);
  std::lock_guard<std::mutex> lock(mu_);
  entries_[id] = e;
  lru_.remove(id);
  lru_.push_front(id);
  while (int(lru_.size()) > max_styles_) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  *info = e.info;
  return {};
}

bool StyleStore::get(const std::string& id, StyleEmbedding* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  *out = it->second.embedding;
  if (!it->second.info.builtin) {
    lru_.remove(id);
    lru_.push_front(id);
  }
  return true;
}

std::vector<StyleInfo> StyleStore::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StyleInfo> out;
  for (const auto& [id, e] : entries_) out.push_back(e.info);
  std::stable_sort(out.begin(), out.end(), [](const StyleInfo& a, const StyleInfo& b) { return a.builtin > b.builtin; });
  return out;
}

size_t StyleStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace quill::serve
