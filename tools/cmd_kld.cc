// perpcomp kld --save-base FILE --model BASE --text FILE [--seq-len N] [--max-windows K] [--top-k K]
//   [--pairs P ...]
// perpcomp kld --base FILE --model DIR|FILE.gguf [--text FILE] [--pairs P ...] [--json]
// The first form saves the base model's compact next-token distributions on the text (a "kld-base"
// HDF5 file, metrics/kld_base.h); the second compares any model with them without the base model:
// KL (lower and upper bound), Δp, same-top-token rate, perplexities and their ratio, minimal-pair
// flips (docs/METRICS.md "KL against a saved base"). Run logic: metrics/kld_base.h.
#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "metrics/kld_base.h"
#include "metrics/minimal_pairs.h"
#include "model/gguf_convert.h"
#include "pipeline/run_io.h"
#include "tools/cli.h"
#include "tools/model_options.h"

namespace pc::cli {

namespace {

// A GGUF --model is converted into a temporary Hugging Face folder (model/gguf_convert.h), removed
// when the command ends.
class ModelFolder {
 public:
  explicit ModelFolder(const std::string& model) : dir_(model) {
    if (fs::IsDirectory(model) || !EndsWith(model, ".gguf")) return;
    fs::CheckRegularFile(model, "--model");
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = fs::Join(tmp != nullptr && *tmp ? tmp : "/tmp", "perpcomp-kld-XXXXXX");
    PC_CHECK(::mkdtemp(templ.data()) != nullptr, "cannot create a temporary folder for '", model, "' under '",
             fs::Parent(templ), "'");
    tmp_ = templ;
    dir_ = fs::Join(tmp_, "model");
    log::Info("kld", "converting '", model, "' into '", dir_, "'");
    ConvertGgufToFolder(model, dir_, GgufConvertOptions{}, /*overwrite=*/false);
  }
  ~ModelFolder() {
    if (!tmp_.empty()) fs::RemoveAll(tmp_);
  }
  ModelFolder(const ModelFolder&) = delete;
  ModelFolder& operator=(const ModelFolder&) = delete;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, tmp_;
};

void PrintSummary(const KldResult& r, const std::string& model, const std::string& base_path, const KldBase& base) {
  const DownstreamSummary& d = r.downstream;
  std::printf("%s against the base '%s' (%s), %lld tokens (%lld windows x %lld), top-%lld stored\n", model.c_str(),
              base_path.c_str(), base.model.c_str(), (long long)d.tokens, (long long)base.tokens.size(0),
              (long long)base.tokens.size(1), (long long)base.logits.k());
  std::printf("  perplexity       %.4f  (base %.4f, ratio %.5f, delta NLL %+.6f nats)\n", d.ppl, d.ref_ppl, d.ppl_ratio,
              d.delta_nll);
  std::printf("  KL divergence    mean %.6f  median %.6f  p90 %.6f  p99 %.6f  max %.6f  (lower bounds)\n", d.kl_mean,
              d.kl_p50, d.kl_p90, d.kl_p99, d.kl_max);
  std::printf("  KL upper bound   mean %.6f  (the exact mean lies in [%.6f, %.6f])\n", d.kl_upper_mean, d.kl_mean,
              d.kl_upper_mean);
  std::printf("  same top token   %.4f\n", d.top1_agreement);
  std::printf("  delta p          mean %+.5f  rms %.5f\n", d.dp_mean, d.dp_rms);
  std::printf("                   min %+.5f  p1 %+.5f  p5 %+.5f  p10 %+.5f  p25 %+.5f  median %+.5f\n", d.dp_min,
              d.dp_p1, d.dp_p5, d.dp_p10, d.dp_p25, d.dp_p50);
  std::printf("                   p75 %+.5f  p90 %+.5f  p95 %+.5f  p99 %+.5f  max %+.5f\n", d.dp_p75, d.dp_p90,
              d.dp_p95, d.dp_p99, d.dp_max);
  if (r.has_pairs) {
    const PairFlips& f = r.flips;
    std::printf("  minimal pairs    %lld pairs: accuracy %.4f (base %.4f); flips %lld right->wrong, %lld wrong->right\n",
                (long long)f.pairs, f.accuracy, f.base_accuracy, (long long)f.right_to_wrong,
                (long long)f.wrong_to_right);
  }
}

}  // namespace

int RunKld(const std::vector<std::string>& args) {
  CommonOptions common;
  pipeline::ModelOptions mo;
  std::string save_base, base_path, text_path, text_field, pair_prefix;
  std::vector<std::string> pair_specs;
  int64_t seq_len = 0, max_windows = 0, batch = 0, top_k = 32, pair_batch_tokens = 8192;
  bool json = false, overwrite = false;
  po::options_description desc("options");
  AddModelOptions(desc, mo);
  desc.add_options()
    ("save-base", po::value<std::string>(&save_base), "write the --model's compact distributions on --text here (HDF5)")
    ("base", po::value<std::string>(&base_path), "compare the --model (folder or .gguf) with this saved base")
    ("text", po::value<std::string>(&text_path),
     "evaluation text (--save-base: required; --base: optional, checked to give the base's windows)")
    ("text-field", po::value<std::string>(&text_field)->default_value("text"), "JSON-lines field holding the text")
    ("seq-len", po::value<int64_t>(&seq_len)->default_value(0), "window length in tokens (0: 2048 capped at the context; --base: the base's)")
    ("max-windows", po::value<int64_t>(&max_windows)->default_value(0), "the first K windows (0: all; --base: the base's)")
    ("top-k", po::value<int64_t>(&top_k)->default_value(32), "--save-base: most probable tokens stored per position")
    ("batch", po::value<int64_t>(&batch)->default_value(0), "windows per forward (0: automatic)")
    ("pairs", po::value<std::vector<std::string>>(&pair_specs)->composing(),
     "minimal pairs: BLiMP .jsonl file, folder of them, or blimp-sva (repeatable; --base: the base's pairs)")
    ("pair-batch-tokens", po::value<int64_t>(&pair_batch_tokens)->default_value(8192), "padded tokens per minimal-pair forward")
    ("pair-prefix", po::value<std::string>(&pair_prefix)->default_value(""), "text before every minimal-pair sentence")
    ("overwrite", po::bool_switch(&overwrite), "replace an existing --save-base file")
    ("json", po::bool_switch(&json), "print one JSON object");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("kld", "(--save-base FILE --text FILE | --base FILE) --model DIR [options]", desc, args, vm, nullptr,
             &common)) {
    return 0;
  }
  PC_CHECK(save_base.empty() != base_path.empty(), "kld: give exactly one of --save-base FILE and --base FILE");
  PC_CHECK(batch >= 0, "--batch must not be negative");
  std::vector<MinimalPair> pairs;
  for (const auto& f : ResolvePairSpecs(pair_specs, SharedDataDir())) {
    std::vector<MinimalPair> p = ReadMinimalPairs(f);
    pairs.insert(pairs.end(), p.begin(), p.end());
  }
  PairScoringOptions scoring;
  scoring.max_batch_tokens = pair_batch_tokens;
  scoring.prefix = pair_prefix;

  if (!save_base.empty()) {
    PC_CHECK(!text_path.empty(), "kld --save-base needs --text");
    fs::CheckNotAnInput(save_base, "--save-base", {{"--model", mo.model}, {"--text", text_path}});
    fs::CheckOutputPath(save_base, overwrite, "--save-base");
    ModelFolder folder(mo.model);
    pipeline::ModelOptions lo = mo;
    lo.model = folder.dir();
    const ModelConfig config = LoadModelConfig(lo.model);
    auto tok = pipeline::LoadModelTokenizer(lo.model);
    if (!pairs.empty()) CheckPairLengths(*tok, pairs, config.max_pos, pair_prefix);
    pipeline::TextWindows tw = pipeline::LoadTextWindows(text_path, text_field, seq_len, max_windows, config, lo.model);
    auto model = pipeline::LoadModel(lo);
    KldBase base = ComputeKldBase(*model, *tok, tw.windows.tokens, top_k, batch, pairs, scoring);
    base.model = mo.model;
    base.dtype = mo.dtype;
    base.text_path = text_path;
    base.text_sha256 = tw.text.sha256;
    WriteKldBase(save_base, base, overwrite);
    const double ppl = std::exp(base.logits.nll.mean().item<double>());
    const double tail = base.logits.tail_mass.mean().item<double>();
    if (json) {
      std::cout << nlohmann::json{{"base", save_base},         {"model", mo.model},
                                  {"windows", base.tokens.size(0)}, {"seq_len", base.tokens.size(1)},
                                  {"top_k", top_k},            {"ppl", ppl},
                                  {"tail_mass_mean", tail},    {"pairs", base.pairs},
                                  {"text_sha256", base.text_sha256}}
                       .dump()
                << std::endl;
    } else {
      std::printf("wrote %s: %s on %s, %lld windows x %lld, ppl %.4f; top-%lld stored, mean rest mass %.5f\n",
                  save_base.c_str(), mo.model.c_str(), text_path.c_str(), (long long)base.tokens.size(0),
                  (long long)base.tokens.size(1), ppl, (long long)top_k, tail);
    }
    return 0;
  }

  PC_CHECK(vm["top-k"].defaulted(), "--top-k is chosen at --save-base; the base file has its own");
  KldBase base = ReadKldBase(base_path);
  ModelFolder folder(mo.model);
  pipeline::ModelOptions lo = mo;
  lo.model = folder.dir();
  const ModelConfig config = LoadModelConfig(lo.model);
  auto tok = pipeline::LoadModelTokenizer(lo.model);
  const std::string model_name = "model '" + mo.model + "'";
  CheckKldCompatible(base, base_path, config, *tok, model_name);
  if (!text_path.empty()) {
    pipeline::TextWindows tw =
        pipeline::LoadTextWindows(text_path, text_field, seq_len > 0 ? seq_len : base.tokens.size(1),
                                  max_windows > 0 ? max_windows : base.tokens.size(0), config, lo.model);
    CheckKldTokens(base, base_path, tw.windows.tokens, text_path);
  }
  if (pairs.empty() && base.pairs > 0) {
    log::Info("kld", "the base holds ", base.pairs, " minimal pairs; give the same --pairs for the flips");
  }
  auto model = pipeline::LoadModel(lo);
  KldResult r = EvaluateKld(*model, *tok, base, base_path, batch, pairs, scoring);
  if (json) {
    nlohmann::json j = DownstreamJson(r.downstream);
    j["model"] = mo.model;
    j["base"] = base_path;
    j["base_model"] = base.model;
    j["ppl"] = r.downstream.ppl;
    j["mean_nll"] = r.downstream.mean_nll;
    j["tokens"] = r.downstream.tokens;
    j["windows"] = base.tokens.size(0);
    j["seq_len"] = base.tokens.size(1);
    j["top_k"] = base.logits.k();
    if (r.has_pairs) {
      const PairFlips& f = r.flips;
      j["pairs"] = {{"pairs", f.pairs},
                    {"accuracy", f.accuracy},
                    {"base_accuracy", f.base_accuracy},
                    {"right_to_wrong", f.right_to_wrong},
                    {"wrong_to_right", f.wrong_to_right}};
    }
    std::cout << j.dump() << std::endl;
    return 0;
  }
  PrintSummary(r, mo.model, base_path, base);
  return 0;
}

}  // namespace pc::cli
