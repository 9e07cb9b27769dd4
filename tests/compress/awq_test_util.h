// tests/compress/awq_test_util.h — models and plans for the AWQ tests.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "compress/engine.h"
#include "compress/method.h"
#include "model/model.h"

namespace pc::test {

// A model held in memory (no checkpoint: the engine keeps the compressed blocks) with the
// tensors of the Hugging Face folder `dir`.
inline std::unique_ptr<Model> LoadDetached(const std::string& dir) {
  auto m = Model::Load(dir);
  std::map<std::string, at::Tensor> tensors;
  m->ForEachTensor([&](const std::string& n, const at::Tensor& t, StDType) { tensors[n] = t.clone(); });
  return Model::FromTensors(m->config(), tensors);
}

// A random Llama of chosen shapes (kv_heads = heads: multi-head attention, v -> o is scaled).
inline std::unique_ptr<Model> RandomLlama(int64_t d, int64_t heads, int64_t kv_heads, int64_t inter, int layers,
                                          uint64_t seed = 1) {
  const int64_t V = 61, hd = d / heads;
  nlohmann::json c = {{"model_type", "llama"}, {"vocab_size", V}, {"hidden_size", d}, {"num_hidden_layers", layers},
                      {"num_attention_heads", heads}, {"num_key_value_heads", kv_heads},
                      {"intermediate_size", inter}, {"max_position_embeddings", 64}, {"rms_norm_eps", 1e-5},
                      {"hidden_act", "silu"}, {"tie_word_embeddings", false}};
  at::Generator gen = at::detail::createCPUGenerator(seed);
  auto rnd = [&](std::vector<int64_t> shape, double std) { return at::randn(shape, gen) * std; };
  std::map<std::string, at::Tensor> t;
  t["model.embed_tokens.weight"] = rnd({V, d}, 1.0);
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t[p + "input_layernorm.weight"] = 1.0 + rnd({d}, 0.2);
    t[p + "post_attention_layernorm.weight"] = 1.0 + rnd({d}, 0.2);
    t[p + "self_attn.q_proj.weight"] = rnd({heads * hd, d}, 0.35);
    t[p + "self_attn.k_proj.weight"] = rnd({kv_heads * hd, d}, 0.35);
    t[p + "self_attn.v_proj.weight"] = rnd({kv_heads * hd, d}, 0.35);
    t[p + "self_attn.o_proj.weight"] = rnd({d, heads * hd}, 0.35);
    t[p + "mlp.gate_proj.weight"] = rnd({inter, d}, 0.35);
    t[p + "mlp.up_proj.weight"] = rnd({inter, d}, 0.35);
    t[p + "mlp.down_proj.weight"] = rnd({d, inter}, 0.2);
  }
  t["model.norm.weight"] = 1.0 + rnd({d}, 0.2);
  t["lm_head.weight"] = rnd({V, d}, 0.5);
  return Model::FromTensors(ParseModelConfig(c, "random-llama/config.json"), t);
}

// One instance of `method` with `params` for every block linear (except those in `skip`).
inline Plan MethodPlan(const Model& model, const std::string& method, const std::map<std::string, ParamScalar>& params,
                       const std::vector<std::string>& skip = {}) {
  const MethodInfo& info = MethodRegistry::Builtins().Get(method);
  Plan plan;
  plan.methods.push_back(info.create(ResolveParams(method, info.params, params, {}, "test"), "test"));
  plan.infos.push_back(&info);
  for (int l = 0; l < model.num_layers(); ++l) {
    const ArchSpec& a = model.arch();
    for (size_t i = 0; i < a.linears.size(); ++i) {
      PlanEntry e;
      e.layer = l;
      e.index = static_cast<int>(i);
      e.name = ExpandName(a.linears[i].name.hf, l);
      e.role = a.linears[i].role;
      e.method = 0;
      for (const auto& s : skip) {
        if (e.name == s) {
          e.method = -1;
          e.skip_reason = "test skip";
        }
      }
      plan.entries.push_back(e);
    }
  }
  return plan;
}

inline CompressResult Compress(Model& model, Plan& plan, uint64_t seed = 5, int64_t windows = 6, int64_t length = 24) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor calib = at::randint(0, model.config().vocab_size, {windows, length}, gen, at::kLong);
  EngineOptions eo;
  eo.micro_batch = 4;  // two micro-batches
  return RunCompression(model, plan, calib, eo);
}

inline std::vector<const Record*> RecordsOf(const CompressResult& r, const std::string& kind) {
  std::vector<const Record*> out;
  for (const auto& rec : r.records) {
    if (rec.kind == kind) out.push_back(&rec);
  }
  return out;
}

}  // namespace pc::test
