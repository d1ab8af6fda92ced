// `quill quantize IN OUT.gguf --type T [--rules ...] [--dry-run]`: converts a model's weights to a
// quantized type and writes GGUF (config in "quill.config", so `quill forward` / `quill info`
// read the result directly). Policy in src/quant/quantize_model.h.
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/human_units.h"
#include "cli/progress.h"
#include "io/model_files.h"
#include "quant/quantize_model.h"

namespace quill::cli {
namespace {

struct Options {
  std::string input, output, type = "tq2_0_g128", rules;
  bool dry_run = false, json = false, quiet = false;
};

std::string size_change(int64_t in, int64_t out) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s -> %s (%.2fx smaller)", human_bytes(in).c_str(), human_bytes(out).c_str(),
                double(in) / double(std::max<int64_t>(out, 1)));
  return buf;
}

int run(const Options& o) {
  auto type = quant::parse_quant_type(o.type);
  if (!type) return report_error(type.status());
  auto rules = quant::parse_quant_rules(o.rules);
  if (!rules) return report_error(rules.status());
  if (!o.dry_run && o.output.empty()) return report_error(invalid_argument("OUT.gguf is required unless --dry-run"));
  auto opened = ModelFiles::open(o.input);
  if (!opened) return report_error(opened.status());
  const ModelFiles& files = **opened;
  const std::vector<quant::TensorPlan> plan = quant::plan_quantization(files, *type, *rules);
  std::map<std::string, int> histogram;
  for (const auto& p : plan) ++histogram[dtype_name(p.to)];

  if (o.dry_run) {
    int64_t in = 0, out = 0;
    quant::plan_bytes(files, plan, &in, &out);
    for (const auto& p : plan)
      std::printf("%-60s %-18s %-10s -> %-10s %s\n", p.name.c_str(), p.shape.to_string().c_str(), dtype_name(p.from),
                  dtype_name(p.to), p.reason.c_str());
    std::printf("plan: %zu tensors;", plan.size());
    for (const auto& [name, n] : histogram) std::printf(" %s %d", name.c_str(), n);
    std::printf("; %s\n", size_change(in, out).c_str());
    return kExitOk;
  }

  Progress progress("quantize", int(plan.size()), "tensors");
  quant::QuantizeReport report;
  Status st =
      quant::quantize_model(files, plan, *type, o.rules, o.output, &report, [&](int done) { progress.update(done); });
  progress.finish();
  if (!st) return report_error(st);
  if (o.json) {
    nlohmann::json per = nlohmann::json::array();
    for (const auto& t : report.tensors)
      per.push_back({{"name", t.name},
                     {"from", dtype_name(t.from)},
                     {"to", dtype_name(t.to)},
                     {"rel_error", t.rel_error},
                     {"reason", t.reason}});
    nlohmann::json j = {{"output", o.output},
                        {"type", dtype_name(*type)},
                        {"tensors", plan.size()},
                        {"bytes_in", report.bytes_in},
                        {"bytes_out", report.bytes_out},
                        {"rel_error", report.rel_error},
                        {"histogram", histogram},
                        {"per_tensor", per}};
    std::printf("%s\n", j.dump().c_str());
    return kExitOk;
  }
  if (!o.quiet)
    for (const auto& t : report.tensors)
      if (t.to != t.from)
        std::printf("%-60s %-10s -> %-10s rel err %.3e\n", t.name.c_str(), dtype_name(t.from), dtype_name(t.to),
                    t.rel_error);
  std::printf("wrote %s: %zu tensors, %s, rel error of the converted weights %.3e\n", o.output.c_str(), plan.size(),
              size_change(report.bytes_in, report.bytes_out).c_str(), report.rel_error);
  return kExitOk;
}

Runner setup(CLI::App& sub) {
  auto o = std::make_shared<Options>();
  sub.footer(
      "Default policy:\n"
      "  * 2-D .weight tensors inside transformer blocks (transformer_blocks.<i>., single_transformer_blocks.<i>.)\n"
      "    become --type; if their input size K is not a multiple of the type's block (128 for tq2_0_g128,\n"
      "    32 for q8_0) they become bf16 instead, and the plan says so.\n"
      "  * Every other tensor of rank >= 2 becomes bf16: patch / position / time / text / context embeddings\n"
      "    and the final norm_out + proj_out. They are a small share of the bytes, run once per token, and\n"
      "    quantizing them costs the most accuracy.\n"
      "  * 1-D tensors (biases, norm scales) and non-float tensors are copied unchanged.\n"
      "Rules (--rules \"REGEX=TYPE,...\", first match wins, searched in the tensor name) override this for\n"
      "tensors of rank >= 2; TYPE is tq2_0_g128, q8_0, fp8_e4m3, bf16, f16, f32 or keep.\n"
      "fp8_e4m3 stores one f32 scale per output row (rowmax|w| / 448) as \"<name>_scale\" beside the weight.\n"
      "Ternary (tq2_0_g128) uses BitNet b1.58 absmean scaling per 128-weight block.\n"
      "Output: GGUF v3 with the model config in metadata key quill.config.");
  sub.add_option("input", o->input, "model: diffusers folder, .safetensors, index.json or .gguf")->required();
  sub.add_option("output", o->output, "GGUF file to write (not needed with --dry-run)");
  sub.add_option("--type", o->type,
                 "weight type for transformer-block linears: tq2_0_g128, q8_0, fp8_e4m3, bf16, f16, f32")
      ->capture_default_str();
  sub.add_option("--rules", o->rules, "per-tensor overrides: \"REGEX=TYPE,REGEX=TYPE\"");
  sub.add_flag("--dry-run", o->dry_run, "print the plan (tensor, shape, from -> to, why) and the sizes; write nothing");
  sub.add_flag("--json", o->json, "print the summary (and per-tensor errors) as one JSON object");
  sub.add_flag("--quiet", o->quiet, "no per-tensor lines");
  return [o] { return run(*o); };
}

}  // namespace
QUILL_COMMAND(quantize, "quantize",
              "Quantize a model's weights (tq2_0_g128, q8_0, fp8_e4m3, bf16, f16) into a GGUF file", setup);
}  // namespace quill::cli
