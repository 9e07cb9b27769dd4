// The reference cache: hits, content keys, damaged parts, limits, sharing with eval.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include "core/fs.h"
#include "metrics/measure.h"
#include "metrics/reference_eval.h"
#include "tests/metrics/metrics_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

namespace {

pc::MeasureResult Run(const std::string& ref_dir, const std::string& comp_dir, const at::Tensor& windows,
                      const std::string& cache, int64_t limit = 64LL << 30) {
  auto ref = pc::Model::Load(ref_dir);
  auto comp = pc::Model::Load(comp_dir);
  pc::MeasureOptions o;
  o.cache.dir = cache;
  o.cache.limit_bytes = limit;
  o.batch = 2;
  return pc::Measure(*ref, *comp, windows, o);
}

void RequireSameAggregates(const pc::MeasureResult& a, const pc::MeasureResult& b) {
  REQUIRE(a.aggregates.size() == b.aggregates.size());
  for (size_t i = 0; i < a.aggregates.size(); ++i) {
    INFO(a.sites[i].name);
    CHECK(a.aggregates[i].mean_iso == b.aggregates[i].mean_iso);
    CHECK(a.aggregates[i].mean_perp == b.aggregates[i].mean_perp);
    CHECK(a.aggregates[i].percentile[2][1] == b.aggregates[i].percentile[2][1]);
  }
  CHECK(a.downstream.kl_mean == b.downstream.kl_mean);
  CHECK(a.downstream.delta_nll == b.downstream.delta_nll);
}

}  // namespace

TEST_CASE("reference cache: computed once, reused by content, rebuilt when damaged", "[metrics]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is needed for the reference models");
  std::string ref = pc::test::RandomModelDir("llama");
  std::string comp = pc::test::EditedCopy(ref, [](pc::Model& m) { pc::test::FakeQuantize(m, 4, 16); }, "rtn");
  at::Tensor windows = pc::test::RandomTokens(3, 12, 97, 2);
  std::string cache = pc::test::TempDir("cache");

  pc::MeasureResult miss = Run(ref, comp, windows, cache);
  CHECK_FALSE(miss.cache_hit);
  CHECK(miss.cache_written);
  CHECK(pc::fs::Exists(miss.cache_entry + "/sites.json"));
  CHECK(pc::fs::Exists(miss.cache_entry + "/logits.json"));
  pc::MeasureResult hit = Run(ref, comp, windows, cache);
  CHECK(hit.cache_hit);
  CHECK_FALSE(hit.cache_written);
  RequireSameAggregates(miss, hit);

  // The key is the content: a copy of the reference elsewhere hits the same entry.
  std::string copy = pc::test::TempDir("refcopy") + "/model";
  std::filesystem::copy(ref, copy);
  pc::MeasureResult moved = Run(copy, comp, windows, cache);
  CHECK(moved.cache_hit);
  CHECK(moved.cache_entry == miss.cache_entry);
  // Other windows or another reference: another entry.
  pc::MeasureResult other = Run(ref, comp, windows.narrow(0, 0, 2), cache);
  CHECK_FALSE(other.cache_hit);
  CHECK(other.cache_entry != miss.cache_entry);
  std::string changed = pc::test::EditedCopy(ref, [](pc::Model& m) { m.block(0).Get(pc::Role::kQ).weight.mul_(2); },
                                             "changed");
  pc::MeasureResult changed_r = Run(changed, comp, windows, cache);
  CHECK_FALSE(changed_r.cache_hit);
  CHECK(changed_r.cache_entry != miss.cache_entry);

  // A damaged part (truncated) is rebuilt, with the same results.
  std::filesystem::resize_file(miss.cache_entry + "/sites.bin", 100);
  pc::MeasureResult rebuilt = Run(ref, comp, windows, cache);
  CHECK_FALSE(rebuilt.cache_hit);
  CHECK(rebuilt.cache_written);
  RequireSameAggregates(miss, rebuilt);
  CHECK(Run(ref, comp, windows, cache).cache_hit);

  // No leftovers of staged writes.
  for (const auto& f : std::filesystem::directory_iterator(miss.cache_entry)) {
    CHECK(f.path().filename().string().find(".tmp-") == std::string::npos);
  }
}

TEST_CASE("reference cache: parts over the limit are not written, eval shares the logits part", "[metrics]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is needed for the reference models");
  std::string ref = pc::test::RandomModelDir("gpt_neox");
  std::string comp = pc::test::EditedCopy(ref, [](pc::Model& m) { pc::test::AddWeightNoise(m, 0.05, 1); }, "noisy");
  at::Tensor windows = pc::test::RandomTokens(3, 12, 97, 4);
  std::string cache = pc::test::TempDir("cache");

  pc::MeasureResult limited = Run(ref, comp, windows, cache, /*limit=*/1024);
  CHECK_FALSE(limited.cache_written);
  CHECK_FALSE(pc::fs::Exists(limited.cache_entry + "/sites.bin"));

  pc::MeasureResult m = Run(ref, comp, windows, cache);
  auto model = pc::Model::Load(comp);
  pc::ReferenceEvalOptions eo;
  eo.reference_dir = ref;
  eo.cache.dir = cache;
  eo.batch = 2;
  pc::ReferenceEvalResult e = pc::EvaluateAgainstReference(*model, windows, eo);
  CHECK(e.cache_hit);
  CHECK(e.cache_entry == m.cache_entry);
  // The same numbers as measure's downstream (the same logits).
  CHECK(e.downstream.kl_mean == m.downstream.kl_mean);
  CHECK(e.downstream.delta_nll == m.downstream.delta_nll);
  CHECK(e.downstream.top1_agreement == m.downstream.top1_agreement);
  // Without a cache: the reference runs; the same numbers.
  eo.cache.dir = "";
  pc::ReferenceEvalResult e2 = pc::EvaluateAgainstReference(*model, windows, eo);
  CHECK_FALSE(e2.cache_hit);
  CHECK(e2.downstream.kl_mean == e.downstream.kl_mean);
}
