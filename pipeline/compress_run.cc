#include "pipeline/compress_run.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <map>
#include <set>

#include "compress/export.h"
#include "model/gguf_export.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "model/tokenizer/tokenizer.h"
#include "store/file.h"

namespace pc::pipeline {

using recipes::ParseRecipeFile;
using recipes::RecipeSpec;
using recipes::RecipeToYaml;
using recipes::ResolvePlan;
using recipes::ResolveRecipePath;
using recipes::ResolvedRecipe;
std::string ShippedRecipesDir() {
  const char* env = std::getenv("PERPCOMP_RECIPES");
  if (env != nullptr && *env) return env;
  return PC_RECIPES_DIR;
}

std::string SourceRootDir() { return fs::Parent(PC_RECIPES_DIR); }

RecipeSpec LoadRecipe(const std::string& name_or_path) {
  return ParseRecipeFile(ResolveRecipePath(name_or_path, ShippedRecipesDir()));
}

std::string CalibSourceFor(const std::optional<recipes::Located<std::string>>& text, const CalibOverrides& over) {
  if (!text) return over.source;
  if (StartsWith(text->value, "self:")) return text->value;
  auto it = over.texts.find(text->value);
  if (it != over.texts.end()) return it->second;
  std::vector<std::string> bound;
  for (const auto& [name, file] : over.texts) bound.push_back(name);
  PC_THROW(text->loc.Str(), ": calibration text '", text->value, "' is not given: pass --calib-text ", text->value,
           "=FILE (", bound.empty() ? std::string("no --calib-text was given") : "given: " + Join(bound, ", "), ")");
}

CalibSpec MergeCalib(const ResolvedRecipe& resolved, const CalibOverrides& over, const Model& model) {
  CalibSpec c = resolved.calib;
  c.source = CalibSourceFor(resolved.calib_text, over);
  if (over.samples) c.samples = *over.samples;
  if (over.seq_len) c.seq_len = *over.seq_len;
  if (over.seed) c.seed = *over.seed;
  if (over.windowing) c.windowing = ParseWindowing(*over.windowing, "--calib-windowing");
  if (over.text_field) c.text_field = *over.text_field;
  if (c.seq_len == 0) c.seq_len = std::min<int64_t>(512, model.config().max_pos);
  return c;
}

void WriteRecords(const store::Group& group, const std::string& name, const std::vector<Record>& records) {
  std::set<std::string> value_keys, text_keys, array_keys;
  for (const auto& r : records) {
    for (const auto& [k, v] : r.values) value_keys.insert(k);
    for (const auto& [k, v] : r.text) text_keys.insert(k);
    for (const auto& [k, v] : r.arrays) array_keys.insert(k);
  }
  store::Table t;
  std::vector<std::string> names;
  for (const auto& r : records) names.push_back(r.name);
  t.AddColumn("name", names);
  for (const auto& k : text_keys) {
    std::vector<std::string> col;
    for (const auto& r : records) {
      auto it = r.text.find(k);
      col.push_back(it == r.text.end() ? "" : it->second);
    }
    t.AddColumn(k, col);
  }
  for (const auto& k : value_keys) {
    std::vector<double> col;
    for (const auto& r : records) {
      auto it = r.values.find(k);
      col.push_back(it == r.values.end() ? NAN : it->second);
    }
    t.AddColumn(k, col);
  }
  store::Group g = group.WriteTable(name, t);
  for (const auto& k : array_keys) {
    size_t width = 0;
    for (const auto& r : records) {
      auto it = r.arrays.find(k);
      if (it != r.arrays.end()) width = std::max(width, it->second.size());
    }
    std::vector<double> data(records.size() * width, NAN);
    for (size_t i = 0; i < records.size(); ++i) {
      auto it = records[i].arrays.find(k);
      if (it == records[i].arrays.end()) continue;
      std::copy(it->second.begin(), it->second.end(), data.begin() + i * width);
    }
    g.WriteArray("array_" + k, data, store::Shape{static_cast<int64_t>(records.size()), static_cast<int64_t>(width)});
  }
}

namespace {
// The Hugging Face folder carries no AWQ activation scales: for every block whose act_scales a
// method set, s is folded into the input columns of the linears that read act(x)/s (the members
// of the architecture's activation scale group: down / fc2 / c_proj), which is the same function,
// and the tensor is dropped, so that transformers and lm-eval load the folder as the model it is
// (they do not know `…mlp.act.scales`). Records s in `folded` (the awq-gemm exporter puts it
// back) and those linears' names in `consumers` (the saved weights are in the original input
// coordinates again). The block's tensors are changed in place; it is unloaded after writing.
void FoldActivationScales(Model& model, int layer, FoldedScales& folded, std::set<std::string>& consumers) {
  Block& b = model.block(layer);
  if (!b.act_scales.defined()) return;
  const at::Tensor s = b.act_scales.to(at::kFloat);  // (intermediate,)
  for (const ScaleGroupSpec& g : model.arch().awq_groups) {
    if (g.prev != PrevKind::kActivation) continue;
    for (Role r : g.members) {
      Linear* lin = b.Find(r);
      if (lin == nullptr) continue;
      PC_ASSERT(lin->in_features() == s.numel(), "activation scales of ", b.act_scales_name, " do not fit ", lin->name);
      lin->weight = (lin->weight.to(at::kFloat) / s.unsqueeze(0)).to(lin->weight.scalar_type());
      consumers.insert(lin->name);
    }
  }
  folded.activation[b.act_scales_name] = s.clone();
  b.act_scales = at::Tensor();
}

// A float16 checkpoint cannot hold what a method wrote beyond its range (AWQ's folded scales
// multiply weights by s and divide norms by s): refuse, naming the tensor and its largest value.
void CheckFitsDiskDType(const std::string& name, const at::Tensor& t, StDType dtype) {
  if (dtype != StDType::kF16 && dtype != StDType::kBF16) return;
  const double limit = dtype == StDType::kF16 ? 65504.0 : 3.3895313892515355e38;
  const double max_abs = t.abs().max().item<double>();
  PC_CHECK(max_abs <= limit, "compress: '", name, "' holds ", FormatDouble(max_abs), ", beyond the ",
           StDTypeName(dtype), " range of the checkpoint (", FormatDouble(limit),
           "); AWQ's folded scales overflow it: use a float32 checkpoint, or a smaller alpha / duo_scaling");
}

// CompressRunOptions::crash_at: the process dies here as a crash would (nothing flushed or removed).
void CrashPoint(const CompressRunOptions& o, const std::string& point) {
  if (o.crash_at.empty() || o.crash_at != point) return;
  std::fflush(nullptr);
  std::raise(SIGKILL);
}
}  // namespace

CompressRunResult RunCompress(const RecipeSpec& recipe, const CompressRunOptions& options) {
  PC_CHECK(options.format == "hf" || options.format == "awq-gemm" || options.format == "gguf", "--format '",
           options.format, "' is not supported (supported: hf, awq-gemm, gguf)");
  const GgmlType gguf_other = ParseGgufOuttype(options.gguf_outtype, "--gguf-outtype");
  LoadOptions lo;
  lo.load_blocks = false;  // blocks stream from the mmap'd checkpoint
  lo.load_head = false;    // and the head is copied across last
  auto model = Model::Load(options.model_dir, lo);
  ResolvedRecipe resolved = ResolvePlan(recipe, *model, MethodRegistry::Builtins());
  if (options.format == "awq-gemm") CheckAwqGemm(*model, resolved.plan);  // refuse before compressing
  if (options.format == "gguf") CheckGguf(*model, resolved.plan);
  CalibSpec calib = MergeCalib(resolved, options.calib, *model);
  fs::StagedDir staged(options.out_dir, options.overwrite, "--out");
  auto tok = LoadTokenizer(options.model_dir);
  CalibSet set;
  {
    // Self-sampling needs the whole model; text calibration needs only the tokenizer.
    int64_t n = 0;
    if (ParseSelfSpec(calib.source, "--calib", &n)) {
      LoadOptions full;
      auto sampler = Model::Load(options.model_dir, full);
      set = BuildCalibSet(calib, *tok, *sampler);
    } else {
      set = BuildCalibSet(calib, *tok, *model);
    }
  }
  CrashPoint(options, "calibration");
  log::Info("compress", recipe.name.value, ": ", resolved.plan.Compressed(), " linears with ",
            resolved.plan.methods.size(), " method instance(s); calibration ", set.windows(), " x ", set.seq_len(),
            " tokens (", set.record["windowing"].get<std::string>(), ")");

  // Stream the weights: top-level tensors now, each block when the engine is done with it.
  SaveOptions so;
  const bool fold_act = resolved.plan.AddsActivationScales() && *model->arch().act_scales != '\0';
  std::vector<SafetensorsWriter::Entry> entries = model->TensorEntries(so);
  if (fold_act) {  // no activation-scales tensor in the folder (FoldActivationScales)
    std::set<std::string> act;
    for (int l = 0; l < model->num_layers(); ++l) act.insert(ExpandName(model->arch().act_scales, l));
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [&](const SafetensorsWriter::Entry& e) { return act.count(e.name) > 0; }),
                  entries.end());
  }
  SafetensorsWriter writer(staged.path(), entries, so.max_shard_bytes);
  model->ForEachTopTensor([&](const std::string& n, const at::Tensor& t, StDType) { writer.Write(n, t); });
  // Compression needs the embedding only for the calibration inputs (the engine frees it then)
  // and the head only when the plan compresses it (after the last block); the head is written
  // once the engine is done (docs/PERFORMANCE.md, "Compression memory").
  EngineOptions eo;
  eo.release_embeddings = true;
  eo.micro_batch = options.micro_batch;
  FoldedScales act_folded;              // activation scales folded at writing
  std::set<std::string> act_consumers;  // the linears they were folded into
  eo.on_block_done = [&](int layer) {
    if (fold_act) FoldActivationScales(*model, layer, act_folded, act_consumers);
    model->ForEachBlockTensor(layer, [&](const std::string& n, const at::Tensor& t, StDType dt) {
      CheckFitsDiskDType(n, t, dt);
      writer.Write(n, t);
    });
    CrashPoint(options, Str("block-", layer));
  };
  CompressRunResult out;
  out.engine = RunCompression(*model, resolved.plan, set.tokens, eo);
  if (out.engine.calib_windows < set.windows()) {
    log::Info("compress", "no method reads calibration statistics: the blocks ran on the first ",
              out.engine.calib_windows, " of ", set.windows(), " windows, which the logged errors use");
  }
  out.calib_tokens = set.tokens;
  if (!model->config().tie_embeddings) {  // the engine loaded (and compressed) it when the plan says so
    if (!model->lm_head().weight.defined()) model->LoadHead();
    const std::string name = WeightOf(model->arch().lm_head.hf);
    for (const SafetensorsWriter::Entry& e : entries) {
      if (e.name == name) CheckFitsDiskDType(name, model->lm_head().weight, e.dtype);
    }
    writer.Write(name, model->lm_head().weight);
    model->lm_head().weight = at::Tensor();
  }
  writer.Finish();
  FoldedScales folded = out.engine.folded;
  for (const auto& [n, s] : act_folded.activation) folded.activation[n] = s;
  for (const std::string& n : act_consumers) folded.input.erase(n);  // in original coordinates again
  WriteFoldedScales(staged.path(), folded);
  for (const auto& e : resolved.plan.entries) (e.method >= 0 ? out.compressed : out.skipped)++;

  out.record = {{"recipe", recipe.name.value},
                {"recipe_yaml", RecipeToYaml(recipe)},
                {"method", resolved.method},
                {"family", resolved.family},
                {"source_model", options.model_dir},
                {"calibration", set.record},
                {"calibration_windows_run", out.engine.calib_windows},
                {"propagate", resolved.plan.propagate_compressed ? "compressed" : "original"},
                {"compressed_linears", out.compressed},
                {"skipped_linears", out.skipped},
                {"head", resolved.plan.head.method >= 0 ? resolved.plan.methods[resolved.plan.head.method]->Describe()
                                                        : "skip: " + resolved.plan.head.skip_reason},
                {"seconds", out.engine.seconds},
                {"perpcomp", store::CreatedBy()}};
  nlohmann::json config = model->ConfigJson(so);
  config["perpcomp_compression"] = out.record;
  fs::WriteFileAtomic(fs::Join(staged.path(), "config.json"), config.dump(2) + "\n");
  for (const char* f : {"tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json",
                        "vocab.json", "merges.txt", "added_tokens.json", "generation_config.json"}) {
    std::string src = fs::Join(options.model_dir, f);
    if (fs::Exists(src)) fs::WriteFileAtomic(fs::Join(staged.path(), f), fs::ReadFile(src));
  }
  {
    store::File h5 = store::File::Create(fs::Join(staged.path(), "compress.h5"), store::kind::kCompressLog);
    store::Group root = h5.root();
    root.SetAttr("recipe", recipe.name.value);
    root.SetAttr("recipe_yaml", RecipeToYaml(recipe));
    root.SetAttr("method", resolved.method);
    root.SetAttr("family", resolved.family);
    root.SetAttr("source_model", options.model_dir);
    root.SetAttr("calibration_json", set.record.dump());
    root.SetAttr("calibration_windows_run", out.engine.calib_windows);
    root.SetAttr("propagate", resolved.plan.propagate_compressed ? "compressed" : "original");
    root.SetAttr("seconds", out.engine.seconds);
    std::map<std::string, std::vector<Record>> by_kind;
    for (const auto& r : out.engine.records) by_kind[r.kind].push_back(r);
    if (options.crash_at == "write-log") h5.Flush();  // the half-written file on disk, as a crash would leave it
    CrashPoint(options, "write-log");
    for (const auto& [kind, records] : by_kind) WriteRecords(root, kind == "linear" ? "linears" : kind, records);
    h5.Close();
  }
  if (options.format == "awq-gemm") {
    // The exporter reads the compressed folder back (fake-quantized weights) and writes a second folder.
    auto compressed = Model::Load(staged.path());
    ExportAwqGemm(*compressed, resolved.plan, fs::Join(staged.path(), "awq-gemm"));
  }
  if (options.format == "gguf") {  // OUT/model.gguf from the fake-quantized folder read back
    auto compressed = Model::Load(staged.path());
    ExportGguf(*compressed, resolved.plan, fs::Join(staged.path(), "model.gguf"), gguf_other);
  }
  CrashPoint(options, "commit");
  staged.Commit();
  return out;
}

}  // namespace pc::pipeline
