#include "tests/probes/probes_test_util.h"

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "model/config.h"
#include "model/sizes.h"
#include "tests/test_support.h"

namespace pc::test {

namespace {
nlohmann::json ConfigJson(const std::string& model_type, bool sequential) {
  nlohmann::json c = {{"model_type", model_type}, {"hidden_size", 32},      {"intermediate_size", 64},
                      {"num_attention_heads", 4}, {"num_hidden_layers", 4}, {"vocab_size", 48},
                      {"max_position_embeddings", 64}};
  if (model_type == "llama") {
    c["num_key_value_heads"] = 2;
    c["rms_norm_eps"] = 1e-5;
    c["tie_word_embeddings"] = false;
  } else {
    c["rotary_pct"] = 0.5;
    c["use_parallel_residual"] = !sequential;
    c["layer_norm_eps"] = 1e-5;
    c["hidden_act"] = "gelu";
  }
  return c;
}
}  // namespace

std::unique_ptr<Model> RandomProbeModel(const std::string& model_type, uint64_t seed, bool sequential) {
  ModelConfig c = ParseModelConfig(ConfigJson(model_type, sequential), "test config");
  at::Generator gen = at::detail::createCPUGenerator(seed);
  auto normal = [&](std::vector<int64_t> shape, double s) { return at::randn(shape, gen) * s; };
  const ArchSpec& a = *c.arch;
  const bool ln = a.norm == NormKind::kLayerNorm;
  std::map<std::string, at::Tensor> t;
  t[WeightOf(a.embed.hf)] = normal({c.vocab_size, c.hidden}, 1.0);
  t[WeightOf(a.lm_head.hf)] = normal({c.vocab_size, c.hidden}, 0.2);
  auto norm = [&](const std::string& name) {
    t[name + ".weight"] = 1 + normal({c.hidden}, 0.1);
    if (ln) t[name + ".bias"] = normal({c.hidden}, 0.1);
  };
  norm(a.final_norm.hf);
  for (int l = 0; l < c.layers; ++l) {
    norm(ExpandName(a.attn_norm.hf, l));
    norm(ExpandName(a.mlp_norm.hf, l));
    for (const auto& spec : a.linears) {
      const LinearDims dims = BlockLinearDims(c, spec.role);
      const std::vector<int64_t> shape{dims.out, dims.in};
      const std::string name = ExpandName(spec.name.hf, l);
      t[name + ".weight"] = normal(shape, 0.2);
      if (ln) t[name + ".bias"] = normal({shape[0]}, 0.05);
    }
  }
  return Model::FromTensors(c, t);
}

at::Tensor ProbeTokens(int64_t windows, int64_t length, int64_t vocab, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randint(vocab, {windows, length}, gen, at::kLong);
}

std::string ConfigOnlyModelDir() {
  std::string dir = TempDir("probe-config-only");
  fs::WriteFileAtomic(fs::Join(dir, "config.json"), ConfigJson("llama", false).dump(2));
  return dir;
}

}  // namespace pc::test
