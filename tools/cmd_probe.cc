// perpcomp probe decompose | scale | perturb — the seeds' representation experiments
// (docs/SCIENCE.md): update decomposition into parallel / perpendicular parts, loss and minimal-pair
// accuracy under ∥/⊥ scaling (residual or value space, exclude-self), L2-matched magnitude vs direction
// perturbation with repair, and hidden-state norm against parse depth. Tables on the terminal, results
// into a "probe" HDF5 file (--out, docs/HDF5.md) and a self-contained HTML page (--html).
#include <cstdio>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "metrics/results_h5.h"
#include "pipeline/run_io.h"
#include "probes/decompose.h"
#include "probes/norm_depth.h"
#include "probes/perturb.h"
#include "probes/probe_report.h"
#include "probes/results_h5.h"
#include "probes/scale.h"
#include "reports/markdown.h"
#include "store/file.h"
#include "tools/cli.h"
#include "tools/model_options.h"

namespace pc::cli {

namespace {

// Options every probe shares.
struct ProbeFlags {
  CommonOptions common;
  pipeline::ModelOptions mo;
  std::string text, text_field, layers, out, html;
  int64_t seq_len = 0, max_windows = 32, batch = 0, max_pairs = 0, pair_batch_tokens = 8192;
  std::vector<std::string> pairs;
  bool overwrite = false;
};

void AddProbeFlags(po::options_description& desc, ProbeFlags& f, bool pairs, const std::string& layers_default,
                   const std::string& layers_help) {
  AddModelOptions(desc, f.mo);
  desc.add_options()
    ("text", po::value<std::string>(&f.text)->required(), "text to score: plain UTF-8 or JSON lines (*.jsonl)")
    ("text-field", po::value<std::string>(&f.text_field)->default_value("text"), "JSON-lines field holding the text")
    ("seq-len", po::value<int64_t>(&f.seq_len)->default_value(0), "window length in tokens (0: 2048 capped at the model's context)")
    ("max-windows", po::value<int64_t>(&f.max_windows)->default_value(32), "use the first K windows (0: all)")
    ("batch", po::value<int64_t>(&f.batch)->default_value(0), "windows per forward (0: automatic)")
    ("layers", po::value<std::string>(&f.layers)->default_value(layers_default), layers_help.c_str());
  if (pairs) {
    desc.add_options()
      ("pairs", po::value<std::vector<std::string>>(&f.pairs)->composing(),
       "minimal pairs: BLiMP .jsonl file, folder of them, or blimp-sva (repeatable; default: none)")
      ("max-pairs", po::value<int64_t>(&f.max_pairs)->default_value(0), "use the first N pairs of each file (0: all)")
      ("pair-batch-tokens", po::value<int64_t>(&f.pair_batch_tokens)->default_value(8192),
       "padded tokens per minimal-pair forward");
  }
  desc.add_options()
    ("out", po::value<std::string>(&f.out), "write the results to this HDF5 file (kind \"probe\"; default: none)")
    ("html", po::value<std::string>(&f.html), "write a self-contained HTML page (default: none)")
    ("overwrite", po::bool_switch(&f.overwrite), "replace an existing --out / --html");
}

// Everything a probe runs on, loaded after every option was checked.
struct ProbeSetup {
  ModelConfig config;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  probes::ProbeInputs in;
  pipeline::TextWindows text;
  probes::ProbeContext context;
};

std::string CommandLine(const std::string& sub, const std::vector<std::string>& args) {
  std::string s = "perpcomp probe " + sub;
  for (const auto& a : args) {
    const bool quote = a.empty() || a.find_first_of(" \t'\"$\\") != std::string::npos;
    s += " " + (quote ? "'" + ReplaceAll(a, "'", "'\\''") + "'" : a);
  }
  return s;
}

// Checks the outputs and the inputs that can be wrong before the model is loaded; returns the config.
ModelConfig CheckInputs(const ProbeFlags& f) {
  PC_CHECK(f.max_windows >= 0, "--max-windows must not be negative");
  PC_CHECK(f.batch >= 0, "--batch must not be negative");
  PC_CHECK(f.max_pairs >= 0, "--max-pairs must not be negative");
  if (!f.out.empty()) fs::CheckOutputPath(f.out, f.overwrite, "--out");
  if (!f.html.empty()) fs::CheckOutputPath(f.html, f.overwrite, "--html");
  PC_CHECK(f.out.empty() || f.out != f.html, "--out and --html name the same file");
  return LoadModelConfig(f.mo.model);
}

ProbeSetup Load(const std::string& probe, const ProbeFlags& f, const std::vector<std::string>& args,
                const ModelConfig& config) {
  ProbeSetup s;
  s.config = config;
  for (const auto& file : ResolvePairSpecs(f.pairs, SharedDataDir())) {
    std::vector<MinimalPair> p = ReadMinimalPairs(file);
    if (f.max_pairs > 0 && static_cast<int64_t>(p.size()) > f.max_pairs) p.resize(f.max_pairs);
    s.in.pairs.insert(s.in.pairs.end(), p.begin(), p.end());
    s.context.pair_files.push_back(file);
  }
  s.text = pipeline::LoadTextWindows(f.text, f.text_field, f.seq_len, f.max_windows, config, f.mo.model);
  s.model = pipeline::LoadModel(f.mo);
  s.tokenizer = pipeline::LoadModelTokenizer(f.mo.model);
  s.in.windows = s.text.windows.tokens;
  s.in.batch = f.batch;
  s.in.tokenizer = s.tokenizer.get();
  s.in.pair_batch_tokens = f.pair_batch_tokens;
  probes::ProbeContext& c = s.context;
  c.probe = probe;
  c.model = f.mo.model;
  c.model_type = config.model_type;
  c.norm = config.arch->norm == NormKind::kLayerNorm ? "LayerNorm" : "RMSNorm";
  c.layers = static_cast<int>(config.layers);
  c.text = f.text;
  c.text_sha256 = s.text.text.sha256;
  c.windows = s.text.windows.windows();
  c.seq_len = s.text.windows.seq_len;
  c.command = CommandLine(probe, args);
  std::printf("%s (%s, %s, %d layers) on %s: %lld windows x %lld tokens%s\n", c.model.c_str(), c.model_type.c_str(),
              c.norm.c_str(), c.layers, c.text.c_str(), static_cast<long long>(c.windows),
              static_cast<long long>(c.seq_len),
              s.in.pairs.empty() ? "" : Str(", ", s.in.pairs.size(), " minimal pairs").c_str());
  return s;
}

// The staged HDF5 file: root attributes, the probe's group (written by `write`), committed.
void WriteOutputs(const ProbeFlags& f, const ProbeSetup& s, const std::function<void(const store::Group&)>& write,
                  const std::function<std::string()>& html) {
  if (!f.out.empty()) {
    store::StagedWriter w = store::File::CreateStaged(f.out, store::kind::kProbe, f.overwrite, "--out");
    const probes::ProbeContext& c = s.context;
    SetAttrs(w.root(), {{"probe", c.probe},
                        {"model", c.model},
                        {"model_type", c.model_type},
                        {"norm", c.norm},
                        {"num_layers", c.layers},
                        {"hidden", s.config.hidden},
                        {"dtype", f.mo.dtype},
                        {"text", c.text},
                        {"text_sha256", c.text_sha256},
                        {"seq_len", c.seq_len},
                        {"windows", c.windows},
                        {"command", c.command}});
    w.root().SetAttr("pair_files", c.pair_files);
    write(w.root().CreateGroup(c.probe));
    w.Commit();
    std::printf("wrote %s\n", f.out.c_str());
  }
  if (!f.html.empty()) {
    fs::WriteFileAtomic(f.html, html());
    std::printf("wrote %s\n", f.html.c_str());
  }
}

void Print(const std::string& title, const reports::TextTable& t) {
  std::cout << "\n" << title << "\n" << reports::ToMarkdown(t) << std::flush;
}

// ---- decompose --------------------------------------------------------------------------------

int RunDecompose(const std::vector<std::string>& args) {
  ProbeFlags f;
  bool no_value = false;
  int bins = 40;
  po::options_description desc("options");
  AddProbeFlags(desc, f, /*pairs=*/false, "all", "layers to decompose: A-B (0-based, inclusive), A, all or middle");
  desc.add_options()
    ("no-value", po::bool_switch(&no_value), "skip the per-head value-space decomposition")
    ("bins", po::value<int>(&bins)->default_value(40), "histogram bins in --out");
  AddCommonOptions(desc, f.common);
  po::variables_map vm;
  if (!Parse("probe decompose", "--model DIR --text FILE [--layers A-B] [--out FILE.h5] [--html FILE] [options]", desc,
             args, vm, nullptr, &f.common)) {
    return 0;
  }
  PC_CHECK(bins >= 1, "--bins must be at least 1");
  ModelConfig config = CheckInputs(f);
  probes::DecomposeOptions o;
  o.layers = probes::ParseLayerRange(f.layers, static_cast<int>(config.layers), "--layers");
  o.value_space = !no_value;
  ProbeSetup s = Load("decompose", f, args, config);
  probes::DecomposeResult r = probes::Decompose(*s.model, s.in, o);
  Print("Residual space: updates Δ against the incoming hidden state h (c = Δ·h/‖h‖², cos = Δ·h/(‖Δ‖‖h‖))",
        probes::DecomposeUpdatesTable(r));
  if (!r.heads.empty()) {
    Print("Value space: attention output o_i against the own value vector v_i (per layer, over heads)",
          probes::DecomposeValueTable(r));
  }
  WriteOutputs(
      f, s, [&](const store::Group& g) { probes::WriteDecompose(g, r, bins); },
      [&] { return probes::DecomposeHtml(s.context, r); });
  return 0;
}

// ---- scale ------------------------------------------------------------------------------------

int RunScale(const std::vector<std::string>& args) {
  ProbeFlags f;
  std::string space, sublayers, alphas, betas, factors;
  bool no_grid = false;
  po::options_description desc("options");
  AddProbeFlags(desc, f, /*pairs=*/true, "all", "layers to scale: A-B (0-based, inclusive), A, all or middle");
  desc.add_options()
    ("space", po::value<std::string>(&space)->default_value("residual"),
     "residual (updates against the incoming hidden state) | value (attention outputs against own value vectors)")
    ("sublayers", po::value<std::string>(&sublayers)->default_value("attn,mlp"),
     "residual space: which updates are scaled: attn, mlp or attn,mlp")
    ("alpha", po::value<std::string>(&alphas)->default_value("0,0.5,0.9,1.1,1.5,2"),
     "factors of the parallel part (rows with beta = 1), comma-separated")
    ("beta", po::value<std::string>(&betas)->default_value("0,0.5,0.9,1.1,1.5,2"),
     "factors of the perpendicular part (rows with alpha = 1), comma-separated")
    ("exclude-self", po::value<std::string>(&factors)->default_value("0,0.5,1.5"),
     "factors of the cross-token part in value space (a_ii v_i kept); 'none' for no rows")
    ("no-grid", po::bool_switch(&no_grid), "skip the alpha x beta heat map (every pair of the two lists, with 1)");
  AddCommonOptions(desc, f.common);
  po::variables_map vm;
  if (!Parse("probe scale",
             "--model DIR --text FILE [--pairs SPEC] [--layers A-B] [--space residual|value] --alpha LIST --beta LIST "
             "[options]",
             desc, args, vm, nullptr, &f.common)) {
    return 0;
  }
  probes::ScaleOptions o;
  o.space = probes::ParseSpace(space, "--space");
  o.alphas = ParseDoubleList(alphas, "--alpha");
  o.betas = ParseDoubleList(betas, "--beta");
  if (Trim(factors) != "none") o.factors = ParseDoubleList(factors, "--exclude-self");
  o.grid = !no_grid;
  {
    const std::string t = ReplaceAll(sublayers, " ", "");
    PC_CHECK(t == "attn" || t == "mlp" || t == "attn,mlp" || t == "mlp,attn", "--sublayers: expected attn, mlp or ",
             "attn,mlp, got '", sublayers, "'");
    o.attn = t.find("attn") != std::string::npos;
    o.mlp = t.find("mlp") != std::string::npos;
  }
  ModelConfig config = CheckInputs(f);
  o.layers = probes::ParseLayerRange(f.layers, static_cast<int>(config.layers), "--layers");
  o.Validate(static_cast<int>(config.layers));
  ProbeSetup s = Load("scale", f, args, config);
  probes::ScaleResult r = probes::RunScale(*s.model, s.in, o);
  Print(Str("Scaling in ", probes::SpaceName(o.space), " space, layers ", o.layers.ToString()), probes::ScaleTable(r));
  WriteOutputs(
      f, s, [&](const store::Group& g) { probes::WriteScale(g, r, o); },
      [&] { return probes::ScaleHtml(s.context, r, o); });
  return 0;
}

// ---- perturb ----------------------------------------------------------------------------------

int RunPerturb(const std::vector<std::string>& args) {
  ProbeFlags f;
  std::string deltas, kinds, repairs, repair_layers, depths;
  int seeds = 3;
  uint64_t seed = 0;
  int64_t max_sentences = 1000;
  po::options_description desc("options");
  AddProbeFlags(desc, f, /*pairs=*/true, "middle",
                "layers whose outputs are perturbed, all in the same forward: A-B (0-based, inclusive), A, all or "
                "middle (the middle third, as the seed's 8-15 of 24)");
  desc.add_options()
    ("delta", po::value<std::string>(&deltas)->default_value("1,2,5"),
     "L2 distances (> 0, absolute; compare with the |h| table), comma-separated")
    ("seeds", po::value<int>(&seeds)->default_value(3), "seeds per distance and kind (mean +- std over them)")
    ("seed", po::value<uint64_t>(&seed)->default_value(0), "first seed")
    ("kinds", po::value<std::string>(&kinds)->default_value("magnitude,direction"), "magnitude, direction or both")
    ("repair", po::value<std::string>(&repairs)->default_value("attention,norm"),
     "re-run restoring clean attention updates and/or norm outputs: attention, norm, attention,norm or none")
    ("repair-layers", po::value<std::string>(&repair_layers)->default_value(""),
     "layers whose sublayer tensors are restored (default: the perturbed layers, as the seed notebook)")
    ("depths", po::value<std::string>(&depths), "depths.jsonl of `perpcomp corpus`: correlate |h| with parse depth")
    ("max-sentences", po::value<int64_t>(&max_sentences)->default_value(1000),
     "with --depths: use the first N sentences (0: all)");
  AddCommonOptions(desc, f.common);
  po::variables_map vm;
  if (!Parse("probe perturb",
             "--model DIR --text FILE [--pairs SPEC] [--layers A-B] --delta LIST [--seeds K] [--depths FILE] [options]",
             desc, args, vm, nullptr, &f.common)) {
    return 0;
  }
  probes::PerturbOptions o;
  o.deltas = ParseDoubleList(deltas, "--delta");
  for (double d : o.deltas) PC_CHECK(d > 0, "--delta: every distance must be > 0, got ", FormatDouble(d));
  PC_CHECK(seeds >= 1, "--seeds must be at least 1, got ", seeds);
  o.seeds = seeds;
  o.seed = seed;
  o.kinds = probes::ParsePerturbKinds(kinds, "--kinds");
  o.repairs = probes::ParseRepairKinds(repairs, "--repair");
  ModelConfig config = CheckInputs(f);
  const int L = static_cast<int>(config.layers);
  o.layers = probes::ParseLayerRange(f.layers, L, "--layers");
  if (!repair_layers.empty()) o.repair_layers = probes::ParseLayerRange(repair_layers, L, "--repair-layers");
  std::vector<probes::DepthSentence> depth_sentences;
  if (!depths.empty()) depth_sentences = probes::ReadDepthSentences(depths);
  ProbeSetup s = Load("perturb", f, args, config);
  o.Validate(*s.model);
  probes::PerturbResult r = probes::RunPerturb(*s.model, s.in, o);
  std::optional<probes::NormDepthData> depth_data;
  std::optional<probes::NormDepthStats> depth_stats;
  if (!depth_sentences.empty()) {
    depth_data = probes::CollectNormDepth(*s.model, *s.tokenizer, depth_sentences, max_sentences);
    depth_stats = probes::CorrelateNormDepth(*depth_data);
  }
  std::printf("\nbaseline: loss %.5f (ppl %.4f)%s\n", r.baseline.loss, r.baseline.ppl,
              r.baseline.pairs ? Str(", minimal-pair accuracy ", r.baseline.accuracy()).c_str() : "");
  Print("Clean hidden-state norms ‖h‖ (block outputs)", probes::HiddenNormsTable(r));
  Print(Str("L2-matched perturbation of layers ", r.layers.ToString(), " (", o.seeds, " seeds)"),
        probes::PerturbSummaryTable(r));
  Print("Direction vs magnitude", probes::PerturbRatioTable(r, o.deltas));
  if (!r.repair.empty()) Print(Str("Repair of layers ", r.repair_layers.ToString()), probes::RepairTable(r));
  if (depth_stats) {
    std::printf("\nnorm vs depth: %lld sentences aligned, %lld left out; Spearman(depth, position) = %.3f\n",
                static_cast<long long>(depth_stats->sentences), static_cast<long long>(depth_stats->unaligned),
                depth_stats->spearman_depth_position);
    Print("‖h‖ at each word's last token against its parse depth", probes::NormDepthTable(*depth_stats));
  }
  WriteOutputs(
      f, s,
      [&](const store::Group& g) {
        probes::WritePerturb(g, r, o);
        if (depth_data) {
          store::Group nd = g.CreateGroup("norm_depth");
          probes::WriteNormDepth(nd, *depth_data);
          nd.SetAttr("depths", depths);
          nd.SetAttr("spearman_depth_position", depth_stats->spearman_depth_position);
          store::Table t;
          std::vector<int64_t> layer, words;
          std::vector<double> p, sp, pp, spp;
          for (const auto& row : depth_stats->rows) {
            layer.push_back(row.layer);
            words.push_back(row.words);
            p.push_back(row.pearson);
            sp.push_back(row.spearman);
            pp.push_back(row.pearson_position);
            spp.push_back(row.spearman_position);
          }
          t.AddColumn("layer", layer);
          t.AddColumn("words", words);
          t.AddColumn("pearson", p);
          t.AddColumn("spearman", sp);
          t.AddColumn("pearson_position", pp);
          t.AddColumn("spearman_position", spp);
          nd.WriteTable("correlations", t);
        }
      },
      [&] { return probes::PerturbHtml(s.context, r, o, depth_stats ? &*depth_stats : nullptr); });
  return 0;
}

}  // namespace

int RunProbe(const std::vector<std::string>& args) {
  static const char* kUsage =
      "usage: perpcomp probe <experiment> [options]   (perpcomp probe <experiment> --help for its options)\n\n"
      "experiments (docs/SCIENCE.md):\n"
      "  decompose  parallel / perpendicular share of every update (residual space) and attention output\n"
      "             (value space, per head), with distributions of the parallel coefficient\n"
      "  scale      loss and minimal-pair accuracy with the parallel part scaled by alpha and the\n"
      "             perpendicular part by beta (residual or value space), and exclude-self scaling\n"
      "  perturb    L2-matched magnitude vs direction perturbation of hidden states, with repair, and\n"
      "             hidden-state norm against parse depth (--depths)\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "decompose") return RunDecompose(rest);
  if (args[0] == "scale") return RunScale(rest);
  if (args[0] == "perturb") return RunPerturb(rest);
  PC_THROW("probe: unknown experiment '", args[0], "' (expected decompose, scale or perturb)");
}

}  // namespace pc::cli
