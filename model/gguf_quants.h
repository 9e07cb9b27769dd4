// model/gguf_quants.h — ggml's tensor encodings decoded to f32, without LibTorch.
//
// F32, F16, BF16 and the block formats Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (32 elements a block) and
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (256 elements a block, "K-quants"). Each value is computed with
// the operations of the `gguf` Python package's dequantize (gguf.quants), in the same order and in
// float32 (this file is compiled with -ffp-contract=off so that `d * q - m` is never fused), so the
// results are bit for bit those of gguf.quants.dequantize (tests/model/gguf_test.cc).
#pragma once

#include <cstdint>

#include "model/gguf_format.h"

namespace pc {

float HalfToFloat(uint16_t h);      // IEEE binary16, exact (subnormals, inf, NaN kept)
float BFloat16ToFloat(uint16_t h);  // the upper half of a float32

// Decodes `n` elements of type `type` from `src` into `dst`. `n` must be a multiple of the type's
// block size and `src` must hold n / block_size * type_size bytes (the caller validated the tensor:
// GgufFile). Asserts that the type is dequantizable (GgmlTypeInfo::dequantizable).
void DequantizeGgml(GgmlType type, const uint8_t* src, int64_t n, float* dst);

}  // namespace pc
