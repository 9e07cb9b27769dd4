// perpcomp's outputs load where users run them: every registered method (compress/ registry) on
// every supported architecture (model/arch.cc) writes a folder that transformers'
// AutoModelForCausalLM.from_pretrained loads with no missing, unexpected or ignored tensor and no
// warning, and transformers' logits of that folder equal perpcomp's own forward of it.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <algorithm>
#include <fstream>

#include "compress/method.h"
#include "core/fs.h"
#include "core/strings.h"
#include "core/tensor_util.h"
#include "model/arch.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "tests/oracle/oracle_util.h"
#include "tests/test_support.h"

namespace {
constexpr double kMaxRelLogitDiff = 1e-4;

struct MethodCase {
  std::string name;    // "awq", "sparsegpt+w4"
  std::string recipe;  // path of the recipe file
  bool quantizes = false;  // the recipe quantizes (bits > 0)
};

// One recipe per registered method with its defaults (group 16 where it quantizes, so the tiny
// models have several groups per row), and a second one with 4 bits where quantization is
// optional (bits 0 allowed, e.g. sparsegpt: "sparsegpt+w4").
std::vector<MethodCase> MethodCases(const std::string& dir) {
  std::vector<MethodCase> out;
  const pc::MethodRegistry& r = pc::MethodRegistry::Builtins();
  for (const auto& name : r.Names()) {
    const pc::MethodInfo& m = r.Get(name);
    bool group = false, bits = false, optional_bits = false;
    for (const auto& p : m.params) {
      if (p.name == "group_size") group = true;
      if (p.name == "bits") {
        bits = true;
        for (int64_t v : p.also_allowed) optional_bits |= v == 0;
      }
    }
    auto write = [&](const std::string& label, const std::string& file, const std::string& params, bool quantizes) {
      std::string path = dir + "/" + file + ".yaml";
      std::ofstream f(path);
      f << "name: oracle-" << file << "\nmethod: " << name << "\n"
        << (params.empty() ? "" : "params:\n" + params);
      out.push_back({label, path, quantizes});
    };
    const std::string g = group ? "  group_size: 16\n" : "";
    write(name, name, g, bits && !optional_bits);
    if (optional_bits) write(name + "+w4", name + "-w4", g + "  bits: 4\n", true);
  }
  return out;
}
}  // namespace

TEST_CASE("transformers loads every method's output on every architecture", "[oracle][compress][shared][slow]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  std::string dir = pc::test::TempDir("oracle-compress");
  std::vector<std::string> types = pc::SupportedModelTypes();
  pc::test::RunOracle("make-models '" + pc::test::SharedPath("models/tiny-random-gpt2") + "' '" + dir + "/src' " +
                      pc::Join(types, " "));
  const std::string calib = pc::test::SharedPath("text/c4-sample/c4_sample.jsonl");
  std::vector<MethodCase> methods = MethodCases(dir);
  REQUIRE(methods.size() >= 8);
  std::vector<std::string> outs, labels;
  for (const auto& type : types) {
    for (const auto& m : methods) {
      std::string out = dir + "/" + type + "-" + m.name;
      pc::test::RunResult r = pc::test::RunPerpcomp("compress --threads 1 --model '" + dir + "/src/" + type +
                                                    "' --recipe '" + m.recipe + "' --calib '" + calib +
                                                    "' --calib-samples 4 --calib-seq-len 32 --calib-windowing random --out '" + out + "'");
      INFO(type << " " << m.name << ": " << r.err);
      CHECK(r.exit_code == 0);
      if (r.exit_code == 0) {
        outs.push_back(out);
        labels.push_back(type + " " + m.name);
      }
    }
  }
  REQUIRE(!outs.empty());
  at::Tensor tokens = pc::test::WikiTextByteWindows(3, 40);
  std::string tok = pc::test::WriteTokens(tokens, dir);
  pc::test::RunOracle("forward '" + tok + "' '" + pc::Join(outs, "' '") + "'");
  for (size_t i = 0; i < outs.size(); ++i) {
    INFO(labels[i] << " (" << outs[i] << ")");
    pc::test::OracleForward ref = pc::test::ReadOracle(outs[i] + ".oracle");
    CHECK(pc::test::LoadProblems(ref.meta) == "");
    auto model = pc::Model::Load(outs[i]);
    const double rel = pc::MaxRelDiff(model->Forward(tokens), ref.logits);
    INFO("max |logit difference| / max |logit| " << rel);
    CHECK(rel < kMaxRelLogitDiff);
  }
}

// A recipe that quantizes the output head (docs/RECIPES.md "The output head"): transformers loads
// the folder with no problem and computes perpcomp's logits, and the head on disk is the
// quantized one (not the original copied across).
TEST_CASE("transformers loads a folder whose output head is quantized by rtn and gptq", "[oracle][compress][shared][slow]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  std::string dir = pc::test::TempDir("oracle-head");
  pc::test::RunOracle("make-models '" + pc::test::SharedPath("models/tiny-random-gpt2") + "' '" + dir + "/src' llama");
  const std::string src = dir + "/src/llama";
  const std::string calib = pc::test::SharedPath("text/c4-sample/c4_sample.jsonl");
  const std::vector<std::pair<std::string, std::string>> heads = {
      {"rtn", "  - match: '^lm_head$'\n    params: {bits: 4}\n"},
      {"gptq", "  - match: '^lm_head$'\n    method: gptq\n    params: {bits: 4, group_size: 16}\n"}};
  std::vector<std::string> outs;
  for (const auto& [label, rule] : heads) {
    const std::string recipe = dir + "/head-" + label + ".yaml";
    std::ofstream(recipe) << "name: head-" << label << "\nmethod: rtn\nparams: {bits: 4, group_size: 16}\noverrides:\n"
                          << rule;
    const std::string out = dir + "/llama-head-" + label;
    pc::test::RunResult r = pc::test::RunPerpcomp("compress --threads 1 --model '" + src + "' --recipe '" + recipe +
                                                  "' --calib '" + calib +
                                                  "' --calib-samples 4 --calib-seq-len 32 --calib-windowing random --out '" +
                                                  out + "'");
    INFO(label << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    outs.push_back(out);
  }
  at::Tensor tokens = pc::test::WikiTextByteWindows(3, 40);
  std::string tok = pc::test::WriteTokens(tokens, dir);
  pc::test::RunOracle("forward '" + tok + "' '" + pc::Join(outs, "' '") + "'");
  auto original = pc::Model::Load(src);
  for (const std::string& out : outs) {
    INFO(out);
    pc::test::OracleForward ref = pc::test::ReadOracle(out + ".oracle");
    CHECK(pc::test::LoadProblems(ref.meta) == "");
    auto model = pc::Model::Load(out);
    CHECK_FALSE(model->lm_head().weight.equal(original->lm_head().weight));
    CHECK(pc::MaxRelDiff(model->Forward(tokens), ref.logits) < kMaxRelLogitDiff);
  }
}

// `--format awq-gemm` in a real AWQ consumer: compressed-tensors' AutoAWQConverter (the converter
// llm-compressor's project ships for AutoAWQ checkpoints) turns the folder into a pack-quantized
// compressed-tensors folder, which transformers loads and runs on CPU (hf_oracle.py
// awq-consumer). Every registered method that quantizes (a `bits` parameter; 4 bits, group 16)
// on every architecture whose linears are nn.Linear (GPT-2's Conv1D is in neither AutoAWQ's GEMM
// modules nor compressed-tensors' targets: docs/AWQ.md), and AWQ once more with float16 scales.
// The consumer's logits equal perpcomp's forward of the fake-quantized folder within the float16
// rounding of the stored scales and biases; with `scale_dtype: f16` the dequantized weights are
// perpcomp's bit for bit, so only the biases' rounding remains. compressed-tensors has no
// ScaledActivation: where AWQ scaled an activation (gpt_neox's `…mlp.act.scales`), transformers
// reports exactly those tensors as unexpected and computes another function, so there the test
// checks that report and compares nothing.
TEST_CASE("compressed-tensors' AutoAWQ converter and transformers run every awq-gemm folder", "[oracle][compress][awq][shared][slow]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  constexpr double kMaxRelF16Scales = 1e-2;  // measured 1.5e-3 .. 4.6e-3 on these models
  constexpr double kMaxRelExact = 1e-3;      // f16 scales: float16 biases only
  std::string dir = pc::test::TempDir("oracle-awq-gemm");
  std::vector<std::string> types;
  for (const pc::ArchSpec& a : pc::AllArchSpecs())
    if (!a.conv1d) types.push_back(a.model_type);
  pc::test::RunOracle("make-models '" + pc::test::SharedPath("models/tiny-random-gpt2") + "' '" + dir + "/src' " +
                      pc::Join(types, " "));
  const std::string calib = pc::test::SharedPath("text/c4-sample/c4_sample.jsonl");
  std::vector<MethodCase> quantizers;
  for (const MethodCase& m : MethodCases(dir))
    if (m.quantizes) quantizers.push_back(m);
  REQUIRE(quantizers.size() >= 5);  // rtn, awq, perp-awq, gptq, sparsegpt+w4
  const std::string f16 = dir + "/awq-f16.yaml";
  std::ofstream(f16) << "name: oracle-awq-f16\nmethod: awq\nparams: {group_size: 16, scale_dtype: f16}\n";
  quantizers.push_back({"awq-f16", f16, true});
  std::vector<std::string> outs, labels;
  std::vector<bool> exact;
  for (const auto& type : types) {
    for (const auto& m : quantizers) {
      const std::string out = dir + "/" + type + "-" + m.name;
      pc::test::RunResult r = pc::test::RunPerpcomp(
          "compress --threads 1 --format awq-gemm --model '" + dir + "/src/" + type + "' --recipe '" + m.recipe +
          "' --calib '" + calib + "' --calib-samples 4 --calib-seq-len 32 --calib-windowing random --out '" + out + "'");
      INFO(type << " " << m.name << ": " << r.err);
      CHECK(r.exit_code == 0);
      if (r.exit_code != 0) continue;
      outs.push_back(out);
      labels.push_back(type + " " + m.name);
      exact.push_back(m.name == "awq-f16");
    }
  }
  REQUIRE(!outs.empty());
  at::Tensor tokens = pc::test::WikiTextByteWindows(3, 40);
  std::string tok = pc::test::WriteTokens(tokens, dir);
  std::vector<std::string> awq_dirs;
  for (const auto& o : outs) awq_dirs.push_back(o + "/awq-gemm");
  pc::test::RunOracle("awq-consumer '" + tok + "' '" + pc::Join(awq_dirs, "' '") + "'");
  int compared = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    INFO(labels[i] << " (" << outs[i] << ")");
    pc::test::OracleForward ref = pc::test::ReadOracle(awq_dirs[i] + "-ct.oracle");
    std::vector<std::string> act_scales;  // AutoAWQ's ScaledActivation tensors in the folder
    for (const auto& name : pc::Checkpoint::Open(awq_dirs[i])->Names())
      if (pc::EndsWith(name, ".act.scales")) act_scales.push_back(name);
    if (!act_scales.empty()) {
      std::vector<std::string> unexpected = ref.meta["unexpected_keys"].get<std::vector<std::string>>();
      std::sort(act_scales.begin(), act_scales.end());
      CHECK(unexpected == act_scales);
      continue;
    }
    CHECK(pc::test::LoadProblems(ref.meta) == "");
    auto model = pc::Model::Load(outs[i]);
    const double rel = pc::MaxRelDiff(model->Forward(tokens), ref.logits);
    INFO("max |logit difference| / max |logit| " << rel);
    CHECK(rel < (exact[i] ? kMaxRelExact : kMaxRelF16Scales));
    ++compared;
  }
  // Every architecture compares rtn and gptq at least; those without scaled activations all six.
  CHECK(compared >= static_cast<int>(types.size()) * 2);
}
