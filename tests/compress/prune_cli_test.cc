// `perpcomp compress` with the shipped pruning recipes on stories260K (converted from the shared
// llama2.c checkpoint): exact sparsity by docs/PRUNING.md on every block linear of the written model,
// every N:M group with at least N zeros.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <cmath>

#include "compress/sparsity.h"
#include "core/fs.h"
#include "model/model.h"
#include "tests/test_support.h"

namespace {
std::string Q(const std::string& s) {
  return "'" + s + "'";
}
}  // namespace

TEST_CASE("prune cli: shipped recipes give exact sparsity on every linear of stories260K",
          "[compress][prune][shared][slow]") {
  PC_REQUIRE_SHARED();
  PC_SKIP_IF(!pc::fs::Exists(pc::test::PerpcompBin()), "the perpcomp binary is not built");
  const std::string dir = pc::test::TempDir("prune-cli");
  const std::string model = pc::test::ConvertedStories();
  pc::test::RunResult r;
  const std::string calib = pc::test::SharedPath("text/tinyshakespeare/input.txt");
  struct Case {
    const char* recipe;
    double ratio;
    const char* pattern;
    bool per_block;  // SparseGPT: per 128-column block
  };
  const Case cases[] = {{"magnitude-50", 0.5, "unstructured", false},
                        {"wanda-50", 0.5, "unstructured", false},
                        {"wanda-70", 0.7, "unstructured", false},
                        {"wanda-2of4", 0.5, "2:4", false},
                        {"wanda-4of8", 0.5, "4:8", false},
                        {"wanda-perp-50", 0.5, "unstructured", false},
                        {"sparsegpt-50", 0.5, "unstructured", true},
                        {"sparsegpt-2of4", 0.5, "2:4", false}};
  for (const Case& c : cases) {
    INFO(c.recipe);
    const std::string out = dir + "/" + c.recipe;
    r = pc::test::RunPerpcomp("compress --model " + Q(model) + " --recipe " + c.recipe + " --calib " +
                              Q(calib) + " --calib-samples 16 --calib-seq-len 128 --out " + Q(out) + " -q");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(pc::fs::Exists(out + "/compress.h5"));
    pc::SparsityPattern p = pc::ParseSparsityPattern(c.ratio, c.pattern, c.recipe);
    auto model = pc::Model::Load(out);
    int linears = 0;
    for (int l = 0; l < model->num_layers(); ++l) {
      for (const pc::Linear& lin : model->block(l).linears) {
        INFO(lin.name);
        const int64_t rows = lin.out_features(), in = lin.in_features();
        at::Tensor z = lin.weight == 0;
        if (p.nm()) {
          const int64_t windows = in / p.m;
          at::Tensor per_window = z.narrow(1, 0, windows * p.m).reshape({rows, windows, p.m}).sum(-1);
          CHECK((per_window >= p.n).all().item<bool>());
          CHECK(z.sum().item<int64_t>() == rows * windows * p.n);
        } else if (c.per_block) {
          for (int64_t c0 = 0; c0 < in; c0 += 128) {
            const int64_t len = std::min<int64_t>(128, in - c0);
            CHECK(z.narrow(1, c0, len).sum().item<int64_t>() ==
                  static_cast<int64_t>(std::floor(c.ratio * static_cast<double>(rows * len))));
          }
        } else {
          CHECK((z.sum(1) == static_cast<int64_t>(std::floor(c.ratio * static_cast<double>(in)))).all().item<bool>());
        }
        ++linears;
      }
    }
    CHECK(linears == 35);
  }
}
