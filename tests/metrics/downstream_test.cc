// Downstream loss against a reference: KL and delta NLL on a real model (stories260K).
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <cmath>

#include "calibration/windows.h"
#include "metrics/logit_compare.h"
#include "metrics/measure.h"
#include "metrics/reference_eval.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/metrics/metrics_test_util.h"
#include "tests/test_support.h"

TEST_CASE("KL and delta NLL agree in sign and order on copies with growing weight noise", "[metrics][shared]") {
  PC_REQUIRE_SHARED();
  std::string ref = pc::test::Stories260KDir();
  REQUIRE_FALSE(ref.empty());
  auto tok = pc::LoadTokenizer(ref);
  pc::TokenWindows w = pc::MakeWindows(pc::TokenizeStream(*tok, pc::test::StoryText()), 64, 8, "story");
  std::vector<double> kl, dnll, kl_measure;
  for (double sigma : {0.05, 0.1, 0.2, 0.4}) {
    std::string comp =
        pc::test::EditedCopy(ref, [&](pc::Model& m) { pc::test::AddWeightNoise(m, sigma, /*seed=*/7); }, "noise");
    auto model = pc::Model::Load(comp);
    pc::ReferenceEvalOptions eo;
    eo.reference_dir = ref;
    pc::ReferenceEvalResult r = pc::EvaluateAgainstReference(*model, w.tokens, eo);
    kl.push_back(r.downstream.kl_mean);
    dnll.push_back(r.downstream.delta_nll);
    auto reference = pc::Model::Load(ref);
    pc::MeasureResult m = pc::Measure(*reference, *model, w.tokens, pc::MeasureOptions());
    kl_measure.push_back(m.downstream.kl_mean);
    INFO("sigma " << sigma << ": KL " << kl.back() << ", delta NLL " << dnll.back());
    CHECK(r.downstream.kl_mean > 0);
    CHECK(r.downstream.delta_nll > 0);  // the same sign as KL (>= 0)
    CHECK(r.downstream.top1_agreement < 1);
    CHECK(m.downstream.kl_mean == Approx(r.downstream.kl_mean).epsilon(1e-9));
  }
  for (size_t i = 1; i < kl.size(); ++i) {
    INFO("step " << i);
    CHECK(kl[i] > kl[i - 1]);
    CHECK(dnll[i] > dnll[i - 1]);
    CHECK(kl_measure[i] > kl_measure[i - 1]);
  }
}

TEST_CASE("per-token NLL, KL and top-1 agreement of hand-made logits", "[metrics]") {
  // One window of 3 tokens, vocabulary 2: predictions at positions 0 and 1.
  at::Tensor ref = at::zeros({1, 3, 2});
  at::Tensor out = at::zeros({1, 3, 2});
  ref[0][0][1] = std::log(3.0);  // p_ref = (1/4, 3/4)
  out[0][0][0] = std::log(3.0);  // p = (3/4, 1/4): KL = 1/4 log(1/3) + 3/4 log 3 = 0.5 log 3
  at::Tensor tokens = at::tensor({0, 1, 0}, at::kLong).view({1, 3});
  pc::TokenLogitStats s = pc::CompareLogits(ref, out, tokens);
  REQUIRE(s.kl.sizes() == at::IntArrayRef({1, 2}));
  CHECK(s.kl[0][0].item<double>() == Approx(0.5 * std::log(3.0)).epsilon(1e-6));
  CHECK(s.kl[0][1].item<double>() == Approx(0).margin(1e-12));
  CHECK(s.nll_ref[0][0].item<double>() == Approx(-std::log(0.75)).epsilon(1e-6));  // target 1
  CHECK(s.nll[0][0].item<double>() == Approx(-std::log(0.25)).epsilon(1e-6));
  CHECK(s.top1[0][0].item<uint8_t>() == 0);
  CHECK(s.top1[0][1].item<uint8_t>() == 1);
  pc::DownstreamAccumulator acc;
  acc.Add(s);
  pc::DownstreamSummary d = acc.Finish();
  CHECK(d.tokens == 2);
  CHECK(d.top1_agreement == 0.5);
  CHECK(d.kl_mean == Approx(0.25 * std::log(3.0)).epsilon(1e-6));
  CHECK(d.kl_max == Approx(0.5 * std::log(3.0)).epsilon(1e-6));
  CHECK(d.delta_nll == Approx((-std::log(0.25) - std::log(0.5) - (-std::log(0.75) - std::log(0.5))) / 2).epsilon(1e-6));
}

// Standard errors over windows: per-window means of ΔNLL 2, 2, 0 (mean 4/3, sample sd √(4/3)) give
// SE = √(4/3)/√3 = 2/3; KL is a tenth of ΔNLL here, so its SE is 1/15. One window: NaN.
TEST_CASE("downstream: standard errors of delta NLL and KL over windows", "[metrics]") {
  auto f64 = [](std::vector<double> v) { return at::tensor(v, at::kDouble).view({3, 2}); };
  pc::TokenLogitStats s;
  s.nll_ref = at::zeros({3, 2}, at::kDouble);
  s.nll = f64({1, 3, 2, 2, 0, 0});
  s.kl = f64({0.1, 0.3, 0.2, 0.2, 0, 0});
  s.top1 = at::ones({3, 2}, at::kByte);
  s.dp = at::zeros({3, 2}, at::kDouble);
  pc::DownstreamAccumulator acc;
  acc.Add(s);
  pc::DownstreamSummary d = acc.Finish();
  CHECK(d.windows == 3);
  CHECK(d.delta_nll == Approx(4.0 / 3));
  CHECK(d.delta_nll_se == Approx(2.0 / 3).epsilon(1e-12));
  CHECK(d.kl_mean_se == Approx(1.0 / 15).epsilon(1e-12));
  // The per-window means behind them, in window order, also under the JSON keys.
  CHECK(d.window_delta_nll == std::vector<double>{2, 2, 0});
  REQUIRE(d.window_kl.size() == 3);
  CHECK(d.window_kl[0] == Approx(0.2));
  CHECK(d.window_kl[2] == 0);
  CHECK(pc::DownstreamJson(d)["window_delta_nll"].get<std::vector<double>>() == d.window_delta_nll);
  CHECK(pc::DownstreamJson(d)["window_kl"].size() == 3);
  // The same windows in two batches: the same errors.
  pc::DownstreamAccumulator split;
  for (int64_t b : {0, 1}) {
    pc::TokenLogitStats part;
    const int64_t first = b == 0 ? 0 : 1, count = b == 0 ? 1 : 2;
    part.nll_ref = s.nll_ref.narrow(0, first, count);
    part.nll = s.nll.narrow(0, first, count);
    part.kl = s.kl.narrow(0, first, count);
    part.top1 = s.top1.narrow(0, first, count);
    part.dp = s.dp.narrow(0, first, count);
    split.Add(part);
  }
  CHECK(split.Finish().delta_nll_se == Approx(2.0 / 3).epsilon(1e-12));
  CHECK(split.Finish().window_delta_nll == d.window_delta_nll);
  pc::DownstreamAccumulator one;
  pc::TokenLogitStats first;
  first.nll_ref = s.nll_ref.narrow(0, 0, 1);
  first.nll = s.nll.narrow(0, 0, 1);
  first.kl = s.kl.narrow(0, 0, 1);
  first.top1 = s.top1.narrow(0, 0, 1);
  first.dp = s.dp.narrow(0, 0, 1);
  one.Add(first);
  CHECK(std::isnan(one.Finish().delta_nll_se));
  CHECK(pc::DownstreamJson(one.Finish())["delta_nll_se"].dump() == "null");
}

// Two models whose logits differ by ~1e-4: the true KL is ~1e-9, far below the rounding of
// float32 log-probabilities (~1e-7 at these logit sizes). Computed in float64 from the float32
// logits it matches a float64 log-softmax reference to 1e-13 and is never negative.
TEST_CASE("KL below the float32 floor: float64 per token, never negative", "[metrics]") {
  const int64_t B = 2, T = 9, V = 5000;
  at::Generator gen = at::detail::createCPUGenerator(17);
  at::Tensor x = at::randn({B, T, V}, gen) * 6.0;                 // float32 logits
  at::Tensor y = x + at::randn({B, T, V}, gen) * 1e-4;            // a very close model
  at::Tensor tokens = at::randint(0, V, {B, T}, gen, at::kLong);
  pc::TokenLogitStats s = pc::CompareLogits(x, y, tokens);
  at::Tensor lx = at::log_softmax(x.narrow(1, 0, T - 1).to(at::kDouble), -1);
  at::Tensor ly = at::log_softmax(y.narrow(1, 0, T - 1).to(at::kDouble), -1);
  at::Tensor expected = (lx.exp() * (lx - ly)).sum(-1);  // (B, T-1) float64
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T - 1; ++t) {
      const double kl = s.kl[b][t].item<double>(), want = expected[b][t].item<double>();
      INFO("token " << b << "," << t << " kl " << kl << " expected " << want);
      CHECK(want > 0);
      CHECK(kl >= 0);
      CHECK(std::fabs(kl - want) < 1e-13);
    }
  }
  CHECK(expected.mean().item<double>() > 1e-10);  // far below float32's floor of ~1e-7
  // A model against itself: exactly 0.
  pc::TokenLogitStats self = pc::CompareLogits(x, x, tokens);
  CHECK(self.kl.abs().max().item<double>() == 0.0);
}

// --seq-len 0 (the default): 2048 tokens capped at the context, never the whole 32768-token
// context of Mistral or Qwen2.
TEST_CASE("the default evaluation window is 2048 tokens capped at the context", "[metrics]") {
  CHECK(pc::EvalSeqLen(0, 32768) == 2048);
  CHECK(pc::EvalSeqLen(0, 131072) == 2048);
  CHECK(pc::EvalSeqLen(0, 1024) == 1024);
  CHECK(pc::EvalSeqLen(0, 256) == 256);
  CHECK(pc::EvalSeqLen(512, 32768) == 512);
  CHECK(pc::EvalSeqLen(4096, 2048) == 4096);  // an explicit length is kept (the caller warns or refuses)
}
