#include "io/model_files.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/mapped_file.h"
#include "io/gguf.h"
#include "io/json_util.h"
#include "io/safetensors.h"

namespace quill {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Result<nlohmann::json> read_json_object(const std::string& path, std::string_view what) {
  QUILL_ASSIGN_OR_RETURN(auto file, MappedFile::open(path));
  const std::string_view text(reinterpret_cast<const char*>(file->data()), size_t(file->size()));
  auto j = parse_json_checked(text, what);
  if (!j) return j.take_status().with_file(path);
  if (!j->is_object())
    return invalid_file(what, " is not a JSON object").with_file(path).with_expected_found("object", j->type_name());
  return std::move(*j);
}

bool is_gguf(const std::string& path) {
  auto f = MappedFile::open(path);
  return f && (*f)->size() >= 4 && std::memcmp((*f)->data(), "GGUF", 4) == 0;
}

// Edit distance, giving up (returning limit + 1) once every path exceeds `limit`.
size_t bounded_edit_distance(const std::string& a, const std::string& b, size_t limit) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > limit) return limit + 1;
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    size_t row_min = cur[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      row_min = std::min(row_min, cur[j]);
    }
    if (row_min > limit) return limit + 1;
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// `a` is `b` with some leading "prefix." components removed (or the other way round).
bool same_under_prefix(const std::string& a, const std::string& b) {
  const std::string& longer = a.size() > b.size() ? a : b;
  const std::string& shorter = a.size() > b.size() ? b : a;
  return longer.size() > shorter.size() && ends_with(longer, shorter) &&
         longer[longer.size() - shorter.size() - 1] == '.';
}

std::string describe_files(const std::vector<std::string>& files) {
  if (files.size() == 1) return files[0];
  std::string s = str_cat(files.size(), " files: ");
  for (size_t i = 0; i < files.size() && i < 4; ++i) s += (i ? ", " : "") + fs::path(files[i]).filename().string();
  if (files.size() > 4) s += str_cat(", and ", files.size() - 4, " more");
  return s;
}

}  // namespace

class ModelFilesLoader {
 public:
  explicit ModelFilesLoader(ModelFiles& m) : m_(m) {}

  Status add_safetensors(const std::string& file, const std::string& expected_by = "") {
    QUILL_ASSIGN_OR_RETURN(auto st, SafetensorsFile::open(file));
    m_.files_.push_back(file);
    for (const auto& info : st->tensors()) {
      auto [it, inserted] = m_.entries_.try_emplace(info.name);
      if (!inserted)
        return invalid_file("tensor present in two shards: ", fs::path(it->second.file).filename().string(), " and ",
                            fs::path(file).filename().string())
            .with_file(expected_by.empty() ? file : expected_by)
            .with_tensor(info.name);
      QUILL_ASSIGN_OR_RETURN(it->second.tensor, st->tensor(info.name));
      it->second.file = file;
    }
    return Status::ok();
  }

  Status add_index(const std::string& index_path) {
    QUILL_ASSIGN_OR_RETURN(auto index, read_json_object(index_path, "index"));
    auto wm = index.find("weight_map");
    if (wm == index.end() || !wm->is_object())
      return invalid_file("index has no \"weight_map\" object").with_file(index_path);
    const fs::path dir = fs::path(index_path).parent_path();
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : wm->items()) {
      if (!shard.is_string())
        return invalid_file("weight_map value is not a file name")
            .with_file(index_path)
            .with_tensor(tensor)
            .with_expected_found("string", shard.type_name());
      const auto& s = shard.get_ref<const std::string&>();
      const fs::path p(s);
      if (s.empty() || p.is_absolute() || std::any_of(p.begin(), p.end(), [](const fs::path& c) { return c == ".."; }))
        return invalid_file("weight_map names a shard outside the index's folder: \"", s, "\"")
            .with_file(index_path)
            .with_tensor(tensor);
      shards.insert(s);
    }
    for (const auto& s : shards) {
      const std::string shard_path = (dir / s).string();
      std::error_code ec;
      if (!fs::exists(shard_path, ec))
        return not_found("shard listed in the index is missing: ", shard_path).with_file(index_path);
      Status st = add_safetensors(shard_path, index_path);
      if (!st.is_ok()) return st.with_context(str_cat("shard of ", index_path));
    }
    for (const auto& [tensor, shard] : wm->items()) {
      auto it = m_.entries_.find(tensor);
      const std::string want = (dir / shard.get<std::string>()).string();
      if (it == m_.entries_.end() || it->second.file != want)
        return invalid_file("index says the tensor is in ", shard.get<std::string>(), ", but it is ",
                            it == m_.entries_.end() ? std::string("in no shard")
                                                    : "in " + fs::path(it->second.file).filename().string())
            .with_file(index_path)
            .with_tensor(tensor);
    }
    return Status::ok();
  }

  Status add_gguf(const std::string& file) {
    QUILL_ASSIGN_OR_RETURN(auto g, GgufFile::open(file));
    m_.files_.push_back(file);
    for (const auto& info : g->tensors()) {
      auto& e = m_.entries_[info.name];  // names are unique within a GGUF (checked by the reader)
      QUILL_ASSIGN_OR_RETURN(e.tensor, g->tensor(info.name));
      e.file = file;
    }
    if (const GgufValue* c = g->find("quill.config")) {
      if (!c->as_string())
        return invalid_file("quill.config is not a string")
            .with_file(file)
            .with_expected_found("string", gguf_value_type_name(c->type()));
      auto j = parse_json_checked(*c->as_string(), "quill.config");
      if (!j) return j.take_status().with_file(file);
      if (!j->is_object()) return invalid_file("quill.config is not a JSON object").with_file(file);
      m_.config_ = std::move(*j);
      m_.config_path_ = file + ":quill.config";
    } else {
      m_.config_ = g->metadata_json();
      m_.config_path_ = file + ":metadata";
    }
    return Status::ok();
  }

  // config.json beside the weights, if there is one; malformed is an error, absent is not.
  Status add_config_beside(const fs::path& dir) {
    const fs::path cfg = dir / "config.json";
    std::error_code ec;
    if (!fs::is_regular_file(cfg, ec)) return Status::ok();
    QUILL_ASSIGN_OR_RETURN(m_.config_, read_json_object(cfg.string(), "config.json"));
    m_.config_path_ = cfg.string();
    return Status::ok();
  }

  Status open_folder(const fs::path& dir) {
    QUILL_RETURN_IF_ERROR(add_config_beside(dir));
    std::error_code ec;
    for (const char* name : {"diffusion_pytorch_model.safetensors", "model.safetensors"})
      if (fs::is_regular_file(dir / name, ec)) return add_safetensors((dir / name).string());
    for (const char* name : {"diffusion_pytorch_model.safetensors.index.json", "model.safetensors.index.json"})
      if (fs::is_regular_file(dir / name, ec)) return add_index((dir / name).string());
    std::vector<std::string> indexes, singles, ggufs;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (!e.is_regular_file(ec)) continue;
      const std::string n = e.path().filename().string();
      if (ends_with(n, ".safetensors.index.json"))
        indexes.push_back(e.path().string());
      else if (ends_with(n, ".safetensors"))
        singles.push_back(e.path().string());
      else if (ends_with(n, ".gguf"))
        ggufs.push_back(e.path().string());
    }
    if (ec) return io_error("cannot list folder: ", ec.message()).with_file(dir.string());
    for (auto* group : {&indexes, &singles, &ggufs}) {
      if (group->empty()) continue;
      std::sort(group->begin(), group->end());
      if (group->size() > 1)
        return invalid_file("several candidate weight files; pass one of them: ", describe_files(*group))
            .with_file(dir.string());
      const std::string& f = group->front();
      if (group == &indexes) return add_index(f);
      if (group == &singles) return add_safetensors(f);
      m_.format_ = "gguf";
      return add_gguf(f);
    }
    if (fs::is_regular_file(dir / "model_index.json", ec)) {
      std::vector<std::string> parts;
      for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_directory(ec) && fs::is_regular_file(e.path() / "config.json", ec))
          parts.push_back(e.path().filename().string());
      std::sort(parts.begin(), parts.end());
      std::string list;
      for (const auto& p : parts) list += (list.empty() ? "" : ", ") + p;
      return not_found("this is a diffusers pipeline folder (model_index.json); pass one of its model folders",
                       list.empty() ? "" : ": " + list)
          .with_file(dir.string());
    }
    return not_found(
               "no weights in the folder (looked for diffusion_pytorch_model.safetensors, model.safetensors, "
               "*.safetensors.index.json, *.safetensors, *.gguf)")
        .with_file(dir.string());
  }

  Status open(const std::string& path) {
    std::error_code ec;
    const fs::path p(path);
    m_.path_ = path;
    if (fs::is_directory(p, ec)) {
      m_.format_ = "diffusers";
      return open_folder(p);
    }
    if (!fs::exists(p, ec)) return not_found("no such file or folder").with_file(path);
    // A .gguf name goes to the GGUF reader even with a wrong magic, so the error says "not a GGUF file"
    // rather than describing a broken safetensors header.
    if (is_gguf(path) || ends_with(path, ".gguf")) {
      m_.format_ = "gguf";
      return add_gguf(path);
    }
    QUILL_RETURN_IF_ERROR(add_config_beside(p.parent_path().empty() ? fs::path(".") : p.parent_path()));
    if (ends_with(path, ".json")) {
      m_.format_ = "safetensors-sharded";
      return add_index(path);
    }
    m_.format_ = "safetensors";
    return add_safetensors(path);
  }

 private:
  ModelFiles& m_;
};

Result<std::shared_ptr<ModelFiles>> ModelFiles::open(const std::string& path) {
  auto m = std::make_shared<ModelFiles>();
  ModelFilesLoader loader(*m);
  QUILL_RETURN_IF_ERROR(loader.open(path));
  return m;
}

std::vector<std::string> ModelFiles::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& [name, e] : entries_) names.push_back(name);
  return names;
}

bool ModelFiles::has(const std::string& name) const { return entries_.count(name) != 0; }

std::vector<std::string> ModelFiles::similar_names(const std::string& name, size_t max) const {
  const size_t limit = std::max<size_t>(2, name.size() / 4);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& [candidate, e] : entries_) {
    const size_t d = same_under_prefix(name, candidate) ? 0 : bounded_edit_distance(name, candidate, limit);
    if (d <= limit) scored.emplace_back(d, candidate);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < max; ++i) out.push_back(scored[i].second);
  return out;
}

Result<Tensor> ModelFiles::get(const std::string& name) const {
  auto it = entries_.find(name);
  if (it != entries_.end()) return it->second.tensor;
  std::string msg = "tensor not found";
  const auto close = similar_names(name);
  for (size_t i = 0; i < close.size(); ++i) msg += (i ? "', '" : "; did you mean '") + close[i];
  if (!close.empty()) msg += "'?";
  return not_found(msg).with_file(files_.empty() ? path_ : describe_files(files_)).with_tensor(name);
}

Result<Tensor> ModelFiles::get(const std::string& name, const Shape& expected) const {
  QUILL_ASSIGN_OR_RETURN(Tensor t, get(name));
  if (t.shape() != expected)
    return invalid_file("tensor has the wrong shape")
        .with_file(entries_.at(name).file)
        .with_tensor(name)
        .with_expected_found(expected.to_string(), t.shape().to_string());
  return t;
}

}  // namespace quill
