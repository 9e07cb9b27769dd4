#include "model/gguf_convert.h"

#include <cstring>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "model/llama2c.h"
#include "model/tokenizer/tokenizer.h"

namespace pc {
namespace {

// How llama.cpp's converter (convert_hf_to_gguf.py) changed a tensor's layout, undone here.
enum class Undo {
  kNone,
  kRotaryRows,   // llama: q/k rows interleaved per head ((x0, x1), (x2, x3)...): back to halves
  kTranspose,    // gpt2: Conv1D weights written as (out, in); Hugging Face stores (in, out)
  kQkvPerHead,   // gptneox: the fused qkv written as [q; k; v] blocks; Hugging Face interleaves per head
};

struct TensorRow {
  const char* gguf;  // without ".weight"/".bias"; {L} for the layer
  const char* hf;
  Undo undo = Undo::kNone;
};

struct ConfigRow {
  const char* gguf;  // after "<arch>."
  const char* hf;
  bool required;
};

// One GGUF architecture: the names of its tensors and config keys, and what llama.cpp did to them.
// Keys a table cannot express are derived in ConfigFromGguf (vocabulary, tied head, head_dim,
// rotary fraction). This is the table the architecture tables (model/arch.cc) can absorb.
struct GgufArch {
  const char* gguf_arch;    // general.architecture
  const char* model_type;   // config.json
  const char* hf_class;     // config.json "architectures"
  const char* hidden_act;
  std::vector<TensorRow> tensors;
  std::vector<ConfigRow> config;
};

std::vector<TensorRow> LlamaTensors(bool permuted, bool qk_norm) {
  const Undo qk = permuted ? Undo::kRotaryRows : Undo::kNone;
  std::vector<TensorRow> t = {
      {"token_embd", "model.embed_tokens"},
      {"output_norm", "model.norm"},
      {"output", "lm_head"},
      {"blk.{L}.attn_norm", "model.layers.{L}.input_layernorm"},
      {"blk.{L}.ffn_norm", "model.layers.{L}.post_attention_layernorm"},
      {"blk.{L}.attn_q", "model.layers.{L}.self_attn.q_proj", qk},
      {"blk.{L}.attn_k", "model.layers.{L}.self_attn.k_proj", qk},
      {"blk.{L}.attn_v", "model.layers.{L}.self_attn.v_proj"},
      {"blk.{L}.attn_output", "model.layers.{L}.self_attn.o_proj"},
      {"blk.{L}.ffn_gate", "model.layers.{L}.mlp.gate_proj"},
      {"blk.{L}.ffn_up", "model.layers.{L}.mlp.up_proj"},
      {"blk.{L}.ffn_down", "model.layers.{L}.mlp.down_proj"},
  };
  if (qk_norm) {
    t.push_back({"blk.{L}.attn_q_norm", "model.layers.{L}.self_attn.q_norm"});
    t.push_back({"blk.{L}.attn_k_norm", "model.layers.{L}.self_attn.k_norm"});
  }
  return t;
}

std::vector<ConfigRow> LlamaConfig(bool key_length) {
  std::vector<ConfigRow> c = {
      {"context_length", "max_position_embeddings", true},
      {"embedding_length", "hidden_size", true},
      {"block_count", "num_hidden_layers", true},
      {"feed_forward_length", "intermediate_size", true},
      {"attention.head_count", "num_attention_heads", true},
      {"attention.head_count_kv", "num_key_value_heads", false},
      {"attention.layer_norm_rms_epsilon", "rms_norm_eps", true},
      {"rope.freq_base", "rope_theta", false},
  };
  if (key_length) c.push_back({"attention.key_length", "head_dim", false});
  return c;
}

const std::vector<GgufArch>& Archs() {
  static const std::vector<GgufArch> kArchs = {
      {"llama", "llama", "LlamaForCausalLM", "silu", LlamaTensors(true, false), LlamaConfig(false)},
      {"qwen2", "qwen2", "Qwen2ForCausalLM", "silu", LlamaTensors(false, false), LlamaConfig(false)},
      {"qwen3", "qwen3", "Qwen3ForCausalLM", "silu", LlamaTensors(false, true), LlamaConfig(true)},
      {"gpt2", "gpt2", "GPT2LMHeadModel", "gelu_new",
       {
           {"token_embd", "transformer.wte"},
           {"position_embd", "transformer.wpe"},
           {"output_norm", "transformer.ln_f"},
           {"output", "lm_head"},
           {"blk.{L}.attn_norm", "transformer.h.{L}.ln_1"},
           {"blk.{L}.attn_qkv", "transformer.h.{L}.attn.c_attn", Undo::kTranspose},
           {"blk.{L}.attn_output", "transformer.h.{L}.attn.c_proj", Undo::kTranspose},
           {"blk.{L}.ffn_norm", "transformer.h.{L}.ln_2"},
           {"blk.{L}.ffn_up", "transformer.h.{L}.mlp.c_fc", Undo::kTranspose},
           {"blk.{L}.ffn_down", "transformer.h.{L}.mlp.c_proj", Undo::kTranspose},
       },
       {
           {"context_length", "n_positions", true},
           {"embedding_length", "n_embd", true},
           {"block_count", "n_layer", true},
           {"feed_forward_length", "n_inner", false},
           {"attention.head_count", "n_head", true},
           {"attention.layer_norm_epsilon", "layer_norm_epsilon", true},
       }},
      {"gptneox", "gpt_neox", "GPTNeoXForCausalLM", "gelu",
       {
           {"token_embd", "gpt_neox.embed_in"},
           {"output_norm", "gpt_neox.final_layer_norm"},
           {"output", "embed_out"},
           {"blk.{L}.attn_norm", "gpt_neox.layers.{L}.input_layernorm"},
           {"blk.{L}.ffn_norm", "gpt_neox.layers.{L}.post_attention_layernorm"},
           {"blk.{L}.attn_qkv", "gpt_neox.layers.{L}.attention.query_key_value", Undo::kQkvPerHead},
           {"blk.{L}.attn_output", "gpt_neox.layers.{L}.attention.dense"},
           {"blk.{L}.ffn_up", "gpt_neox.layers.{L}.mlp.dense_h_to_4h"},
           {"blk.{L}.ffn_down", "gpt_neox.layers.{L}.mlp.dense_4h_to_h"},
       },
       {
           {"context_length", "max_position_embeddings", true},
           {"embedding_length", "hidden_size", true},
           {"block_count", "num_hidden_layers", true},
           {"feed_forward_length", "intermediate_size", true},
           {"attention.head_count", "num_attention_heads", true},
           {"attention.layer_norm_epsilon", "layer_norm_eps", true},
           {"rope.freq_base", "rotary_emb_base", false},
           {"use_parallel_residual", "use_parallel_residual", false},
       }},
  };
  return kArchs;
}

const GgufArch& ArchFor(const GgufFile& f) {
  const std::string arch = f.String("general.architecture");
  for (const auto& a : Archs()) {
    if (arch == a.gguf_arch) return a;
  }
  PC_THROW(f.path(), ": general.architecture '", arch, "' is not supported (supported: ", GgufArchitectureNames(),
           ")");
}

// The metadata value as JSON: integers stay integers, float32 values widen to the double that
// transformers' float(value) gives, bools stay bools.
nlohmann::json JsonValue(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.Find(key);
  if (v->type == GgufType::kBool) return f.BoolOr(key, false);
  if (v->type == GgufType::kF32 || v->type == GgufType::kF64) return f.Float(key);
  return f.Int(key);
}

// "blk.{L}.attn_q" matched against "blk.12.attn_q": the layer, or -1 when the name does not match.
int MatchLayer(const std::string& pattern, const std::string& name) {
  const size_t at = pattern.find("{L}");
  if (at == std::string::npos) return pattern == name ? 0 : -1;
  const std::string head = pattern.substr(0, at), tail = pattern.substr(at + 3);
  if (name.size() <= head.size() + tail.size() || !StartsWith(name, head) || !EndsWith(name, tail)) return -1;
  const std::string digits = name.substr(head.size(), name.size() - head.size() - tail.size());
  if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  if (digits.size() > 1 && digits[0] == '0') return -1;
  return std::stoi(digits);
}

struct Mapped {
  const TensorRow* row = nullptr;
  int layer = 0;
  std::string hf_name;  // with .weight / .bias
  bool bias = false;
};

Mapped MapTensor(const GgufArch& a, const GgufTensorInfo& t, const std::string& where) {
  std::string base = t.name, suffix;
  for (const char* s : {".weight", ".bias"}) {
    if (EndsWith(base, s)) {
      suffix = s;
      base = base.substr(0, base.size() - std::strlen(s));
      break;
    }
  }
  if (!suffix.empty()) {
    for (const auto& r : a.tensors) {
      const int layer = MatchLayer(r.gguf, base);
      if (layer < 0) continue;
      return {&r, layer, ExpandName(r.hf, layer) + suffix, suffix == ".bias"};
    }
  }
  PC_THROW(where, ": tensor '", t.name, "' has no Hugging Face name in the ", a.gguf_arch,
           " table (a tensor of another architecture or of a feature perpcomp does not convert, e.g. "
           "rope_freqs of scaled RoPE)");
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

nlohmann::json ConfigFromGguf(const GgufFile& f, const GgufArch& a, const GgufTokenizerFiles& tok,
                              const GgufTensorInfo& embed, bool tied) {
  const std::string arch = a.gguf_arch;
  nlohmann::json c;
  c["architectures"] = {a.hf_class};
  c["model_type"] = a.model_type;
  for (const auto& r : a.config) {
    const std::string key = arch + "." + r.gguf;
    if (f.Find(key) == nullptr) {
      PC_CHECK(!r.required, f.path(), ": metadata '", key, "' is missing (needed for config.json '", r.hf, "')");
      continue;
    }
    c[r.hf] = JsonValue(f, key);
  }
  // The vocabulary: <arch>.vocab_size, else the tokenizer's, and the embedding's rows in any case.
  const int64_t rows = embed.Shape()[0];
  const int64_t vocab = f.IntOr(arch + ".vocab_size", tok.vocab_size);
  PC_CHECK(vocab == rows && tok.vocab_size == rows, f.path(), ": token_embd.weight has ", rows,
           " rows, but the vocabulary is ", vocab, " (", arch, ".vocab_size) / ", tok.vocab_size,
           " (tokenizer.ggml.tokens)");
  c["vocab_size"] = vocab;
  c["tie_word_embeddings"] = tied;
  c["hidden_act"] = a.hidden_act;
  if (std::string(a.model_type) == "gpt2") c["activation_function"] = a.hidden_act;
  const int64_t heads = f.Int(arch + ".attention.head_count");
  const int64_t hidden = f.Int(arch + ".embedding_length");
  PC_CHECK(heads > 0 && (hidden % heads == 0 || c.contains("head_dim")), f.path(), ": ", arch,
           ".embedding_length ", hidden, " is not a multiple of ", arch, ".attention.head_count ", heads);
  const int64_t head_dim = c.contains("head_dim") ? c["head_dim"].get<int64_t>() : hidden / heads;
  if (const GgufValue* rope = f.Find(arch + ".rope.dimension_count")) {
    const int64_t dims = f.Int(arch + ".rope.dimension_count");
    if (arch == "gptneox") {
      PC_CHECK(dims > 0 && dims <= head_dim, f.path(), ": ", arch, ".rope.dimension_count ", dims,
               " must lie in [1, head_dim ", head_dim, "]");
      c["rotary_pct"] = static_cast<double>(dims) / static_cast<double>(head_dim);
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

std::string GgufArchitectureNames() {
  std::vector<std::string> names;
  for (const auto& a : Archs()) names.push_back(a.gguf_arch);
  return Join(names, ", ");
}

GgufModel ConvertGguf(const std::string& path, const GgufConvertOptions& options) {
  PC_CHECK(fs::Exists(path), "--weights '", path, "' does not exist");
  auto f = GgufFile::Open(path);
  const GgufArch& a = ArchFor(*f);
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

  std::map<std::string, at::Tensor> tensors;
  for (const auto& t : h.tensors) {
    if (tied && t.name == "output.weight") continue;
    Mapped m = MapTensor(a, t, path);
    PC_CHECK(m.layer < mc.layers, path, ": tensor '", t.name, "' belongs to layer ", m.layer, ", but the model has ",
             mc.layers, " layers");
    at::Tensor w = ReadTensor(*f, t, options.f32);
    const std::string what = Str(path, ": tensor '", t.name, "'");
    switch (m.row->undo) {
      case Undo::kNone:
        break;
      case Undo::kRotaryRows: {
        const bool is_k = EndsWith(m.row->gguf, "attn_k");
        w = UnpermuteRotaryRows(w, is_k ? mc.kv_heads : mc.heads);
        break;
      }
      case Undo::kTranspose:
        if (!m.bias) {
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
    PC_CHECK(tensors.emplace(m.hf_name, w).second, what, ": maps to '", m.hf_name, "' twice");
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
