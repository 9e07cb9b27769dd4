#include "model/gguf_export.h"

#include <cstring>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "model/arch.h"
#include "model/config.h"
#include "model/gguf_convert.h"
#include "model/gguf_tokenizer.h"
#include "model/gguf_writer.h"
#include "model/llama2c.h"

namespace pc {
namespace {

// llama.cpp's general.file_type (its LLAMA_FTYPE numbers) for the type most linears have.
uint32_t FileType(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return 0;
    case GgmlType::kF16: return 1;
    case GgmlType::kQ4_0: return 2;
    case GgmlType::kQ4_1: return 3;
    case GgmlType::kQ8_0: return 7;
    case GgmlType::kBF16: return 32;
    default: return 0;
  }
}

std::string TensorBytesOf(const at::Tensor& t, GgmlType type, const std::string& name) {
  at::Tensor c;
  switch (type) {
    case GgmlType::kF32: c = t.to(at::kFloat).contiguous(); break;
    case GgmlType::kF16:
      c = t.to(at::kFloat).to(at::kHalf).contiguous();
      PC_CHECK(at::isfinite(c).all().item<bool>() || !at::isfinite(t).all().item<bool>(), "GGUF tensor '", name,
               "' holds ", t.abs().max().item<double>(), ", beyond the F16 range: use --outtype f32 or bf16");
      break;
    case GgmlType::kBF16: c = t.to(at::kFloat).to(at::kBFloat16).contiguous(); break;
    default: PC_ASSERT(false, "not a float type");
  }
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

struct OutTensor {
  std::string gguf, module;  // GGUF tensor name; Hugging Face module
  bool weight = false;
  at::Tensor value;          // GGUF layout (rows as llama.cpp's converter writes them)
  GgmlType type = GgmlType::kF32;
};

}  // namespace

GgmlType ParseGgufOuttype(const std::string& name, const std::string& option) {
  if (name == "f32") return GgmlType::kF32;
  if (name == "f16") return GgmlType::kF16;
  if (name == "bf16") return GgmlType::kBF16;
  PC_THROW(option, " '", name, "' is not supported (supported: f32, f16, bf16)");
}

void CheckGgufWritable(const Model& model) {
  const ModelConfig& c = model.config();
  const ArchSpec& a = model.arch();
  const std::string what = Str("GGUF: '", model.source_dir(), "' (", c.model_type, ")");
  PC_CHECK(*a.gguf_arch != '\0', what, ": llama.cpp has no architecture for model_type '", c.model_type,
           "' (GGUF architectures: ", GgufArchitectureNames(), ")");
  PC_CHECK(c.rope.type == RopeType::kDefault, what, ": rope_scaling '", RopeTypeName(c.rope.type),
           "' is not written (only unscaled RoPE, as the GGUF reader reads)");
  PC_CHECK(c.sliding_window <= 0, what, ": sliding-window attention (", c.sliding_window,
           ") is not written (the GGUF reader reads full attention)");
  PC_CHECK(c.act == ParseAct(a.defaults.act, what), what, ": activation ", ActName(c.act),
           " differs from the architecture's ", a.defaults.act, ", and llama.cpp records none");
  PC_CHECK(c.embed_dim == c.hidden && c.pre_norm && c.has_final_norm && c.parallel_scale == 1.0, what,
           ": this configuration has no llama.cpp form");
}

void WriteGguf(Model& model, const std::string& path, const GgufWriteOptions& options,
               const std::string& tokenizer_dir) {
  CheckGgufWritable(model);
  const ModelConfig& c = model.config();
  const ArchSpec& a = model.arch();
  const std::string arch = a.gguf_arch;
  const std::string tok_dir = tokenizer_dir.empty() ? model.source_dir() : tokenizer_dir;
  auto tok_meta = GgufTokenizerMetadata(tok_dir, arch, c.vocab_size, c.bos_id, c.eos_id);
  GgufWriter w(path, options.overwrite);

  // The tensors by Hugging Face name (on-disk layout), and what each linear module is.
  std::map<std::string, at::Tensor> hf;
  model.ForEachTensor([&](const std::string& n, const at::Tensor& t, StDType) { hf[n] = t; });
  std::map<std::string, Role> linear_role;
  for (int l = 0; l < c.layers; ++l) {
    for (const LinearSpec& s : a.linears) linear_role[ExpandName(s.name.hf, l)] = s.role;
  }
  if (!c.tie_embeddings && a.lm_head.present()) linear_role[a.lm_head.hf] = Role::kCount;  // the head: no row change

  std::vector<OutTensor> out;
  std::set<std::string> used;
  for (const ModuleName& m : ModuleNames(a, c.layers)) {
    for (const char* suffix : {".weight", ".bias"}) {
      const std::string name = m.hf + suffix;
      auto it = hf.find(name);
      if (it == hf.end()) continue;
      PC_CHECK(!m.gguf.empty(), "GGUF: tensor '", name, "' has no llama.cpp name in the ", arch, " table");
      used.insert(name);
      OutTensor o;
      o.gguf = m.gguf + suffix;
      o.module = m.hf;
      o.weight = std::strcmp(suffix, ".weight") == 0;
      at::Tensor t = it->second.to(at::kFloat);
      auto role = linear_role.find(m.hf);
      if (role != linear_role.end()) {
        if (a.conv1d && o.weight) t = t.t();  // Conv1D (in, out) -> (out, in)
        if (a.gguf_rows == GgufRows::kQkPermuted && (role->second == Role::kQ || role->second == Role::kK)) {
          t = PermuteRotaryRows(t, role->second == Role::kK ? c.kv_heads : c.heads);
        }
        if (a.gguf_rows == GgufRows::kQkvBlocks && role->second == Role::kQKV) {
          // per head [q_h; k_h; v_h] -> [q; k; v]
          std::vector<int64_t> split = {c.heads, 3, c.head_dim};
          for (int64_t d = 1; d < t.dim(); ++d) split.push_back(t.size(d));
          t = t.reshape(split).transpose(0, 1).reshape(t.sizes());
        }
      }
      o.value = t.contiguous();
      if (o.value.dim() == 1) {
        o.type = GgmlType::kF32;
      } else if (options.codec != nullptr && o.weight && options.codec->types.count(m.hf)) {
        o.type = options.codec->types.at(m.hf);
      } else {
        o.type = options.outtype;
      }
      out.push_back(std::move(o));
    }
  }
  for (const auto& [name, t] : hf) {
    PC_CHECK(used.count(name), "GGUF: tensor '", name, "' has no llama.cpp name in the ", arch,
             " table (AWQ activation scales, or a tensor of another architecture)");
  }
  if (options.codec != nullptr) {
    for (const auto& [module, type] : options.codec->types) {
      bool found = false;
      for (const OutTensor& o : out) found = found || (o.weight && o.module == module);
      PC_CHECK(found, "GGUF: the linear '", module, "' to be written as ", GgmlTypeName(type), " is not in the model");
    }
  }

  // Metadata: the architecture, the config through the reader's key list, the tokenizer.
  w.AddMetadata("general.architecture", GgufString(arch));
  std::string name = fs::Basename(model.source_dir());
  if (const size_t tmp = name.find(".tmp-"); tmp != std::string::npos) name.resize(tmp);  // a staged folder (compress)
  w.AddMetadata("general.name", GgufString(name));
  GgmlType main_type = options.outtype;
  if (options.codec != nullptr && !options.codec->types.empty()) main_type = options.codec->types.begin()->second;
  w.AddMetadata("general.file_type", GgufU32(FileType(main_type)));
  const nlohmann::json cj = ConfigJsonFor(c);
  std::map<std::string, GgufValue> fallback = {{"feed_forward_length", GgufU32(static_cast<uint32_t>(c.intermediate))},
                                               {"attention.head_count_kv", GgufU32(static_cast<uint32_t>(c.kv_heads))}};
  for (const GgufMetaKey& k : GgufMetaKeys(a)) {
    const char* keys = a.keys.*k.hf;
    const std::string key = arch + "." + k.gguf;
    const std::string hf_key = *keys ? Split(keys, '|')[0] : "";
    if (hf_key.empty() || !cj.contains(hf_key) || cj[hf_key].is_null()) {
      auto f = fallback.find(k.gguf);
      if (f != fallback.end()) w.AddMetadata(key, f->second);
      continue;
    }
    const nlohmann::json& v = cj[hf_key];
    if (v.is_boolean()) {
      w.AddMetadata(key, GgufBool(v.get<bool>()));
    } else if (v.is_number_integer()) {
      const int64_t x = v.get<int64_t>();
      PC_CHECK(x >= 0 && x <= 0xFFFFFFFFll, "GGUF: config '", hf_key, "' = ", x, " does not fit uint32");
      w.AddMetadata(key, GgufU32(static_cast<uint32_t>(x)));
    } else if (v.is_number()) {
      w.AddMetadata(key, GgufF32(static_cast<float>(v.get<double>())));
    } else {
      PC_THROW("GGUF: config '", hf_key, "' is ", v.dump(), ", expected a number or a bool");
    }
  }
  w.AddMetadata(arch + ".vocab_size", GgufU32(static_cast<uint32_t>(c.vocab_size)));
  if (a.pos == PosKind::kRope) w.AddMetadata(arch + ".rope.dimension_count", GgufU32(static_cast<uint32_t>(c.rotary_dim)));
  for (auto& [k, v] : tok_meta) w.AddMetadata(k, std::move(v));

  for (const OutTensor& o : out) w.DeclareTensor(o.gguf, o.type, {o.value.sizes().rbegin(), o.value.sizes().rend()});
  std::map<std::string, int64_t> type_count;
  for (OutTensor& o : out) {
    const GgmlTypeInfo& info = GgmlInfo(o.type);
    std::string bytes = info.type == GgmlType::kF32 || info.type == GgmlType::kF16 || info.type == GgmlType::kBF16
                            ? TensorBytesOf(o.value, o.type, o.gguf)
                            : options.codec->encode(o.module, o.value);
    w.Write(o.gguf, bytes.data(), bytes.size());
    o.value = at::Tensor();
    ++type_count[info.name];
  }
  w.Finish();
  std::vector<std::string> counts;
  for (const auto& [t, n] : type_count) counts.push_back(Str(n, " ", t));
  log::Info("gguf", "wrote ", path, " (", arch, ", ", out.size(), " tensors: ", Join(counts, ", "), ")");
}

}  // namespace pc
