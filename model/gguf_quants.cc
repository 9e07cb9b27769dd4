// ggml block formats decoded as gguf.quants.dequantize does (see gguf_quants.h). Element order
// inside a block, per format, is written beside each decoder; `d`, `m`, `dmin` are f16 scales.
// Compiled with -ffp-contract=off (model/CMakeLists.txt): products and sums are rounded separately,
// as numpy computes them.
#include "model/gguf_quants.h"

#include <cstring>

#include "core/error.h"

namespace pc {
namespace {

constexpr int kQK = 256;  // elements of a K-quant super-block

uint16_t U16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
float F16(const uint8_t* p) { return HalfToFloat(U16(p)); }

// Q4_0 (18 bytes): d, qs[16]; element j < 16 is qs[j]'s low nibble, j + 16 its high nibble; d * (q - 8).
void Q4_0(const uint8_t* b, float* y) {
  const float d = F16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
    y[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

// Q4_1 (20 bytes): d, m, qs[16] as Q4_0; d * q + m.
void Q4_1(const uint8_t* b, float* y) {
  const float d = F16(b), m = F16(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(qs[j] & 0x0F) + m;
    y[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
  }
}

// The 5-bit value of element j of a Q5 block: nibble as Q4_0, bit j of the u32 qh on top.
int Q5Value(const uint8_t* qs, uint32_t qh, int j) {
  const int nibble = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
  return nibble | static_cast<int>(((qh >> j) & 1u) << 4);
}

// Q5_0 (22 bytes): d, qh (u32), qs[16]; d * (q - 16).
void Q5_0(const uint8_t* b, float* y) {
  const float d = F16(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);  // little-endian host (ggml files are little-endian)
  for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(Q5Value(b + 6, qh, j) - 16);
}

// Q5_1 (24 bytes): d, m, qh (u32), qs[16]; d * q + m.
void Q5_1(const uint8_t* b, float* y) {
  const float d = F16(b), m = F16(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(Q5Value(b + 8, qh, j)) + m;
}

// Q8_0 (34 bytes): d, qs[32] (int8); q * d.
void Q8_0(const uint8_t* b, float* y) {
  const float d = F16(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// Q2_K (84 bytes): scales[16] (low nibble scale, high nibble min, per 16 elements), qs[64], d, dmin.
// Element i = h*128 + s*32 + l takes bits 2s..2s+1 of qs[h*32 + l]; (d * sc) * q - (dmin * mn).
void Q2_K(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = F16(b + 80), dmin = F16(b + 82);
  for (int i = 0; i < kQK; ++i) {
    const int g = i / 16, h = i / 128, s = (i % 128) / 32, l = i % 32;
    const float dl = d * static_cast<float>(scales[g] & 0x0F);
    const float ml = dmin * static_cast<float>(scales[g] >> 4);
    const float q = static_cast<float>((qs[h * 32 + l] >> (2 * s)) & 3);
    y[i] = dl * q - ml;
  }
}

// Q3_K (110 bytes): hmask[32], qs[64], scales[12] (16 six-bit scales, offset 32), d.
// Element i: low 2 bits as Q2_K; bit i/32 of hmask[i % 32] clear subtracts 4; (d * sc) * q.
void Q3_K(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* sc = b + 96;
  const float d = F16(b + 108);
  float dl[16];
  for (int g = 0; g < 16; ++g) {
    const int low = g < 8 ? (sc[g] & 0x0F) : (sc[g - 8] >> 4);
    const int high = (sc[8 + g % 4] >> (2 * (g / 4))) & 3;
    dl[g] = d * static_cast<float>(static_cast<int8_t>(low | (high << 4)) - 32);
  }
  for (int i = 0; i < kQK; ++i) {
    const int h = i / 128, s = (i % 128) / 32, l = i % 32;
    const int ql = (qs[h * 32 + l] >> (2 * s)) & 3;
    const int qh = ((hmask[l] >> (i / 32)) & 1) ^ 1;
    y[i] = dl[i / 16] * static_cast<float>(ql - (qh << 2));
  }
}

// The eight 6-bit scales and mins of Q4_K and Q5_K, packed in 12 bytes.
void KScaleMin(const uint8_t* s, int sc[8], int mn[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 0x3F;
    mn[j] = s[4 + j] & 0x3F;
    sc[j + 4] = (s[8 + j] & 0x0F) | ((s[j] >> 2) & 0x30);
    mn[j + 4] = (s[8 + j] >> 4) | ((s[4 + j] >> 2) & 0x30);
  }
}

// Q4_K (144 bytes): d, dmin, scales[12], qs[128]. Element i = c*64 + s*32 + l is nibble s of
// qs[c*32 + l]; group i/32; (d * sc) * q - (dmin * mn).
void Q4_K(const uint8_t* b, float* y) {
  const float d = F16(b), dmin = F16(b + 2);
  int sc[8], mn[8];
  KScaleMin(b + 4, sc, mn);
  const uint8_t* qs = b + 16;
  for (int i = 0; i < kQK; ++i) {
    const int g = i / 32, c = i / 64, s = (i % 64) / 32, l = i % 32;
    const float ds = d * static_cast<float>(sc[g]), dm = dmin * static_cast<float>(mn[g]);
    y[i] = ds * static_cast<float>((qs[c * 32 + l] >> (4 * s)) & 0x0F) - dm;
  }
}

// Q5_K (176 bytes): d, dmin, scales[12], qh[32], qs[128]. Nibbles as Q4_K, bit i/32 of qh[i % 32]
// as the fifth bit.
void Q5_K(const uint8_t* b, float* y) {
  const float d = F16(b), dmin = F16(b + 2);
  int sc[8], mn[8];
  KScaleMin(b + 4, sc, mn);
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int i = 0; i < kQK; ++i) {
    const int g = i / 32, c = i / 64, s = (i % 64) / 32, l = i % 32;
    const float ds = d * static_cast<float>(sc[g]), dm = dmin * static_cast<float>(mn[g]);
    const int q = ((qs[c * 32 + l] >> (4 * s)) & 0x0F) | (((qh[l] >> g) & 1) << 4);
    y[i] = ds * static_cast<float>(q) - dm;
  }
}

// Q6_K (210 bytes): ql[128], qh[64], scales[16] (int8), d. Element i = h*128 + s*64 + l (l < 64)
// takes nibble s of ql[h*64 + l]; with i = h*128 + t*32 + m (m < 32) bits 2t..2t+1 of qh[h*32 + m]
// on top; (d * sc) * (q - 32), group i/16.
void Q6_K(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = F16(b + 208);
  for (int i = 0; i < kQK; ++i) {
    const int h = i / 128, r = i % 128;
    const int low = (ql[h * 64 + r % 64] >> (4 * (r / 64))) & 0x0F;
    const int high = (qh[h * 32 + r % 32] >> (2 * (r / 32))) & 3;
    const float dl = d * static_cast<float>(scales[i / 16]);
    y[i] = dl * static_cast<float>(static_cast<int8_t>(low | (high << 4)) - 32);
  }
}

using BlockFn = void (*)(const uint8_t*, float*);
BlockFn BlockDecoder(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0: return Q4_0;
    case GgmlType::kQ4_1: return Q4_1;
    case GgmlType::kQ5_0: return Q5_0;
    case GgmlType::kQ5_1: return Q5_1;
    case GgmlType::kQ8_0: return Q8_0;
    case GgmlType::kQ2_K: return Q2_K;
    case GgmlType::kQ3_K: return Q3_K;
    case GgmlType::kQ4_K: return Q4_K;
    case GgmlType::kQ5_K: return Q5_K;
    case GgmlType::kQ6_K: return Q6_K;
    default: return nullptr;
  }
}

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf, NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal: man * 2^-24, renormalized
    int shift = 0;
    while ((man & 0x400u) == 0) {
      man <<= 1;
      ++shift;
    }
    bits = sign | (static_cast<uint32_t>(113 - shift) << 23) | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float BFloat16ToFloat(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void DequantizeGgml(GgmlType type, const uint8_t* src, int64_t n, float* dst) {
  const GgmlTypeInfo& info = GgmlInfo(type);
  PC_ASSERT(info.dequantizable && n % info.block_size == 0, "DequantizeGgml: ", info.name, " with ", n, " elements");
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case GgmlType::kF16:
      for (int64_t k = 0; k < n; ++k) dst[k] = F16(src + 2 * k);
      return;
    case GgmlType::kBF16:
      for (int64_t k = 0; k < n; ++k) dst[k] = BFloat16ToFloat(U16(src + 2 * k));
      return;
    default: {
      BlockFn fn = BlockDecoder(type);
      PC_ASSERT(fn != nullptr, "no decoder for ", info.name);
      const int64_t blocks = n / info.block_size;
      for (int64_t k = 0; k < blocks; ++k) fn(src + k * info.type_size, dst + k * info.block_size);
    }
  }
}

}  // namespace pc
