// `perpcomp kld` (metrics/kld_base.h): known answers of the statistics, the top-k bounds against the
// exact KL from full logits, the base file's checks (damage, vocabulary, tokenizer, text), and the
// command end to end on stories260K with a compressed folder, against `eval --reference`.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "core/fs.h"
#include "metrics/kld_base.h"
#include "metrics/logit_compare.h"
#include "metrics/reference_cache.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/metrics/metrics_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {

// Σ_v p_v (log p_v − log q_v) in float64 from float32 logits, written out plainly.
double ExactKl(const float* x, const float* y, int64_t V) {
  auto lse = [V](const float* z) {
    double m = -INFINITY, s = 0;
    for (int64_t v = 0; v < V; ++v) m = std::max(m, double(z[v]));
    for (int64_t v = 0; v < V; ++v) s += std::exp(double(z[v]) - m);
    return m + std::log(s);
  };
  const double a = lse(x), b = lse(y);
  double kl = 0;
  for (int64_t v = 0; v < V; ++v) {
    const double lp = double(x[v]) - a, lq = double(y[v]) - b;
    kl += std::exp(lp) * (lp - lq);
  }
  return kl;
}

at::Tensor Tokens(int64_t B, int64_t T, int64_t V, uint64_t seed) {
  at::manual_seed(seed);
  return at::randint(V, {B, T}, at::kLong);
}

pc::KldBase SmallBase(int64_t k) {
  at::manual_seed(3);
  const int64_t B = 1, T = 9, V = 12;
  at::Tensor x = at::randn({B, T, V}) * 2;
  pc::KldBase b;
  b.model = "synthetic";
  b.dtype = "f32";
  b.vocab = V;
  b.tokens = Tokens(B, T, V, 4);
  b.tokens_sha256 = pc::TokensSha256(b.tokens);
  b.text_path = "text.txt";
  b.tokenizer_probe = {1, 2, 3, V};
  b.logits = pc::CompactFromLogits(x, b.tokens, k);
  b.pairs = 2;
  b.pair_logp_good = {-1.0, -2.0};
  b.pair_logp_bad = {-1.5, -1.0};
  b.pairs_sha256 = "abc";
  return b;
}

}  // namespace

TEST_CASE("kld: the downstream statistics of known per-token values", "[metrics][kld]") {
  pc::TokenLogitStats s;
  s.nll_ref = at::tensor({1.0, 1.0, 2.0, 2.0, 3.0}, at::kDouble).view({1, 5});
  s.nll = at::tensor({1.5, 1.0, 2.5, 2.0, 3.0}, at::kDouble).view({1, 5});
  s.kl = at::tensor({0.0, 0.1, 0.2, 0.3, 1.0}, at::kDouble).view({1, 5});
  s.kl_upper = at::tensor({0.0, 0.2, 0.2, 0.5, 1.1}, at::kDouble).view({1, 5});
  s.dp = at::tensor({-0.2, -0.1, 0.0, 0.1, 0.4}, at::kDouble).view({1, 5});
  s.top1 = at::tensor({1, 1, 0, 1, 0}, at::kByte).view({1, 5});
  pc::DownstreamAccumulator acc;
  acc.Add(s);
  const pc::DownstreamSummary d = acc.Finish();
  CHECK(d.tokens == 5);
  CHECK(d.ref_mean_nll == Approx(1.8).epsilon(1e-14));
  CHECK(d.mean_nll == Approx(2.0).epsilon(1e-14));
  CHECK(d.ppl_ratio == Approx(std::exp(0.2)).epsilon(1e-14));
  CHECK(d.kl_mean == Approx(0.32).epsilon(1e-14));
  CHECK(d.kl_p50 == Approx(0.2).epsilon(1e-14));
  CHECK(d.kl_p90 == Approx(0.3 + 0.6 * 0.7).epsilon(1e-14));  // position 3.6 between 0.3 and 1.0
  CHECK(d.kl_max == 1.0);
  CHECK(d.kl_upper_mean == Approx(0.4).epsilon(1e-14));
  CHECK_FALSE(d.kl_exact);
  CHECK(d.top1_agreement == Approx(0.6).epsilon(1e-14));
  CHECK(d.dp_mean == Approx(0.04).epsilon(1e-12));
  CHECK(d.dp_rms == Approx(std::sqrt(0.044)).epsilon(1e-12));
  CHECK(d.dp_min == -0.2);
  CHECK(d.dp_max == 0.4);
  CHECK(d.dp_p50 == 0.0);
  CHECK(d.dp_p25 == Approx(-0.1).epsilon(1e-14));
  CHECK(d.dp_p75 == Approx(0.1).epsilon(1e-14));
  CHECK(d.dp_p90 == Approx(0.1 + 0.6 * 0.3).epsilon(1e-12));
  CHECK(d.dp_p1 == Approx(-0.2 + 0.04 * 0.1).epsilon(1e-12));
  const nlohmann::json j = pc::DownstreamJson(d);
  CHECK(j["kl_mean"] == d.kl_mean);
  CHECK(j["dp_p99"] == d.dp_p99);
  CHECK(j["reference_ppl"] == d.ref_ppl);
}

TEST_CASE("kld: the compact KL of three tokens with k = 1 by hand", "[metrics][kld]") {
  // Base p ≈ (.5, .3, .2), model q ≈ (.4, .4, .2), both from float32 logits; k = 1 keeps token 0.
  at::Tensor x = at::log(at::tensor({0.5f, 0.3f, 0.2f})).view({1, 1, 3}).repeat({1, 2, 1});  // (1, 2, 3)
  at::Tensor y = at::log(at::tensor({0.4f, 0.4f, 0.2f})).view({1, 1, 3}).repeat({1, 2, 1});
  at::Tensor tokens = at::tensor({0, 1}, at::kLong).view({1, 2});
  pc::CompactLogits c = pc::CompactFromLogits(x, tokens, 1);
  pc::TokenLogitStats s = pc::CompareCompact(c, y, tokens);
  // The same numbers from the float32 values, in float64.
  const float* px = x.data_ptr<float>();
  const float* py = y.data_ptr<float>();
  double p[3], q[3], sp = 0, sq = 0;
  for (int v = 0; v < 3; ++v) {
    p[v] = std::exp(double(px[v]));
    q[v] = std::exp(double(py[v]));
    sp += p[v];
    sq += q[v];
  }
  for (int v = 0; v < 3; ++v) {
    p[v] /= sp;
    q[v] /= sq;
  }
  const double m = p[1] + p[2], qr = q[1] + q[2];
  const double lower = p[0] * std::log(p[0] / q[0]) + m * std::log(m / qr);
  // Upper: n = ⌊m / p0⌋ = 0 (m ≈ 0.5 < p0 only by rounding) or 1; all of the rest mass on the token
  // the model finds least probable (token 2) is the worst case either way.
  const double n = std::floor(m / p[0]), f = m - n * p[0];
  const double upper = p[0] * std::log(p[0] / q[0]) + n * p[0] * std::log(p[0] / q[2]) +
                       (f > 0 ? f * std::log(f / (n >= 1 ? q[1] : q[2])) : 0.0);
  const double exact = ExactKl(px, py, 3);
  REQUIRE(c.tail_mass.item<double>() == Approx(m).epsilon(1e-14));
  CHECK(s.kl[0][0].item<double>() == Approx(lower).epsilon(1e-12));
  CHECK(s.kl_upper[0][0].item<double>() == Approx(upper).epsilon(1e-12));
  CHECK(lower <= exact);
  CHECK(exact <= upper);
  CHECK(s.nll_ref[0][0].item<double>() == Approx(-std::log(p[1])).epsilon(1e-6));
  CHECK(s.dp[0][0].item<double>() == Approx(q[1] - p[1]).epsilon(1e-6));
  CHECK(s.top1[0][0].item<uint8_t>() == 1);
}

TEST_CASE("kld: the exact KL lies between the top-k bounds which close at k = V", "[metrics][kld]") {
  const int64_t B = 2, T = 17, V = 64;
  at::manual_seed(11);
  at::Tensor x = at::randn({B, T, V}) * 3;  // (B, T, V)
  at::Tensor tokens = Tokens(B, T, V, 12);
  for (double noise : {0.05, 0.5, 3.0}) {
    at::Tensor y = x + noise * at::randn({B, T, V});
    pc::TokenLogitStats full = pc::CompareLogits(x, y, tokens);
    for (int64_t k : {int64_t(1), int64_t(4), int64_t(16), V - 1, V}) {
      INFO("noise " << noise << " k " << k);
      pc::CompactLogits c = pc::CompactFromLogits(x, tokens, k);
      pc::TokenLogitStats s = pc::CompareCompact(c, y, tokens);
      // The model's side is the same code as CompareLogits: equal bit for bit.
      CHECK(at::equal(s.nll, full.nll));
      CHECK(at::equal(s.nll_ref, full.nll_ref));
      CHECK(at::equal(s.dp, full.dp));
      CHECK(at::equal(s.top1, full.top1));
      double worst_gap = 0;
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t t = 0; t < T - 1; ++t) {
          const double exact = ExactKl(x[b][t].data_ptr<float>(), y[b][t].data_ptr<float>(), V);
          const double lo = s.kl[b][t].item<double>(), hi = s.kl_upper[b][t].item<double>();
          CHECK(lo <= exact + 1e-12 * (1 + exact));
          CHECK(exact <= hi + 1e-12 * (1 + exact));
          CHECK(full.kl[b][t].item<double>() == Approx(exact).epsilon(1e-6).margin(1e-9));
          worst_gap = std::max(worst_gap, hi - lo);
          if (k >= V - 1) {  // no rest (k = V) or one token (k = V − 1): the bounds are the exact KL
            CHECK(lo == Approx(exact).epsilon(1e-10).margin(1e-13));
            CHECK(hi == Approx(exact).epsilon(1e-10).margin(1e-13));
          }
        }
      }
      if (k == 1 && noise >= 0.5) CHECK(worst_gap > 0);  // the bound is not trivially the estimate
    }
  }
}

TEST_CASE("kld: the base file round-trips and damage or truncation or another vocabulary or tokenizer or text is refused",
          "[metrics][kld]") {
  const std::string dir = pc::test::TempDir("kld-file");
  const std::string path = dir + "/base.h5";
  pc::KldBase b = SmallBase(3);
  pc::WriteKldBase(path, b, false);
  CHECK_THROWS_WITH(pc::WriteKldBase(path, b, false), Contains("exists"));
  pc::KldBase r = pc::ReadKldBase(path);
  CHECK(at::equal(r.tokens, b.tokens));
  CHECK(at::equal(r.logits.top_ids, b.logits.top_ids));
  CHECK(at::equal(r.logits.top_logp, b.logits.top_logp));
  CHECK(at::equal(r.logits.tail_mass, b.logits.tail_mass));
  CHECK(at::equal(r.logits.nll, b.logits.nll));
  CHECK(at::equal(r.logits.top1, b.logits.top1));
  CHECK(r.pair_logp_bad == b.pair_logp_bad);
  CHECK(r.tokenizer_probe == b.tokenizer_probe);
  CHECK(r.vocab == b.vocab);

  const std::string bytes = pc::fs::ReadFile(path);
  SECTION("a flipped bit inside an array fails the content checksum") {
    const double v = b.logits.top_logp[0][0][0].item<double>();
    const std::string needle(reinterpret_cast<const char*>(&v), sizeof v);
    const size_t at = bytes.find(needle);
    REQUIRE(at != std::string::npos);  // small arrays are stored contiguous and uncompressed
    std::string bad = bytes;
    bad[at + 3] = static_cast<char>(bad[at + 3] ^ 0x10);
    const std::string damaged = dir + "/damaged.h5";
    std::ofstream(damaged, std::ios::binary) << bad;
    CHECK_THROWS_WITH(pc::ReadKldBase(damaged), Contains("damaged.h5") && Contains("is damaged") &&
                                                    Contains("content_sha256"));
  }
  SECTION("a truncated file is refused naming it") {
    const std::string cut = dir + "/cut.h5";
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    CHECK_THROWS_WITH(pc::ReadKldBase(cut), Contains("cut.h5"));
  }
  SECTION("another vocabulary or tokenizer, another text") {
    pc::ModelConfig config;
    config.vocab_size = b.vocab + 1;
    config.max_pos = 64;
    struct Fake : pc::Tokenizer {
      Fake() : pc::Tokenizer("fake") {}
      std::vector<int32_t> Encode(const std::string&) const override { return {1, 2, 3}; }
      std::string Decode(const std::vector<int32_t>&, bool) const override { return ""; }
      int32_t vocab_size() const override { return 12; }
      std::string IdToPiece(int32_t) const override { return ""; }
      int32_t PieceToId(const std::string&) const override { return -1; }
      bool IsSpecial(int32_t) const override { return false; }
    } tok;
    b.tokenizer_probe = pc::TokenizerProbe(tok);
    CHECK_THROWS_WITH(pc::CheckKldCompatible(b, path, config, tok, "model 'm'"),
                      Contains("model 'm' has a vocabulary of 13") && Contains("with 12"));
    config.vocab_size = b.vocab;
    CHECK_NOTHROW(pc::CheckKldCompatible(b, path, config, tok, "model 'm'"));
    b.tokenizer_probe[1] += 1;
    CHECK_THROWS_WITH(pc::CheckKldCompatible(b, path, config, tok, "model 'm'"),
                      Contains("tokenizer reads text differently") && Contains("first difference at id 1"));
    at::Tensor other = b.tokens.clone();
    other[0][3] = (other[0][3].item<int64_t>() + 1) % b.vocab;
    CHECK_NOTHROW(pc::CheckKldTokens(b, path, b.tokens, "t.txt"));
    CHECK_THROWS_WITH(pc::CheckKldTokens(b, path, other, "t.txt"),
                      Contains("'t.txt' gives other token windows") && Contains("text.txt"));
  }
}

TEST_CASE("kld: minimal-pair flips", "[metrics][kld]") {
  std::vector<pc::PairScore> m(4);
  m[0].logp_good = -1, m[0].logp_bad = -2;  // right, was right
  m[1].logp_good = -3, m[1].logp_bad = -2;  // wrong, was right
  m[2].logp_good = -1, m[2].logp_bad = -1;  // tie (wrong), was wrong
  m[3].logp_good = -1, m[3].logp_bad = -4;  // right, was wrong
  pc::PairFlips f = pc::CountPairFlips({-1, -1, -2, -2}, {-2, -2, -1, -1}, m);
  CHECK(f.pairs == 4);
  CHECK(f.base_correct == 2);
  CHECK(f.model_correct == 2);
  CHECK(f.right_to_wrong == 1);
  CHECK(f.wrong_to_right == 1);
  CHECK(f.accuracy == 0.5);
}

TEST_CASE("perpcomp kld on stories260K and an RTN-compressed folder agrees with eval against the reference",
          "[metrics][kld][shared][cli][slow]") {
  PC_REQUIRE_SHARED();
  const std::string dir = pc::test::TempDir("kld-cli");
  const std::string ref = pc::test::Stories260KDir();
  const std::string text = dir + "/story.txt";
  std::ofstream(text) << pc::test::StoryText();
  const std::string comp = dir + "/rtn";
  const std::string pairs = pc::test::SharedPath("tasks/blimp/data/regular_plural_subject_verb_agreement_1.jsonl");
  auto q = [](const std::string& s) { return "'" + s + "'"; };
  pc::test::RunResult c = pc::test::RunPerpcomp("compress --threads 1 --model " + q(ref) +
                                                " --recipe rtn-w3g128 --calib " + q(text) +
                                                " --calib-samples 4 --calib-seq-len 32 --calib-windowing random --out " + q(comp));
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  const std::string base = dir + "/base.h5";
  const std::string win = " --seq-len 64 --max-windows 6";
  pc::test::RunResult s = pc::test::RunPerpcomp("kld --threads 1 --save-base " + q(base) + " --model " + q(ref) +
                                                " --text " + q(text) + win + " --top-k 8 --pairs " + q(pairs) +
                                                " --json");
  INFO(s.err);
  REQUIRE(s.exit_code == 0);
  REQUIRE(pc::fs::Exists(base));
  // The base model is not needed from here on: compare with it moved away.
  const std::string moved = dir + "/ref-moved";
  pc::fs::RemoveAll(moved);
  std::filesystem::rename(ref, moved);
  pc::test::RunResult k = pc::test::RunPerpcomp("kld --threads 1 --base " + q(base) + " --model " + q(comp) +
                                                " --text " + q(text) + " --pairs " + q(pairs) + " --json");
  std::filesystem::rename(moved, ref);
  INFO(k.err);
  REQUIRE(k.exit_code == 0);
  const nlohmann::json kj = nlohmann::json::parse(k.out);
  pc::test::RunResult e = pc::test::RunPerpcomp("eval --threads 1 --model " + q(comp) + " --reference " + q(ref) +
                                                " --text " + q(text) + win + " --no-cache --json");
  INFO(e.err);
  REQUIRE(e.exit_code == 0);
  const nlohmann::json ej = nlohmann::json::parse(e.out);
  CHECK(kj["tokens"] == ej["tokens"]);
  CHECK(kj["ppl"].get<double>() == Approx(ej["ppl"].get<double>()).epsilon(1e-12));
  CHECK(kj["reference_ppl"].get<double>() == Approx(ej["reference_ppl"].get<double>()).epsilon(1e-12));
  CHECK(kj["top1_agreement"] == ej["top1_agreement"]);
  CHECK(kj["dp_mean"].get<double>() == Approx(ej["dp_mean"].get<double>()).epsilon(1e-12));
  CHECK(kj["dp_p90"].get<double>() == Approx(ej["dp_p90"].get<double>()).epsilon(1e-12));
  const double exact = ej["kl_mean"].get<double>();
  CHECK(ej["kl_exact"] == true);
  CHECK(kj["kl_exact"] == false);
  CHECK(exact > 1e-4);  // the compression changed something
  CHECK(kj["kl_mean"].get<double>() <= exact * (1 + 1e-6));
  CHECK(exact <= kj["kl_upper_mean"].get<double>() * (1 + 1e-6));
  CHECK(kj["pairs"]["pairs"] == 1000);
  CHECK(kj["pairs"]["right_to_wrong"].get<int64_t>() + kj["pairs"]["wrong_to_right"].get<int64_t>() >= 0);

  // The refusals of the command line.
  pc::test::RunResult t = pc::test::RunPerpcomp("kld --base " + q(base) + " --model " + q(comp) + " --text " +
                                                q(text) + " --seq-len 32");
  CHECK(t.exit_code != 0);
  CHECK_THAT(t.err, Contains("gives other token windows"));
  pc::test::RunResult p = pc::test::RunPerpcomp("kld --base " + q(base) + " --model " + q(comp) + " --pairs " +
                                                q(pc::test::SharedPath("tasks/blimp/data/regular_plural_subject_verb_agreement_2.jsonl")));
  CHECK(p.exit_code != 0);
  CHECK_THAT(p.err, Contains("are not the 1000 pairs"));
  const std::string gpt2 = pc::test::SharedPath("models/tiny-random-gpt2");
  pc::test::RunResult v = pc::test::RunPerpcomp("kld --base " + q(base) + " --model " + q(gpt2));
  CHECK(v.exit_code != 0);
  CHECK_THAT(v.err, Contains("has a vocabulary of") && Contains("a KL needs the same vocabulary"));
  pc::test::RunResult none = pc::test::RunPerpcomp("kld --model " + q(comp));
  CHECK(none.exit_code != 0);
  CHECK_THAT(none.err, Contains("exactly one of --save-base FILE and --base FILE"));
}

TEST_CASE("kld: on stories260K and a fake-quantized copy every token's exact KL lies between the bounds",
          "[metrics][kld][shared]") {
  PC_REQUIRE_SHARED();
  auto ref = pc::Model::Load(pc::test::Stories260KDir());
  auto comp = pc::Model::Load(pc::test::Stories260KDir());
  pc::test::FakeQuantize(*comp, 3, 16);
  at::NoGradGuard no_grad;
  at::Tensor tokens = Tokens(3, 48, ref->config().vocab_size, 21);
  at::Tensor x = ref->Forward(tokens), y = comp->Forward(tokens);  // (3, 48, 512)
  pc::TokenLogitStats full = pc::CompareLogits(x, y, tokens);
  for (int64_t k : {int64_t(2), int64_t(8), int64_t(64)}) {
    INFO("k " << k);
    pc::TokenLogitStats s = pc::CompareCompact(pc::CompactFromLogits(x, tokens, k), y, tokens);
    // The exact KL in float64 (CompareLogits weighs by float32 probabilities: a relative 1e-7 apart).
    const at::Tensor xc = x.contiguous(), yc = y.contiguous();
    const int64_t V = x.size(2);
    double sum_exact = 0, sum_full = 0, worst_lower = -1, worst_upper = -1;
    for (int64_t b = 0; b < x.size(0); ++b) {
      for (int64_t t = 0; t + 1 < x.size(1); ++t) {
        const double exact = ExactKl(xc[b][t].data_ptr<float>(), yc[b][t].data_ptr<float>(), V);
        sum_exact += exact;
        sum_full += full.kl[b][t].item<double>();
        worst_lower = std::max(worst_lower, s.kl[b][t].item<double>() - exact);
        worst_upper = std::max(worst_upper, exact - s.kl_upper[b][t].item<double>());
      }
    }
    CHECK(sum_exact > 1e-3 * 47 * 3);
    CHECK(sum_full == Approx(sum_exact).epsilon(1e-6));
    CHECK(worst_lower <= 1e-12);  // lower <= exact at every token
    CHECK(worst_upper <= 1e-12);  // exact <= upper at every token
    CHECK(at::equal(s.nll, full.nll));
    CHECK(at::equal(s.dp, full.dp));
    CHECK(at::equal(s.top1, full.top1));
  }
}
