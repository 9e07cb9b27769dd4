#include "metrics/split_rows.h"

#include <ATen/Parallel.h>

#include <cmath>

#include "core/error.h"
#include "core/tensor_util.h"
#include "metrics/simd.h"

namespace pc {
namespace {

constexpr int kLanes = 8;  // independent accumulators: lets the compiler vectorise the sums

PC_ALWAYS_INLINE double Total(const double (&s)[kLanes]) {
  double t = 0;
  for (int j = 0; j < kLanes; ++j) t += s[j];
  return t;
}

// One row: a = out, b = ref, y = direction (== b for the self frame).
struct RowOut {
  double iso, p, par, perp, dir_sq, ref_sq, out_sq, dot;
};

template <bool kSelf>
PC_ALWAYS_INLINE RowOut SplitOne(const float* a, const float* b, const float* y, int64_t d) {
  double ee[kLanes] = {}, ey[kLanes] = {}, yy[kLanes] = {}, bb[kLanes] = {}, aa[kLanes] = {}, ab[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= d; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const double av = a[i + j], bv = b[i + j], yv = kSelf ? bv : static_cast<double>(y[i + j]);
      const double e = av - bv;
      ee[j] += e * e;
      ey[j] += e * yv;
      yy[j] += yv * yv;
      aa[j] += av * av;
      ab[j] += av * bv;
      if (!kSelf) bb[j] += bv * bv;
    }
  }
  for (int j = 0; i < d; ++i, ++j) {
    const double av = a[i], bv = b[i], yv = kSelf ? bv : static_cast<double>(y[i]);
    const double e = av - bv;
    ee[j] += e * e;
    ey[j] += e * yv;
    yy[j] += yv * yv;
    aa[j] += av * av;
    ab[j] += av * bv;
    if (!kSelf) bb[j] += bv * bv;
  }
  RowOut r;
  r.iso = Total(ee);
  r.dir_sq = Total(yy);
  r.ref_sq = kSelf ? r.dir_sq : Total(bb);
  r.out_sq = Total(aa);
  r.dot = Total(ab);
  if (!(r.dir_sq > 0)) {  // SplitError: u = 0, so p = par = 0 and perp = iso
    r.p = r.par = 0;
    r.perp = r.iso;
    return r;
  }
  const double inv = 1.0 / std::sqrt(r.dir_sq);
  r.p = Total(ey) * inv;
  r.par = r.p * r.p;
  // perp = ‖e − p·u‖², computed from the vector (not as iso − par).
  const double pu = r.p * inv;  // e − p·u = e − (p/‖y‖)·y
  double pp[kLanes] = {};
  i = 0;
  for (; i + kLanes <= d; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const double bv = b[i + j], yv = kSelf ? bv : static_cast<double>(y[i + j]);
      const double q = (static_cast<double>(a[i + j]) - bv) - pu * yv;
      pp[j] += q * q;
    }
  }
  for (int j = 0; i < d; ++i, ++j) {
    const double bv = b[i], yv = kSelf ? bv : static_cast<double>(y[i]);
    const double q = (static_cast<double>(a[i]) - bv) - pu * yv;
    pp[j] += q * q;
  }
  r.perp = Total(pp);
  return r;
}

at::Tensor AsFloatRows(const at::Tensor& t, int64_t d) {
  at::Tensor x = t.scalar_type() == at::kFloat ? t : t.to(at::kFloat);
  return x.reshape({-1, d}).contiguous();
}

// Rows begin .. end−1; out: (8, n) iso, p, par, perp, dir_sq, ref_sq, out_sq, dot. y null: self frame.
PC_SIMD_CLONES void SplitRange(const float* a, const float* b, const float* y, int64_t d, int64_t begin, int64_t end,
                               int64_t n, double* out) {
  for (int64_t r = begin; r < end; ++r) {
    RowOut o = y == nullptr ? SplitOne<true>(a + r * d, b + r * d, nullptr, d)
                            : SplitOne<false>(a + r * d, b + r * d, y + r * d, d);
    const double v[8] = {o.iso, o.p, o.par, o.perp, o.dir_sq, o.ref_sq, o.out_sq, o.dot};
    for (int k = 0; k < 8; ++k) out[k * n + r] = v[k];
  }
}

}  // namespace

RowSplit SplitRows(const at::Tensor& out, const at::Tensor& ref, const at::Tensor& direction) {
  PC_CHECK(out.sizes() == ref.sizes(), "directional split: output shape ", ShapeString(out.sizes()),
           " differs from reference shape ", ShapeString(ref.sizes()));
  PC_CHECK(out.dim() >= 1, "directional split: expected tensors with a feature dimension");
  const bool self = !direction.defined();
  PC_CHECK(self || direction.sizes() == ref.sizes(), "directional split: direction shape ",
           ShapeString(direction.sizes()), " differs from reference shape ", ShapeString(ref.sizes()));
  const int64_t d = out.size(-1);
  at::Tensor a = AsFloatRows(out, d), b = AsFloatRows(ref, d);   // (N, d) float32
  at::Tensor y = self ? b : AsFloatRows(direction, d);           // (N, d)
  const int64_t n = a.size(0);
  at::Tensor all = at::empty({8, n}, at::kDouble);               // iso, p, par, perp, dir_sq, ref_sq, out_sq, dot
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  const float* py = y.data_ptr<float>();
  double* po = all.data_ptr<double>();
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, d));
  at::parallel_for(0, n, grain,
                   [&](int64_t begin, int64_t end) { SplitRange(pa, pb, self ? nullptr : py, d, begin, end, n, po); });
  RowSplit s;
  s.iso = all[0];
  s.p = all[1];
  s.par = all[2];
  s.perp = all[3];
  s.dir_sq = all[4];
  s.ref_sq = all[5];
  s.out_sq = all[6];
  s.dot = all[7];
  return s;
}

}  // namespace pc
