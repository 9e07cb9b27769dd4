// compress/awq_pack.h — integer codes of fake-quantized weights and AutoAWQ's GEMM packing.
//
// A fake-quantized group holds values (q − z)·s with integer codes q in [0, 2^b − 1] and an
// integer zero z in [0, 2^b − 1] (the symmetric quantizer's grid is the same with z = 2^(b−1)).
// Zero is always on such a grid (q = z), so a group with smallest value lo ≤ 0 ≤ hi (lo = min(w, 0),
// hi = max(w, 0)) spans k = (hi − lo)/s steps for some k ≤ 2^b − 1. RecoverGridCodes tries
// k = 2^b − 1 down to 1 with s = (hi − lo)/k, z = round(−lo/s), q = round(w/s) + z, and accepts a
// group when every value lies within `tol` code units of its code (the values are an exact grid
// up to their storage rounding). Among accepted k it prefers one whose float16-rounded scale
// reproduces every value exactly, (q − z)·fp16(s) == w in float32 — always found when the
// quantizer kept fp16 scales (awq scale_dtype: f16).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace pc::awq {

struct GridCodes {
  at::Tensor codes;   // (out, in) int32 in [0, 2^bits − 1]
  at::Tensor zeros;   // (out, groups) int32
  at::Tensor scales;  // (out, groups) float32
  int64_t groups = 0;            // out × groups
  int64_t bad_groups = 0;        // not on any grid (codes undefined there)
  int64_t first_bad_row = -1, first_bad_group = -1;
  int64_t exact_f16_groups = 0;  // reproduced bit for bit with float16 scales
  double max_residual = 0;       // largest |w/s + z − q| over accepted groups, in code units
};

// w (out, in) with in % group_length == 0.
GridCodes RecoverGridCodes(const at::Tensor& w, int bits, int64_t group_length, double tol);

// AutoAWQ's GEMM packing of 4-bit values v (rows, cols) int32, cols % 8 == 0, into (rows, cols/8)
// int32: nibble i (bits 4i..4i+3) of word c holds v[:, 8c + order[i]], order = 0,2,4,6,1,3,5,7.
at::Tensor PackAwqOrder(const at::Tensor& v);
// The inverse (tests).
at::Tensor UnpackAwqOrder(const at::Tensor& packed);

}  // namespace pc::awq
