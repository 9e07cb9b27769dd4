#include "model/gguf_convert.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "model/arch.h"
#include "model/llama2c.h"
#include "model/tokenizer/tokenizer.h"

namespace pc {
namespace {

const ArchSpec& ArchFor(const GgufFile& f) {
  const std::string arch = f.String("general.architecture");
  const ArchSpec* a = ArchSpecForGguf(arch);
  PC_CHECK(a != nullptr, f.path(), ": general.architecture '", arch, "' is not supported (supported: ",
           GgufArchitectureNames(), ")");
  return *a;
}

// What llama.cpp's converter did to a module's tensors, undone in ConvertGguf (from the table's
// gguf_rows, conv1d and the linear's role).
enum class Undo {
  kNone,
  kRotaryRows,  // q/k rows interleaved per head ((x0, x1), (x2, x3)...): back to halves
  kTranspose,   // Conv1D weights written as (out, in); Hugging Face stores (in, out)
  kQkvPerHead,  // the fused qkv written as [q; k; v] blocks; Hugging Face interleaves per head
};

struct Target {
  std::string hf;  // module name, layer expanded
  int layer = -1;
  Undo undo = Undo::kNone;
  bool kv_rows = false;  // kRotaryRows on k: permuted with the key/value heads
};

// Every GGUF module name of `a` with `layers` blocks -> its Hugging Face module and the undo.
std::map<std::string, Target> TargetsOf(const ArchSpec& a, int64_t layers) {
  std::map<std::string, Target> out;
  for (const ModuleName& m : ModuleNames(a, layers)) out[m.gguf] = {m.hf, m.layer};
  for (int l = 0; l < layers; ++l) {
    for (const LinearSpec& s : a.linears) {
      Target& t = out.at(ExpandName(s.name.gguf, l));
      if (a.conv1d) t.undo = Undo::kTranspose;
      if (a.gguf_rows == GgufRows::kQkPermuted && (s.role == Role::kQ || s.role == Role::kK)) {
        t.undo = Undo::kRotaryRows;
        t.kv_rows = s.role == Role::kK;
      }
      if (a.gguf_rows == GgufRows::kQkvBlocks && s.role == Role::kQKV) t.undo = Undo::kQkvPerHead;
    }
  }
  return out;
}

// The metadata value as JSON: integers stay integers, float32 values widen to the double that
// transformers' float(value) gives, bools stay bools.
nlohmann::json JsonValue(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.Find(key);
  if (v->type == GgufType::kBool) return f.BoolOr(key, false);
  if (v->type == GgufType::kF32 || v->type == GgufType::kF64) return f.Float(key);
  return f.Int(key);
}

at::Tensor ReadTensor(const GgufFile& f, const GgufTensorInfo& t, bool f32) {
  const bool half = !f32 && (t.type == GgmlType::kF16 || t.type == GgmlType::kBF16);
  at::Tensor out = at::empty(t.Shape(), half ? (t.type == GgmlType::kF16 ? at::kHalf : at::kBFloat16) : at::kFloat);
  if (half) {
    f.ReadRaw(t, out.data_ptr());
  } else {
    f.ReadF32(t, out.data_ptr<float>());
  }
  return out;
}

// The config.json key a table's "a|b" keys are written under (the first).
std::string HfKey(const char* keys) { return Split(keys, '|')[0]; }

nlohmann::json ConfigFromGguf(const GgufFile& f, const ArchSpec& a, const GgufTokenizerFiles& tok,
                              const GgufTensorInfo& embed, bool tied) {
  const std::string arch = a.gguf_arch;
  nlohmann::json c;
  c["architectures"] = {a.hf_architecture};
  c["model_type"] = a.model_type;
  for (const GgufMetaKey& m : GgufMetaKeys(a)) {
    const char* hf = a.keys.*m.hf;
    if (*hf == 0) continue;  // the architecture has no such config key
    const std::string key = arch + "." + m.gguf;
    if (f.Find(key) == nullptr) {
      PC_CHECK(!m.required, f.path(), ": metadata '", key, "' is missing (needed for config.json '", HfKey(hf),
               "')");
      continue;
    }
    c[HfKey(hf)] = JsonValue(f, key);
  }
  // The vocabulary: <arch>.vocab_size, else the tokenizer's, and the embedding's rows in any case.
  const int64_t rows = embed.Shape()[0];
  const int64_t vocab = f.IntOr(arch + ".vocab_size", tok.vocab_size);
  PC_CHECK(vocab == rows && tok.vocab_size == rows, f.path(), ": token_embd.weight has ", rows,
           " rows, but the vocabulary is ", vocab, " (", arch, ".vocab_size) / ", tok.vocab_size,
           " (tokenizer.ggml.tokens)");
  c["vocab_size"] = vocab;
  c[HfKey(a.keys.tie)] = tied;
  // llama.cpp records no activation: the table's default is the architecture's.
  PC_ASSERT(*a.keys.act != 0, "architecture table ", a.model_type, " has no activation key");
  c[HfKey(a.keys.act)] = a.defaults.act;
  const std::string head_dim_key = *a.keys.head_dim ? HfKey(a.keys.head_dim) : "";
  const int64_t heads = f.Int(arch + ".attention.head_count");
  const int64_t hidden = f.Int(arch + ".embedding_length");
  const bool own_head_dim = !head_dim_key.empty() && c.contains(head_dim_key);
  PC_CHECK(heads > 0 && (hidden % heads == 0 || own_head_dim), f.path(), ": ", arch, ".embedding_length ", hidden,
           " is not a multiple of ", arch, ".attention.head_count ", heads);
  const int64_t head_dim = own_head_dim ? c[head_dim_key].get<int64_t>() : hidden / heads;
  if (const GgufValue* rope = f.Find(arch + ".rope.dimension_count")) {
    const int64_t dims = f.Int(arch + ".rope.dimension_count");
    if (*a.keys.rotary_pct) {  // the architecture rotates a fraction of head_dim
      PC_CHECK(dims > 0 && dims <= head_dim, f.path(), ": ", arch, ".rope.dimension_count ", dims,
               " must lie in [1, head_dim ", head_dim, "]");
      c[HfKey(a.keys.rotary_pct)] = static_cast<double>(dims) / static_cast<double>(head_dim);
    } else {
      PC_CHECK(dims == head_dim, f.path(), ": ", arch, ".rope.dimension_count ", dims, " differs from head_dim ",
               head_dim, " (partial rotary embeddings are not supported for ", arch, ")");
    }
    (void)rope;
  }
  PC_CHECK(f.Find(arch + ".rope.scaling.type") == nullptr || f.String(arch + ".rope.scaling.type") == "none",
           f.path(), ": ", arch, ".rope.scaling.type '", f.StringOr(arch + ".rope.scaling.type", ""),
           "' is not supported (only unscaled RoPE)");
  if (tok.bos_id >= 0) c["bos_token_id"] = tok.bos_id;
  if (tok.eos_id >= 0) c["eos_token_id"] = tok.eos_id;
  c["torch_dtype"] = "float32";
  c["perpcomp_converted_from"] = "gguf " + fs::Basename(f.path());
  return c;
}

}  // namespace

// The metadata ConfigFromGguf copies and the GGUF writer (model/gguf_export.cc) writes. Norm
// epsilon: llama.cpp writes RMSNorm and LayerNorm epsilons under different keys, chosen by the
// table's norm kind.
std::vector<GgufMetaKey> GgufMetaKeys(const ArchSpec& a) {
  const bool rms = a.norm == NormKind::kRmsNorm;
  return {
      {"context_length", &ConfigKeys::max_pos, true},
      {"embedding_length", &ConfigKeys::hidden, true},
      {"block_count", &ConfigKeys::layers, true},
      {"feed_forward_length", &ConfigKeys::intermediate, a.defaults.intermediate_per_hidden == 0},
      {"attention.head_count", &ConfigKeys::heads, true},
      {"attention.head_count_kv", &ConfigKeys::kv_heads, false},
      {"attention.key_length", &ConfigKeys::head_dim, false},
      {rms ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon", &ConfigKeys::norm_eps, true},
      {"rope.freq_base", &ConfigKeys::rope_theta, false},
      {"use_parallel_residual", &ConfigKeys::parallel_residual, false},
  };
}

std::string GgufArchitectureNames() {
  std::vector<std::string> names;  // registry order, each GGUF name once (Mistral reads as llama)
  for (const ArchSpec& a : AllArchSpecs()) {
    if (*a.gguf_arch && std::find(names.begin(), names.end(), a.gguf_arch) == names.end()) {
      names.push_back(a.gguf_arch);
    }
  }
  return Join(names, ", ");
}

GgufModel ConvertGguf(const std::string& path, const GgufConvertOptions& options) {
  PC_CHECK(fs::Exists(path), "--weights '", path, "' does not exist");
  auto f = GgufFile::Open(path);
  const ArchSpec& a = ArchFor(*f);
  GgufModel out;
  out.tokenizer = GgufTokenizerJson(*f);
  const GgufHeader& h = f->header();
  const GgufTensorInfo* embed = h.FindTensor("token_embd.weight");
  PC_CHECK(embed != nullptr, path, ": tensor 'token_embd.weight' is missing");
  const GgufTensorInfo* head = h.FindTensor("output.weight");
  // A head stored as a copy of the embedding (older GPT-2 conversions) is the tied head.
  const bool tied = head == nullptr || (head->type == embed->type && head->ne == embed->ne &&
                                        std::memcmp(f->TensorBytes(*head), f->TensorBytes(*embed), head->bytes) == 0);
  nlohmann::json config = ConfigFromGguf(*f, a, out.tokenizer, *embed, tied);
  ModelConfig mc = ParseModelConfig(config, path + " (config from its metadata)");

  const std::map<std::string, Target> targets = TargetsOf(a, mc.layers);
  std::map<std::string, at::Tensor> tensors;
  for (const auto& t : h.tensors) {
    if (tied && t.name == "output.weight") continue;
    const std::string what = Str(path, ": tensor '", t.name, "'");
    // "blk.3.attn_q.weight" -> module "blk.3.attn_q" and its Hugging Face module.
    std::string module = t.name, suffix;
    for (const char* s : {".weight", ".bias"}) {
      if (EndsWith(module, s)) {
        suffix = s;
        module.resize(module.size() - std::strlen(s));
        break;
      }
    }
    const auto it = suffix.empty() ? targets.end() : targets.find(module);
    PC_CHECK(it != targets.end(), what, " has no Hugging Face name in the ", a.gguf_arch, " table of a ", mc.layers,
             "-layer model (a tensor of another architecture, of a layer beyond ", a.gguf_arch,
             ".block_count, or of a feature perpcomp does not convert, e.g. rope_freqs of scaled RoPE)");
    const Target& target = it->second;
    const bool bias = suffix == ".bias";
    at::Tensor w = ReadTensor(*f, t, options.f32);
    switch (target.undo) {
      case Undo::kNone:
        break;
      case Undo::kRotaryRows:
        w = UnpermuteRotaryRows(w, target.kv_rows ? mc.kv_heads : mc.heads);
        break;
      case Undo::kTranspose:
        if (!bias) {
          PC_CHECK(w.dim() == 2, what, ": expected a matrix");
          w = w.t().contiguous();
        }
        break;
      case Undo::kQkvPerHead: {
        // (3 * hidden, ...) as [q; k; v] -> per head [q_h; k_h; v_h]
        PC_CHECK(w.size(0) == 3 * mc.hidden, what, ": ", w.size(0), " rows, expected 3 x ", mc.hidden);
        std::vector<int64_t> split = {3, mc.heads, mc.head_dim};
        for (int64_t d = 1; d < w.dim(); ++d) split.push_back(w.size(d));
        w = w.reshape(split).transpose(0, 1).reshape(w.sizes()).contiguous();
        break;
      }
    }
    const std::string hf_name = target.hf + suffix;
    PC_CHECK(tensors.emplace(hf_name, w).second, what, ": maps to '", hf_name, "' twice");
  }
  out.model = Model::FromTensors(std::move(mc), tensors);
  return out;
}

void ConvertGgufToFolder(const std::string& path, const std::string& out_dir, const GgufConvertOptions& options,
                         bool overwrite) {
  fs::CheckOutputPath(out_dir, overwrite, "--out", fs::OutputKind::kFolder);
  GgufModel g = ConvertGguf(path, options);
  SaveOptions so;
  so.overwrite = overwrite;
  g.model->Save(out_dir, so, [&](const std::string& dir) {
    fs::WriteFileAtomic(fs::Join(dir, "tokenizer.json"), g.tokenizer.tokenizer.dump(2) + "\n");
    fs::WriteFileAtomic(fs::Join(dir, "tokenizer_config.json"), g.tokenizer.tokenizer_config.dump(2) + "\n");
    auto tok = LoadTokenizer(dir);
    PC_CHECK(tok->vocab_size() == g.model->config().vocab_size, path, ": the converted tokenizer has ",
             tok->vocab_size(), " tokens, the model ", g.model->config().vocab_size);
  });
  log::Info("convert", "wrote ", out_dir, " (", g.model->config().model_type, " from GGUF, ",
            g.model->ParameterCount(), " parameters, vocabulary ", g.tokenizer.vocab_size, ")");
}

}  // namespace pc
