// The output head as a plan entry (issue 22, item 13): listed and skipped by default with its
// reason, matched by `ignore: ['^lm_head$']`, compressed when an override targets it (written by
// RunCompress and read back), refused with a clear message where it cannot be (a tied head, a
// block transform such as AWQ, the awq-gemm format). Also: the engine's input statistics are each
// linear's own (item 6), and a folded AWQ scale beyond float16 is refused naming the tensor
// (item 12).
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <string>

#include "compress/engine.h"
#include "compress/method.h"
#include "compress/quantizer.h"
#include "core/fs.h"
#include "core/tensor_util.h"
#include "model/model.h"
#include "pipeline/compress_run.h"
#include "recipes/plan.h"
#include "recipes/recipe_spec.h"
#include "tests/compress/prune_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {

pc::recipes::ResolvedRecipe Resolve(const std::string& yaml, const pc::Model& model) {
  return pc::recipes::ResolvePlan(pc::recipes::ParseRecipeText(yaml, "r.yaml"), model, pc::MethodRegistry::Builtins());
}

// rtn at 4 bits, group 16, on every block linear; the head's rule appended (an override or an ignore).
std::string RtnRecipe(const std::string& rest) {
  return "name: head\nmethod: rtn\nparams: {bits: 4, group_size: 16}\n" + rest;
}

pc::pipeline::CompressRunResult Compress(const std::string& model_dir, const std::string& yaml, const std::string& out,
                                        const std::string& format = "hf") {
  pc::pipeline::CompressRunOptions o;
  o.model_dir = model_dir;
  o.out_dir = out;
  o.overwrite = true;
  o.format = format;
  o.calib.source = "self:6";
  o.calib.seq_len = 16;
  return pc::pipeline::RunCompress(pc::recipes::ParseRecipeText(yaml, "r.yaml"), o);
}

}  // namespace

TEST_CASE("head: a plan entry skipped by default with its reason and matched by an ignore pattern", "[compress][head]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  auto model = pc::Model::Load(pc::test::MakeReferenceModel("llama"));
  pc::recipes::ResolvedRecipe plain = Resolve(RtnRecipe(""), *model);
  CHECK(plain.plan.head.name == "lm_head");
  CHECK(plain.plan.head.method == -1);
  CHECK(plain.plan.head.skip_reason == "output head: not compressed unless a recipe targets it");
  const std::string text = pc::recipes::FormatPlan(plain, *model);
  CHECK_THAT(text, Contains("lm_head") && Contains("skip: output head: not compressed unless a recipe targets it"));
  CHECK_THAT(text, Contains("21 of 21 block linears compressed; next block"));

  // llm-compressor's default ignore list is ["lm_head"]: the pattern matches the head, no error.
  pc::recipes::ResolvedRecipe ignored = Resolve(RtnRecipe("ignore: ['^lm_head$']\n"), *model);
  CHECK(ignored.plan.head.method == -1);
  CHECK(ignored.plan.head.skip_reason == "matches ignore pattern '^lm_head$'");
  CHECK(ignored.plan.Compressed() == 21);
  // An ignore pattern that matches neither a block linear nor the head is still an error, and
  // says what the names look like.
  CHECK_THROWS_WITH(Resolve(RtnRecipe("ignore: ['^lm_haed$']\n"), *model),
                    Contains("r.yaml:4: ignore pattern '^lm_haed$' matches no linear of this llama model") &&
                        Contains("the output head is 'lm_head'"));
  // A skip override on the head decides it (and so counts as matched).
  pc::recipes::ResolvedRecipe skipped =
      Resolve(RtnRecipe("overrides:\n  - match: '^lm_head$'\n    skip: 'kept dense'\n"), *model);
  CHECK(skipped.plan.head.method == -1);
  CHECK(skipped.plan.head.skip_reason == "kept dense");
}

TEST_CASE("head: quantized when an override targets it and refused where it cannot be", "[compress][head]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  auto model = pc::Model::Load(pc::test::MakeReferenceModel("llama"));
  pc::recipes::ResolvedRecipe r = Resolve(RtnRecipe("overrides:\n  - match: '^lm_head$'\n    params: {bits: 8}\n"), *model);
  REQUIRE(r.plan.head.method >= 0);
  CHECK(r.plan.methods[r.plan.head.method]->Describe() == "rtn(bits=8, group_size=16, zero_point=true)");
  CHECK(r.plan.Compressed() == 21);
  CHECK_THAT(pc::recipes::FormatPlan(r, *model), Contains("lm_head") && Contains("rtn(bits=8, group_size=16") &&
                                                     Contains("21 of 21 block linears compressed, and the output head"));
  // Another method by name (GPTQ's Hessian is the final norm's output).
  pc::recipes::ResolvedRecipe g =
      Resolve(RtnRecipe("overrides:\n  - match: '^lm_head$'\n    method: gptq\n    params: {bits: 4, group_size: 16}\n"), *model);
  REQUIRE(g.plan.head.method >= 0);
  CHECK(g.plan.methods[g.plan.head.method]->name() == "gptq");
  // AWQ folds its scales into what precedes a block's linears; the head is outside every block.
  CHECK_THROWS_WITH(Resolve("name: a\nmethod: awq\nparams: {group_size: 16}\noverrides:\n  - match: '^lm_head$'\n"
                            "    params: {bits: 8}\n",
                            *model),
                    Contains("override at r.yaml:5 ('^lm_head$'): awq cannot compress the output head 'lm_head'") &&
                        Contains("rtn or gptq"));
  // A tied head is the token embedding: refused, not quietly untied or embedding-quantized.
  auto tied = pc::Model::Load(pc::test::MakeReferenceModel("llama", "--variant tied"));
  CHECK_THROWS_WITH(Resolve(RtnRecipe("overrides:\n  - match: '^lm_head$'\n    params: {bits: 8}\n"), *tied),
                    Contains("override at r.yaml:5 ('^lm_head$') asks to compress the output head 'lm_head'") &&
                        Contains("ties it to the token embedding"));
  CHECK(Resolve(RtnRecipe("ignore: ['^lm_head$']\n"), *tied).plan.head.method == -1);  // ignoring it is fine
}

TEST_CASE("head: RunCompress writes the quantized head and the folder reads back", "[compress][head]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  const std::string ref_dir = pc::test::ReferenceWithTokenizer("llama", "");
  auto ref = pc::Model::Load(ref_dir);
  const at::Tensor head0 = ref->lm_head().weight;  // (vocab, d)
  const std::string out = pc::test::TempDir("head-rtn") + "/out";
  pc::pipeline::CompressRunResult run =
      Compress(ref_dir, RtnRecipe("overrides:\n  - match: '^lm_head$'\n    params: {bits: 3}\n"), out);
  CHECK(run.record.at("head") == "rtn(bits=3, group_size=16, zero_point=true)");
  auto comp = pc::Model::Load(out);
  CHECK(comp->lm_head().weight.equal(pc::FakeQuantize(head0, {3, 16, true})));
  CHECK(comp->block(0).linears[0].weight.equal(pc::FakeQuantize(ref->block(0).linears[0].weight, {4, 16, true})));
  int head_records = 0;
  for (const pc::Record& rec : run.engine.records) {
    if (rec.kind != "linear" || rec.name != "lm_head") continue;
    ++head_records;
    CHECK(rec.text.at("role") == "head");
    CHECK(rec.values.at("err_after") > 0);
    CHECK(rec.values.at("err_after") == Approx(rec.values.at("err_before")).epsilon(1e-9));  // rtn is its own naive
  }
  CHECK(head_records == 1);
  // Without the override the head is copied as it was.
  const std::string plain = pc::test::TempDir("head-plain") + "/out";
  CHECK(Compress(ref_dir, RtnRecipe(""), plain).record.at("head") ==
        "skip: output head: not compressed unless a recipe targets it");
  CHECK(pc::Model::Load(plain)->lm_head().weight.equal(head0));
  // GPTQ on the head: calibrated on the final norm's output, it beats RTN there.
  const std::string gptq = pc::test::TempDir("head-gptq") + "/out";
  pc::pipeline::CompressRunResult gr = Compress(
      ref_dir, RtnRecipe("overrides:\n  - match: '^lm_head$'\n    method: gptq\n    params: {bits: 3, group_size: 16}\n"),
      gptq);
  bool found = false;
  for (const pc::Record& rec : gr.engine.records) {
    if (rec.kind != "linear" || rec.name != "lm_head") continue;
    found = true;
    CHECK(rec.text.at("method") == "gptq");
    CHECK(rec.values.at("err_after") < rec.values.at("err_before"));
  }
  CHECK(found);
  CHECK_FALSE(pc::Model::Load(gptq)->lm_head().weight.equal(head0));
  // A pruner that wants the head's outputs (wanda-perp's accumulator gets the logits).
  const std::string wp = pc::test::TempDir("head-wanda-perp") + "/out";
  Compress(ref_dir, RtnRecipe("overrides:\n  - match: '^lm_head$'\n    method: wanda-perp\n    params: {sparsity: 0.5}\n"), wp);
  const at::Tensor wp_head = pc::Model::Load(wp)->lm_head().weight;
  CHECK((wp_head == 0).sum().item<int64_t>() == wp_head.numel() / 2);
  // AutoAWQ's packed layout leaves the head dense: a recipe that compresses it is refused before any work.
  const std::string awq_dir = pc::test::TempDir("head-awq-gemm") + "/out";
  CHECK_THROWS_WITH(Compress(ref_dir, RtnRecipe("overrides:\n  - match: '^lm_head$'\n    params: {bits: 4}\n"), awq_dir,
                             "awq-gemm"),
                    Contains("--format awq-gemm packs block linears") && Contains("'lm_head'"));
  CHECK_FALSE(pc::fs::Exists(awq_dir));
}

namespace {

// Records the statistics the engine hands it, per linear, and leaves the weights alone.
class StatsRecorder : public pc::Method {
 public:
  explicit StatsRecorder(std::map<std::string, pc::InputStats>* seen) : Method("recorder", {}), seen_(seen) {}
  uint32_t stats() const override { return pc::kStatAbsSum | pc::kStatSqSum | pc::kStatGram; }
  void CompressLinear(pc::Linear& linear, const pc::InputStats& stats, pc::Record&) override {
    (*seen_)[linear.name] = stats;
  }

 private:
  std::map<std::string, pc::InputStats>* seen_;
};

// The sums of every linear's input over a plain forward, computed directly (float64).
class DirectStats : public pc::ForwardHooks {
 public:
  explicit DirectStats(pc::Model& model) : model_(model) {}
  bool Wants(pc::SiteKind k) const override { return k == pc::SiteKind::kLinearInput; }
  at::Tensor At(const pc::Site& site, const at::Tensor& x, const at::Tensor&) override {
    const at::Tensor f = x.reshape({-1, x.size(-1)}).to(at::kDouble);  // (n, in)
    pc::InputStats& s = stats[model_.block(site.layer).linears[site.index].name];
    s.tokens += f.size(0);
    Add(s.abs_sum, f.abs().sum(0));
    Add(s.sq_sum, (f * f).sum(0));
    Add(s.gram, at::mm(f.t(), f));
    return x;
  }
  std::map<std::string, pc::InputStats> stats;

 private:
  static void Add(at::Tensor& acc, const at::Tensor& v) { acc = acc.defined() ? acc + v : v; }
  pc::Model& model_;
};

bool Close(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() <= 1e-4 * b.abs().max().item<double>() + 1e-6;
}

}  // namespace

// Keyed by the data pointer of the input tensor, two inputs of the same shape whose float32 copies
// reuse one freed buffer (a bfloat16 model converts each input into a temporary) would share one
// accumulation: o_proj's statistics would be q/k/v's, down_proj's gate/up's. Keyed by the site,
// every linear's statistics are those of its own input.
TEST_CASE("engine: each linear's input statistics are its own input's in bfloat16 too", "[compress][engine]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  const std::string dir = pc::test::MakeReferenceModel("llama", "--dtype bf16");
  struct NativeBf16 {  // bf16 arithmetic, whatever this CPU has (core/tensor_util.h)
    NativeBf16() { pc::SetBf16Compute(pc::Bf16Compute::kNative); }
    ~NativeBf16() { pc::ResetBf16Compute(); }
  } native_bf16;
  pc::LoadOptions lo;
  lo.dtype = at::kBFloat16;
  auto model = pc::Model::Load(dir, lo);
  REQUIRE(model->dtype() == at::kBFloat16);
  const at::Tensor calib = pc::test::RandomTokens(6, 20, model->config().vocab_size, 3);
  DirectStats direct(*model);
  model->Forward(calib, &direct);  // the original model's inputs: the engine propagates original outputs here
  std::map<std::string, pc::InputStats> seen;
  pc::Plan plan;
  plan.methods.push_back(std::make_unique<StatsRecorder>(&seen));
  plan.infos.push_back(&pc::MethodRegistry::Builtins().Get("rtn"));
  for (int l = 0; l < model->num_layers(); ++l) {
    for (size_t i = 0; i < model->block(l).linears.size(); ++i) {
      pc::PlanEntry e;
      e.layer = l;
      e.index = static_cast<int>(i);
      e.name = model->block(l).linears[i].name;
      e.role = model->block(l).linears[i].role;
      e.method = 0;
      plan.entries.push_back(e);
    }
  }
  pc::EngineOptions eo;
  eo.micro_batch = 2;  // three micro-batches
  pc::RunCompression(*model, plan, calib, eo);
  REQUIRE(seen.size() == plan.entries.size());
  for (const auto& [name, s] : seen) {
    INFO(name);
    const pc::InputStats& d = direct.stats.at(name);
    CHECK(s.tokens == d.tokens);
    CHECK(Close(s.abs_sum, d.abs_sum));
    CHECK(Close(s.sq_sum, d.sq_sum));
    CHECK(Close(s.gram, d.gram));
  }
}

// A float16 checkpoint cannot hold a weight that AWQ's folded scale pushes beyond 65504: the run
// is refused naming the tensor, and nothing is written.
TEST_CASE("awq: a folded scale that overflows the float16 checkpoint is refused naming the linear", "[compress][awq]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  const std::string f16 = pc::test::ReferenceWithTokenizer("llama", "", "--dtype f16");
  // One input channel of layer 0's attention 100x larger (its norm weight), and q_proj's column for
  // it at 30000 (representable in float16): the scale AWQ gives that channel is well above 2.2.
  const std::string dir = pc::test::TempDir("awq-f16-overflow") + "/model";
  {
    auto m = pc::Model::Load(f16);
    m->block(0).attn_norm.weight.narrow(0, 0, 1).fill_(100.0);
    m->block(0).linears[0].weight.select(1, 0).fill_(30000.0);
    m->Save(dir);
    pc::test::AddTokenizer(dir, m->config().vocab_size);
  }
  const std::string out = pc::test::TempDir("awq-f16-overflow") + "/out";
  CHECK_THROWS_WITH(Compress(dir, "name: a\nmethod: awq\nparams: {group_size: 16, alpha: 0.9, clip: false}\n", out),
                    Contains("compress: 'model.layers.0.self_attn.q_proj.weight' holds") &&
                        Contains("beyond the F16 range of the checkpoint (65504)"));
  CHECK_FALSE(pc::fs::Exists(out));
}
