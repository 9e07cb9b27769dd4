// Forward parity with transformers' own modeling code: for every model_type perpcomp supports
// (model/arch.cc's table), every variant and dtype hf_oracle.py builds, transformers makes and
// saves the model and computes its logits; perpcomp loads the folder and must agree.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include "core/fs.h"
#include "core/strings.h"
#include "core/tensor_util.h"
#include "model/arch.h"
#include "model/model.h"
#include "tests/oracle/oracle_util.h"
#include "tests/test_support.h"

namespace {
constexpr double kMaxRelLogitDiff = 1e-4;  // of the largest |logit|
constexpr double kMaxRelNllDiff = 1e-5;


// Compares perpcomp with every entry of an hf_oracle.py index (parity-set, rope-set) on `tokens`.
void CheckAgainstOracle(const nlohmann::json& index, const at::Tensor& tokens) {
  for (const auto& e : index) {
    const std::string name = e["model_type"].get<std::string>() + " " + e["variant"].get<std::string>() + " " +
                             e["dtype"].get<std::string>();
    pc::test::OracleForward ref = pc::test::ReadOracle(e["oracle"].get<std::string>());
    INFO(name << " (transformers " << ref.meta["transformers"].get<std::string>() << ", "
              << ref.meta["model_class"].get<std::string>() << ")");
    // transformers reads its own save_pretrained cleanly (else the comparison means nothing).
    CHECK(pc::test::LoadProblems(ref.meta) == "");
    auto model = pc::Model::Load(e["dir"].get<std::string>());
    at::Tensor ours = model->Forward(tokens);
    REQUIRE(ours.sizes() == ref.logits.sizes());
    const double rel = pc::MaxRelDiff(ours, ref.logits);
    const double nll = pc::test::MeanNextTokenNll(ours, tokens), ref_nll = ref.meta["nll"].get<double>();
    INFO("max |logit difference| / max |logit| " << rel << "; mean NLL perpcomp " << nll << ", transformers "
                                                  << ref_nll);
    CHECK(rel < kMaxRelLogitDiff);
    CHECK(std::abs(nll - ref_nll) <= kMaxRelNllDiff * std::abs(ref_nll));
    // A non-trivial model: logits far from uniform, so the comparison can fail.
    CHECK((at::amax(ref.logits, -1) - at::amin(ref.logits, -1)).mean().item<float>() > 3.0f);
  }
}
}  // namespace

TEST_CASE("transformers parity: every architecture, variant and checkpoint dtype", "[oracle][parity][shared][slow]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  // Two windows of 64 WikiText-2 bytes: longer than the sliding windows (16) of mistral and qwen2.
  at::Tensor tokens = pc::test::WikiTextByteWindows(2, 64);
  std::string dir = pc::test::TempDir("oracle-parity");
  std::string tok = pc::test::WriteTokens(tokens, dir);
  std::vector<std::string> types = pc::SupportedModelTypes();
  pc::test::RunOracle("parity-set '" + tok + "' '" + dir + "' " + pc::Join(types, " "));
  auto index = nlohmann::json::parse(pc::fs::ReadFile(dir + "/index.json"));
  std::set<std::string> covered;
  for (const auto& e : index) covered.insert(e["model_type"].get<std::string>());
  CHECK(covered == std::set<std::string>(types.begin(), types.end()));
  CheckAgainstOracle(index, tokens);
}

TEST_CASE("transformers parity: RoPE scaling (linear, dynamic, llama3, yarn)", "[oracle][parity][shared]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  at::Tensor tokens = pc::test::WikiTextByteWindows(2, 64);
  std::string dir = pc::test::TempDir("oracle-rope");
  pc::test::RunOracle("rope-set '" + pc::test::WriteTokens(tokens, dir) + "' '" + dir + "'");
  CheckAgainstOracle(nlohmann::json::parse(pc::fs::ReadFile(dir + "/index.json")), tokens);
}
