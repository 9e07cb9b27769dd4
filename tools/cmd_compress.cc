// perpcomp compress --model DIR --recipe FILE|NAME [--calib SPEC] --out DIR [--dry-run]
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "compress/method.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/heap.h"
#include "core/log.h"
#include "core/strings.h"
#include "model/config.h"
#include "pipeline/compress_run.h"
#include "pipeline/memory_estimate.h"
#include "recipes/plan.h"
#include "tools/cli.h"

namespace pc::cli {

namespace {

void ListMethods() {
  const MethodRegistry& r = MethodRegistry::Builtins();
  for (const auto& name : r.Names()) {
    const MethodInfo& m = r.Get(name);
    std::printf("%-12s %s [%s; calibration windowing %s; next block fed with %s outputs]\n", m.name.c_str(),
                m.summary.c_str(), m.family.c_str(), m.default_windowing.c_str(),
                m.default_propagate_compressed ? "compressed" : "original");
    for (const auto& p : m.params) {
      std::printf("    %-18s %-12s default %-10s %s\n", p.name.c_str(), p.RangeText().c_str(),
                  ParamText(p.default_value).c_str(), p.doc.c_str());
    }
  }
  std::printf("\nshipped recipes (%s):", pipeline::ShippedRecipesDir().c_str());
  for (const auto& n : recipes::ListShippedRecipes(pipeline::ShippedRecipesDir())) std::printf(" %s", n.c_str());
  std::printf("\n");
}

}  // namespace

int RunCompressCmd(const std::vector<std::string>& args) {
  CommonOptions common;
  std::string model_dir, recipe_arg;
  pipeline::CompressRunOptions ro;
  bool dry_run = false;
  int64_t samples = 0, seq_len = 0;
  int64_t seed = -1;
  std::string windowing, text_field, max_memory, calib_dump;
  std::vector<std::string> calib_texts;
  po::options_description desc("options");
  desc.add_options()
    ("model", po::value<std::string>(&model_dir), "Hugging Face model folder")
    ("recipe", po::value<std::string>(&recipe_arg), "recipe file, or a shipped recipe name (see --list-methods)")
    ("calib", po::value<std::string>(&ro.calib.source), "calibration text (plain or *.jsonl) or self:N")
    ("calib-samples", po::value<int64_t>(&samples)->default_value(0), "calibration samples (0: recipe/method default, 128)")
    ("calib-seq-len", po::value<int64_t>(&seq_len)->default_value(0), "tokens per sample (0: recipe default, min(512, context))")
    ("calib-seed", po::value<int64_t>(&seed)->default_value(-1), "calibration seed (-1: recipe default, 0)")
    ("calib-windowing", po::value<std::string>(&windowing), "awq | random (default: the method's convention)")
    ("text-field", po::value<std::string>(&text_field), "JSON-lines field of the calibration text (default text)");
  AddCalibTextOption(desc, calib_texts);
  desc.add_options()
    ("calib-dump", po::value<std::string>(&calib_dump),
     "also write the calibration windows the engine ran on to FILE: one window per line, token ids separated by spaces")
    ("out", po::value<std::string>(&ro.out_dir), "output Hugging Face folder (with compress.h5)")
    ("overwrite", po::bool_switch(&ro.overwrite), "replace an existing --out (written beside it, swapped in when complete)")
    ("format", po::value<std::string>(&ro.format)->default_value("hf"),
     "hf | awq-gemm (also writes OUT/awq-gemm) | gguf (also writes OUT/model.gguf)")
    ("gguf-outtype", po::value<std::string>(&ro.gguf_outtype)->default_value("f16"),
     "gguf: f32 | f16 | bf16 for the tensors not in a quantized block type")
    ("micro-batch", po::value<int64_t>(&ro.micro_batch)->default_value(0), "calibration windows per forward (0: auto)")
    ("max-memory", po::value<std::string>(&max_memory),
     "refuse to start when the estimated peak memory exceeds SIZE (e.g. 4G, 512M, 1.5GiB)")
    ("dry-run", po::bool_switch(&dry_run), "print the plan (every linear: method and parameters, or why skipped); touch nothing")
    ("list-methods", "list the registered methods, their parameters and the shipped recipes");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("compress", "--model DIR --recipe FILE|NAME --calib SPEC --out DIR [--dry-run]", desc, args, vm,
             nullptr, &common)) {
    return 0;
  }
  if (vm.count("list-methods")) {
    ListMethods();
    return 0;
  }
  PC_CHECK(!model_dir.empty(), "--model is required");
  PC_CHECK(!recipe_arg.empty(), "--recipe is required (a file, or a shipped name: see --list-methods)");
  if (samples != 0) { PC_CHECK(samples > 0, "--calib-samples must be positive, got ", samples); ro.calib.samples = samples; }
  if (seq_len != 0) { PC_CHECK(seq_len > 0, "--calib-seq-len must be positive, got ", seq_len); ro.calib.seq_len = seq_len; }
  PC_CHECK(seed >= -1, "--calib-seed must be a seed >= 0 (or -1: the recipe's default), got ", seed);
  if (seed >= 0) ro.calib.seed = static_cast<uint64_t>(seed);
  if (!windowing.empty()) ro.calib.windowing = windowing;
  if (!text_field.empty()) ro.calib.text_field = text_field;
  ro.calib.texts = ParseCalibTexts(calib_texts);
  CheckCalibOption(ro.calib.source);
  ro.model_dir = model_dir;
  const int64_t memory_limit = max_memory.empty() ? 0 : ParseBytes(max_memory, "--max-memory");

  recipes::RecipeSpec recipe = pipeline::LoadRecipe(recipe_arg);
  // The estimate needs only config.json and the options: refuse before anything is loaded.
  const ModelConfig config = LoadModelConfig(model_dir);
  const pipeline::MemoryEstimate memory = pipeline::EstimateCompress(
      config,
      pipeline::CompressMemoryFor(config, recipe, samples, seq_len, pipeline::CalibSourceFor(recipe, ro.calib),
                                  ro.format, ro.micro_batch));
  log::Verbose("compress", memory.Describe(8));
  if (memory_limit > 0) {
    pipeline::CheckMemoryLimit(memory, memory_limit, "--max-memory",
                              "reduce --calib-samples or --calib-seq-len, or raise --max-memory");
  }
  if (dry_run) {
    LoadOptions lo;
    lo.load_blocks = false;
    auto model = Model::Load(model_dir, lo);
    recipes::ResolvedRecipe resolved = recipes::ResolvePlan(recipe, *model, MethodRegistry::Builtins());
    CalibSpec c = pipeline::MergeCalib(resolved, ro.calib, *model);
    std::printf("recipe %s (%s) on %s (%s, %d layers)\n", recipe.name.value.c_str(), recipe.name.loc.file.c_str(),
                model_dir.c_str(), model->config().model_type.c_str(), model->num_layers());
    std::printf("calibration: %s\n", ResolveCalib(c, model->config()).Describe().c_str());
    std::fputs(recipes::FormatPlan(resolved, *model).c_str(), stdout);
    std::printf("memory: %s\n", memory.Describe(8).c_str());
    return 0;
  }
  PC_CHECK(!ro.out_dir.empty(), "--out is required (or --dry-run)");
  PC_CHECK(!pipeline::CalibSourceFor(recipe, ro.calib).empty(),
           "--calib is required: a text file (plain or *.jsonl) or self:N (recipe '", recipe.name.value,
           "' names no calibration text of its own)");
  fs::CheckOutputPath(ro.out_dir, ro.overwrite, "--out", fs::OutputKind::kFolder);
  fs::CheckNotAnInput(ro.out_dir, "--out", {{"--model", model_dir}, {"--calib", ro.calib.source}, {"--recipe", recipe_arg}});
  if (!calib_dump.empty()) {
    fs::CheckOutputPath(calib_dump, ro.overwrite, "--calib-dump", fs::OutputKind::kFile);
    fs::CheckNotAnInput(calib_dump, "--calib-dump",
                        {{"--model", model_dir}, {"--calib", ro.calib.source}, {"--recipe", recipe_arg}, {"--out", ro.out_dir}});
  }
  if (const char* crash = std::getenv("PERPCOMP_TEST_CRASH")) ro.crash_at = crash;
  SetMmapThreshold(kMmapThresholdCompress);  // a flat peak over the blocks (core/heap.h)
  pipeline::CompressRunResult r = pipeline::RunCompress(recipe, ro);
  if (!calib_dump.empty()) {
    // (windows, tokens) int64, one line per window: what another tool needs to calibrate on the same ids.
    const at::Tensor ids = r.calib_tokens.contiguous();
    const int64_t* p = ids.data_ptr<int64_t>();
    std::string text;
    for (int64_t w = 0; w < ids.size(0); ++w) {
      for (int64_t t = 0; t < ids.size(1); ++t) {
        if (t > 0) text += ' ';
        text += std::to_string(p[w * ids.size(1) + t]);
      }
      text += '\n';
    }
    fs::WriteFileAtomic(calib_dump, text);
    std::printf("wrote %s: %lld calibration windows x %lld tokens\n", calib_dump.c_str(),
                static_cast<long long>(ids.size(0)), static_cast<long long>(ids.size(1)));
  }
  std::printf("wrote %s: %d linears compressed, %d skipped, %.1f s (log: %s)\n", ro.out_dir.c_str(), r.compressed,
              r.skipped, r.engine.seconds, fs::Join(ro.out_dir, "compress.h5").c_str());
  return 0;
}

}  // namespace pc::cli
