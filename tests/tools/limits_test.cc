// Resource limits: --max-memory SIZE parsing (core/strings.h ParseBytes), the peak-memory
// estimator's arithmetic (pipeline/memory_estimate.h), and the refusal through the CLI of
// compress, sweep, measure and eval before any work (docs/RELIABILITY.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/strings.h"
#include "model/attention.h"
#include "model/config.h"
#include "model/sizes.h"
#include "pipeline/memory_estimate.h"
#include "recipes/recipe_spec.h"
#include "tests/sweep/sweep_test_util.h"

using Catch::Matchers::Contains;
using pc::test::RunPerpcomp;

namespace {

namespace stdfs = std::filesystem;
constexpr int64_t kGiB = 1LL << 30, kMiB = 1LL << 20;

std::string Q(const std::string& s) { return "'" + s + "'"; }

// Pythia-160M's config.json (the shapes; values as published).
pc::ModelConfig Pythia160M(const std::string& dtype = "float16") {
  nlohmann::json j = {{"model_type", "gpt_neox"},      {"hidden_size", 768},
                      {"num_hidden_layers", 12},       {"num_attention_heads", 12},
                      {"intermediate_size", 3072},     {"max_position_embeddings", 2048},
                      {"vocab_size", 50304},           {"rotary_pct", 0.25},
                      {"tie_word_embeddings", false},  {"use_parallel_residual", true},
                      {"layer_norm_eps", 1e-5},        {"hidden_act", "gelu"},
                      {"torch_dtype", dtype}};
  return pc::ParseModelConfig(j, "pythia-160m/config.json");
}

double Term(const pc::pipeline::MemoryEstimate& e, const std::string& name) {
  for (const auto& t : e.terms) {
    if (t.name == name) return t.bytes;
  }
  return 0;
}

}  // namespace

TEST_CASE("max-memory: sizes with units and decimals, and their errors", "[tools][limits]") {
  using pc::ParseBytes;
  CHECK(ParseBytes("4G", "--max-memory") == 4 * kGiB);
  CHECK(ParseBytes("512M", "--max-memory") == 512 * kMiB);
  CHECK(ParseBytes("1.5GiB", "--max-memory") == 3 * kGiB / 2);
  CHECK(ParseBytes("2 GB", "--max-memory") == 2 * kGiB);
  CHECK(ParseBytes("100k", "--max-memory") == 100 * 1024);
  CHECK(ParseBytes("1t", "--max-memory") == 1024 * kGiB);
  CHECK(ParseBytes("1000000", "--max-memory") == 1000000);
  CHECK(ParseBytes("64B", "--max-memory") == 64);
  CHECK(ParseBytes(" 8 MiB ", "--max-memory") == 8 * kMiB);

  CHECK_THROWS_WITH(ParseBytes("", "--max-memory"), Contains("--max-memory: expected a size such as 4G") &&
                                                          Contains("got an empty value"));
  CHECK_THROWS_WITH(ParseBytes("4X", "--max-memory"), Contains("--max-memory: unknown unit 'X' in '4X'"));
  CHECK_THROWS_WITH(ParseBytes("4 gigs", "--max-memory"), Contains("unknown unit 'gigs'"));
  CHECK_THROWS_WITH(ParseBytes("abc", "--max-memory"), Contains("unknown unit 'abc'"));
  CHECK_THROWS_WITH(ParseBytes("G", "--max-memory"), Contains("--max-memory: no number in 'G'"));
  CHECK_THROWS_WITH(ParseBytes("1.5.2G", "--max-memory"), Contains("'1.5.2G' is not a size"));
  CHECK_THROWS_WITH(ParseBytes("-1G", "--max-memory"), Contains("expected a positive size, got '-1G'"));
  CHECK_THROWS_WITH(ParseBytes("0", "--max-memory"), Contains("expected a positive size"));
  CHECK_THROWS_WITH(ParseBytes("0.1", "--max-memory"), Contains("less than one byte"));
  CHECK_THROWS_WITH(ParseBytes("1e12T", "--max-memory"), Contains("too large"));
}

TEST_CASE("memory estimate: the terms of compress on Pythia-160M", "[tools][limits]") {
  namespace r = pc::pipeline;
  const pc::ModelConfig c = Pythia160M("float32");
  r::CompressMemoryOptions o;
  o.methods = {"wanda"};  // a statistics pass over every window, no block transform
  o.samples = 32;
  o.seq_len = 512;
  o.disk_bytes = 4;
  const double T = 32.0 * 512;
  const r::MemoryEstimate wanda = r::EstimateCompress(c, o);
  CHECK(wanda.what == "compress");
  // X and Y (N, L, d), replaced block after block.
  CHECK(Term(wanda, "calibration activations") == 2 * T * 768 * 4);
  // The blocks are the peak: the embedding was freed, the head is copied at the end.
  CHECK(Term(wanda, "embedding") == 0);
  CHECK(Term(wanda, "head") == 0);
  // One block (qkv, o, fc1, fc2 with biases; two norms) in float32, and a copy of the widest linear
  // (fc1, 3072 x 768 + bias) while it is compressed.
  const double linears = 2304.0 * 769 + 768.0 * 769 + 3072.0 * 769 + 768.0 * 3073;
  CHECK(Term(wanda, "block weights") == (linears + 4 * 768) * 4 + 3072.0 * 769 * 4);
  // The four distinct inputs (768, 768, 768, 3072 wide) on the 4 logging windows.
  CHECK(Term(wanda, "logged-error captures") == 4 * 512 * (3 * 768 + 3072) * 4.0);
  // One window per forward; its widest intermediate per token is fc1's 3072 outputs, or the
  // attention scores of 12 heads × 512 keys capped at a query chunk of kAttentionChunkBytes.
  const double scores = std::min(12.0 * 512, pc::kAttentionChunkBytes / (4.0 * 512));
  CHECK(Term(wanda, "micro-batch intermediates") == 512 * std::max(3072.0, scores) * 4 * 3.0);
  CHECK(Term(wanda, "process") == r::ProcessOverheadBytes());
  CHECK(Term(wanda, "Gram matrices") == 0);
  // bf16 on disk: every tensor is converted from its bf16 copy (the linear being compressed; with
  // RTN below, the float32 embedding and its bf16 copy while the windows are embedded).
  // (128 windows, so that the blocks' phase stays the peak beside the embedding's bf16 copy.)
  o.disk_bytes = 2;
  o.samples = 128;
  CHECK(Term(r::EstimateCompress(c, o), "block weights") == (linears + 4 * 768) * 4 + 3072.0 * 769 * 6);
  o.samples = 32;
  o.methods = {"rtn"};
  CHECK(Term(r::EstimateCompress(c, o), "embedding") == (50304.0 * 768 + 2 * 768) * 6);
  o.methods = {"wanda"};
  o.disk_bytes = 4;
  // RTN reads no statistics: the blocks run on the 4 logging windows alone (compress/engine.h
  // PlanReadsCalibration), so the embedding phase is the peak; the tokens are all kept.
  o.methods = {"rtn"};
  const r::MemoryEstimate rtn = r::EstimateCompress(c, o);
  CHECK(Term(rtn, "calibration activations") == 4 * 512 * 768 * 4.0);
  CHECK(Term(rtn, "calibration text") == T * 8);
  CHECK(Term(rtn, "embedding") == (50304.0 * 768 + 2 * 768) * 4);
  CHECK(Term(rtn, "block weights") == 0);
  o.methods = {"magnitude"};
  CHECK(Term(r::EstimateCompress(c, o), "calibration activations") == Term(rtn, "calibration activations"));
  // A transform (AWQ) keeps every compressed linear's original and the transformed inputs.
  o.methods = {"awq"};
  const r::MemoryEstimate awq = r::EstimateCompress(c, o);
  CHECK(Term(awq, "block weights") == (linears + 4 * 768) * 4 + 3072.0 * 769 * 4 + linears * 4);
  CHECK(Term(awq, "logged-error captures") == 2 * Term(wanda, "logged-error captures"));
  // Few calibration tokens: embedding the windows, with the embedding loaded, is the peak.
  o.methods = {"rtn"};
  o.samples = 1;
  o.seq_len = 8;
  const r::MemoryEstimate tiny = r::EstimateCompress(c, o);
  CHECK(Term(tiny, "embedding") == (50304.0 * 768 + 2 * 768) * 4);
  CHECK(Term(tiny, "block weights") == 0);
  o.samples = 32;
  o.seq_len = 512;

  // GPTQ (true-sequential): the largest stage's Gram (fc2's input, 3072²) plus 5 working copies.
  o.methods = {"gptq"};
  CHECK(Term(r::EstimateCompress(c, o), "Gram matrices") == 6 * 3072.0 * 3072 * 8);
  // SparseGPT: every distinct input of the block at once (qkv, o, fc1: 768²; fc2: 3072²).
  o.methods = {"sparsegpt"};
  CHECK(Term(r::EstimateCompress(c, o), "Gram matrices") == (3 * 768.0 * 768 + 3072.0 * 3072 + 5 * 3072.0 * 3072) * 8);
  // AWQ: attention update, MLP update and MLP input (3d), fc2's input (3072) and its output (768).
  o.methods = {"awq"};
  CHECK(Term(r::EstimateCompress(c, o), "AWQ captured inputs") == T * (3 * 768 + 3072 + 768) * 4);
  // Twice the calibration windows: the activations double, the weights do not change.
  o.samples = 64;
  const r::MemoryEstimate big = r::EstimateCompress(c, o);
  CHECK(Term(big, "calibration activations") == 2 * 2 * T * 768 * 4);
  CHECK(Term(big, "block weights") == Term(awq, "block weights"));
  // The automatic batch sizes of the engine and the evaluator, from the config.
  CHECK(pc::DefaultMicroBatch(c, 512) == 1);  // 64 MiB / (512 tokens x 6144 scores x 12 bytes)
  CHECK(pc::DefaultMicroBatch(c, 64) == (64LL << 20) / (64LL * 3072 * 12));  // the MLP is widest
  CHECK(pc::DefaultEvalBatch(c, 512) == 2);
  CHECK(pc::DefaultEvalBatch(c, 8192) == 1);
}

TEST_CASE("memory estimate: recipes, eval, measure, sweep and the refusal message", "[tools][limits]") {
  namespace r = pc::pipeline;
  const pc::ModelConfig c = Pythia160M();
  CHECK(r::DiskWeightBytes(c) == 2);
  CHECK(r::DiskWeightBytes(Pythia160M("float32")) == 4);
  const pc::recipes::RecipeSpec recipe = pc::recipes::ParseRecipeText(
      "name: mixed\nmethod: awq\nparams: {bits: 4}\ncalibration: {samples: 16, seq_len: 256}\n"
      "overrides:\n  - match: 'mlp'\n    method: gptq\n", "mixed.yaml");
  CHECK(r::RecipeMethods(recipe) == std::vector<std::string>{"awq", "gptq"});
  r::CompressMemoryOptions o = r::CompressMemoryFor(c, recipe, 0, 0, "self:8");
  CHECK(o.samples == 8);
  CHECK(o.seq_len == 256);
  CHECK(o.self_calibration);
  o = r::CompressMemoryFor(c, recipe, 64, 0, "none.txt", "awq-gemm");
  CHECK(o.samples == 64);
  CHECK(o.awq_gemm);
  const r::MemoryEstimate both = r::EstimateCompress(c, o);
  CHECK(Term(both, "AWQ captured inputs") > 0);
  CHECK(Term(both, "Gram matrices") > 0);

  r::EvalMemoryOptions e;
  e.windows = 4;
  e.seq_len = 512;
  e.disk_bytes = 2;
  const r::MemoryEstimate eval = r::EstimateEval(c, e);
  const double top = 2.0 * 50304 * 768 + 2 * 768, block = 2304.0 * 769 + 768.0 * 769 + 3072.0 * 769 + 768.0 * 3073 + 4 * 768;
  const double params = top + 12 * block;
  const double embedding = top - 50304.0 * 768;  // the head is as large: freed embedding, then the head
  // Streamed block by block: the embedding (or the head) and one block resident (float32 copy + bf16 pages).
  CHECK(Term(eval, "model weights") == (embedding + block) * 6);
  CHECK(Term(eval, "residual streams of every window") == 4.0 * 512 * 768 * 4);
  CHECK(Term(eval, "logits of one batch") == 2.0 * 512 * 50304 * 4 * 4);  // 2 windows per batch
  e.reference = true;
  CHECK(Term(r::EstimateEval(c, e), "reference weights") == (embedding + block) * 6);
  CHECK(Term(r::EstimateEval(c, e), "residual streams of every window") == 2 * 4.0 * 512 * 768 * 4);
  e.reference = false;
  e.pair_tokens = 8192;
  CHECK(Term(r::EstimateEval(c, e), "minimal-pair logits") == 8192.0 * 50304 * 4 * 4);
  CHECK(Term(r::EstimateEval(c, e), "model weights") == params * 6);  // minimal pairs: the whole model
  e.pair_tokens = 0;
  const r::MemoryEstimate measure = r::EstimateMeasure(c, e);
  CHECK(Term(measure, "reference and compressed weights") == 2 * (embedding + block) * 6);
  e.release_embeddings = false;  // as a sweep measures: embeddings and heads kept
  CHECK(Term(r::EstimateMeasure(c, e), "reference and compressed weights") == 2 * (top + block) * 6);
  e.release_embeddings = true;
  // bf16 weights computed in f32 (a CPU without native bf16): the weights in 2 bytes, the residual
  // streams in 4, and the largest matrix (the head, 50304 x 768) converted to f32 while it is used.
  e.weight_bytes = 2;
  CHECK(Term(r::EstimateEval(c, e), "model weights") == (embedding + block) * 2);
  CHECK(Term(r::EstimateEval(c, e), "residual streams of every window") == 4.0 * 512 * 768 * 4);
  CHECK(Term(r::EstimateEval(c, e), "a weight converted for the arithmetic") == 50304.0 * 768 * 4);
  CHECK(Term(r::EstimateMeasure(c, e), "a weight converted for the arithmetic") == 50304.0 * 768 * 4);
  e.weight_bytes = 4;
  CHECK(Term(r::EstimateEval(c, e), "a weight converted for the arithmetic") == 0);
  CHECK(Term(measure, "residual streams of every window") == 2 * 4.0 * 512 * 768 * 4);
  const r::MemoryEstimate sweep = r::EstimateSweep(c, {o}, e);
  CHECK(sweep.what == "sweep");
  CHECK(sweep.Total() >= measure.Total());
  CHECK(sweep.Total() >= both.Total());

  // The message: the total, the largest terms, the limit, what to reduce.
  CHECK_NOTHROW(r::CheckMemoryLimit(measure, 64 * kGiB, "--max-memory", ""));
  CHECK_THROWS_WITH(r::CheckMemoryLimit(both, kGiB, "--max-memory", "reduce --calib-samples"),
                    Contains("estimated peak ") && Contains(" GiB (") && Contains("AWQ captured inputs ") &&
                        Contains("exceeds --max-memory 1.0 GiB; nothing was done; reduce --calib-samples"));
  // Without --max-memory, the machine's available memory is the limit (/proc/meminfo MemAvailable).
  CHECK(r::ParseMemAvailable("MemTotal:       24000000 kB\nMemFree: 1 kB\nMemAvailable:   19876543 kB\n") ==
        19876543LL * 1024);
  CHECK(r::ParseMemAvailable("MemTotal: 1 kB\n") == -1);
  CHECK(r::ParseMemAvailable("MemAvailable: many\n") == -1);
  r::MemoryEstimate huge;
  huge.what = "measure";
  huge.Add("reference and compressed weights", 1e18);
  if (r::AvailableMemoryBytes() > 0) {
    CHECK_THROWS_WITH(r::CheckMemoryFits(huge, 0, "reduce --batch"),
                      Contains("exceeds the memory available now (MemAvailable ") &&
                          Contains("nothing was done; reduce --batch, or free memory"));
  }
  CHECK_THROWS_WITH(r::CheckMemoryFits(huge, kGiB, "reduce --batch"),
                    Contains("exceeds --max-memory 1.0 GiB; nothing was done; reduce --batch, or raise --max-memory"));
  r::MemoryEstimate m;
  m.what = "x";
  for (int i = 0; i < 7; ++i) m.Add("term" + std::to_string(i), (i + 1) * kMiB);
  CHECK(m.Describe(2) == "estimated peak 28.0 MiB (term6 7.0 MiB, term5 6.0 MiB, 5 more 15.0 MiB)");
}

TEST_CASE("max-memory: compress, sweep, measure and eval refuse before any work", "[tools][limits]") {
  const pc::test::SweepFixture f = pc::test::MakeSweepFixture("limits");
  const std::string common = " --threads 1 --calib " + Q(f.text) + " --calib-samples 8 --calib-seq-len 32";
  const std::string out = f.dir + "/out";

  auto refused = RunPerpcomp("compress --model " + Q(f.model) + " --recipe awq-w4g128" + common + " --out " + Q(out) +
                             " --max-memory 1M");
  INFO(refused.err);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Contains("perpcomp compress: error: estimated peak ") && Contains("(process ") &&
                              Contains("exceeds --max-memory 1.0 MiB; nothing was done; reduce --calib-samples"));
  CHECK(!stdfs::exists(out));
  CHECK(pc::test::Temporaries(f.dir).empty());

  auto bad = RunPerpcomp("compress --model " + Q(f.model) + " --recipe rtn-w4g128" + common + " --out " + Q(out) +
                         " --max-memory 4X");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.err, Contains("--max-memory: unknown unit 'X' in '4X'"));

  auto ok = RunPerpcomp("compress --model " + Q(f.model) + " --recipe rtn-w4g128" + common + " --out " + Q(out) +
                        " --max-memory 64G");
  INFO(ok.err);
  REQUIRE(ok.exit_code == 0);

  // The estimate is shown by --dry-run.
  auto dry = RunPerpcomp("compress --model " + Q(f.model) + " --recipe gptq-w4g128 --dry-run" + common);
  CHECK(dry.exit_code == 0);
  CHECK_THAT(dry.out, Contains("memory: estimated peak ") && Contains("Gram matrices"));

  auto measure = RunPerpcomp("measure --threads 1 --reference " + Q(f.model) + " --compressed " + Q(out) + " --text " +
                             Q(f.text) + " --seq-len 32 --max-windows 4 --no-cache --out " + Q(f.dir + "/m.h5") +
                             " --max-memory 1M");
  CHECK(measure.exit_code == 1);
  CHECK_THAT(measure.err, Contains("perpcomp measure: error: estimated peak ") && Contains("reference and compressed weights") &&
                              Contains("exceeds --max-memory 1.0 MiB"));
  CHECK(!stdfs::exists(f.dir + "/m.h5"));

  auto eval = RunPerpcomp("eval --threads 1 --model " + Q(out) + " --text " + Q(f.text) +
                          " --seq-len 32 --max-windows 4 --pairs " + Q(f.pairs) + " --max-memory 512K");
  CHECK(eval.exit_code == 1);
  CHECK_THAT(eval.err, Contains("perpcomp eval: error: estimated peak ") && Contains("minimal-pair logits") &&
                           Contains("exceeds --max-memory 512.0 KiB; nothing was done; reduce --batch"));
  CHECK(RunPerpcomp("eval --threads 1 --model " + Q(out) + " --text " + Q(f.text) +
                    " --seq-len 32 --max-windows 4 --max-memory 8G")
            .exit_code == 0);

  const std::string sweep = pc::test::ThreeRunSweep(f.dir);
  const std::string results = f.dir + "/results.h5";
  auto s = RunPerpcomp("sweep " + f.Args(sweep, results) + " --max-memory 1M");
  CHECK(s.exit_code == 1);
  CHECK_THAT(s.err, Contains("perpcomp sweep: error: estimated peak ") && Contains("exceeds --max-memory 1.0 MiB"));
  CHECK(!stdfs::exists(results));
  CHECK(!stdfs::exists(f.dir + "/results.work"));
}
