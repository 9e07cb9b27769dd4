#include "metrics/block_stream.h"

#include <algorithm>

#include "core/error.h"

namespace pc {

BlockHold::BlockHold(Model& model, int layer) : model_(model), layer_(layer) {
  loaded_here_ = !model.block(layer).loaded;
  if (loaded_here_) model.LoadBlock(layer);
}

BlockHold::~BlockHold() {
  if (loaded_here_) model_.UnloadBlock(layer_);
}

BlockStream::BlockStream(Model& model, const at::Tensor& windows, int64_t batch)
    : model_(model), windows_(windows), batch_(batch) {
  PC_ASSERT(windows.dim() == 2 && batch > 0, "block stream: windows (W, T) and a positive batch");
  const int64_t W = windows.size(0);
  hidden_.resize(static_cast<size_t>((W + batch - 1) / batch));
  ctx_ = model.MakeContext(windows.size(1));
}

int64_t BlockStream::count(int64_t b) const { return std::min(batch_, windows_.size(0) - first(b)); }

at::Tensor BlockStream::tokens(int64_t b) const { return windows_.narrow(0, first(b), count(b)).contiguous(); }

void BlockStream::Embed(bool release) {
  for (int64_t b = 0; b < batches(); ++b) hidden(b) = model_.Embed(tokens(b), ctx_);
  if (release && !model_.tied()) {
    model_.embed() = at::Tensor();
    model_.pos_embed() = at::Tensor();
  }
}

void BlockStream::Advance(int layer) {
  for (int64_t b = 0; b < batches(); ++b) hidden(b) = model_.BlockForward(layer, hidden(b), ctx_);
}

at::Tensor BlockStream::Logits(int64_t b) {
  if (!model_.tied() && !model_.lm_head().weight.defined()) model_.LoadHead();
  return model_.Head(hidden(b), ctx_);
}

}  // namespace pc
