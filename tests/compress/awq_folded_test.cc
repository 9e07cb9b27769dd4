// AWQ's folded scales are not compression error (issue 22, items 1 and 2), through the real
// path: RunCompress writes the Hugging Face folder, Measure and the weight statistics read it.
//   - fold only (quantize: false): every measure site and every weight rel_fro is ~0 on every
//     architecture (up_proj, v_proj, fc1, c_attn rows absorbed 1/s on purpose);
//   - gpt_neox / gpt2: the fake-quantized folder has no `…mlp.act.scales` (s is folded into the
//     next linear's input columns) and reloads as the model compressed in memory.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "compress/engine.h"
#include "core/fs.h"
#include "core/tensor_util.h"
#include "metrics/measure.h"
#include "model/folded_scales.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "pipeline/compress_run.h"
#include "recipes/plan.h"
#include "tests/compress/awq_test_util.h"
#include "tests/compress/prune_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

namespace {

pc::pipeline::CompressRunResult CompressFolder(const std::string& ref_dir, const std::string& yaml_params,
                                              const std::string& out) {
  pc::recipes::RecipeSpec recipe = pc::recipes::ParseRecipeText("name: awq-test\nmethod: awq\nparams:\n" + yaml_params, "test recipe");
  pc::pipeline::CompressRunOptions o;
  o.model_dir = ref_dir;
  o.out_dir = out;
  o.overwrite = true;
  o.calib.source = "self:6";
  o.calib.seq_len = 16;
  return pc::pipeline::RunCompress(recipe, o);
}

std::vector<std::string> TensorNames(const std::string& dir) { return pc::Checkpoint::Open(dir)->Names(); }

}  // namespace

TEST_CASE("awq fold only: zero error at every measure site and zero weight rel_fro on every architecture",
          "[compress][awq][metrics]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  struct Case {
    std::string arch, variant;
  };
  const std::vector<Case> cases = {{"llama", ""},    {"mistral", ""}, {"qwen2", ""}, {"gpt2", ""},
                                   {"gpt_neox", ""}, {"gpt_neox", "sequential"}, {"opt", ""}, {"opt", "post_ln"}};
  for (const Case& c : cases) {
    INFO(c.arch << " " << c.variant);
    const std::string ref_dir = pc::test::ReferenceWithTokenizer(c.arch, c.variant);
    const std::string out = pc::test::TempDir("awq-fold-" + c.arch + c.variant) + "/out";
    CompressFolder(ref_dir, "  group_size: 16\n  quantize: false\n  clip: false\n  alpha: 0.7\n", out);
    const pc::FoldedScales folded = pc::ReadFoldedScales(out);
    CHECK(!folded.input.empty());
    auto ref = pc::Model::Load(ref_dir);
    auto comp = pc::Model::Load(out);
    at::Tensor windows = pc::test::RandomTokens(3, 12, ref->config().vocab_size, 4);
    const pc::MeasureOptions mo;
    pc::MeasureResult m = pc::Measure(*ref, *comp, windows, mo);
    int outputs_scaled = 0;
    for (size_t e = 0; e < m.sites.size(); ++e) {
      const pc::SiteAggregate& a = m.aggregates[e];
      INFO(m.sites[e].name << " " << pc::ErrorKindName(m.sites[e].kind) << " " << pc::FrameName(m.sites[e].frame));
      if (m.sites[e].type == pc::SiteType::kLinear && folded.Output(m.sites[e].name) != nullptr) ++outputs_scaled;
      CHECK(a.tokens > 0);
      CHECK(a.ratio_iso < 1e-9);  // relative squared error; rounding only (~1e-13)
      CHECK(a.mean_rel_iso < 1e-9);
    }
    for (const pc::WeightError& w : m.weights) {
      INFO(w.name);
      CHECK(w.rel_fro < 1e-6);
    }
    // The architectures with a linear -> linear group have outputs scaled on purpose.
    if (c.arch == "gpt2" || c.arch == "opt" || c.arch == "llama" || c.arch == "mistral" || c.arch == "qwen2") {
      CHECK(outputs_scaled > 0);
    }
    // Without the record (as before it existed) the same folder reports the deliberate rescaling
    // as O(1) error: the members' weights W·s and the absorbing linears' outputs y/s.
    pc::fs::RemoveAll(out + "/" + pc::kFoldedScalesDir);
    auto comp_raw = pc::Model::Load(out);
    pc::MeasureResult raw = pc::Measure(*ref, *comp_raw, windows, mo);
    double max_rel_fro = 0, max_linear = 0;
    for (const pc::WeightError& w : raw.weights) max_rel_fro = std::max(max_rel_fro, w.rel_fro);
    for (size_t e = 0; e < raw.sites.size(); ++e) {
      if (raw.sites[e].type == pc::SiteType::kLinear) max_linear = std::max(max_linear, raw.aggregates[e].ratio_iso);
    }
    CHECK(max_rel_fro > 0.05);
    if (outputs_scaled > 0) CHECK(max_linear > 0.01);
  }
}

TEST_CASE("awq on gpt_neox and gpt2: the fake-quantized folder has no act.scales and is the compressed model",
          "[compress][awq]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  for (const std::string arch : {"gpt_neox", "gpt2"}) {
    INFO(arch);
    const std::string ref_dir = pc::test::ReferenceWithTokenizer(arch, "");
    const std::string out = pc::test::TempDir("awq-actfold-" + arch) + "/out";
    pc::pipeline::CompressRunResult r = CompressFolder(ref_dir, "  group_size: 16\n  alpha: 0.8\n", out);
    for (const std::string& n : TensorNames(out)) {
      INFO(n);
      CHECK(n.find("act.scales") == std::string::npos);
    }
    const pc::FoldedScales folded = pc::ReadFoldedScales(out);
    auto loaded = pc::Model::Load(out);
    REQUIRE(folded.activation.size() == static_cast<size_t>(loaded->num_layers()));
    for (const auto& [name, s] : folded.activation) {
      INFO(name);
      CHECK(s.max().item<double>() / s.min().item<double>() > 1.5);  // not unit scales
    }
    // The same compression in memory, on the same calibration windows: the model with AutoAWQ's
    // scaled activation act(x)/s.
    auto memory = pc::test::LoadDetached(ref_dir);
    pc::recipes::RecipeSpec recipe = pc::recipes::ParseRecipeText("name: awq-test\nmethod: awq\nparams:\n  group_size: 16\n  alpha: 0.8\n",
                                                "test recipe");
    pc::recipes::ResolvedRecipe resolved = pc::recipes::ResolvePlan(recipe, *memory, pc::MethodRegistry::Builtins());
    pc::RunCompression(*memory, resolved.plan, r.calib_tokens, {});
    for (int l = 0; l < memory->num_layers(); ++l) {
      REQUIRE(memory->block(l).act_scales.defined());
      CHECK(!loaded->block(l).act_scales.defined());
    }
    at::Tensor tokens = pc::test::RandomTokens(3, 20, memory->config().vocab_size, 8);
    const double rel = pc::MaxRelDiff(loaded->Forward(tokens), memory->Forward(tokens));
    INFO("max relative logit difference " << rel);
    CHECK(rel < 1e-5);
  }
}
