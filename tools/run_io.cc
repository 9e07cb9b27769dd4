#include "tools/run_io.h"

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "store/untrusted.h"
#include "tools/model_options.h"

namespace pc::cli {

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
  PC_CHECK(o.overwrite, "--out '", o.path, "' already exists; pass --overwrite to replace it or --append to add this run");
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

void AddCacheOptions(po::options_description& desc, CacheFlags& c) {
  desc.add_options()
    ("cache", po::value<std::string>(&c.dir), "reference cache folder (default $XDG_CACHE_HOME/perpcomp or ~/.cache/perpcomp)")
    ("no-cache", po::bool_switch(&c.none), "run the reference every time; write no cache")
    ("cache-limit", po::value<std::string>(&c.limit)->default_value("64G"), "largest reference cache part to write");
}

CacheOptions ToCacheOptions(const CacheFlags& c) {
  PC_CHECK(!(c.none && !c.dir.empty()), "--cache and --no-cache exclude each other");
  CacheOptions o;
  if (!c.none) o.dir = c.dir.empty() ? DefaultCacheDir() : c.dir;
  o.limit_bytes = ParseBytes(c.limit, "--cache-limit");
  return o;
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

}  // namespace pc::cli
