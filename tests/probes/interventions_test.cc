// The probes through the intervention path: every setting runs through the forward hooks, which
// replace tensors (no short-circuit), and the neutral settings reproduce the plain model.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "core/fs.h"
#include "core/tensor_util.h"
#include "metrics/minimal_pairs.h"
#include "metrics/perplexity.h"
#include "model/tokenizer/tokenizer.h"
#include "probes/decompose.h"
#include "probes/norm_depth.h"
#include "probes/perturb.h"
#include "probes/scale.h"
#include "tests/metrics/metrics_test_util.h"
#include "tests/probes/probes_test_util.h"
#include "tests/test_support.h"

using namespace pc;
using namespace pc::probes;

namespace {

double Rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

struct Case {
  std::string type;
  bool sequential;
};
const Case kCases[] = {{"llama", false}, {"gpt_neox", false}, {"gpt_neox", true}};

// Delegates to PerturbHooks and measures ‖h' − h‖ itself on what the model passes on.
class Witness : public ForwardHooks {
 public:
  explicit Witness(PerturbHooks& inner) : inner_(inner) {}
  bool Wants(SiteKind kind) const override { return inner_.Wants(kind); }
  at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor& incoming) override {
    at::Tensor out = inner_.At(site, x, incoming);
    if (site.kind == SiteKind::kBlockOutput) {
      disp.push_back((out.to(at::kDouble) - x.to(at::kDouble)).norm(2, {-1}).reshape({-1}));
      norm.push_back(x.to(at::kDouble).norm(2, {-1}).reshape({-1}));
    }
    return out;
  }
  PerturbHooks& inner_;
  std::vector<at::Tensor> disp, norm;
};

}  // namespace

TEST_CASE("scale: alpha = beta = 1 through the hooks reproduces the loss (residual and value space)", "[probes]") {
  for (const Case& c : kCases) {
    INFO(c.type << (c.sequential ? " sequential" : ""));
    auto model = test::RandomProbeModel(c.type, 1, c.sequential);
    ProbeInputs in;
    in.windows = test::ProbeTokens(4, 24, model->config().vocab_size, 2);
    const ProbeScore plain = Score(*model, in, HookedForward(*model, nullptr));
    CHECK(Rel(plain.loss, EvaluatePerplexity(*model, in.windows).mean_nll) < 1e-12);
    for (Space space : {Space::kResidual, Space::kValue}) {
      ScaleSetting s;
      s.space = space;
      ScaleHooks hooks(AllLayers(model->num_layers()), s);
      const ProbeScore one = Score(*model, in, HookedForward(*model, &hooks));
      CHECK(hooks.replaced() >= model->num_layers());
      CHECK(Rel(one.loss, plain.loss) < 1e-6);
      s.alpha = 0.0;  // the same path with a real change does change the loss
      ScaleHooks zero(AllLayers(model->num_layers()), s);
      CHECK(Rel(Score(*model, in, HookedForward(*model, &zero)).loss, plain.loss) > 1e-4);
    }
    ScaleSetting ex;
    ex.mode = ScaleSetting::Mode::kExcludeSelf;
    ex.space = Space::kValue;
    ScaleHooks exclude(AllLayers(model->num_layers()), ex);
    at::NoGradGuard no_grad;
    at::Tensor ref = model->Forward(in.windows);
    at::Tensor got = model->Forward(in.windows, &exclude);
    CHECK(exclude.replaced() == model->num_layers());
    CHECK(MaxRelDiff(got, ref) < 1e-6);
    CHECK(Rel(Score(*model, in, HookedForward(*model, &exclude)).loss, plain.loss) < 1e-6);
  }
}

TEST_CASE("scale: the table and the grid of RunScale", "[probes]") {
  auto model = test::RandomProbeModel("llama", 3);
  ProbeInputs in;
  in.windows = test::ProbeTokens(3, 16, model->config().vocab_size, 4);
  ScaleOptions o;
  o.layers = LayerRange{1, 2};
  o.alphas = {0, 2};
  o.betas = {0.5};
  o.factors = {0};
  ScaleResult r = RunScale(*model, in, o);
  REQUIRE(r.rows.size() == 5);
  CHECK(r.rows[0].kind == "baseline");
  CHECK(r.rows[1].kind == "parallel");
  CHECK(r.rows[3].kind == "perpendicular");
  CHECK(r.rows[4].kind == "exclude_self");
  CHECK(r.grid_alphas == std::vector<double>{0, 1, 2});
  CHECK(r.grid_betas == std::vector<double>{0.5, 1});
  REQUIRE(r.grid.size() == 6);
  CHECK(Rel(r.grid[3].loss, r.baseline.loss) < 1e-6);           // (α, β) = (1, 1)
  CHECK(r.rows[1].score.loss == r.grid[1].loss);                 // ∥ × 0 is the cell (0, 1)
  CHECK(r.rows[3].score.loss == r.grid[2].loss);                 // ⊥ × 0.5 is the cell (1, 0.5)
  o.layers = LayerRange{1, 7};
  CHECK_THROWS_WITH(RunScale(*model, in, o), Catch::Matchers::Contains("the model has 4 layers (0-3)"));
}

TEST_CASE("perturb: delta = 0 through the hooks reproduces the loss", "[probes]") {
  for (const Case& c : kCases) {
    INFO(c.type);
    auto model = test::RandomProbeModel(c.type, 5, c.sequential);
    ProbeInputs in;
    in.windows = test::ProbeTokens(3, 20, model->config().vocab_size, 6);
    const double plain = Score(*model, in, HookedForward(*model, nullptr)).loss;
    for (PerturbKind kind : {PerturbKind::kMagnitude, PerturbKind::kDirection}) {
      PerturbHooks hooks(LayerRange{1, 2}, kind, 0.0, 0);
      CHECK(Rel(Score(*model, in, HookedForward(*model, &hooks)).loss, plain) < 1e-6);
      CHECK(hooks.displacement().tokens == 2 * 3 * 20);  // every token of both layers went through the kernel
      CHECK(hooks.displacement().skipped == 0);
    }
  }
}

TEST_CASE("perturb: the realised displacement equals delta per token (both kinds, all layers at once)", "[probes]") {
  for (const Case& c : kCases) {
    auto model = test::RandomProbeModel(c.type, 8, c.sequential);
    const at::Tensor tokens = test::ProbeTokens(2, 32, model->config().vocab_size, 9);
    for (PerturbKind kind : {PerturbKind::kMagnitude, PerturbKind::kDirection}) {
      for (double delta : {0.25, 2.0, 9.0}) {
        INFO(c.type << " " << PerturbKindName(kind) << " delta " << delta);
        PerturbHooks hooks(LayerRange{0, 3}, kind, delta, 11);
        Witness witness(hooks);
        at::NoGradGuard no_grad;
        model->Forward(tokens, &witness);
        REQUIRE(witness.disp.size() == 4);
        int64_t moved = 0, skipped = 0, too_short = 0;
        for (size_t i = 0; i < witness.disp.size(); ++i) {
          // Left alone: ‖h‖ < δ/2 (both kinds), or a magnitude draw that would shrink h by δ ≥ ‖h‖
          // (reversing it): those have ‖h‖ ≤ δ.
          const at::Tensor short_ = witness.norm[i] < delta / 2;
          const at::Tensor move = witness.disp[i] > 0;
          const at::Tensor skip = move.logical_not();
          CHECK(short_.logical_and(move).sum().item<int64_t>() == 0);
          if (kind == PerturbKind::kDirection) CHECK(skip.equal(short_));
          CHECK(skip.logical_and(witness.norm[i] > delta).sum().item<int64_t>() == 0);
          moved += move.sum().item<int64_t>();
          skipped += skip.sum().item<int64_t>();
          too_short += short_.sum().item<int64_t>();
          if (move.any().item<bool>()) {
            CHECK(((witness.disp[i] - delta).abs() / delta).masked_select(move).max().item<double>() < 1e-4);
          }
          if (skip.any().item<bool>()) CHECK(witness.disp[i].masked_select(skip).max().item<double>() == 0);
        }
        CHECK(moved > 0);
        CHECK(hooks.displacement().tokens == moved);
        CHECK(hooks.displacement().skipped == skipped);
        CHECK(hooks.displacement().skipped_reversing == skipped - too_short);
        int64_t by_layer = 0;
        for (const auto& [layer, n] : hooks.displacement().skipped_by_layer) by_layer += n.first;
        CHECK(by_layer == skipped);
        CHECK(hooks.displacement().max_rel_error < 1e-4);
        if (kind == PerturbKind::kDirection) CHECK(hooks.displacement().max_norm_rel_change < 1e-4);
      }
    }
  }
}

TEST_CASE("perturb: seeded per batch, repair of clean-input layers is exact, summaries", "[probes]") {
  auto model = test::RandomProbeModel("gpt_neox", 12, /*sequential=*/true);
  ProbeInputs in;
  in.windows = test::ProbeTokens(4, 16, model->config().vocab_size, 13);
  in.batch = 2;  // two batches: keys 0 and 1
  PerturbOptions o;
  o.layers = LayerRange{1, 1};
  o.deltas = {1.0, 3.0};
  o.seeds = 2;
  o.repair_layers = LayerRange{1, 1};  // layer 1's sublayers read a clean input: restoring them changes nothing
  PerturbResult r = RunPerturb(*model, in, o);
  REQUIRE(r.runs.size() == 2 * 2 * 2 * 3);
  REQUIRE(r.summary.size() == 4);
  REQUIRE(r.repair.size() == 2 * 2 * 2);
  REQUIRE(r.loss_ratio.size() == 2);
  CHECK(r.norms.size() == 4);
  for (size_t i = 0; i < r.runs.size(); i += 3) {
    CHECK(r.runs[i].repair == RepairKind::kNone);
    CHECK(r.runs[i].damage != 0);
    CHECK(r.runs[i + 1].score.loss == r.runs[i].score.loss);  // attention repair of layer 1: a no-op
    CHECK(r.runs[i + 2].score.loss == r.runs[i].score.loss);  // norm repair of layer 1: a no-op
  }
  // Different seeds draw different perturbations; the same seed the same.
  CHECK(r.runs[0].score.loss != r.runs[6].score.loss);
  PerturbResult again = RunPerturb(*model, in, o);
  CHECK(again.runs[0].score.loss == r.runs[0].score.loss);
  // Restoring the attention of the layers after the perturbation does change the loss.
  o.repair_layers = LayerRange{2, 3};
  o.deltas = {3.0};
  o.seeds = 1;
  o.repairs = {RepairKind::kAttention};
  PerturbResult later = RunPerturb(*model, in, o);
  CHECK(later.runs[1].score.loss != later.runs[0].score.loss);
  CHECK(later.repair[0].recovered.n == (later.runs[0].damage > 0 ? 1 : 0));  // a share of a positive damage only
  // Bad options name the option.
  o.deltas = {0.0};
  CHECK_THROWS_WITH(RunPerturb(*model, in, o), Catch::Matchers::Contains("--delta: every distance must be > 0"));
  o.deltas = {1.0};
  o.layers = LayerRange{2, 4};
  CHECK_THROWS_WITH(RunPerturb(*model, in, o), Catch::Matchers::Contains("the model has 4 layers (0-3)"));
}

TEST_CASE("decompose: counts, shares, value space and self weights", "[probes]") {
  auto model = test::RandomProbeModel("llama", 21);
  ProbeInputs in;
  in.windows = test::ProbeTokens(3, 10, model->config().vocab_size, 22);
  DecomposeOptions o;
  o.layers = LayerRange{0, 3};
  DecomposeResult r = Decompose(*model, in, o);
  REQUIRE(r.updates.size() == 8);
  REQUIRE(r.heads.size() == 4 * 4);
  CHECK(r.tokens == 3 * 10 * 4);
  for (const auto& u : r.updates) {
    CHECK(u.split.tokens + u.split.skipped == 30);
    CHECK(u.split.parallel_share() + u.split.perpendicular_share() == Approx(1).epsilon(1e-9));
    CHECK(u.split.coef.size() == static_cast<size_t>(u.split.tokens));
  }
  for (const auto& h : r.heads) {
    REQUIRE(h.self_weight.size() == 30);
    // Query 0 of a window attends only to itself: a_00 = 1 and o_0 = v_0 (c = 1).
    CHECK(h.self_weight[0] == Approx(1));
    CHECK(h.split.coef[0] == Approx(1).epsilon(1e-5));
    for (float a : h.self_weight) {
      CHECK(a >= 0);
      CHECK(a <= 1.0001);
    }
  }
  // The observation leaves the forward unchanged.
  DecomposeHooks hooks(*model, o);
  at::NoGradGuard no_grad;
  CHECK(model->Forward(in.windows, &hooks).equal(model->Forward(in.windows)));
}

TEST_CASE("stories260K: pairs through the probe forward, alpha = beta = 1, word alignment", "[probes][shared]") {
  PC_REQUIRE_SHARED();
  const std::string dir = test::Stories260KDir();
  auto model = Model::Load(dir);
  auto tok = LoadTokenizer(dir);
  const std::string pairs_path = test::TempDir("probe-pairs") + "/tiny.jsonl";
  std::ofstream(pairs_path) << R"({"sentence_good": "The dog runs.", "sentence_bad": "The dog run."})" << "\n"
                            << R"({"sentence_good": "Lily was happy.", "sentence_bad": "Lily were happy."})" << "\n"
                            << R"({"sentence_good": "They play with the ball.", "sentence_bad": "They plays with the ball."})"
                            << "\n";
  ProbeInputs in;
  in.pairs = ReadMinimalPairs(pairs_path);
  in.tokenizer = tok.get();
  in.windows = test::ProbeTokens(2, 64, model->config().vocab_size, 1);
  const ProbeScore plain = Score(*model, in, HookedForward(*model, nullptr));
  std::vector<PairScore> direct = ScoreMinimalPairs(*model, *tok, in.pairs);
  REQUIRE(plain.pairs);
  CHECK(plain.pairs->overall.correct == AggregatePairs(in.pairs, direct).overall.correct);
  ScaleSetting s;
  ScaleHooks hooks(AllLayers(model->num_layers()), s);
  const ProbeScore one = Score(*model, in, HookedForward(*model, &hooks));
  CHECK(Rel(one.loss, plain.loss) < 1e-6);
  CHECK(one.pairs->overall.correct == plain.pairs->overall.correct);
  // Words to tokens: each word's last token.
  DepthSentence d{"The dog runs.", {"The", "dog", "runs"}, {2, 2, 2}};
  std::vector<int64_t> ends = AlignWordEnds(*tok, d);
  REQUIRE(ends.size() == 3);
  CHECK(ends[0] < ends[1]);
  CHECK(ends[1] < ends[2]);
  CHECK(ends[2] < static_cast<int64_t>(tok->Encode(d.sentence).size()));
  NormDepthData nd = CollectNormDepth(*model, *tok, {d, d}, 0);
  CHECK(nd.sentences == 2);
  CHECK(nd.depth.size() == 6);
  CHECK(nd.norm.size() == static_cast<size_t>(model->num_layers()));
  CHECK(nd.norm[0][0] == Approx(nd.norm[0][3]));  // the same sentence twice
}
