#include "compress/quantizer.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace pc {

void QuantSpec::Validate(const std::string& where) const {
  PC_CHECK(bits >= 2 && bits <= 8, where, ": bits must lie in 2..8, got ", bits);
  PC_CHECK(group_size == -1 || group_size >= 1, where, ": group_size must be -1 (per channel) or positive, got ",
           group_size);
}

std::string QuantSpec::Describe() const {
  return "w" + std::to_string(bits) + (group_size <= 0 ? " per-channel" : " g" + std::to_string(group_size)) +
         (zero_point ? " asym" : " sym");
}

namespace {
// Applies `fn` to the (out, groups, g) view of the full groups and to the (out, 1, rem) tail.
template <typename Fn>
void ForGroups(const at::Tensor& w, const QuantSpec& spec, Fn fn) {
  const int64_t out = w.size(0), in = w.size(1), g = spec.GroupLength(in);
  const int64_t full = in / g, rem = in - full * g;
  if (full > 0) fn(w.narrow(1, 0, full * g).reshape({out, full, g}), int64_t{0}, full);
  if (rem > 0) fn(w.narrow(1, full * g, rem).reshape({out, 1, rem}), full, int64_t{1});
}
}  // namespace

QuantParams ComputeQuantParams(const at::Tensor& w_in, const QuantSpec& spec) {
  PC_ASSERT(w_in.dim() == 2);
  at::Tensor w = w_in.to(at::kFloat);
  const int64_t out = w.size(0), groups = spec.Groups(w.size(1));
  QuantParams p;
  p.scale = at::empty({out, groups}, at::kFloat);
  p.zero = at::zeros({out, groups}, at::kFloat);
  const double qmax_asym = std::pow(2.0, spec.bits) - 1;
  const double qmax_sym = std::pow(2.0, spec.bits - 1) - 1;
  ForGroups(w, spec, [&](const at::Tensor& grp, int64_t first, int64_t count) {
    if (spec.zero_point) {
      at::Tensor mx = grp.amax(-1), mn = grp.amin(-1);  // (out, count)
      at::Tensor scale = (mx - mn).clamp_min(1e-5) / qmax_asym;
      at::Tensor zero = at::clamp(-at::round(mn / scale), 0, qmax_asym);
      p.scale.narrow(1, first, count).copy_(scale);
      p.zero.narrow(1, first, count).copy_(zero);
    } else {
      at::Tensor mx = grp.abs().amax(-1).clamp_min(1e-5);
      p.scale.narrow(1, first, count).copy_(mx / qmax_sym);
    }
  });
  return p;
}

QuantParams ComputeGptqQuantParams(const at::Tensor& w_in, const QuantSpec& spec) {
  PC_ASSERT(w_in.dim() == 2);
  at::Tensor w = w_in.to(at::kFloat);
  const int64_t out = w.size(0), groups = spec.Groups(w.size(1));
  QuantParams p;
  p.scale = at::empty({out, groups}, at::kFloat);
  p.zero = at::empty({out, groups}, at::kFloat);
  const double maxq = std::pow(2.0, spec.bits) - 1;
  ForGroups(w, spec, [&](const at::Tensor& grp, int64_t first, int64_t count) {
    at::Tensor xmin = grp.amin(-1).clamp_max(0), xmax = grp.amax(-1).clamp_min(0);  // (out, count)
    if (!spec.zero_point) {
      xmax = at::maximum(xmin.abs(), xmax);
      xmin = at::where(xmin < 0, -xmax, xmin);
    }
    at::Tensor both0 = (xmin == 0).logical_and(xmax == 0);
    xmin = xmin.masked_fill(both0, -1.0);
    xmax = xmax.masked_fill(both0, 1.0);
    at::Tensor scale = (xmax - xmin) / maxq;
    at::Tensor zero = spec.zero_point ? at::round(-xmin / scale) : at::full_like(scale, std::pow(2.0, spec.bits - 1));
    p.scale.narrow(1, first, count).copy_(scale);
    p.zero.narrow(1, first, count).copy_(zero);
  });
  return p;
}

at::Tensor FakeQuantizeWith(const at::Tensor& w_in, const QuantParams& params, const QuantSpec& spec) {
  at::Tensor w = w_in.to(at::kFloat);
  at::Tensor out = at::empty_like(w);
  const double qmax_asym = std::pow(2.0, spec.bits) - 1;
  const double lo_sym = -std::pow(2.0, spec.bits - 1), hi_sym = std::pow(2.0, spec.bits - 1) - 1;
  const int64_t rows = w.size(0), in = w.size(1), g = spec.GroupLength(in);
  const int64_t full = in / g, rem = in - full * g;
  auto apply = [&](int64_t col0, int64_t len, int64_t gfirst, int64_t gcount) {
    at::Tensor grp = w.narrow(1, col0, len).reshape({rows, gcount, len / gcount});
    at::Tensor scale = params.scale.narrow(1, gfirst, gcount).unsqueeze(-1);
    at::Tensor q;
    if (spec.zero_point) {
      at::Tensor zero = params.zero.narrow(1, gfirst, gcount).unsqueeze(-1);
      q = (at::clamp(at::round(grp / scale) + zero, 0, qmax_asym) - zero) * scale;
    } else {
      q = at::clamp(at::round(grp / scale), lo_sym, hi_sym) * scale;
    }
    out.narrow(1, col0, len).copy_(q.reshape({rows, len}));
  };
  if (full > 0) apply(0, full * g, 0, full);
  if (rem > 0) apply(full * g, rem, full, 1);
  return out.to(w_in.scalar_type());
}

void FakeQuantizeColumn(const float* w, const float* scale, const float* zero, int64_t n, const QuantSpec& spec,
                        float* out) {
  // at::round is round-half-to-even (std::nearbyint); at::clamp(x, lo, hi) is min(max(x, lo), hi).
  if (spec.zero_point) {
    const float qmax = static_cast<float>(std::pow(2.0, spec.bits) - 1);
    for (int64_t r = 0; r < n; ++r) {
      const float q = std::min(std::max(std::nearbyint(w[r] / scale[r]) + zero[r], 0.0f), qmax);
      out[r] = (q - zero[r]) * scale[r];
    }
  } else {
    const float lo = static_cast<float>(-std::pow(2.0, spec.bits - 1)), hi = static_cast<float>(std::pow(2.0, spec.bits - 1) - 1);
    for (int64_t r = 0; r < n; ++r) out[r] = std::min(std::max(std::nearbyint(w[r] / scale[r]), lo), hi) * scale[r];
  }
}

at::Tensor FakeQuantize(const at::Tensor& w, const QuantSpec& spec) {
  return FakeQuantizeWith(w, ComputeQuantParams(w, spec), spec);
}

at::Tensor QuantCodes(const at::Tensor& w_in, const QuantParams& params, const QuantSpec& spec) {
  PC_ASSERT(spec.zero_point, "integer codes are defined for the asymmetric quantizer");
  at::Tensor w = w_in.to(at::kFloat);
  const int64_t rows = w.size(0), in = w.size(1), g = spec.GroupLength(in);
  at::Tensor idx = at::arange(in, at::kLong).div(g, "floor");            // (in,) group of each column
  at::Tensor scale = params.scale.index_select(1, idx), zero = params.zero.index_select(1, idx);  // (rows, in)
  const double qmax = std::pow(2.0, spec.bits) - 1;
  (void)rows;
  return at::clamp(at::round(w / scale) + zero, 0, qmax).to(at::kInt);
}

at::Tensor FakeQuantizeReference(const at::Tensor& w_in, const QuantSpec& spec) {
  at::Tensor w = w_in.to(at::kFloat).contiguous();
  at::Tensor out = at::empty_like(w);
  const int64_t rows = w.size(0), in = w.size(1), g = spec.GroupLength(in);
  const float* src = w.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  const float qmax = std::pow(2.0f, spec.bits) - 1;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c0 = 0; c0 < in; c0 += g) {
      const int64_t c1 = std::min(in, c0 + g);
      float mx = -INFINITY, mn = INFINITY, amax = 0;
      for (int64_t c = c0; c < c1; ++c) {
        float v = src[r * in + c];
        mx = std::max(mx, v);
        mn = std::min(mn, v);
        amax = std::max(amax, std::fabs(v));
      }
      for (int64_t c = c0; c < c1; ++c) {
        float v = src[r * in + c];
        float q;
        if (spec.zero_point) {
          float scale = std::max(mx - mn, 1e-5f) / qmax;
          float zero = std::min(std::max(-std::nearbyint(mn / scale), 0.0f), qmax);
          q = (std::min(std::max(std::nearbyint(v / scale) + zero, 0.0f), qmax) - zero) * scale;
        } else {
          float hi = std::pow(2.0f, spec.bits - 1) - 1, lo = -std::pow(2.0f, spec.bits - 1);
          float scale = std::max(amax, 1e-5f) / hi;
          q = std::min(std::max(std::nearbyint(v / scale), lo), hi) * scale;
        }
        dst[r * in + c] = q;
      }
    }
  }
  return out;
}

}  // namespace pc
