#include "pipeline/memory_estimate.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <map>

#include "core/cpu_allocator.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "model/arch.h"
#include "model/attention.h"
#include "model/sizes.h"

namespace pc::pipeline {

using recipes::RecipeSpec;

namespace {

constexpr double kF32 = 4, kF64 = 8, kI64 = 8;
constexpr double kMiB = 1024.0 * 1024.0;

// Coefficients of the model (docs/PERFORMANCE.md "Memory estimate"; bench/compress/memory_bench.cc).
// process: code, LibTorch, allocator arenas, threads (measured ~40 MiB own + ~115 MiB library
// pages), and the freed tensors LibTorch's allocator may keep for reuse (core/cpu_allocator.h)
constexpr double kOverhead = 250 * kMiB + static_cast<double>(kCpuBufferCacheBytes);
constexpr double kMicroBatchLive = 3;           // live intermediates of the widest kind per micro-batch
constexpr double kGramWork = 5;                 // the largest Gram matrix again: float32 product,
                                                // float64 copy, Cholesky / inverse working copies
constexpr double kTextFactor = 4;               // text bytes -> text + decoded pieces + token ids
constexpr double kEvalLogits = 4;               // logits, log-softmax, gather, allocator slack (one model)
constexpr double kReferenceLogits = 10;         // two models' logits, log-softmaxes, exp, KL
constexpr double kMeasureLogits = 7;            // measure: both models, local and accumulated passes
constexpr double kActivationsLive = 4;          // live activations of the widest kind per batch
// The calibration activations X and Y (N, L, d) float32, one each, are replaced block after
// block; with the mmap threshold compress sets (core/heap.h) each is returned when freed.
constexpr double kActivationCopies = 2;

struct LinearShape {
  Role role;
  int64_t out = 0, in = 0;
};

std::vector<LinearShape> BlockLinears(const ModelConfig& c) {
  PC_ASSERT(c.arch != nullptr, "config without an architecture");
  std::vector<LinearShape> out;
  for (const LinearSpec& s : c.arch->linears) {
    const LinearDims dims = BlockLinearDims(c, s.role);
    out.push_back({s.role, dims.out, dims.in});
  }
  return out;
}

const LinearShape* FindRole(const std::vector<LinearShape>& ls, Role r) {
  for (const auto& l : ls) {
    if (l.role == r) return &l;
  }
  return nullptr;
}

double BlockLinearParams(const ModelConfig& c) {
  double n = 0;
  for (const auto& l : BlockLinears(c)) n += static_cast<double>(l.out) * (l.in + 1);  // with a bias
  return n;
}

double WidestLinearParams(const ModelConfig& c) {
  double n = 0;
  for (const auto& l : BlockLinears(c)) n = std::max(n, static_cast<double>(l.out) * (l.in + 1));
  return n;
}

// Σ in over the distinct inputs of a block's linears (InputIndex: q, k, v read one tensor).
double DistinctInputsPerToken(const ModelConfig& c) {
  std::map<int, int64_t> in_of;
  for (const auto& l : BlockLinears(c)) in_of[InputIndex(l.role)] = l.in;
  double n = 0;
  for (const auto& [input, in] : in_of) n += static_cast<double>(in);
  return n;
}

double HeadParams(const ModelConfig& c) { return c.tie_embeddings ? 0.0 : static_cast<double>(c.vocab_size) * c.hidden; }

double BlockParams(const ModelConfig& c) { return BlockLinearParams(c) + 4.0 * c.hidden; }  // + two norms

double TopParams(const ModelConfig& c) {
  const ArchSpec& a = *c.arch;
  double n = static_cast<double>(c.vocab_size) * c.embed_dim;
  if (a.pos == PosKind::kLearned) n += static_cast<double>(c.max_pos + a.pos_offset) * c.hidden;
  if (!c.tie_embeddings) n += static_cast<double>(c.vocab_size) * c.hidden;
  if (c.embed_dim != c.hidden) n += 2.0 * c.embed_dim * c.hidden;
  return n + 2.0 * c.hidden;
}

// The weights a block-by-block run holds at once for one model (metrics/block_stream.h): one block
// beside the embedding, or, when the run frees the embedding once the windows are embedded and
// loads the untied head after the blocks (`release`), beside the larger of the two.
double StreamedParams(const ModelConfig& c, bool release) {
  const double embedding = TopParams(c) - HeadParams(c);
  return (release ? std::max(embedding, HeadParams(c)) : TopParams(c)) + BlockParams(c);
}
// Every weight of the model: the top-level tensors and all blocks.
double ModelParams(const ModelConfig& c) { return TopParams(c) + c.layers * BlockParams(c); }

// Bytes per parameter resident for a whole model held in `compute` bytes loaded from `disk` bytes:
// the compute copy, plus the on-disk copy each tensor is converted from when the dtypes differ
// (transient, one tensor at a time; counted whole, which is conservative). The checkpoint's mapped
// pages are dropped as tensors are copied (model/safetensors.h).
double ResidentPerParam(int compute, int disk) { return compute + (compute != disk ? disk : 0); }

// A weight converted for the arithmetic, when weights are kept in fewer bytes than they are computed
// in (bf16 weights computed in f32, model/model.h Model::Compute): the largest matrix, one at a time.
double ConvertedWeightBytes(const ModelConfig& c, const EvalMemoryOptions& o) {
  if (o.weight_bytes >= o.compute_bytes) return 0;
  double widest = static_cast<double>(c.vocab_size) * c.embed_dim;
  for (const auto& l : BlockLinears(c)) widest = std::max(widest, static_cast<double>(l.in) * l.out);
  return widest * o.compute_bytes;
}

// The widest intermediate of a forward over `seq_len` tokens, per token: the MLP, the attention
// scores of all heads, or q/k/v together. The scores of a forward over `tokens` tokens are
// computed by chunks of queries of at most kAttentionChunkBytes (model/attention.h), so their
// share per token is capped at kAttentionChunkBytes / (4 · tokens).
int64_t WidestPerToken(const ModelConfig& c, int64_t seq_len, double tokens) {
  const double chunk_cap = static_cast<double>(kAttentionChunkBytes) / (kF32 * std::max(1.0, tokens));
  const int64_t scores = std::min<int64_t>(c.heads * seq_len, std::max<int64_t>(1, static_cast<int64_t>(chunk_cap)));
  return std::max({c.intermediate, scores, 3 * c.hidden});
}

enum class Stats { kNone, kVectors, kAwq, kGramSequential, kGram, kOuter };

Stats StatsOf(const std::string& method) {
  if (method == "rtn" || method == "magnitude") return Stats::kNone;
  if (method == "wanda") return Stats::kVectors;
  if (method == "wanda-perp") return Stats::kOuter;
  if (method == "awq" || method == "perp-awq") return Stats::kAwq;
  if (method == "gptq") return Stats::kGramSequential;
  return Stats::kGram;  // sparsegpt, and unknown methods: the largest kind
}

// AWQ (compress/awq_block.cc): the block's attention update, MLP update and MLP input
// (tokens, d), and for every group measured on its members the members' full inputs plus one
// output at a time (tokens, out).
double AwqCapturedPerToken(const ModelConfig& c) {
  const std::vector<LinearShape> ls = BlockLinears(c);
  double per_token = 3.0 * c.hidden;
  int64_t widest_out = 0;
  for (const ScaleGroupSpec& g : c.arch->awq_groups) {
    if (g.inspect != Inspect::kMembers) continue;
    for (Role r : g.members) {
      if (const LinearShape* l = FindRole(ls, r)) {
        per_token += static_cast<double>(l->in);
        widest_out = std::max(widest_out, l->out);
      }
    }
  }
  return per_token + static_cast<double>(widest_out);
}

// Σ in² over the distinct inputs of the linears in `roles`, and the largest in.
std::pair<double, int64_t> GramOf(const std::vector<LinearShape>& ls, bool sequential) {
  std::map<int, std::map<int, int64_t>> stage_inputs;  // stage -> input -> in
  for (const auto& l : ls) {
    const int input = InputIndex(l.role);
    stage_inputs[sequential ? input : 0][input] = l.in;
  }
  double worst = 0;
  int64_t widest = 0;
  for (const auto& [stage, inputs] : stage_inputs) {
    double sum = 0;
    for (const auto& [input, in] : inputs) {
      sum += static_cast<double>(in) * in;
      widest = std::max(widest, in);
    }
    worst = std::max(worst, sum);
  }
  return {worst, widest};
}

// Tokens in one forward of eval or measure: the batch (or model/sizes.h's default) times seq_len.
double EvalBatchTokens(const ModelConfig& c, const EvalMemoryOptions& o) {
  const int64_t b = std::min(o.windows, o.batch > 0 ? o.batch : DefaultEvalBatch(c, o.seq_len));
  return static_cast<double>(b) * o.seq_len;
}

double Max(const MemoryEstimate& a, const MemoryEstimate& b, MemoryEstimate* out) {
  *out = a.Total() >= b.Total() ? a : b;
  return out->Total();
}

}  // namespace

double MemoryEstimate::Total() const {
  double t = 0;
  for (const auto& term : terms) t += term.bytes;
  return t;
}

void MemoryEstimate::Add(const std::string& name, double bytes) {
  if (bytes <= 0) return;
  for (auto& t : terms) {
    if (t.name == name) {
      t.bytes += bytes;
      return;
    }
  }
  terms.push_back({name, bytes});
}

std::string MemoryEstimate::Describe(size_t max_terms) const {
  std::vector<MemoryTerm> sorted = terms;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const MemoryTerm& a, const MemoryTerm& b) { return a.bytes > b.bytes; });
  std::vector<std::string> parts;
  double rest = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i < max_terms) {
      parts.push_back(sorted[i].name + " " + HumanBytes(sorted[i].bytes));
    } else {
      rest += sorted[i].bytes;
    }
  }
  if (sorted.size() > max_terms) parts.push_back(Str(sorted.size() - max_terms, " more ", HumanBytes(rest)));
  return Str("estimated peak ", HumanBytes(Total()), " (", Join(parts, ", "), ")");
}

int DiskWeightBytes(const ModelConfig& config) {
  auto it = config.raw.find("torch_dtype");
  if (it != config.raw.end() && it->is_string()) {
    const std::string t = it->get<std::string>();
    if (t == "bfloat16" || t == "float16" || t == "half") return 2;
  }
  return 4;
}

double ProcessOverheadBytes() { return kOverhead; }

std::vector<std::string> RecipeMethods(const RecipeSpec& recipe) {
  std::vector<std::string> out{recipe.method.value};
  for (const auto& o : recipe.overrides) {
    if (o.method && std::find(out.begin(), out.end(), o.method->value) == out.end()) out.push_back(o.method->value);
  }
  return out;
}

CompressMemoryOptions CompressMemoryFor(const ModelConfig& config, const RecipeSpec& recipe, int64_t samples,
                                        int64_t seq_len, const std::string& calib_source, const std::string& format,
                                        int64_t micro_batch) {
  CompressMemoryOptions o;
  o.methods = RecipeMethods(recipe);
  o.samples = samples > 0 ? samples : recipe.calibration.samples ? recipe.calibration.samples->value : 128;
  o.seq_len = seq_len > 0                        ? seq_len
              : recipe.calibration.seq_len ? recipe.calibration.seq_len->value
                                           : std::min<int64_t>(512, std::max<int64_t>(1, config.max_pos));
  o.disk_bytes = DiskWeightBytes(config);
  int64_t self_windows = 0;
  o.self_calibration = ParseSelfSpec(calib_source, "--calib", &self_windows);
  if (o.self_calibration && samples <= 0) o.samples = self_windows;
  if (!o.self_calibration && fs::Exists(calib_source) && !fs::IsDirectory(calib_source)) {
    o.calib_text_bytes = fs::FileSize(calib_source);
  }
  o.awq_gemm = format == "awq-gemm";
  o.micro_batch = micro_batch;
  return o;
}

MemoryEstimate EstimateCompress(const ModelConfig& c, const CompressMemoryOptions& o) {
  PC_CHECK(o.samples > 0 && o.seq_len > 0, "memory estimate: calibration needs samples and tokens");
  // The blocks run on every window only when a method reads calibration statistics; otherwise on
  // the logging windows alone (compress/engine.h PlanReadsCalibration).
  bool reads = false;
  for (const std::string& m : o.methods) reads = reads || StatsOf(m) != Stats::kNone;
  const int64_t run = reads ? o.samples : std::min(o.log_windows, o.samples);  // windows the blocks run on
  const double N = static_cast<double>(run);
  const double L = static_cast<double>(o.seq_len), T = N * L;
  const double tokens_all = static_cast<double>(o.samples) * L;  // the tokenized calibration set
  const std::vector<LinearShape> ls = BlockLinears(c);
  // Three phases (pipeline/compress_run.cc, compress/engine.h); the peak is the largest.
  // 1. The calibration windows are embedded, with the top-level tensors but the head loaded.
  MemoryEstimate setup;
  setup.what = "compress";
  setup.Add("process", kOverhead);
  setup.Add("embedding", (TopParams(c) - HeadParams(c)) * ResidentPerParam(4, o.disk_bytes));
  setup.Add("calibration text", static_cast<double>(o.calib_text_bytes) * kTextFactor + tokens_all * kI64);
  setup.Add("calibration activations", T * c.hidden * kF32);
  // 3. The untied head is copied across alone, once the blocks are done.
  MemoryEstimate head;
  head.what = "compress";
  head.Add("process", kOverhead);
  head.Add("head", HeadParams(c) * ResidentPerParam(4, o.disk_bytes));
  // 2. The blocks, one at a time (the embedding freed): the block's float32 copy and the copy of
  // the linear being compressed; a block transform (AWQ) keeps every compressed linear's original.
  bool transforms = false;
  for (const std::string& m : o.methods) transforms = transforms || StatsOf(m) == Stats::kAwq;
  MemoryEstimate e;
  e.what = "compress";
  e.Add("process", kOverhead);
  e.Add("block weights", BlockParams(c) * kF32 + WidestLinearParams(c) * ResidentPerParam(4, o.disk_bytes) +
                             (transforms ? BlockLinearParams(c) * kF32 : 0));
  e.Add("calibration activations", T * c.hidden * kF32 * kActivationCopies);
  e.Add("calibration text", tokens_all * kI64);
  const int64_t mb = o.micro_batch > 0 ? o.micro_batch : DefaultMicroBatch(c, o.seq_len);
  e.Add("micro-batch intermediates",
        static_cast<double>(std::min<int64_t>(mb, run)) * L *
            WidestPerToken(c, o.seq_len, static_cast<double>(std::min<int64_t>(mb, run)) * L) * kF32 *
            kMicroBatchLive);
  // The original inputs of the compressed linears on the logging windows, and the transformed
  // ones when a method transforms the block (compress/engine.cc CaptureHooks).
  e.Add("logged-error captures", static_cast<double>(std::min(o.log_windows, o.samples)) * L *
                                     DistinctInputsPerToken(c) * (transforms ? 2 : 1) * kF32);
  bool stats_pass = false;
  for (const std::string& m : o.methods) {
    const Stats kind = StatsOf(m);
    stats_pass = stats_pass || (kind != Stats::kNone && kind != Stats::kAwq);
    switch (kind) {
      case Stats::kNone: break;
      case Stats::kVectors: e.Add("input statistics", static_cast<double>(ls.size()) * c.intermediate * 2 * kF64); break;
      case Stats::kAwq: e.Add("AWQ captured inputs", T * AwqCapturedPerToken(c) * kF32); break;
      case Stats::kOuter: e.Add("wanda-perp accumulators", BlockLinearParams(c) * (kF64 + kF32)); break;
      case Stats::kGram: case Stats::kGramSequential: {
        auto [sum, widest] = GramOf(ls, StatsOf(m) == Stats::kGramSequential);
        e.Add("Gram matrices", (sum + kGramWork * static_cast<double>(widest) * widest) * kF64);
        break;
      }
    }
  }
  if (stats_pass) {
    // The statistics forward over all windows (compress/engine.cc StatsHooks): each linear's
    // micro-batch input kept and its square/product temporaries, and a second set of
    // intermediates (the hooks keep tensors alive longer; measured by memory_bench).
    double inputs = 0;
    for (const auto& l : ls) inputs += static_cast<double>(l.in);
    e.Add("statistics pass", static_cast<double>(std::min<int64_t>(mb, o.samples)) * L *
                                 (2 * inputs + WidestPerToken(c, o.seq_len, static_cast<double>(std::min<int64_t>(mb, o.samples)) * L) *
                                                   kMicroBatchLive) * kF32);
  }
  Max(e, setup, &e);
  Max(e, head, &e);
  const double model_bytes = ModelParams(c);
  if (o.self_calibration) {
    // Sampling runs before the engine with the whole model loaded (then freed).
    MemoryEstimate s;
    s.what = e.what;
    s.Add("process", kOverhead);
    s.Add("whole model for self-sampling", model_bytes * ResidentPerParam(4, o.disk_bytes));
    s.Add("sampling logits", N * c.vocab_size * kF32 * kEvalLogits);
    Max(e, s, &e);
  }
  if (o.awq_gemm) {
    // The AutoAWQ export reads the compressed folder back whole and packs it.
    MemoryEstimate x;
    x.what = e.what;
    x.Add("process", kOverhead);
    x.Add("compressed model read back for awq-gemm", model_bytes * 4);
    x.Add("awq-gemm packing", BlockParams(c) * 3 * kF32 + TopParams(c) * kF32);
    Max(e, x, &e);
  }
  return e;
}

MemoryEstimate EstimateEval(const ModelConfig& c, const EvalMemoryOptions& o) {
  PC_CHECK(o.windows > 0 && o.seq_len > 0, "memory estimate: evaluation needs windows and tokens");
  const double per_param = ResidentPerParam(o.weight_bytes, o.disk_bytes);
  // Perplexity and the reference comparison run block by block (metrics/block_stream.h): the
  // embedding, the head and one block of each model, and every window's residual stream of each.
  const double streamed_bytes = StreamedParams(c, o.release_embeddings) * per_param;
  const double batch_tokens = EvalBatchTokens(c, o), tokens = static_cast<double>(o.windows) * o.seq_len;
  const double models = o.reference ? 2 : 1;
  MemoryEstimate e;
  e.what = "eval";
  e.Add("process", kOverhead);
  // Minimal pairs, of many lengths, run the whole forward: the model is loaded whole.
  e.Add("model weights", o.pair_tokens > 0 ? ModelParams(c) * per_param : streamed_bytes);
  if (o.reference) e.Add("reference weights", streamed_bytes);
  e.Add("residual streams of every window", models * tokens * c.hidden * o.compute_bytes);
  e.Add("a weight converted for the arithmetic", ConvertedWeightBytes(c, o));
  e.Add("logits of one batch", batch_tokens * c.vocab_size * kF32 * (o.reference ? kReferenceLogits : kEvalLogits));
  e.Add("activations of one batch",
        batch_tokens * WidestPerToken(c, o.seq_len, batch_tokens) * kF32 * kActivationsLive * models);
  e.Add("per-token values", o.per_token ? tokens * 4 * kF64 : 0);
  e.Add("evaluation text", static_cast<double>(o.text_bytes) * kTextFactor + tokens * kI64);
  if (o.pair_tokens > 0) {
    MemoryEstimate p = e;
    p.terms.erase(std::remove_if(p.terms.begin(), p.terms.end(),
                                 [](const MemoryTerm& t) { return t.name.find("one batch") != std::string::npos; }),
                  p.terms.end());
    const double pair_tokens = static_cast<double>(o.pair_tokens);
    p.Add("minimal-pair logits", pair_tokens * c.vocab_size * kF32 * kEvalLogits);
    p.Add("minimal-pair activations", pair_tokens * WidestPerToken(c, 64, pair_tokens) * kF32 * kActivationsLive);
    Max(e, p, &e);
  }
  return e;
}

MemoryEstimate EstimateMeasure(const ModelConfig& c, const EvalMemoryOptions& o) {
  PC_CHECK(o.windows > 0 && o.seq_len > 0, "memory estimate: measuring needs windows and tokens");
  const double per_param = ResidentPerParam(o.weight_bytes, o.disk_bytes);
  const double batch_tokens = EvalBatchTokens(c, o), tokens = static_cast<double>(o.windows) * o.seq_len;
  const double entries = 2.0 * 2.0 * (2.0 * c.layers + 2);  // both kinds, both frames, two sites per layer + head
  double block_outputs = 4.0 * c.hidden;  // the reference's site tensors of one block, per token
  for (const auto& l : BlockLinears(c)) block_outputs += static_cast<double>(l.out);
  MemoryEstimate e;
  e.what = "measure";
  e.Add("process", kOverhead);
  // Both models block by block in lockstep (metrics/measure.h): the embedding, the head and one
  // block of each, every window's residual stream of each.
  e.Add("reference and compressed weights", 2 * StreamedParams(c, o.release_embeddings) * per_param);
  e.Add("residual streams of every window", 2 * tokens * c.hidden * o.compute_bytes);
  e.Add("a weight converted for the arithmetic", ConvertedWeightBytes(c, o));
  e.Add("logits of one batch", batch_tokens * c.vocab_size * kF32 * kMeasureLogits);
  e.Add("activations of one batch", batch_tokens * WidestPerToken(c, o.seq_len, batch_tokens) * kF32 * kActivationsLive * 2 +
                                        batch_tokens * block_outputs * kF32);
  e.Add("per-token statistics", tokens * entries * (o.per_token ? 41 : 12));
  e.Add("evaluation text", static_cast<double>(o.text_bytes) * kTextFactor + tokens * kI64);
  return e;
}

MemoryEstimate EstimateSweep(const ModelConfig& c, const std::vector<CompressMemoryOptions>& runs,
                             const EvalMemoryOptions& eval) {
  EvalMemoryOptions ev = eval;
  ev.release_embeddings = false;  // the sweep runs its reference again for the next run
  // The sweep holds its reference through the runs: streamed (the embedding and head; measure
  // loads one block at a time), or whole when minimal pairs need its whole forward.
  const double reference = (ev.pair_tokens > 0 ? ModelParams(c) : TopParams(c)) * ResidentPerParam(4, ev.disk_bytes);
  ev.weight_bytes = ev.compute_bytes = 4;
  MemoryEstimate best = EstimateMeasure(c, ev);
  for (const auto& r : runs) {
    MemoryEstimate m = EstimateCompress(c, r);
    m.Add("reference model held by the sweep", reference);
    Max(best, m, &best);
  }
  EvalMemoryOptions pairs = ev;
  pairs.reference = false;
  MemoryEstimate p = EstimateEval(c, pairs);
  p.Add("reference model held by the sweep", reference);
  Max(best, p, &best);
  best.what = "sweep";
  return best;
}

void CheckMemoryLimit(const MemoryEstimate& e, int64_t limit_bytes, const std::string& option,
                      const std::string& hint) {
  if (e.Total() <= static_cast<double>(limit_bytes)) return;
  PC_THROW(e.Describe(), " exceeds ", option, " ", HumanBytes(static_cast<double>(limit_bytes)),
           "; nothing was done", hint.empty() ? "" : "; " + hint);
}

int64_t ParseMemAvailable(const std::string& meminfo) {
  for (size_t pos = 0; pos < meminfo.size();) {
    size_t end = meminfo.find('\n', pos);
    if (end == std::string::npos) end = meminfo.size();
    const std::string line = meminfo.substr(pos, end - pos);
    pos = end + 1;
    if (!StartsWith(line, "MemAvailable:")) continue;
    // "MemAvailable:   19876543 kB"
    long long kib = 0;
    char unit[8] = {};
    if (std::sscanf(line.c_str() + 13, "%lld %7s", &kib, unit) == 2 && std::string(unit) == "kB" && kib >= 0) {
      return static_cast<int64_t>(kib) * 1024;
    }
    return -1;
  }
  return -1;
}

int64_t AvailableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  if (!in) return -1;
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseMemAvailable(ss.str());
}

void CheckMemoryFits(const MemoryEstimate& e, int64_t limit_bytes, const std::string& hint) {
  if (limit_bytes > 0) {
    CheckMemoryLimit(e, limit_bytes, "--max-memory", hint + ", or raise --max-memory");
    return;
  }
  const int64_t available = AvailableMemoryBytes();
  if (available < 0 || e.Total() <= static_cast<double>(available)) return;
  PC_THROW(e.Describe(), " exceeds the memory available now (MemAvailable ", HumanBytes(static_cast<double>(available)),
           " in /proc/meminfo); nothing was done; ", hint,
           ", or free memory (--max-memory SIZE sets the limit instead of the available memory)");
}

}  // namespace pc::pipeline
