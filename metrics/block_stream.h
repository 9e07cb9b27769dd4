// metrics/block_stream.h — a model run block by block over every window at once, so that only
// one block of its weights is resident (docs/ARCHITECTURE.md "The data between stages").
//
// The residual streams of all windows are kept — one (count, T, hidden) tensor per batch of
// windows, in the compute dtype — and each block is loaded (Model::LoadBlock), run over every
// batch and released before the next. The operations per batch are exactly those of
// Model::Forward(tokens) (embedding, BlockForward per layer, Head with a context made for T
// tokens), so the results are bit-for-bit those of the whole-model forward. Two models streamed
// side by side (a reference and a compressed model) advance in lockstep: block l of each is
// resident, then block l + 1.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "model/model.h"

namespace pc {

// Holds block `layer` of `model` for its lifetime: loads it when it is not resident and releases
// it on destruction only then (a model loaded whole keeps its blocks).
class BlockHold {
 public:
  BlockHold(Model& model, int layer);
  ~BlockHold();
  BlockHold(const BlockHold&) = delete;
  BlockHold& operator=(const BlockHold&) = delete;

 private:
  Model& model_;
  int layer_;
  bool loaded_here_;
};

class BlockStream {
 public:
  // windows: (W, T) int64; `batch` windows per forward (> 0).
  BlockStream(Model& model, const at::Tensor& windows, int64_t batch);

  Model& model() { return model_; }
  int64_t batches() const { return static_cast<int64_t>(hidden_.size()); }
  int64_t first(int64_t b) const { return b * batch_; }  // index of the batch's first window
  int64_t count(int64_t b) const;                        // windows in batch b
  at::Tensor tokens(int64_t b) const;                    // (count, T) int64
  // The context every batch runs in (T tokens from position 0); set `hooks` on it to observe.
  ForwardContext& context() { return ctx_; }
  // Residual stream of batch b: (count, T, hidden) after the blocks run so far.
  at::Tensor& hidden(int64_t b) { return hidden_.at(static_cast<size_t>(b)); }

  // hidden(b) = embedding of tokens(b), for every batch. `release`: then free the model's
  // embedding (and learned positions) unless the head shares it — for a model that is not run
  // again (the commands), so that the embedding and the head are never resident together.
  void Embed(bool release = false);
  void Advance(int layer);  // hidden(b) = block `layer` of hidden(b), for every batch (block resident)
  // The head on hidden(b): (count, T, V) float32. An untied head left in the checkpoint
  // (LoadOptions::load_head = false) is loaded first.
  at::Tensor Logits(int64_t b);

 private:
  Model& model_;
  at::Tensor windows_;
  int64_t batch_ = 0;
  ForwardContext ctx_;
  std::vector<at::Tensor> hidden_;
};


}  // namespace pc
