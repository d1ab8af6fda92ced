// Qwen3 text encoder against transformers (tools/make_qwen3_fixtures.py): a random 28-layer
// Qwen3ForCausalLM with grouped KV heads and q/k norms, right-padded batch; the hidden states
// FLUX.2 [klein] conditions on (9, 18, 27), stacked as Flux2KleinPipeline stacks them.
#include <gtest/gtest.h>

#include <cstdio>

#include "io/gguf.h"
#include "io/io_test_util.h"
#include "io/safetensors.h"
#include "quant/quantize_model.h"
#include "models/qwen3_encoder.h"
#include "runtime/engine.h"
#include "support/test_util.h"

namespace quill {
namespace {

struct Case {
  std::unique_ptr<Engine<Qwen3Encoder>> engine;
  std::vector<int32_t> ids, valid;
  Qwen3Bucket bucket;
  std::shared_ptr<SafetensorsFile> expected;
};

// `weights`: the folder (transformers names) or one of its llama.cpp GGUF copies
// (tools/make_gguf_text_fixtures.py).
Case open_case(ThreadPool& pool, int64_t layers_needed, const std::string& weights = "") {
  Case c;
  const std::string dir = test::fixture("qwen3/tiny28");
  auto files = ModelFiles::open(weights.empty() ? dir : dir + "/" + weights);
  EXPECT_TRUE(files.is_ok()) << files.status().to_string();
  if (!files) return c;
  auto model = Qwen3Encoder::load(*files, layers_needed);
  EXPECT_TRUE(model.is_ok()) << model.status().to_string();
  if (!model) return c;
  c.engine = std::make_unique<Engine<Qwen3Encoder>>(std::move(*model), pool);
  auto in = SafetensorsFile::open(dir + "/inputs.safetensors").value();
  const Tensor ids = in->tensor("input_ids").value(), mask = in->tensor("attention_mask").value();
  c.bucket = {ids.dim(0), ids.dim(1)};
  c.ids.assign(ids.data_as<int32_t>(), ids.data_as<int32_t>() + ids.numel());
  for (int64_t b = 0; b < ids.dim(0); ++b) {
    int32_t n = 0;
    for (int64_t s = 0; s < ids.dim(1); ++s) n += mask.data_as<int32_t>()[b * ids.dim(1) + s];
    c.valid.push_back(n);
  }
  c.expected = SafetensorsFile::open(dir + "/expected.safetensors").value();
  return c;
}

TEST(Qwen3Encoder, KleinHiddenStatesMatchTransformers) {
  ThreadPool pool(2);
  Case c = open_case(pool, 27);  // klein needs layers up to 27 of 28: the last is not run
  ASSERT_TRUE(c.engine);
  EXPECT_EQ(c.engine->model().layers_run(), 27);
  const auto want = c.expected->tensor("prompt_embeds").value().to_f32_vector();
  std::vector<float> got(want.size(), NAN);
  Status st = c.engine->forward(c.bucket, c.ids.data(), c.valid.data(), std::vector<int64_t>{9, 18, 27}, got.data());
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const double rel = test::rel_l2(got, want);
  std::printf("qwen3 tiny28 layers 9/18/27 rel_l2 %.3g\n", rel);
  EXPECT_LE(rel, 1e-4);

  const auto first = c.expected->tensor("hidden_states_1").value().to_f32_vector();
  std::vector<float> h1(first.size(), NAN);
  ASSERT_TRUE(c.engine->forward(c.bucket, c.ids.data(), c.valid.data(), std::vector<int64_t>{1}, h1.data()).is_ok());
  EXPECT_LE(test::rel_l2(h1, first), 1e-5);
}

TEST(Qwen3Encoder, Q8EncoderFromQuillQuantizeIsClose) {
  // quill quantize's default policy quantizes the decoder layers' matmuls (model.layers.N.) and keeps
  // the embedding bf16; hidden 32 rows fit q8_0's blocks of 32.
  auto files = ModelFiles::open(test::fixture("qwen3/tiny28")).value();
  const auto plan = quant::plan_quantization(*files, DType::kQ8_0, {});
  int64_t q8 = 0;
  for (const auto& p : plan) q8 += p.to == DType::kQ8_0;
  EXPECT_EQ(q8, 28 * 6);  // q/k/v/o/gate/up of 28 layers; down_proj (K = 48) is no multiple of 32: bf16
  testing::TempDir dir;
  const std::string gguf = dir.file("qwen3-q8.gguf");
  ASSERT_TRUE(quant::quantize_model(*files, plan, DType::kQ8_0, "", gguf, nullptr).is_ok());
  ThreadPool pool(2);
  auto model = Qwen3Encoder::load(ModelFiles::open(gguf).value(), 27);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  Engine<Qwen3Encoder> engine(std::move(*model), pool);
  Case ref = open_case(pool, 27);
  const auto want = ref.expected->tensor("prompt_embeds").value().to_f32_vector();
  std::vector<float> got(want.size());
  ASSERT_TRUE(engine.forward(ref.bucket, ref.ids.data(), ref.valid.data(), std::vector<int64_t>{9, 18, 27}, got.data())
                  .is_ok());
  EXPECT_GE(test::cosine(got, want), 0.999);
}

TEST(Qwen3Encoder, LlamaCppGgufMatchesTransformers) {
  // The same weights written by gguf-py with llama.cpp's names (blk.N.attn_q, token_embd, ...) and
  // the config only in qwen3.* metadata.
  ThreadPool pool(2);
  Case c = open_case(pool, 27, "llamacpp-f32.gguf");
  ASSERT_TRUE(c.engine);
  const Qwen3Config& cfg = c.engine->model().config();
  EXPECT_EQ(cfg.vocab_size, 1000);
  EXPECT_EQ(cfg.num_key_value_heads, 2);
  EXPECT_EQ(cfg.head_dim, 8);
  EXPECT_EQ(cfg.rope_theta, 1e6);
  const auto want = c.expected->tensor("prompt_embeds").value().to_f32_vector();
  std::vector<float> got(want.size(), NAN);
  ASSERT_TRUE(
      c.engine->forward(c.bucket, c.ids.data(), c.valid.data(), std::vector<int64_t>{9, 18, 27}, got.data()).is_ok());
  const double rel = test::rel_l2(got, want);
  std::printf("qwen3 tiny28 llama.cpp GGUF f32 rel_l2 %.3g\n", rel);
  EXPECT_LE(rel, 1e-4);

  // gguf-py's own Q8_0 blocks (and an f16 token_embd) read as Quill's q8_0.
  Case q = open_case(pool, 27, "llamacpp-q8_0.gguf");
  ASSERT_TRUE(q.engine);
  std::vector<float> gq(want.size(), NAN);
  ASSERT_TRUE(
      q.engine->forward(q.bucket, q.ids.data(), q.valid.data(), std::vector<int64_t>{9, 18, 27}, gq.data()).is_ok());
  std::printf("qwen3 tiny28 llama.cpp GGUF q8_0 cosine %.6f\n", test::cosine(gq, want));
  EXPECT_GE(test::cosine(gq, want), 0.999);
}

TEST(Qwen3Encoder, LlamaCppGgufMetadataErrorsNameTheKey) {
  // A GGUF with llama.cpp names but a hostile or foreign config is refused, naming the key.
  const std::string src = test::fixture("qwen3/tiny28/llamacpp-f32.gguf");
  auto g = GgufFile::open(src).value();
  const std::pair<const char*, std::pair<GgufValue, const char*>> edits[] = {
      {"general.architecture", {GgufValue::string("llama"), "expected \"qwen3\""}},
      {"qwen3.attention.head_count_kv", {GgufValue::u32(3), "not a multiple"}},
      {"qwen3.embedding_length", {GgufValue::string("32"), "must be an integer"}},
      {"qwen3.rope.freq_base", {GgufValue::f32(-1.0f), "rope.freq_base"}},
      {"qwen3.block_count", {GgufValue::u32(0), "out of range"}},
  };
  testing::TempDir dir;
  for (const auto& [key, edit] : edits) {
    GgufWriter w;
    for (const auto& [k, v] : g->metadata()) ASSERT_TRUE(w.add(k, k == key ? edit.first : v).is_ok());
    for (const auto& t : g->tensors()) ASSERT_TRUE(w.add_tensor(t.name, g->tensor(t.name).value()).is_ok());
    const std::string path = dir.file(std::string(key) + ".gguf");  // a new file: outputs never replace inputs
    ASSERT_TRUE(w.write(path).is_ok());
    auto m = Qwen3Encoder::load(ModelFiles::open(path).value(), 27);
    ASSERT_FALSE(m.is_ok()) << key;
    EXPECT_NE(m.status().to_string().find(edit.second), std::string::npos) << key << ": " << m.status().to_string();
  }
}

TEST(Qwen3Encoder, BadIdsAndLayersAreRefused) {
  ThreadPool pool(1);
  Case c = open_case(pool, 10);
  ASSERT_TRUE(c.engine);
  std::vector<float> out(size_t(c.bucket.batch * c.bucket.seq_len * 32));
  Status st = c.engine->forward(c.bucket, c.ids.data(), c.valid.data(), std::vector<int64_t>{11}, out.data());
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("runs 10 layers"), std::string::npos) << st.to_string();
  c.ids[3] = 1000;
  st = c.engine->forward(c.bucket, c.ids.data(), c.valid.data(), std::vector<int64_t>{1}, out.data());
  EXPECT_NE(st.to_string().find("outside the vocabulary"), std::string::npos) << st.to_string();
}

}  // namespace
}  // namespace quill
