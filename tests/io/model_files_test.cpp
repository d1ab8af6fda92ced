#include "io/model_files.h"

#include <gtest/gtest.h>

#include "io/architecture.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "io_test_util.h"

namespace quill {
namespace {

using testing::expect_error;
using testing::TempDir;
using testing::write_bytes;

Tensor filled(DType dt, Shape shape, float start) {
  Tensor t = Tensor::empty(dt, shape);
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + float(i);
  convert_from_f32(dt, v.data(), t.data(), t.numel());
  return t;
}

void write_st(const std::string& path, const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, Tensor>> ts;
  float start = 0;
  for (const auto& n : names) ts.emplace_back(n, filled(DType::kF32, {2, 2}, start += 10));
  ASSERT_TRUE(write_safetensors(path, ts).is_ok());
}

const char* kConfig = R"({"_class_name": "SD3Transformer2DModel", "num_layers": 2, "patch_size": 2})";

TEST(ModelFiles, DiffusersFolder) {
  TempDir dir;
  write_bytes(dir.file("transformer/config.json"), kConfig);
  write_st(dir.file("transformer/diffusion_pytorch_model.safetensors"), {"a.weight", "b.weight"});
  auto m = ModelFiles::open(dir.file("transformer"));
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->format(), "diffusers");
  EXPECT_EQ((*m)->config()["num_layers"], 2);
  EXPECT_EQ((*m)->config_path(), dir.file("transformer/config.json"));
  EXPECT_EQ((*m)->tensor_names(), (std::vector<std::string>{"a.weight", "b.weight"}));
  auto b = (*m)->get("b.weight", Shape{2, 2});
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->to_f32_vector(), (std::vector<float>{20, 21, 22, 23}));
  expect_error((*m)->get("b.weight", Shape{4}).status(), {"diffusion_pytorch_model.safetensors", "tensor 'b.weight'",
                                                          "wrong shape", "expected [4], found [2, 2]"});
}

TEST(ModelFiles, TransformersFolderWithModelSafetensors) {
  TempDir dir;
  write_bytes(dir.file("config.json"), R"({"architectures": ["Dinov2Model"], "hidden_size": 8})");
  write_st(dir.file("model.safetensors"), {"embeddings.cls_token"});
  auto m = ModelFiles::open(dir.path().string());
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(detect_architecture(**m).name, "Dinov2Model");
  EXPECT_EQ(detect_architecture(**m).source, "config architectures");
}

TEST(ModelFiles, SingleFileWithAndWithoutConfigBeside) {
  TempDir dir;
  write_st(dir.file("w.safetensors"), {"x"});
  auto m = ModelFiles::open(dir.file("w.safetensors"));
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->format(), "safetensors");
  EXPECT_FALSE((*m)->has_config());
  write_bytes(dir.file("config.json"), kConfig);
  m = ModelFiles::open(dir.file("w.safetensors"));
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ((*m)->config()["patch_size"], 2);
}

TEST(ModelFiles, MalformedConfigIsAnError) {
  TempDir dir;
  write_st(dir.file("diffusion_pytorch_model.safetensors"), {"x"});
  write_bytes(dir.file("config.json"), R"({"num_layers": 2,,})");
  expect_error(ModelFiles::open(dir.path().string()).status(), {"config.json", "not valid JSON"});
  write_bytes(dir.file("config.json"), "[1]");
  expect_error(ModelFiles::open(dir.path().string()).status(), {"config.json", "not a JSON object"});
}

void write_index(const std::string& path, const std::string& weight_map) {
  write_bytes(path, R"({"metadata": {"total_size": 48}, "weight_map": )" + weight_map + "}");
}

TEST(ModelFiles, ShardedFolderAndIndexFile) {
  TempDir dir;
  write_bytes(dir.file("config.json"), kConfig);
  write_st(dir.file("m-00001-of-00002.safetensors"), {"a", "b"});
  write_st(dir.file("m-00002-of-00002.safetensors"), {"c"});
  write_index(
      dir.file("diffusion_pytorch_model.safetensors.index.json"),
      R"({"a": "m-00001-of-00002.safetensors", "b": "m-00001-of-00002.safetensors", "c": "m-00002-of-00002.safetensors"})");
  auto m = ModelFiles::open(dir.path().string());
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->format(), "diffusers");
  EXPECT_EQ((*m)->files().size(), 2u);
  EXPECT_EQ((*m)->get("c")->to_f32_vector(), (std::vector<float>{10, 11, 12, 13}));
  EXPECT_EQ((*m)->entries().at("c").file, dir.file("m-00002-of-00002.safetensors"));

  m = ModelFiles::open(dir.file("diffusion_pytorch_model.safetensors.index.json"));
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->format(), "safetensors-sharded");
  EXPECT_EQ((*m)->config()["num_layers"], 2);
  EXPECT_EQ((*m)->tensor_names().size(), 3u);
}

TEST(ModelFiles, ShardErrors) {
  TempDir dir;
  write_st(dir.file("s1.safetensors"), {"a", "b"});
  write_st(dir.file("s2.safetensors"), {"b"});
  const std::string index = dir.file("model.safetensors.index.json");
  write_index(index, R"({"a": "s1.safetensors", "b": "s1.safetensors", "z": "missing.safetensors"})");
  expect_error(ModelFiles::open(index).status(),
               {"shard listed in the index is missing", "missing.safetensors", index});
  write_index(index, R"({"a": "s1.safetensors", "b": "s2.safetensors"})");
  expect_error(ModelFiles::open(index).status(),
               {"tensor 'b'", "present in two shards: s1.safetensors and s2.safetensors"});
  write_st(dir.file("s3.safetensors"), {"c"});
  write_index(index, R"({"a": "s3.safetensors", "b": "s1.safetensors"})");
  expect_error(ModelFiles::open(index).status(),
               {"tensor 'a'", "index says the tensor is in s3.safetensors, but it is in s1.safetensors"});
  write_index(index, R"({"a": "s1.safetensors", "z": "s3.safetensors"})");
  expect_error(ModelFiles::open(index).status(), {"tensor 'z'", "but it is in no shard"});
  write_index(index, R"({"a": "../s1.safetensors"})");
  expect_error(ModelFiles::open(index).status(), {"outside the index's folder"});
  write_index(index, R"({"a": 3})");
  expect_error(ModelFiles::open(index).status(), {"tensor 'a'", "not a file name"});
  write_bytes(index, R"({"metadata": {}})");
  expect_error(ModelFiles::open(index).status(), {"no \"weight_map\""});
}

TEST(ModelFiles, Gguf) {
  TempDir dir;
  GgufWriter w;
  ASSERT_TRUE(w.add("general.architecture", GgufValue::string("flux2")).is_ok());
  ASSERT_TRUE(w.add("quill.config", GgufValue::string(kConfig)).is_ok());
  ASSERT_TRUE(w.add_tensor("x", filled(DType::kF32, {3}, 1)).is_ok());
  ASSERT_TRUE(w.write(dir.file("m.gguf")).is_ok());
  auto m = ModelFiles::open(dir.file("m.gguf"));
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->format(), "gguf");
  EXPECT_EQ((*m)->config()["_class_name"], "SD3Transformer2DModel");
  EXPECT_EQ((*m)->get("x")->to_f32_vector(), (std::vector<float>{1, 2, 3}));

  GgufWriter plain;  // no quill.config: the metadata is the config
  ASSERT_TRUE(plain.add("general.architecture", GgufValue::string("flux2")).is_ok());
  ASSERT_TRUE(plain.add("flux2.depth", GgufValue::u32(8)).is_ok());
  ASSERT_TRUE(plain.write(dir.file("p.gguf")).is_ok());
  m = ModelFiles::open(dir.file("p.gguf"));
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ((*m)->config()["flux2.depth"], 8);
  EXPECT_EQ(detect_architecture(**m).name, "flux2");

  GgufWriter bad;
  ASSERT_TRUE(bad.add("quill.config", GgufValue::string("{nope")).is_ok());
  ASSERT_TRUE(bad.write(dir.file("bad.gguf")).is_ok());
  expect_error(ModelFiles::open(dir.file("bad.gguf")).status(), {"bad.gguf", "quill.config is not valid JSON"});
}

TEST(ModelFiles, MissingThings) {
  TempDir dir;
  expect_error(ModelFiles::open(dir.file("nope")).status(), {"nope", "no such file or folder"});
  expect_error(ModelFiles::open(dir.path().string()).status(), {"no weights in the folder"});
  {
    TempDir pipeline;
    write_bytes(pipeline.file("model_index.json"), R"({"_class_name": "StableDiffusion3Pipeline"})");
    write_bytes(pipeline.file("vae/config.json"), "{}");
    write_bytes(pipeline.file("transformer/config.json"), "{}");
    expect_error(ModelFiles::open(pipeline.path().string()).status(),
                 {"diffusers pipeline folder", "pass one of its model folders: transformer, vae"});
  }
  write_st(dir.file("a.safetensors"), {"x"});
  write_st(dir.file("b.safetensors"), {"x"});
  expect_error(ModelFiles::open(dir.path().string()).status(),
               {"several candidate weight files", "a.safetensors, b.safetensors"});
}

TEST(ModelFiles, MissingTensorSuggestsCloseNames) {
  TempDir dir;
  write_st(dir.file("w.safetensors"), {"transformer_blocks.0.attn.to_q.weight", "transformer_blocks.0.attn.to_k.weight",
                                       "pos_embed.proj.weight", "norm_out.linear.weight"});
  auto m = ModelFiles::open(dir.file("w.safetensors"));
  ASSERT_TRUE(m.is_ok());
  expect_error((*m)->get("transformer_blocks.0.attn.to_q.wieght").status(),
               {"not found", "w.safetensors", "tensor 'transformer_blocks.0.attn.to_q.wieght'",
                "did you mean 'transformer_blocks.0.attn.to_q.weight'"});
  // The same name under a prefix some exporters add.
  expect_error((*m)->get("model.diffusion_model.pos_embed.proj.weight").status(),
               {"did you mean 'pos_embed.proj.weight'"});
  const Status far = (*m)->get("something_else").status();
  expect_error(far, {"tensor not found"});
  EXPECT_EQ(far.to_string().find("did you mean"), std::string::npos);
}

// ---- architecture from tensor names ----
std::string arch_of(const std::vector<std::string>& names) {
  TempDir dir;
  write_st(dir.file("w.safetensors"), names);
  auto m = ModelFiles::open(dir.file("w.safetensors"));
  EXPECT_TRUE(m.is_ok());
  return detect_architecture(**m).name;
}

TEST(Architecture, FromTensorNames) {
  EXPECT_EQ(arch_of({"pos_embed.pos_embed", "context_embedder.weight", "transformer_blocks.0.attn.add_q_proj.weight"}),
            "SD3Transformer2DModel");
  EXPECT_EQ(arch_of({"double_stream_modulation_img.linear.weight", "transformer_blocks.0.attn.add_q_proj.weight",
                     "single_transformer_blocks.0.attn.to_qkv_mlp_proj.weight"}),
            "Flux2Transformer2DModel");
  EXPECT_EQ(arch_of({"transformer_blocks.0.attn.add_q_proj.weight", "single_transformer_blocks.0.proj_mlp.weight"}),
            "FluxTransformer2DModel");
  EXPECT_EQ(arch_of({"double_blocks.0.img_attn.qkv.weight", "single_blocks.0.linear1.weight"}),
            "FluxTransformer2DModel");
  EXPECT_EQ(arch_of({"decoder.conv_in.weight", "encoder.conv_in.weight"}), "AutoencoderKL");
  EXPECT_EQ(arch_of({"decoder.conv_in.weight", "bn.running_mean"}), "AutoencoderKLFlux2");
  EXPECT_EQ(arch_of({"embeddings.cls_token", "encoder.layer.0.norm1.weight"}), "Dinov2Model");
  EXPECT_EQ(arch_of({"foo"}), "unknown");
}

}  // namespace
}  // namespace quill
