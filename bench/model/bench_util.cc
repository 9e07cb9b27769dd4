#include "bench/model/bench_util.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace pc::bench {
namespace {

std::map<std::string, at::Tensor> PythiaTensors(const ModelConfig& c, uint64_t seed) {
  at::manual_seed(seed);
  std::map<std::string, at::Tensor> t;
  const int64_t d = c.hidden, I = c.intermediate, V = c.vocab_size;
  auto w = [](std::vector<int64_t> shape) { return at::randn(shape) * 0.02; };
  t["gpt_neox.embed_in.weight"] = w({V, d});
  t["embed_out.weight"] = w({V, d});
  t["gpt_neox.final_layer_norm.weight"] = at::ones({d});
  t["gpt_neox.final_layer_norm.bias"] = at::zeros({d});
  for (int64_t l = 0; l < c.layers; ++l) {
    std::string p = "gpt_neox.layers." + std::to_string(l) + ".";
    for (const char* n : {"input_layernorm", "post_attention_layernorm"}) {
      t[p + n + ".weight"] = at::ones({d});
      t[p + n + ".bias"] = at::zeros({d});
    }
    t[p + "attention.query_key_value.weight"] = w({3 * d, d});
    t[p + "attention.query_key_value.bias"] = at::zeros({3 * d});
    t[p + "attention.dense.weight"] = w({d, d});
    t[p + "attention.dense.bias"] = at::zeros({d});
    t[p + "mlp.dense_h_to_4h.weight"] = w({I, d});
    t[p + "mlp.dense_h_to_4h.bias"] = at::zeros({I});
    t[p + "mlp.dense_4h_to_h.weight"] = w({d, I});
    t[p + "mlp.dense_4h_to_h.bias"] = at::zeros({d});
  }
  return t;
}

ModelConfig PythiaConfig(int64_t hidden, int64_t layers, int64_t heads, int64_t vocab) {
  nlohmann::json j = {{"model_type", "gpt_neox"},   {"architectures", {"GPTNeoXForCausalLM"}},
                      {"hidden_size", hidden},      {"num_hidden_layers", layers},
                      {"num_attention_heads", heads}, {"intermediate_size", 4 * hidden},
                      {"vocab_size", vocab},        {"max_position_embeddings", 2048},
                      {"rotary_pct", 0.25},         {"rotary_emb_base", 10000},
                      {"layer_norm_eps", 1e-5},     {"hidden_act", "gelu"},
                      {"use_parallel_residual", true}, {"tie_word_embeddings", false},
                      {"bos_token_id", 0},          {"eos_token_id", 0},
                      {"torch_dtype", "float32"}};
  return ParseModelConfig(j, "random Pythia config");
}

}  // namespace

std::unique_ptr<Model> RandomPythia(int64_t hidden, int64_t layers, int64_t heads, int64_t vocab,
                                    at::ScalarType dtype, uint64_t seed) {
  ModelConfig c = PythiaConfig(hidden, layers, heads, vocab);
  return Model::FromTensors(c, PythiaTensors(c, seed), dtype);
}

void WriteRandomPythia(const std::string& dir, int64_t hidden, int64_t layers, int64_t heads, int64_t vocab,
                       uint64_t seed) {
  RandomPythia(hidden, layers, heads, vocab, at::kFloat, seed)->Save(dir);
}

double TimeIt(const std::function<void()>& fn, int reps) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto a = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

namespace {
double StatusField(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(std::string(key).size())) * 1024.0;
  }
  return 0;
}
}  // namespace

double PeakRssBytes() { return StatusField("VmHWM:"); }
double CurrentRssBytes() { return StatusField("VmRSS:"); }
void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace pc::bench
