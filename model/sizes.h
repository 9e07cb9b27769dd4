// model/sizes.h — sizes derived from a config alone (no LibTorch): the weight shape of a block
// linear by role, and the default batch sizes of compression and evaluation. The loader, the
// trainer, the memory estimate (pipeline/memory_estimate.h) and the test models all read them
// here, so the estimate and the run cannot disagree.
#pragma once

#include <cstdint>

#include "model/config.h"

namespace pc {

// The weight of a block linear is (out, in).
struct LinearDims {
  int64_t out = 0, in = 0;
};
LinearDims BlockLinearDims(const ModelConfig& config, Role role);

// Calibration windows of `seq_len` tokens per forward of the compression engine: ~64 MB of
// intermediates of the widest kind (compress/engine.h). Larger batches were not faster on CPU.
int64_t DefaultMicroBatch(const ModelConfig& config, int64_t seq_len);
// Windows per forward of evaluation: ~256 MB of float32 logits and at most ~8k tokens.
int64_t DefaultEvalBatch(const ModelConfig& config, int64_t seq_len);

}  // namespace pc
