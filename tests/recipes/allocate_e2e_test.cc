// sensitivity → allocate → compress through the binary on stories260K (../shared): the recipe the
// allocator writes runs unchanged in `compress`, resolves to the chosen plan and meets the budget;
// the llm-compressor export is accepted by llm-compressor's parser (reference environment).
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pipeline/sensitivity.h"
#include "recipes/allocate.h"
#include "store/file.h"
#include "recipes/recipe_spec.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;
using pc::test::RunPerpcomp;
using namespace pc::recipes;

namespace {

std::string Stories() { return pc::test::ConvertedStories(); }

std::string WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The sensitivity file of stories260K for rtn w3/w4/w8 (g32) and dense, q/k/v as one group; made once.
std::string Sensitivity(const std::string& extra = "", bool gptq = true) {
  static std::map<std::string, std::string> made;
  const std::string key = extra + (gptq ? "+gptq" : "");
  if (made.count(key)) return made[key];
  const std::string dir = pc::test::TempDir("alloc-sens" + std::to_string(made.size()));
  // Without gptq (the llm-compressor test): per-channel, since llm-compressor refuses a group size
  // that does not divide a linear's inputs (stories260K's down_proj has 172).
  const std::string g = gptq ? "32" : "-1";
  const std::string cands = WriteFile(dir + "/cands.yaml",
                                      std::string("candidates:\n") +
                                      "  - {name: w3, method: rtn, params: {bits: 3, group_size: " + g + "}}\n" +
                                      "  - {name: w4, method: rtn, params: {bits: 4, group_size: " + g + "}}\n" +
                                      "  - {name: w8, method: rtn, params: {bits: 8, group_size: " + g + "}}\n" +
                                      (gptq ? "  - {name: gptq4, method: gptq, params: {bits: 4, group_size: 32}}\n" : "") +
                                      "  - {name: dense, method: none}\n" +
                                      "groups:\n" +
                                      "  - {name: qkv, match: 'self_attn\\.(q|k|v)_proj$'}\n");
  const std::string out = dir + "/sens.h5";
  auto r = RunPerpcomp("sensitivity --model '" + Stories() + "' --candidates '" + cands + "' --calib self:8 --calib-samples 8 " +
                       "--calib-seq-len 64 --threads 1 --out '" + out + "' " + extra);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("forward-equivalents"));
  made[key] = out;
  return out;
}

}  // namespace

TEST_CASE("allocate e2e: sensitivity, allocate, compress on stories260K meet the budget", "[recipes][shared]") {
  PC_REQUIRE_SHARED();
  const std::string sens = Sensitivity("--accumulated --kl");
  const SensitivityTable t = ReadSensitivity(sens);
  REQUIRE(t.candidates.size() == 5);
  REQUIRE(t.units.size() == 5 * 5);  // 5 layers x (qkv, o, gate, up, down)
  CHECK(t.units[0].members.size() == 3);
  CHECK(t.forward_equivalents > 1);
  for (size_t u = 0; u < t.units.size(); ++u) {
    // More bits, less error: every predictor sees w8 below w3; dense costs nothing.
    CHECK(t.cells[u][2].iso < t.cells[u][0].iso);
    CHECK(t.cells[u][2].acc_iso < t.cells[u][0].acc_iso);
    CHECK(t.cells[u][2].kl < t.cells[u][0].kl);
    CHECK(t.cells[u][4].iso == 0);
    CHECK(t.cells[u][0].perp + t.cells[u][0].par == Approx(t.cells[u][0].iso).epsilon(1e-9));
    CHECK(t.cells[u][0].bits == Approx(3 + 19.0 / 32));  // bits + (16 + bits) / 32
    CHECK(t.cells[u][4].bits == 16);
  }
  const std::string dir = pc::test::TempDir("alloc-e2e");
  for (const char* predictor : {"perp", "iso", "kl", "cos-order"}) {
    INFO(predictor);
    const std::string recipe = dir + "/" + predictor + ".yaml";
    auto a = RunPerpcomp("allocate --sensitivity '" + sens + "' --budget bits=4.5 --predictor " + predictor +
                         " --out '" + recipe + "' --overwrite --llama-quantize '" + dir + "/" + predictor + ".args'");
    INFO(a.err);
    REQUIRE(a.exit_code == 0);
    const Allocation plan = Allocate(t, ParseBudget("bits=4.5"), predictor);
    CHECK(plan.average <= 4.5);
    // The recipe runs unchanged: its dry-run plan is the chosen one, and compress writes the model.
    auto dry = RunPerpcomp("compress --model '" + Stories() + "' --recipe '" + recipe + "' --dry-run");
    INFO(dry.err);
    REQUIRE(dry.exit_code == 0);
    for (size_t u = 0; u < t.units.size(); ++u) {
      const SensitivityCandidate& c = t.candidates[plan.choice[u]];
      const nlohmann::json p = nlohmann::json::parse(c.params_json);
      for (const auto& m : t.units[u].members) {
        const size_t at = dry.out.find("  " + m + " ");
        REQUIRE(at != std::string::npos);
        const std::string line = dry.out.substr(at, dry.out.find('\n', at) - at);
        INFO(line);
        if (c.family == "dense") {
          CHECK_THAT(line, Contains("skip: allocate: left dense"));
        } else {
          CHECK_THAT(line, Contains(c.method + "(") && Contains("bits=" + std::to_string(p["bits"].get<int>())));
        }
      }
    }
    if (std::string(predictor) == "perp") {
      auto c = RunPerpcomp("compress --model '" + Stories() + "' --recipe '" + recipe +
                           "' --calib self:8 --calib-samples 8 --threads 1 --out '" + dir + "/perp-model'");
      INFO(c.err);
      CHECK(c.exit_code == 0);
      CHECK_THAT(ReadFile(dir + "/perp.args"), Contains("--tensor-type blk.0.attn_q="));
    }
  }
  // Errors: an unknown predictor lists the valid ones.
  auto bad = RunPerpcomp("allocate --sensitivity '" + sens + "' --budget bits=4 --predictor nope --out '" + dir + "/x.yaml'");
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.err, Contains("valid predictors: perp, par, iso"));
}

TEST_CASE("sensitivity --kl: the reference's cached log-probabilities give the KL of recomputing them", "[recipes][shared]") {
  PC_REQUIRE_SHARED();
  const std::string dir = pc::test::TempDir("sens-kl-cache");
  pc::pipeline::SensitivityOptions o;
  o.model_dir = Stories();
  o.candidates_file = WriteFile(dir + "/cands.yaml",
                                "candidates:\n"
                                "  - {name: w3, method: rtn, params: {bits: 3, group_size: 32}}\n"
                                "  - {name: dense, method: none}\n");
  o.calib.source = "self:4";
  o.calib.samples = 4;
  o.calib.seq_len = 64;
  o.measure_windows = 2;
  o.kl = true;
  o.out = dir + "/cached.h5";
  const pc::pipeline::SensitivityResult cached = pc::pipeline::RunSensitivity(o);
  o.kl_cache_bytes = 0;  // recomputed for every row
  o.out = dir + "/recomputed.h5";
  const pc::pipeline::SensitivityResult recomputed = pc::pipeline::RunSensitivity(o);

  const SensitivityTable a = ReadSensitivity(dir + "/cached.h5"), b = ReadSensitivity(dir + "/recomputed.h5");
  REQUIRE(a.units.size() == b.units.size());
  REQUIRE(a.units.size() == 5 * 7);  // 5 layers x 7 linears
  int compressed = 0;
  for (size_t u = 0; u < a.units.size(); ++u) {
    CHECK(a.cells[u][0].kl > 0);
    CHECK(a.cells[u][0].kl == b.cells[u][0].kl);  // the same terms in the same order
    CHECK(a.cells[u][0].acc_perp == b.cells[u][0].acc_perp);
    CHECK(a.cells[u][1].kl == 0);
    ++compressed;
  }
  // E/N = 1/2 of a head forward per head pass: the cache runs one pass per row plus one.
  CHECK(recomputed.head_forwards == Approx(2 * 0.5 * compressed));
  CHECK(cached.head_forwards == Approx(0.5 * (compressed + 1)));
  pc::store::File f = pc::store::File::OpenRead(dir + "/cached.h5", pc::store::kind::kSensitivity);
  CHECK(f.root().GetAttr<double>("head_forwards") == Approx(cached.head_forwards));
}

TEST_CASE("allocate e2e: sensitivity refuses unknown methods and parameters with file:line", "[recipes][shared]") {
  PC_REQUIRE_SHARED();
  const std::string dir = pc::test::TempDir("alloc-bad");
  const std::string c1 = WriteFile(dir + "/c1.yaml", "candidates:\n  - {name: a, method: rtm}\n");
  auto r = RunPerpcomp("sensitivity --model '" + Stories() + "' --candidates '" + c1 + "' --calib self:2 --out '" + dir + "/o.h5'");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Contains("c1.yaml:2") && Contains("rtm"));
  const std::string c2 = WriteFile(dir + "/c2.yaml", "candidates:\n  - name: a\n    method: rtn\n    params: {bitz: 3}\n");
  r = RunPerpcomp("sensitivity --model '" + Stories() + "' --candidates '" + c2 + "' --calib self:2 --out '" + dir + "/o.h5'");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Contains("c2.yaml:4") && Contains("bitz"));
  const std::string c3 = WriteFile(dir + "/c3.yaml", "candidates:\n  - {name: a, method: rtn}\ngroups:\n  - {name: g, match: 'nomatch'}\n");
  r = RunPerpcomp("sensitivity --model '" + Stories() + "' --candidates '" + c3 + "' --calib self:2 --out '" + dir + "/o.h5'");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Contains("c3.yaml:4") && Contains("matches no linear"));
}

TEST_CASE("allocate e2e: the llm-compressor export is accepted by llm-compressor", "[recipes][shared][refenv][slow]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  const std::string sens = Sensitivity("", false);  // rtn only: one QuantizationModifier
  const std::string dir = pc::test::TempDir("alloc-llmc");
  auto a = RunPerpcomp("allocate --sensitivity '" + sens + "' --budget bits=4.5 --out '" + dir +
                       "/r.yaml' --llm-compressor '" + dir + "/llmc.yaml'");
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  auto r = pc::test::RunRefPython("tests/recipes/llmc_recipe_check.py", "'" + dir + "/llmc.yaml' '" + Stories() + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string last = r.out.substr(r.out.rfind('{'));
  const nlohmann::json j = nlohmann::json::parse(last);
  CHECK(j["modifiers"].size() >= 1);
  CHECK(j["targets"].get<int>() > 0);
  CHECK(j["unmatched"].empty());
}

TEST_CASE("allocate e2e: a sparsity plan exports pruning modifiers llm-compressor accepts", "[recipes][shared][refenv][slow]") {
  PC_REQUIRE_SHARED();
  PC_REQUIRE_REFENV();
  const std::string dir = pc::test::TempDir("alloc-llmc-prune");
  const std::string cands = WriteFile(dir + "/c.yaml",
                                      "candidates:\n"
                                      "  - {name: s30, method: wanda, params: {sparsity: 0.3}}\n"
                                      "  - {name: s50, method: wanda, params: {sparsity: 0.5}}\n"
                                      "  - {name: s70, method: wanda, params: {sparsity: 0.7}}\n"
                                      "  - {name: dense, method: none}\n");
  auto s = RunPerpcomp("sensitivity --model '" + Stories() + "' --candidates '" + cands +
                       "' --calib self:8 --calib-samples 8 --calib-seq-len 64 --threads 1 --out '" + dir + "/s.h5'");
  INFO(s.err);
  REQUIRE(s.exit_code == 0);
  auto a = RunPerpcomp("allocate --sensitivity '" + dir + "/s.h5' --budget sparsity=0.5 --out '" + dir +
                       "/r.yaml' --llm-compressor '" + dir + "/llmc.yaml'");
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  const SensitivityTable t = ReadSensitivity(dir + "/s.h5");
  CHECK(Allocate(t, ParseBudget("sparsity=0.5"), "perp").average >= 0.5);
  auto r = pc::test::RunRefPython("tests/recipes/llmc_recipe_check.py", "'" + dir + "/llmc.yaml' '" + Stories() + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out.substr(r.out.rfind('{')));
  for (const auto& m : j["modifiers"]) CHECK(m.get<std::string>() == "WandaPruningModifier");
  CHECK(j["unmatched"].empty());
}
