#include "model/llama2c.h"

#include <cstring>

#include "core/error.h"
#include "core/fs.h"

namespace pc {
at::Tensor UnpermuteRotaryRows(const at::Tensor& w, int64_t heads) {
  const int64_t rows = w.size(0);
  PC_CHECK(heads > 0 && rows % (2 * heads) == 0, "rotary rows: ", rows, " rows do not split into ", heads,
           " heads of pairs");
  std::vector<int64_t> split = {heads, rows / heads / 2, 2};
  for (int64_t d = 1; d < w.dim(); ++d) split.push_back(w.size(d));
  return w.reshape(split).transpose(1, 2).reshape(w.sizes()).contiguous();
}

at::Tensor PermuteRotaryRows(const at::Tensor& w, int64_t heads) {
  const int64_t rows = w.size(0);
  PC_CHECK(heads > 0 && rows % (2 * heads) == 0, "rotary rows: ", rows, " rows do not split into ", heads,
           " heads of pairs");
  std::vector<int64_t> split = {heads, 2, rows / heads / 2};
  for (int64_t d = 1; d < w.dim(); ++d) split.push_back(w.size(d));
  return w.reshape(split).transpose(1, 2).reshape(w.sizes()).contiguous();
}

std::unique_ptr<Model> ConvertLlama2c(const std::string& path) {
  PC_CHECK(fs::Exists(path), "--weights '", path, "' does not exist");
  std::string raw = fs::ReadFile(path);
  PC_CHECK(raw.size() >= 28, "'", path, "': ", raw.size(), " bytes is too short for llama2.c's 28-byte header");
  int32_t h[7];
  std::memcpy(h, raw.data(), sizeof h);
  const int64_t dim = h[0], hidden = h[1], layers = h[2], heads = h[3], kv_heads = h[4], seq_len = h[6];
  const bool shared = h[5] > 0;
  const int64_t vocab = shared ? h[5] : -static_cast<int64_t>(h[5]);
  for (int i = 0; i < 7; ++i) {
    PC_CHECK(h[i] != 0 && (i == 5 || h[i] > 0) && std::llabs(h[i]) <= (1 << 20), "'", path, "': header field ", i,
             " = ", h[i], " is not a plausible llama2.c header (dim, hidden_dim, n_layers, n_heads, n_kv_heads, "
             "vocab_size, seq_len)");
  }
  PC_CHECK(dim % heads == 0 && heads % kv_heads == 0 && (dim / heads) % 2 == 0, "'", path, "': dim ", dim,
           ", n_heads ", heads, ", n_kv_heads ", kv_heads, " are inconsistent");
  const int64_t hs = dim / heads, kv_dim = kv_heads * hs;
  const int64_t floats = vocab * dim + layers * (2 * dim + dim * dim * 2 + kv_dim * dim * 2 + 3 * hidden * dim) +
                         dim + seq_len * hs + (shared ? 0 : vocab * dim);
  const uint64_t expected = 28 + static_cast<uint64_t>(floats) * 4;
  PC_CHECK(raw.size() == expected, "'", path, "': ", raw.size(), " bytes, but the header (dim ", dim, ", layers ",
           layers, ", vocab ", vocab, ") implies ", expected, " bytes");
  const float* p = reinterpret_cast<const float*>(raw.data() + 28);
  auto take = [&](std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    at::Tensor t = at::empty(shape, at::kFloat);
    std::memcpy(t.data_ptr<float>(), p, n * sizeof(float));
    p += n;
    return t;
  };
  at::Tensor emb = take({vocab, dim}), rms_att = take({layers, dim}), wq = take({layers, dim, dim}),
             wk = take({layers, kv_dim, dim}), wv = take({layers, kv_dim, dim}), wo = take({layers, dim, dim}),
             rms_ffn = take({layers, dim}), w1 = take({layers, hidden, dim}), w2 = take({layers, dim, hidden}),
             w3 = take({layers, hidden, dim}), rms_final = take({dim});
  take({seq_len, hs / 2});  // freq_cis_real (unused: recomputed from theta 10000)
  take({seq_len, hs / 2});  // freq_cis_imag
  at::Tensor wcls = shared ? emb : take({vocab, dim});

  std::map<std::string, at::Tensor> t;
  t["model.embed_tokens.weight"] = emb;
  t["model.norm.weight"] = rms_final;
  if (!shared) t["lm_head.weight"] = wcls;
  for (int64_t l = 0; l < layers; ++l) {
    std::string pre = "model.layers." + std::to_string(l) + ".";
    t[pre + "input_layernorm.weight"] = rms_att[l];
    t[pre + "post_attention_layernorm.weight"] = rms_ffn[l];
    t[pre + "self_attn.q_proj.weight"] = UnpermuteRotaryRows(wq[l], heads);
    t[pre + "self_attn.k_proj.weight"] = UnpermuteRotaryRows(wk[l], kv_heads);
    t[pre + "self_attn.v_proj.weight"] = wv[l];
    t[pre + "self_attn.o_proj.weight"] = wo[l];
    t[pre + "mlp.gate_proj.weight"] = w1[l];
    t[pre + "mlp.down_proj.weight"] = w2[l];
    t[pre + "mlp.up_proj.weight"] = w3[l];
  }
  nlohmann::json config = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"hidden_size", dim},
      {"intermediate_size", hidden},
      {"num_hidden_layers", layers},
      {"num_attention_heads", heads},
      {"num_key_value_heads", kv_heads},
      {"vocab_size", vocab},
      {"max_position_embeddings", seq_len},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", 10000.0},
      {"hidden_act", "silu"},
      {"tie_word_embeddings", shared},
      {"bos_token_id", 1},
      {"eos_token_id", 2},
      {"torch_dtype", "float32"},
      {"perpcomp_converted_from", "llama2.c " + fs::Basename(path)},
  };
  return Model::FromTensors(ParseModelConfig(config, path), t);
}

}  // namespace pc
