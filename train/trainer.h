// train/trainer.h — training small decoder models from scratch with LibTorch autograd:
// AdamW, linear warmup + cosine decay, gradient clipping, periodic held-out loss, seeded.
//
// The output is a normal Hugging Face folder of the chosen architecture (any model_type of the
// architecture table; the demo trains gpt_neox and llama)
// with a tokenizer.json that every command loads. With parallel_scale A != 1 each attention
// and MLP update Δ becomes A·Δ∥ + Δ⊥ (Δ∥ the projection on the incoming hidden state), during
// training and inference; A is stored in config.json as perpcomp_parallel_scale.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pc {

struct TrainOptions {
  std::string arch = "gpt_neox";        // a model_type of the architecture table (model/arch.h)
  std::vector<std::string> text;        // training files (plain UTF-8 or *.jsonl)
  std::string valid;                    // held-out file; empty: the last 5% of the training stream
  std::string text_field = "text";
  bool doc_per_line = false;            // every non-empty line is a document (synthetic corpus)
  std::string tokenizer;                // existing tokenizer.json / folder; empty: train a BPE
  int64_t vocab_size = 1024;            // for the trained BPE
  int64_t layers = 4, hidden = 128, heads = 4, kv_heads = 0, intermediate = 0, context = 128;
  int64_t steps = 500, batch = 32, warmup = 50, eval_every = 100, eval_windows = 32;
  double lr = 3e-3, min_lr_ratio = 0.1, weight_decay = 0.1, grad_clip = 1.0, beta1 = 0.9, beta2 = 0.95;
  double parallel_scale = 1.0;
  double rotary_pct = 1.0;             // gpt_neox: rotated share of each head (Pythia: 0.25)
  bool parallel_residual = false;      // gpt_neox: use_parallel_residual (Pythia: true)
  uint64_t seed = 0;
  std::string out;
  bool overwrite = false;
  bool show_progress = true;           // false: no progress line (e.g. two trainings side by side)

  void Validate() const;  // errors name the option
};

struct TrainResult {
  double final_train_loss = 0;
  double final_valid_loss = 0;   // nats per token
  double unigram_valid_loss = 0; // entropy of the training unigram distribution on the valid tokens
  double seconds = 0;
  int64_t tokens_seen = 0;
  int64_t parameters = 0;
  nlohmann::json log;            // per eval step: step, lr, train_loss, valid_loss, tokens_per_s
};

TrainResult TrainModel(const TrainOptions& options);

// The config.json a training run with `options` writes, for a tokenizer of `vocab` ids.
nlohmann::json TrainConfigJson(const TrainOptions& options, int64_t vocab, int64_t bos, int64_t eos);

// The training recipe of each `perpcomp demo` model (pipeline/demo.h): small enough to train in
// about a minute on two cores, big enough to learn agreement (docs/RESULTS.md "Demo models").
// Its widths are multiples of the demo sweep's group size of 32, so every quantizing demo run has
// several groups per row (tests/train/demo_groups_test.cc).
TrainOptions DemoTrainOptions(const std::string& arch, const std::string& corpus, int64_t steps);

}  // namespace pc
