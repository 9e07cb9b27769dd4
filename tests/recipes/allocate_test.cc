// perpcomp allocate without a model: the multiple-choice knapsack against brute force, the budget,
// predictor and candidates parsers' errors, and the recipe and exports of a plan.
#include <catch2/catch.hpp>

#include <random>

#include "recipes/allocate.h"
#include "recipes/candidates.h"
#include "recipes/recipe_spec.h"

using Catch::Matchers::Contains;
using namespace pc::recipes;

namespace {

struct Instance {
  std::vector<std::vector<double>> cost, damage;
  double capacity = 0;
};

// n items of 1..4 choices; integer costs 0..9 when `integer`, else reals.
Instance RandomInstance(std::mt19937& rng, bool integer) {
  std::uniform_int_distribution<int> items(1, 8), choices(1, 4), icost(0, 9);
  std::uniform_real_distribution<double> real(0, 10), dmg(0, 1);
  Instance in;
  const int n = items(rng);
  double max_total = 0;
  for (int i = 0; i < n; ++i) {
    const int k = choices(rng);
    std::vector<double> c, d;
    double mx = 0;
    for (int j = 0; j < k; ++j) {
      c.push_back(integer ? icost(rng) : real(rng));
      d.push_back(std::floor(dmg(rng) * 8) / 8);  // coarse damages: ties happen
      mx = std::max(mx, c.back());
    }
    max_total += mx;
    in.cost.push_back(c);
    in.damage.push_back(d);
  }
  in.capacity = integer ? std::floor(max_total * 0.6) : max_total * 0.6;
  return in;
}

double CostOf(const Instance& in, const std::vector<int>& ch) {
  double s = 0;
  for (size_t i = 0; i < ch.size(); ++i) s += in.cost[i][ch[i]];
  return s;
}

// A sensitivity table of a 2-layer llama: 7 linears a layer, candidates w3/w4/w8 (rtn) and none.
SensitivityTable SyntheticTable() {
  SensitivityTable t;
  t.path = "synthetic.h5";
  t.model = "synthetic";
  t.model_type = "llama";
  t.calibration_json = R"({"seq_len": 64, "windowing": "random", "seed": 0, "samples": 4})";
  t.candidates = {{"w3", "rtn", "quantization", R"({"bits": 3, "group_size": 32, "zero_point": true})"},
                  {"w4", "rtn", "quantization", R"({"bits": 4, "group_size": 32, "zero_point": true})"},
                  {"w8", "rtn", "quantization", R"({"bits": 8, "group_size": 32, "zero_point": false})"},
                  {"dense", "none", "dense", "{}"}};
  const char* names[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                         "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
  for (int l = 0; l < 2; ++l) {
    for (int i = 0; i < 7; ++i) {
      SensitivityUnit u;
      u.name = "model.layers." + std::to_string(l) + "." + names[i];
      u.layer = l;
      u.members = {u.name};
      u.params = 64 * 64 * (i >= 4 ? 3 : 1);
      u.in_features = {i == 6 ? 192 : 64};
      t.units.push_back(u);
      std::vector<SensitivityCell> row(4);
      const double bits[] = {3 + 19.0 / 32, 4 + 20.0 / 32, 8 + 16.0 / 32, 16};
      for (int c = 0; c < 4; ++c) {
        row[c].bits = bits[c];
        const double e = c == 3 ? 0 : std::pow(4.0, -c) * (1 + l + i);  // later, bigger linears hurt more
        row[c].iso = row[c].perp = row[c].par = e;
        row[c].acc_iso = row[c].acc_par = row[c].acc_perp = row[c].kl = std::nan("");
        row[c].weight_err = e;
        row[c].one_minus_cos = 0.1 * (l + 1);
      }
      t.cells.push_back(row);
    }
  }
  return t;
}

}  // namespace

TEST_CASE("allocate: the dynamic programme equals brute force on integer costs", "[recipes][allocate]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const Instance in = RandomInstance(rng, true);
    const Choice bf = BruteForceMckp(in.cost, in.damage, in.capacity);
    // Steps = capacity: every integer cost is a whole number of quanta, so the programme is exact.
    const Choice dp = SolveMckp(in.cost, in.damage, in.capacity, std::max<int64_t>(1, static_cast<int64_t>(in.capacity)));
    INFO("trial " << trial << " capacity " << in.capacity);
    REQUIRE(dp.feasible() == bf.feasible());
    if (!bf.feasible()) continue;
    CHECK(dp.damage == Approx(bf.damage).margin(1e-12));
    CHECK(dp.cost == Approx(bf.cost).margin(1e-9));  // ties broken towards the lower cost, as brute force
    CHECK(CostOf(in, dp.choice) <= in.capacity);
  }
}

TEST_CASE("allocate: on real costs the answer is feasible and within the stated bound", "[recipes][allocate]") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const Instance in = RandomInstance(rng, false);
    const int64_t steps = 1000;
    const Choice dp = SolveMckp(in.cost, in.damage, in.capacity, steps);
    const Choice bf = BruteForceMckp(in.cost, in.damage, in.capacity);
    const double q = in.capacity / steps;
    const Choice bf_tight = BruteForceMckp(in.cost, in.damage, in.capacity - q * static_cast<double>(in.cost.size()));
    INFO("trial " << trial);
    if (!dp.feasible()) {
      CHECK(!bf_tight.feasible());
      continue;
    }
    CHECK(CostOf(in, dp.choice) <= in.capacity + 1e-9);
    REQUIRE(bf.feasible());
    CHECK(dp.damage >= bf.damage - 1e-12);  // never better than the optimum
    if (bf_tight.feasible()) CHECK(dp.damage <= bf_tight.damage + 1e-12);
  }
}

TEST_CASE("allocate: an infeasible budget says what the cheapest plan reaches", "[recipes][allocate]") {
  const SensitivityTable t = SyntheticTable();
  CHECK_THROWS_WITH(Allocate(t, ParseBudget("bits=3"), "perp"),
                    Contains("cannot be met") && Contains("average bits 3.59"));
  CHECK(!SolveMckp({{5, 6}}, {{0, 0}}, 4, 4).feasible());
}

TEST_CASE("allocate: budget strings and predictor names", "[recipes][allocate]") {
  CHECK(ParseBudget("bits=3.5").value == 3.5);
  CHECK(ParseBudget("sparsity=0.5").kind == Budget::Kind::kSparsity);
  CHECK(ParseBudget("bits=4").value == 4);
  CHECK_THROWS_WITH(ParseBudget("bit=3.5"), Contains("expected bits=B") && Contains("sparsity=S"));
  CHECK_THROWS_WITH(ParseBudget("bits=three"), Contains("'three' is not a number"));
  CHECK_THROWS_WITH(ParseBudget("sparsity=1.5"), Contains("sparsity must be in [0, 1)"));
  CHECK_THROWS_WITH(ParseBudget("bits=0"), Contains("bits must be in (0, 32]"));
  const SensitivityTable t = SyntheticTable();
  CHECK_THROWS_WITH(PredictorDamage(t, "prep"),
                    Contains("'prep' is unknown") && Contains("perp, par, iso, acc-perp") && Contains("cos-order"));
  CHECK_THROWS_WITH(PredictorDamage(t, "acc-perp"), Contains("not computed") && Contains("--accumulated"));
  CHECK_THROWS_WITH(PredictorDamage(t, "kl"), Contains("--kl"));
  CHECK(PredictorDamage(t, "cos-order")[7][0] == Approx(0.2 * 2));  // (1 − cos) × weight error, layer 1
}

TEST_CASE("allocate: candidates files, with file:line errors", "[recipes][allocate]") {
  const CandidatesSpec ok = ParseCandidatesText(
      "candidates:\n"
      "  - {name: w3, method: rtn, params: {bits: 3, group_size: 128}}\n"
      "  - name: keep\n"
      "    method: none\n"
      "groups:\n"
      "  - {name: qkv, match: 'self_attn\\.(q|k|v)_proj$'}\n",
      "c.yaml");
  REQUIRE(ok.candidates.size() == 2);
  CHECK(ok.candidates[1].dense());
  CHECK(ok.groups[0].match.Matches("model.layers.2.self_attn.k_proj"));
  CHECK_THROWS_WITH(ParseCandidatesText("candidates: []\n", "c.yaml"), Contains("c.yaml:1") && Contains("is empty"));
  CHECK_THROWS_WITH(ParseCandidatesText("candidates:\n  - {name: a, method: rtn}\n  - {name: a, method: gptq}\n", "c.yaml"),
                    Contains("c.yaml:3") && Contains("'a' is used twice"));
  CHECK_THROWS_WITH(ParseCandidatesText("candidates:\n  - {name: a, method: none, params: {bits: 3}}\n", "c.yaml"),
                    Contains("c.yaml:2") && Contains("takes no 'params'"));
  CHECK_THROWS_WITH(ParseCandidatesText("candidates:\n  - {name: a}\n", "c.yaml"),
                    Contains("c.yaml:2") && Contains("'method'"));
  CHECK_THROWS_WITH(ParseCandidatesText("candidates:\n  - {name: a, metod: rtn}\n", "c.yaml"),
                    Contains("unknown key 'metod'"));
  CHECK_THROWS_WITH(ParseCandidatesText("candidates:\n  - {name: a, method: rtn}\ngroups:\n  - {name: g, match: '(('}\n",
                                        "c.yaml"),
                    Contains("c.yaml:4") && Contains("invalid regex"));
  CHECK_THROWS_WITH(ParseCandidatesText("", "c.yaml"), Contains("c.yaml: the file is empty"));
}

TEST_CASE("allocate: the plan as a recipe that resolves to the chosen settings", "[recipes][allocate]") {
  const SensitivityTable t = SyntheticTable();
  const Allocation a = Allocate(t, ParseBudget("bits=5"), "perp");
  CHECK(a.average <= 5.0);
  CHECK(a.average > 4.5);  // the budget is used, not wasted
  // The solver's damage is at most any uniform plan's that fits.
  CHECK(a.damage <= Uniform(t, a.budget, "perp", 1).damage);
  const std::string yaml = AllocationRecipeYaml(t, a, "alloc-test");
  INFO(yaml);
  const RecipeSpec r = ParseRecipeText(yaml, "alloc.yaml");
  CHECK(r.name.value == "alloc-test");
  for (size_t u = 0; u < t.units.size(); ++u) {
    const ModuleStep step = ResolveModule(r, t.units[u].members[0]);
    const SensitivityCandidate& c = t.candidates[a.choice[u]];
    if (c.family == "dense") {
      CHECK(step.skip);
      continue;
    }
    CHECK(!step.skip);
    CHECK(step.method == c.method);
    CHECK(step.params.at("bits").AsInt("bits") == (c.name == "w3" ? 3 : c.name == "w4" ? 4 : 8));
  }
}

TEST_CASE("allocate: llm-compressor and llama-quantize exports", "[recipes][allocate]") {
  const SensitivityTable t = SyntheticTable();
  Allocation a = Uniform(t, ParseBudget("bits=5"), "perp", 1);
  a.choice[0] = 2;  // layer 0 q_proj on 8 bits
  a.choice[13] = 3; // layer 1 down_proj left dense
  const LlamaQuantizeExport lq = ExportLlamaQuantize(t, a);
  CHECK_THAT(lq.args, Contains("--tensor-type blk.0.attn_q=q8_0\n") && Contains("--tensor-type blk.0.attn_k=q4_1\n") &&
                          Contains("--tensor-type blk.1.ffn_down=f16\n") && Contains("blk.1.ffn_gate=q4_1"));
  CHECK(lq.checked);
  CHECK(lq.fallbacks.empty());
  // Of 106496 weights, layer 0's q_proj (4096) at q8_0, layer 1's down_proj (12288) at f16, the rest at q4_1.
  CHECK(lq.bits_per_weight == Approx((4096 * 8.5 + 12288 * 16.0 + 90112 * 5.0) / 106496));

  // q3_K and q6_K need rows of 256: on 64 inputs llama.cpp stores q4_0 and q8_0, and the export says so.
  Allocation low = a;
  low.choice[1] = 0;  // layer 0 k_proj on 3 bits
  const LlamaQuantizeExport lq3 = ExportLlamaQuantize(t, low);
  CHECK_THAT(lq3.args, Contains("--tensor-type blk.0.attn_k=q4_0\n"));
  REQUIRE(lq3.fallbacks.size() == 1);
  CHECK(lq3.fallbacks[0] == "model.layers.0.self_attn.k_proj: q3_K needs rows that are a multiple of 256, it has 64 "
                            "inputs; llama.cpp stores q4_0");
  CHECK(LlamaCppStoredType("q3_K", 1536) == "q3_K");
  CHECK(LlamaCppStoredType("q3_K", 576) == "q4_0");
  CHECK(LlamaCppStoredType("q2_K", 576) == "q4_0");
  CHECK(LlamaCppStoredType("q6_K", 576) == "q8_0");
  CHECK(LlamaCppStoredType("q4_1", 48) == "f16");  // no 32-block either
  CHECK(LlamaCppStoredType("q3_K", 80) == "f16");   // the q4_0 fallback does not divide 80 either
  CHECK(LlamaCppBitsPerWeight("q3_K") == 3.4375);
  CHECK(LlamaCppBitsPerWeight("q4_1") == 5.0);
  SensitivityTable old = t;  // a sensitivity file without the in_features column
  for (auto& u : old.units) u.in_features.clear();
  const LlamaQuantizeExport unchecked = ExportLlamaQuantize(old, low);
  CHECK_FALSE(unchecked.checked);
  CHECK_THAT(unchecked.args, Contains("--tensor-type blk.0.attn_k=q3_K\n"));
  const std::string lc = ExportLlmCompressor(t, a);
  CHECK_THAT(lc, Contains("QuantizationModifier:") && Contains("config_groups:") &&
                     Contains("'re:^model\\.layers\\.0\\.self_attn\\.q_proj$'") &&
                     Contains("{num_bits: 8, type: int, symmetric: true, strategy: group, group_size: 32}") &&
                     Contains("ignore: [\"lm_head\", 're:^model\\.layers\\.1\\.mlp\\.down_proj$']"));
  CHECK(LlamaCppType(4, false) == "q4_0");
  SensitivityTable odd = t;
  odd.units[6].in_features = {172};  // down_proj of stories260K: 172 inputs, g32 does not divide
  CHECK_THROWS_WITH(ExportLlmCompressor(odd, a), Contains("'model.layers.0.mlp.down_proj' has 172 inputs") &&
                                                     Contains("group_size 32"));
  CHECK_THROWS_WITH(LlamaCppType(1, false), Contains("no llama.cpp type for 1 bits"));
}
