// perpcomp measure --reference DIR --compressed DIR --text FILE --out FILE.h5 [--run NAME]
//   [--seq-len N] [--max-windows K] [--per-token] [--cache DIR | --no-cache] [--overwrite | --append]
// Directional error of a compressed model against its reference at every site (docs/METRICS.md),
// into a "measure" HDF5 file (docs/HDF5.md), with a per-layer summary on stdout. The run is
// pipeline/measure.h; here the options, the call and the printing.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "pipeline/measure.h"
#include "tools/cli.h"
#include "tools/run_io.h"

namespace pc::cli {

namespace {

// Per-layer summary: accumulated residual-stream error (ratios of sums), then head and downstream.
void PrintSummary(const MeasureResult& r, int layers) {
  auto find = [&](SiteType type, int layer) -> const SiteAggregate* {
    for (size_t i = 0; i < r.sites.size(); ++i) {
      const SiteEntry& e = r.sites[i];
      if (e.type == type && e.layer == layer && e.kind == ErrorKind::kAccumulated && e.frame == Frame::kSelf) {
        return &r.aggregates[i];
      }
    }
    return nullptr;
  };
  std::printf("\naccumulated error of the residual stream (ratio of sums over %lld tokens: sum err / sum |y|^2)\n",
              static_cast<long long>(r.windows * r.seq_len));
  std::printf("%-12s %12s %12s %12s %10s %10s\n", "site", "rel iso", "rel par", "rel perp", "perp/iso", "cos");
  auto row = [](const std::string& name, const SiteAggregate* a) {
    if (a == nullptr) return;
    std::printf("%-12s %12.4e %12.4e %12.4e %10.3f %10.6f\n", name.c_str(), a->ratio_iso, a->ratio_par, a->ratio_perp,
                a->ratio_iso > 0 ? a->ratio_perp / a->ratio_iso : 0.0, a->mean_cos);
  };
  for (int l = 0; l < layers; ++l) row("layer " + std::to_string(l), find(SiteType::kBlockOutput, l));
  row("final_norm", find(SiteType::kFinalNorm, -1));
  row("logits", find(SiteType::kLogits, -1));
  const DownstreamSummary& d = r.downstream;
  std::printf("\ndownstream over %lld predicted tokens in %lld windows: mean NLL %.5f -> %.5f (delta %+.5f ± %.5f "
              "nats, ppl %.4f -> %.4f)\n",
              static_cast<long long>(d.tokens), static_cast<long long>(d.windows), d.ref_mean_nll, d.mean_nll,
              d.delta_nll, d.delta_nll_se, d.ref_ppl, d.ppl);
  std::printf("KL(reference || compressed): mean %.6f ± %.6f, p50 %.6f, p90 %.6f, p99 %.6f; top-1 agreement %.4f "
              "(± standard errors over windows)\n",
              d.kl_mean, d.kl_mean_se, d.kl_p50, d.kl_p90, d.kl_p99, d.top1_agreement);
}

}  // namespace

int RunMeasure(const std::vector<std::string>& args) {
  CommonOptions common;
  CacheFlags cache;
  pipeline::MeasureRunOptions o;
  std::string max_memory;
  bool json = false;
  po::options_description desc("options");
  desc.add_options()
    ("reference", po::value<std::string>(&o.reference)->required(), "reference Hugging Face folder (also its tokenizer)")
    ("compressed", po::value<std::string>(&o.compressed)->required(), "compressed model folder, same architecture")
    ("text", po::value<std::string>(&o.text)->required(), "text to measure on: plain UTF-8 or JSON lines (*.jsonl)")
    ("text-field", po::value<std::string>(&o.text_field)->default_value("text"), "JSON-lines field holding the text")
    ("out", po::value<std::string>(&o.out)->required(), "output HDF5 file (kind \"measure\")")
    ("run", po::value<std::string>(&o.run), "run name (default: the compressed folder's name)")
    ("seq-len", po::value<int64_t>(&o.seq_len)->default_value(0), "window length in tokens (0: 2048 capped at the model's context)")
    ("max-windows", po::value<int64_t>(&o.max_windows)->default_value(0), "measure the first K windows (0: all)")
    ("batch", po::value<int64_t>(&o.batch)->default_value(0), "windows per forward (0: automatic)")
    ("per-token", po::bool_switch(&o.per_token), "store every token's values (and NLL, KL) too")
    ("dtype", po::value<std::string>(&o.dtype)->default_value("f32"), "weights' dtype: f32 | bf16 (bf16 is computed in f32 on a CPU without native bf16)")
    ("overwrite", po::bool_switch(&o.overwrite), "replace an existing --out (with --append: a run of the same name)")
    ("append", po::bool_switch(&o.append), "add this run to an existing measure file (rebuilt crash-safely)")
    ("json", po::bool_switch(&json), "print one JSON object instead of the table")
    ("max-memory", po::value<std::string>(&max_memory),
     "refuse to start when the estimated peak memory exceeds SIZE (e.g. 4G, 512M, 1.5GiB)");
  AddCacheOptions(desc, cache);
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("measure", "--reference DIR --compressed DIR --text FILE --out FILE.h5 [options]", desc, args, vm,
             nullptr, &common)) {
    return 0;
  }
  o.memory_limit = max_memory.empty() ? 0 : ParseBytes(max_memory, "--max-memory");
  o.cache = ToCacheOptions(cache);
  const pipeline::MeasureRunResult res = pipeline::RunMeasure(o);
  const MeasureResult& r = res.measure;

  if (json) {
    const DownstreamSummary& d = r.downstream;
    nlohmann::json j = {{"out", o.out},         {"run", res.run},           {"windows", r.windows},
                        {"seq_len", r.seq_len}, {"text_sha256", res.text_sha256}, {"sites", r.sites.size()},
                        {"delta_nll", d.delta_nll}, {"delta_nll_se", d.delta_nll_se}, {"kl_mean", d.kl_mean}, {"top1_agreement", d.top1_agreement},
                        {"cache_hit", r.cache_hit}, {"seconds", r.seconds}};
    std::cout << j.dump() << std::endl;
  } else {
    PrintSummary(r, res.layers);
    std::printf("\nwrote %s (run '%s', %zu site entries, %zu linears%s) in %.1f s\n", o.out.c_str(), res.run.c_str(),
                r.sites.size(), r.weights.size(), o.per_token ? ", per-token values" : "", r.seconds);
  }
  return 0;
}

}  // namespace pc::cli
