// The block-by-block evaluator (metrics/block_stream.h) against the whole-model forward: a model
// loaded without its blocks (LoadOptions::load_blocks = false) and run block by block over every
// window gives the same results, bit for bit, as the model loaded whole and run window batch by
// window batch through Model::Forward — perplexity, eval --reference and the measurement, live and
// from the reference cache — and releases every block it loaded.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <cstring>

#include "core/fs.h"
#include "metrics/block_stream.h"
#include "metrics/logit_compare.h"
#include "metrics/measure.h"
#include "metrics/perplexity.h"
#include "metrics/reference_eval.h"
#include "model/model.h"
#include "tests/metrics/metrics_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

namespace {

std::unique_ptr<pc::Model> LoadStreamed(const std::string& dir) {
  pc::LoadOptions lo;
  lo.load_blocks = false;
  return pc::Model::Load(dir, lo);
}

void RequireNoBlockLoaded(const pc::Model& m) {
  for (int l = 0; l < m.num_layers(); ++l) REQUIRE_FALSE(m.block(l).loaded);
}

// SiteAggregate holds only 8-byte integers and doubles: equal bytes are equal values (NaN included).
void RequireSameMeasure(const pc::MeasureResult& a, const pc::MeasureResult& b) {
  REQUIRE(a.sites.size() == b.sites.size());
  for (size_t i = 0; i < a.sites.size(); ++i) {
    INFO(a.sites[i].name << " " << pc::ErrorKindName(a.sites[i].kind) << " " << pc::FrameName(a.sites[i].frame));
    REQUIRE(a.sites[i].name == b.sites[i].name);
    CHECK(std::memcmp(&a.aggregates[i], &b.aggregates[i], sizeof(pc::SiteAggregate)) == 0);
  }
  REQUIRE(a.weights.size() == b.weights.size());
  for (size_t i = 0; i < a.weights.size(); ++i) {
    INFO(a.weights[i].name);
    CHECK(a.weights[i].name == b.weights[i].name);
    CHECK(std::memcmp(&a.weights[i].rel_fro, &b.weights[i].rel_fro, sizeof(double)) == 0);
    CHECK(a.weights[i].sparsity == b.weights[i].sparsity);
    CHECK(a.weights[i].ref_sparsity == b.weights[i].ref_sparsity);
  }
  CHECK(pc::DownstreamJson(a.downstream).dump() == pc::DownstreamJson(b.downstream).dump());
  REQUIRE(a.per_token_kept == b.per_token_kept);
  const pc::PerTokenValues &x = a.per_token, &y = b.per_token;
  CHECK(x.iso == y.iso);
  CHECK(x.par == y.par);
  CHECK(x.perp == y.perp);
  CHECK(x.p == y.p);
  CHECK(x.ref_sq == y.ref_sq);
  CHECK(x.cos == y.cos);
  CHECK(x.norm_ratio == y.norm_ratio);
  CHECK(x.valid == y.valid);
  CHECK(x.nll_ref == y.nll_ref);
  CHECK(x.nll == y.nll);
  CHECK(x.kl == y.kl);
  CHECK(x.top1 == y.top1);
}

void CheckStreamedEqualsWhole(const std::string& ref_dir, const std::string& comp_dir, int64_t windows_n,
                              int64_t seq_len) {
  auto whole_ref = pc::Model::Load(ref_dir);
  auto whole_comp = pc::Model::Load(comp_dir);
  const at::Tensor windows = pc::test::RandomTokens(windows_n, seq_len, whole_ref->config().vocab_size, 11);
  const int64_t batch = 2;  // several batches, the last one short

  SECTION("perplexity") {
    // The whole-model path: Model::Forward batch by batch.
    double total = 0;
    std::vector<at::Tensor> parts;
    for (int64_t w0 = 0; w0 < windows_n; w0 += batch) {
      at::Tensor tok = windows.narrow(0, w0, std::min(batch, windows_n - w0));
      at::Tensor nll = pc::NextTokenNll(whole_comp->Forward(tok), tok);
      total += nll.sum().item<double>();
      parts.push_back(nll);
    }
    auto streamed = LoadStreamed(comp_dir);
    pc::PerplexityResult r = pc::EvaluatePerplexity(*streamed, windows, batch, /*keep_token_nll=*/true);
    RequireNoBlockLoaded(*streamed);
    CHECK(r.mean_nll == total / static_cast<double>(windows_n * (seq_len - 1)));
    CHECK(at::equal(r.token_nll, at::cat(parts, 0)));
    // A model loaded whole keeps its blocks.
    pc::PerplexityResult w = pc::EvaluatePerplexity(*whole_comp, windows, batch, true);
    CHECK(whole_comp->block(0).loaded);
    CHECK(w.mean_nll == r.mean_nll);
  }

  SECTION("eval --reference, live and from the cache") {
    pc::DownstreamAccumulator acc;
    std::vector<at::Tensor> kl;
    for (int64_t w0 = 0; w0 < windows_n; w0 += batch) {
      at::Tensor tok = windows.narrow(0, w0, std::min(batch, windows_n - w0));
      pc::TokenLogitStats s = pc::CompareLogits(whole_ref->Forward(tok), whole_comp->Forward(tok), tok);
      acc.Add(s);
      kl.push_back(s.kl);
    }
    const std::string expected = pc::DownstreamJson(acc.Finish()).dump();
    pc::ReferenceEvalOptions eo;
    eo.reference_dir = ref_dir;
    eo.batch = batch;
    eo.keep_per_token = true;
    auto streamed = LoadStreamed(comp_dir);
    pc::ReferenceEvalResult live = pc::EvaluateAgainstReference(*streamed, windows, eo);
    RequireNoBlockLoaded(*streamed);
    CHECK(pc::DownstreamJson(live.downstream).dump() == expected);
    CHECK(at::equal(live.kl, at::cat(kl, 0)));
    eo.cache.dir = pc::test::TempDir("stream-eval-cache");
    pc::ReferenceEvalResult miss = pc::EvaluateAgainstReference(*streamed, windows, eo);
    pc::ReferenceEvalResult hit = pc::EvaluateAgainstReference(*streamed, windows, eo);
    CHECK(miss.cache_written);
    CHECK(hit.cache_hit);
    CHECK(pc::DownstreamJson(miss.downstream).dump() == expected);
    CHECK(pc::DownstreamJson(hit.downstream).dump() == expected);
  }

  SECTION("measure, live and from the cache") {
    pc::MeasureOptions o;
    o.batch = batch;
    o.per_token = true;
    pc::MeasureResult whole = pc::Measure(*whole_ref, *whole_comp, windows, o);
    auto ref = LoadStreamed(ref_dir);
    auto comp = LoadStreamed(comp_dir);
    pc::MeasureResult live = pc::Measure(*ref, *comp, windows, o);
    RequireNoBlockLoaded(*ref);
    RequireNoBlockLoaded(*comp);
    RequireSameMeasure(whole, live);
    o.cache.dir = pc::test::TempDir("stream-measure-cache");
    pc::MeasureResult miss = pc::Measure(*ref, *comp, windows, o);
    pc::MeasureResult hit = pc::Measure(*ref, *comp, windows, o);
    CHECK(miss.cache_written);
    CHECK(hit.cache_hit);
    RequireSameMeasure(whole, miss);
    RequireSameMeasure(whole, hit);
  }
}

std::string FakeQuantizedCopy(const std::string& dir, const std::string& name) {
  return pc::test::EditedCopy(dir, [](pc::Model& m) { pc::test::FakeQuantize(m, 4, 16); }, name);
}

}  // namespace

TEST_CASE("streamed block by block equals the whole model bit for bit: seeded models", "[metrics]") {
  const std::string arch = GENERATE(as<std::string>{}, "llama", "gpt_neox", "gpt2", "opt");
  INFO(arch);
  const std::string ref = pc::test::RandomModelDir(arch);
  CheckStreamedEqualsWhole(ref, FakeQuantizedCopy(ref, "stream-" + arch), 5, 12);
}

TEST_CASE("streamed block by block equals the whole model bit for bit: stories260K", "[metrics][shared]") {
  PC_REQUIRE_SHARED();
  const std::string ref = pc::test::Stories260KDir();
  REQUIRE(!ref.empty());
  CheckStreamedEqualsWhole(ref, FakeQuantizedCopy(ref, "stream-stories"), 5, 32);
}
