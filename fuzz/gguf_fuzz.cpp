// libFuzzer target: the GGUF parser on arbitrary bytes, from memory. Whatever parses must also
// survive a round trip through the writer unchanged (metadata and tensor bytes). Metadata that
// carries a tokenizer (tokenizer.ggml.*) is also built into a BPE tokenizer and used once.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "io/gguf.h"
#include "io/json_util.h"
#include "text/bpe_tokenizer.h"

using namespace quill;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto g = GgufFile::parse(FileBytes::borrowed(data, size, "fuzz.gguf"));
  if (!g) {
    (void)g.status().to_string();
    return 0;
  }
  const GgufFile& f = **g;
  const nlohmann::json meta = f.metadata_json();
  (void)dump_json(meta);
  if (gguf_metadata_has_tokenizer(meta)) {
    auto parts = bpe_parts_from_gguf_metadata(meta, "fuzz.gguf");
    if (parts) {
      auto tok = BpeTokenizer::from_parts(*parts, "fuzz.gguf");
      if (tok) {
        auto ids = (*tok)->encode("hej p\xc3\xa5 dig 12!<|im_end|>");
        if (ids)
          for (int32_t id : *ids)
            if (id < 0 || id >= (*tok)->vocab_size()) fuzz::fail("a GGUF tokenizer encoded an id outside its vocab");
      }
    }
  }

  GgufWriter w(uint32_t(f.alignment()));
  bool writable = true;
  for (const auto& [key, value] : f.metadata()) writable = writable && w.add(key, value).is_ok();
  for (const auto& info : f.tensors()) {
    auto t = f.tensor(info.name);
    if (!t) fuzz::fail("a listed tensor cannot be viewed");
    fuzz::touch(*t);
    // A foreign block layout (e.g. upstream ggml Q2_0 under type 42) is converted when viewed, so
    // its view has another dtype and size than the stored tensor, and a rewrite would differ.
    if (info.foreign >= 0) {
      writable = false;
      continue;
    }
    if (uint64_t(t->nbytes()) != info.nbytes) fuzz::fail("view size differs from the tensor info");
    writable = writable && w.add_tensor(info.name, *t).is_ok();
  }
  if (!writable) return 0;  // e.g. general.alignment stored as another integer type
  // Padding makes the rewritten file up to alignment x (tensors + 1) bytes; keep iterations fast.
  if (f.alignment() * (f.tensors().size() + 1) > (uint64_t(16) << 20)) return 0;
  auto bytes = w.to_bytes();
  if (!bytes) fuzz::fail("writer failed on a parsed file");
  auto again = GgufFile::parse(FileBytes::borrowed(bytes->data(), bytes->size(), "rewritten.gguf"));
  if (!again) {
    std::fprintf(stderr, "%s\n", again.status().to_string().c_str());
    fuzz::fail("rewritten file does not parse");
  }
  const GgufFile& r = **again;
  if (r.alignment() != f.alignment()) fuzz::fail("alignment changed");
  // The writer puts general.alignment first and adds the tq2 layout key to a file with tq2_0_g128
  // tensors (a type-42 tensor read without it, by its size, gains it); everything else keeps its
  // order and value.
  auto without_alignment = [](const GgufFile& x) {
    std::vector<const std::pair<std::string, GgufValue>*> kv;
    for (const auto& e : x.metadata())
      if (e.first != "general.alignment" && e.first != kGgufTq2LayoutKey) kv.push_back(&e);
    return kv;
  };
  const auto a = without_alignment(f), b = without_alignment(r);
  if (a.size() != b.size()) fuzz::fail("metadata count changed");
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i]->first != b[i]->first || !(a[i]->second == b[i]->second)) fuzz::fail("metadata changed");
  if (r.tensors().size() != f.tensors().size()) fuzz::fail("tensor count changed");
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& a = f.tensors()[i];
    const auto& b = r.tensors()[i];
    if (a.name != b.name || a.dtype != b.dtype || a.shape != b.shape || a.nbytes != b.nbytes)
      fuzz::fail("tensor info changed");
    if (a.nbytes && std::memcmp(data + a.offset, bytes->data() + b.offset, size_t(a.nbytes)) != 0)
      fuzz::fail("tensor bytes changed");
  }
  return 0;
}
