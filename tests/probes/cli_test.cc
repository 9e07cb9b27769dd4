// `perpcomp probe decompose | scale | perturb` end to end on stories260K: the tables, the "probe"
// HDF5 layout (docs/HDF5.md), the HTML page, and the refusals of bad input with their messages.
#include <catch2/catch.hpp>

#include <fstream>

#include "core/fs.h"
#include "store/file.h"
#include "tests/metrics/metrics_test_util.h"
#include "tests/probes/probes_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {

std::string Q(const std::string& s) { return "'" + s + "'"; }

struct Fixture {
  std::string dir, model, text, pairs, depths;
};

Fixture MakeFixture() {
  Fixture f;
  f.dir = pc::test::TempDir("probe-cli");
  f.model = pc::test::Stories260KDir();
  f.text = f.dir + "/story.txt";
  std::ofstream(f.text) << pc::test::StoryText();
  f.pairs = f.dir + "/pairs.jsonl";
  std::ofstream(f.pairs) << R"({"sentence_good": "The dog runs.", "sentence_bad": "The dog run."})" << "\n"
                         << R"({"sentence_good": "Lily was happy.", "sentence_bad": "Lily were happy."})" << "\n";
  f.depths = f.dir + "/depths.jsonl";
  std::ofstream(f.depths)
      << R"({"sentence":"The dog runs.","words":["The","dog","runs"],"depth":[2,2,2]})" << "\n"
      << R"({"sentence":"The girl that the dog sees runs.","words":["The","girl","that","the","dog","sees","runs"],"depth":[2,2,3,5,5,4,2]})"
      << "\n";
  return f;
}

std::string Base(const Fixture& f) {
  return " --model " + Q(f.model) + " --text " + Q(f.text) + " --seq-len 64 --max-windows 4 --threads 1";
}

}  // namespace

TEST_CASE("perpcomp probe decompose: table, HDF5 and HTML", "[probes][shared][cli]") {
  PC_REQUIRE_SHARED();
  Fixture f = MakeFixture();
  const std::string out = f.dir + "/d.h5", html = f.dir + "/d.html";
  pc::test::RunResult r = pc::test::RunPerpcomp("probe decompose" + Base(f) + " --out " + Q(out) + " --html " + Q(html));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("par share") && Contains("Value space"));
  pc::store::File file = pc::store::File::OpenRead(out, pc::store::kind::kProbe);
  pc::store::Group root = file.root();
  CHECK(root.GetAttr<std::string>("probe") == "decompose");
  CHECK(root.GetAttr<int64_t>("num_layers") == 5);
  CHECK(root.GetAttr<int64_t>("windows") == 4);
  pc::store::Table u = root.OpenGroup("decompose").ReadTable("updates");
  CHECK(u.rows() == 10);
  CHECK(u.Get<std::string>("sublayer")[1] == "mlp");
  for (double s : u.Get<double>("parallel_share")) {
    CHECK(s >= 0);
    CHECK(s <= 1);
  }
  CHECK(root.OpenGroup("decompose").ReadTable("value_heads").rows() == 5 * 8);
  CHECK(root.OpenGroup("decompose/histograms").ReadArray<int64_t>("value_self_weight_counts").shape ==
        pc::store::Shape{40, 40});
  const std::string page = pc::fs::ReadFile(html);
  CHECK_THAT(page, Contains("<svg") && Contains("Parallel share per layer"));
  // An existing output is refused without --overwrite.
  r = pc::test::RunPerpcomp("probe decompose" + Base(f) + " --out " + Q(out));
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Contains("--overwrite"));
}

TEST_CASE("perpcomp probe scale: the seed's table, the grid, value space", "[probes][shared][cli]") {
  PC_REQUIRE_SHARED();
  Fixture f = MakeFixture();
  const std::string out = f.dir + "/s.h5";
  pc::test::RunResult r = pc::test::RunPerpcomp("probe scale" + Base(f) + " --pairs " + Q(f.pairs) +
                                                " --alpha 0,2 --beta 0.5 --exclude-self 0 --out " + Q(out) + " --html " +
                                                Q(f.dir + "/s.html"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("parallel x 2") && Contains("perpendicular x 0.5") && Contains("exclude-self x 0"));
  pc::store::File file = pc::store::File::OpenRead(out, pc::store::kind::kProbe);
  pc::store::Group g = file.root().OpenGroup("scale");
  pc::store::Table rows = g.ReadTable("rows");
  CHECK(rows.rows() == 5);
  CHECK(rows.Has("accuracy_pairs"));
  CHECK(g.OpenGroup("grid").ReadArray<double>("loss").shape == pc::store::Shape{3, 2});
  r = pc::test::RunPerpcomp("probe scale" + Base(f) + " --space value --alpha 1 --beta 1 --exclude-self 1 --no-grid");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
}

TEST_CASE("perpcomp probe perturb: damage, ratio, repair and norm vs depth", "[probes][shared][cli]") {
  PC_REQUIRE_SHARED();
  Fixture f = MakeFixture();
  const std::string out = f.dir + "/p.h5";
  pc::test::RunResult r =
      pc::test::RunPerpcomp("probe perturb" + Base(f) + " --pairs " + Q(f.pairs) + " --layers 1-2 --delta 0.5,1 " +
                            "--seeds 2 --depths " + Q(f.depths) + " --out " + Q(out) + " --html " + Q(f.dir + "/p.html"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("Direction vs magnitude") && Contains("Repair of layers 1-2") && Contains("parse depth"));
  pc::store::File file = pc::store::File::OpenRead(out, pc::store::kind::kProbe);
  pc::store::Group g = file.root().OpenGroup("perturb");
  CHECK(g.ReadTable("runs").rows() == 2 * 2 * 2 * 3);
  for (double e : g.ReadTable("runs").Get<double>("max_rel_displacement_error")) CHECK(e < 1e-4);
  CHECK(g.ReadTable("summary").rows() == 4);
  CHECK(g.ReadTable("repair").rows() == 8);
  CHECK(g.ReadTable("ratio").rows() == 2);
  CHECK(g.OpenGroup("norm_depth").ReadTable("correlations").rows() == 5);
  CHECK(g.OpenGroup("norm_depth").GetAttr<int64_t>("words") == 10);
}

TEST_CASE("perpcomp probe: bad input is refused with a message", "[probes][cli]") {
  const std::string model = pc::test::ConfigOnlyModelDir();  // 4 layers; the checks come before any weight is read
  const std::string base = " --model " + Q(model) + " --text /nonexistent.txt";
  auto err = [](const std::string& args) {
    pc::test::RunResult r = pc::test::RunPerpcomp(args);
    CHECK(r.exit_code != 0);
    return r.err;
  };
  CHECK_THAT(err("probe perturb" + base + " --layers 2-5"), Contains("the model has 4 layers (0-3)"));
  CHECK_THAT(err("probe scale" + base + " --layers 4"), Contains("layer 4 is out of range; the model has 4 layers"));
  CHECK_THAT(err("probe decompose" + base + " --layers 1-x"), Contains("--layers"));
  CHECK_THAT(err("probe perturb" + base + " --delta 1,0"), Contains("--delta: every distance must be > 0, got 0"));
  CHECK_THAT(err("probe perturb" + base + " --delta=-2"), Contains("--delta: every distance must be > 0, got -2"));
  CHECK_THAT(err("probe perturb" + base + " --delta one"), Contains("--delta: expected a number, got 'one'"));
  CHECK_THAT(err("probe scale" + base + " --alpha 0,x"), Contains("--alpha: expected a number, got 'x'"));
  CHECK_THAT(err("probe scale" + base + " --beta ''"), Contains("--beta: expected a comma-separated list of numbers"));
  CHECK_THAT(err("probe scale" + base + " --space values"), Contains("--space: unknown space 'values'"));
  CHECK_THAT(err("probe scale" + base + " --sublayers ffn"), Contains("--sublayers: expected attn, mlp"));
  CHECK_THAT(err("probe perturb" + base + " --kinds angle"), Contains("--kinds: unknown perturbation 'angle'"));
  CHECK_THAT(err("probe perturb" + base + " --seeds 0"), Contains("--seeds must be at least 1"));
  CHECK_THAT(err("probe perturb" + base + " --repair mlp"), Contains("--repair: unknown repair 'mlp'"));
  CHECK_THAT(err("probe wiggle"), Contains("unknown experiment 'wiggle' (expected decompose, scale or perturb)"));
  CHECK_THAT(err("probe scale --text x"), Contains("model"));  // required option
  pc::test::RunResult help = pc::test::RunPerpcomp("probe perturb --help");
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out, Contains("--delta") && Contains("(=1,2,5)") && Contains("--repair-layers"));
}
