// perpcomp's outputs load where users run them: every registered method (compress/ registry) on
// every supported architecture (model/arch.cc) writes a folder that transformers'
// AutoModelForCausalLM.from_pretrained loads with no missing, unexpected or ignored tensor and no
// warning, and transformers' logits of that folder equal perpcomp's own forward of it.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <fstream>

#include "compress/method.h"
#include "core/fs.h"
#include "core/strings.h"
#include "core/tensor_util.h"
#include "model/arch.h"
#include "model/model.h"
#include "tests/oracle/oracle_util.h"
#include "tests/test_support.h"

namespace {
constexpr double kMaxRelLogitDiff = 1e-4;

struct MethodCase {
  std::string name;    // "awq", "sparsegpt+w4"
  std::string recipe;  // path of the recipe file
};

// One recipe per registered method with its defaults (group 16 where it quantizes, so the tiny
// models have several groups per row), and a second one with 4 bits where quantization is
// optional (bits 0 allowed, e.g. sparsegpt: "sparsegpt+w4").
std::vector<MethodCase> MethodCases(const std::string& dir) {
  std::vector<MethodCase> out;
  const pc::MethodRegistry& r = pc::MethodRegistry::Builtins();
  for (const auto& name : r.Names()) {
    const pc::MethodInfo& m = r.Get(name);
    bool group = false, optional_bits = false;
    for (const auto& p : m.params) {
      if (p.name == "group_size") group = true;
      if (p.name == "bits") {
        for (int64_t v : p.also_allowed) optional_bits |= v == 0;
      }
    }
    auto write = [&](const std::string& label, const std::string& file, const std::string& params) {
      std::string path = dir + "/" + file + ".yaml";
      std::ofstream f(path);
      f << "name: oracle-" << file << "\nmethod: " << name << "\n"
        << (params.empty() ? "" : "params:\n" + params);
      out.push_back({label, path});
    };
    const std::string g = group ? "  group_size: 16\n" : "";
    write(name, name, g);
    if (optional_bits) write(name + "+w4", name + "-w4", g + "  bits: 4\n");
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
