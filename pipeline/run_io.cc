#include "pipeline/run_io.h"

#include <optional>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "core/tensor_util.h"
#include "store/untrusted.h"

namespace pc::pipeline {

// ---- Models -------------------------------------------------------------------------------

std::unique_ptr<Model> LoadModel(const ModelOptions& opts) {
  LoadOptions lo;
  lo.dtype = ParseDType(opts.dtype);
  PC_CHECK(lo.dtype != at::kHalf, "--dtype f16 is not supported for computing on this CPU (use f32 or bf16)");
  lo.load_blocks = opts.load_blocks;
  lo.load_head = opts.load_head;
  return Model::Load(opts.model, lo);
}

std::unique_ptr<Tokenizer> LoadModelTokenizer(const std::string& model_dir) {
  PC_CHECK(fs::IsDirectory(model_dir), "model folder '", model_dir, "' does not exist");
  return LoadTokenizer(model_dir);  // tokenizer.json, tokenizer.model or vocab.json + merges.txt
}

void CheckSameTokenizer(const std::string& model_dir, const std::string& model_name, const std::string& reference_dir,
                        const std::string& sample_text_path) {
  auto a = LoadModelTokenizer(model_dir);
  auto b = LoadModelTokenizer(reference_dir);
  const std::string differ = Str("the ", model_name, " '", model_dir, "' and the reference '", reference_dir,
                                 "' have different tokenizers");
  const std::string consequence = "; KL, delta NLL and top-1 agreement would compare different tokens";
  PC_CHECK(a->vocab_size() == b->vocab_size(), differ, " (vocabulary ", a->vocab_size(), " vs ", b->vocab_size(), ")",
           consequence);
  PC_CHECK(a->bos_id() == b->bos_id() && a->eos_id() == b->eos_id(), differ, " (BOS/EOS ids ", a->bos_id(), "/",
           a->eos_id(), " vs ", b->bos_id(), "/", b->eos_id(), ")", consequence);
  std::string sample;
  if (!sample_text_path.empty() && fs::Exists(sample_text_path)) {
    sample = fs::ReadFile(sample_text_path).substr(0, 64 * 1024);
    size_t cut = sample.rfind('\n');
    sample = cut == std::string::npos ? std::string() : sample.substr(0, cut);
  }
  sample += "\nThe quick brown fox jumps over the lazy dog. 0123456789 \u00e9t\u00e9 \u00fcber";
  PC_CHECK(a->Encode(sample) == b->Encode(sample), differ, " (they encode the start of '", sample_text_path,
           "' differently)", consequence);
}

RunDTypes ResolveDTypes(const std::string& dtype) {
  RunDTypes d;
  d.weights = ParseDType(dtype);
  d.compute = ComputeDType(d.weights);
  d.weight_bytes = static_cast<int>(c10::elementSize(d.weights));
  d.compute_bytes = static_cast<int>(c10::elementSize(d.compute));
  d.compute_name = DTypeName(d.compute);
  return d;
}

// ---- Text windows -------------------------------------------------------------------------

TextWindows LoadTextWindows(const std::string& text_path, const std::string& text_field, int64_t seq_len,
                            int64_t max_windows, const ModelConfig& config, const std::string& tokenizer_dir) {
  PC_CHECK(seq_len >= 0, "--seq-len must not be negative");
  PC_CHECK(max_windows >= 0, "--max-windows must not be negative");
  TextWindows tw{ReadTextSource(text_path, text_field, "--text"), {}};
  auto tok = LoadModelTokenizer(tokenizer_dir);
  const int64_t max_pos = config.max_pos;
  if (seq_len == 0) {
    seq_len = EvalSeqLen(0, max_pos);
    log::Info("eval", "--seq-len ", seq_len, " (the default: ", kDefaultEvalSeqLen, " tokens capped at the context of ",
              max_pos, ")");
  }
  PC_CHECK(config.arch->pos != PosKind::kLearned || seq_len <= max_pos, "--seq-len ", seq_len, " exceeds the model's ",
           max_pos, " learned positions");
  if (seq_len > max_pos) log::Warn("eval", "--seq-len ", seq_len, " is longer than the model's context of ", max_pos);
  tw.windows = MakeWindows(TokenizeStream(*tok, tw.text.text), seq_len, max_windows, text_path);
  return tw;
}

// ---- Run files ----------------------------------------------------------------------------

namespace {
// The existing file must be a perpcomp file of this kind and schema; the store's message is
// given the context of what we were about to do.
store::File OpenExisting(const RunOutputOptions& o, const char* doing) {
  try {
    return store::OpenUntrusted(o.path, o.kind);  // read in a child first (store/untrusted.h)
  } catch (const Error& e) {
    PC_THROW("--out: refusing to ", doing, " '", o.path, "': ", e.what(), "; remove it or choose another --out");
  }
}
}  // namespace

void CheckRunOutput(const RunOutputOptions& o) {
  PC_CHECK(!o.run.empty() && o.run.find('/') == std::string::npos && o.run != "." && o.run != "..",
           "--run '", o.run, "' is not a valid run name (no '/', not empty)");
  if (!fs::Exists(o.path)) {
    fs::CheckOutputPath(o.path, o.overwrite, "--out", fs::OutputKind::kFile);
    return;
  }
  if (o.append) {
    store::File f = OpenExisting(o, "append to");
    store::Group root = f.root();
    bool exists = root.Has("runs") && root.OpenGroup("runs").Has(o.run);
    PC_CHECK(!exists || o.overwrite, "--out '", o.path, "' already holds run '", o.run,
             "'; pass --overwrite to replace that run, or choose another --run");
    return;
  }
  PC_CHECK(o.overwrite, "--out '", o.path,
           "' already exists; pass --overwrite to replace it or --append to add this run");
  OpenExisting(o, "overwrite");
  fs::CheckOutputPath(o.path, true, "--out", fs::OutputKind::kFile);
}

RunOutput StartRunOutput(const RunOutputOptions& o) {
  const bool append = o.append && fs::Exists(o.path);
  std::optional<store::File> old;
  if (append) old = OpenExisting(o, "append to");
  store::StagedWriter writer = store::File::CreateStaged(o.path, o.kind, append || o.overwrite, "--out");
  store::Group runs = writer.root().CreateGroup("runs");
  if (old && old->root().Has("runs")) {
    store::Group old_runs = old->root().OpenGroup("runs");
    for (const auto& name : old_runs.ListGroups()) {
      if (name != o.run) store::CopyGroup(old_runs, name, runs, name);
    }
  }
  store::Group run = runs.CreateGroup(o.run);
  return RunOutput{std::move(writer), run};
}

std::string DefaultRunName(const std::string& model_dir) {
  std::string b = fs::Basename(model_dir);
  return b.empty() || b == "." || b == ".." ? std::string("run") : b;
}

std::string CompressionRecord(const Model& model) {
  const auto& raw = model.config().raw;
  auto it = raw.find("perpcomp_compression");
  return it == raw.end() || it->is_null() ? std::string() : it->dump();
}

}  // namespace pc::pipeline
