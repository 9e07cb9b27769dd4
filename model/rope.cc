#include "model/rope.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace pc {
namespace {

constexpr double kPi = 3.14159265358979323846;

// 1 / base^(2i / dim), i < dim / 2.
std::vector<double> Unscaled(double base, int64_t dim) {
  std::vector<double> f(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) f[i] = 1.0 / std::pow(base, static_cast<double>(2 * i) / dim);
  return f;
}

// YaRN: frequencies blended between interpolated (÷ factor) and extrapolated (as trained) by a
// linear ramp over the dimensions whose wavelengths fall between beta_fast and beta_slow rotations
// of the original context.
std::vector<double> Yarn(const RopeScaling& r, double base, int64_t dim) {
  auto correction_dim = [&](double rotations) {
    return dim * std::log(static_cast<double>(r.original_max_pos) / (rotations * 2 * kPi)) / (2 * std::log(base));
  };
  double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
  if (r.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // no singular ramp
  const std::vector<double> pos = Unscaled(base, dim);
  std::vector<double> f(pos.size());
  for (size_t i = 0; i < pos.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1.0 - ramp;  // weight of the trained frequency
    f[i] = pos[i] / r.factor * (1.0 - extrapolation) + pos[i] * extrapolation;
  }
  return f;
}

// Llama 3.1: low frequencies (wavelength beyond original / low_freq_factor) divided by factor, high
// ones (below original / high_freq_factor) kept, the band between smoothly interpolated.
std::vector<double> Llama3(const RopeScaling& r, double base, int64_t dim) {
  std::vector<double> f = Unscaled(base, dim);
  const double old_len = static_cast<double>(r.original_max_pos);
  const double low_wavelen = old_len / r.low_freq_factor, high_wavelen = old_len / r.high_freq_factor;
  for (double& x : f) {
    const double wavelen = 2 * kPi / x;
    if (wavelen > low_wavelen) {
      x /= r.factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth = (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      x = (1 - smooth) * x / r.factor + smooth * x;
    }
  }
  return f;
}

}  // namespace

bool RopeDependsOnLength(const ModelConfig& c) { return c.rope.type == RopeType::kDynamic; }

RopeFrequencies ComputeRope(const ModelConfig& c, int64_t seq_len) {
  const RopeScaling& r = c.rope;
  const int64_t dim = c.rotary_dim;
  RopeFrequencies out;
  switch (r.type) {
    case RopeType::kDefault: out.inv_freq = Unscaled(c.rope_theta, dim); break;
    case RopeType::kLinear:
      out.inv_freq = Unscaled(c.rope_theta, dim);
      for (double& x : out.inv_freq) x /= r.factor;
      break;
    case RopeType::kDynamic: {
      const double len = static_cast<double>(std::max(seq_len, c.max_pos));
      const double base = c.rope_theta * std::pow(r.factor * len / c.max_pos - (r.factor - 1),
                                                  static_cast<double>(dim) / static_cast<double>(dim - 2));
      out.inv_freq = Unscaled(base, dim);
      break;
    }
    case RopeType::kYarn:
      out.inv_freq = Yarn(r, c.rope_theta, dim);
      out.attention_scaling = r.attention_factor;
      break;
    case RopeType::kLlama3: out.inv_freq = Llama3(r, c.rope_theta, dim); break;
  }
  PC_ASSERT(static_cast<int64_t>(out.inv_freq.size()) == dim / 2, "rope frequencies");
  return out;
}

}  // namespace pc
