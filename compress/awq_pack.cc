#include "compress/awq_pack.h"

#include <cmath>

#include "core/error.h"

namespace pc::awq {
namespace {
constexpr int kOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};
}

GridCodes RecoverGridCodes(const at::Tensor& w_in, int bits, int64_t g, double tol) {
  PC_ASSERT(w_in.dim() == 2 && g > 0 && w_in.size(1) % g == 0, "grid codes need whole groups");
  const int64_t out = w_in.size(0), in = w_in.size(1), groups = in / g, R = out * groups;
  const double qmax = std::pow(2.0, bits) - 1;
  at::Tensor w = w_in.to(at::kFloat).reshape({R, g});  // one group per row
  at::Tensor lo = w.amin(-1).clamp_max(0), hi = w.amax(-1).clamp_min(0);
  at::Tensor range = hi - lo;  // (R,)
  at::Tensor status = at::zeros({R}, at::kByte);  // 0 none, 1 on a grid, 2 exact with fp16 scales
  at::Tensor scale = at::ones({R}, at::kFloat), zero = at::zeros({R}, at::kFloat);
  at::Tensor codes = at::zeros({R, g}, at::kFloat), resid = at::zeros({R}, at::kFloat);
  for (int k = static_cast<int>(qmax); k >= 1; --k) {
    at::Tensor rows = (status < 2).nonzero().reshape({-1});
    if (rows.numel() == 0) break;
    at::Tensor wr = w.index_select(0, rows), rr = range.index_select(0, rows), lr = lo.index_select(0, rows);
    at::Tensor s = at::where(rr > 0, rr / static_cast<float>(k), at::ones_like(rr));  // an all-zero group: s = 1
    at::Tensor z = at::round(-lr / s).clamp(0, qmax);
    at::Tensor qf = wr / s.unsqueeze(1) + z.unsqueeze(1);
    at::Tensor q = at::round(qf);
    at::Tensor r = (qf - q).abs().amax(-1);
    at::Tensor on_grid = (q >= 0).all(-1).logical_and((q <= qmax).all(-1)).logical_and(r <= tol);
    at::Tensor s16 = s.to(at::kHalf).to(at::kFloat);
    at::Tensor exact = on_grid.logical_and(((q - z.unsqueeze(1)) * s16.unsqueeze(1) == wr).all(-1));
    at::Tensor st = status.index_select(0, rows);
    at::Tensor take = exact.logical_or(on_grid.logical_and(st == 0));  // first grid, or an exact one
    at::Tensor idx = rows.masked_select(take), sel = take.nonzero().reshape({-1});
    if (idx.numel() > 0) {
      scale.index_copy_(0, idx, s.index_select(0, sel));
      zero.index_copy_(0, idx, z.index_select(0, sel));
      codes.index_copy_(0, idx, q.index_select(0, sel));
      resid.index_copy_(0, idx, r.index_select(0, sel));
      status.index_copy_(0, idx, (exact.to(at::kByte) + 1).index_select(0, sel));
    }
  }
  GridCodes out_codes;
  out_codes.groups = R;
  at::Tensor bad = status == 0;
  out_codes.bad_groups = bad.sum().item<int64_t>();
  if (out_codes.bad_groups > 0) {
    int64_t first = bad.nonzero()[0][0].item<int64_t>();
    out_codes.first_bad_row = first / groups;
    out_codes.first_bad_group = first % groups;
  }
  out_codes.exact_f16_groups = (status == 2).sum().item<int64_t>();
  out_codes.max_residual = resid.max().item<double>();
  out_codes.codes = codes.to(at::kInt).reshape({out, in});
  out_codes.zeros = zero.to(at::kInt).reshape({out, groups});
  out_codes.scales = scale.reshape({out, groups});
  return out_codes;
}

at::Tensor PackAwqOrder(const at::Tensor& v) {
  PC_ASSERT(v.dim() == 2 && v.size(1) % 8 == 0, "packing needs columns in multiples of 8");
  at::Tensor vv = v.to(at::kLong).reshape({v.size(0), v.size(1) / 8, 8});
  at::Tensor packed = at::zeros({v.size(0), v.size(1) / 8}, at::kLong);
  for (int i = 0; i < 8; ++i) packed.add_(vv.select(2, kOrder[i]).bitwise_and(15) * (int64_t{1} << (4 * i)));
  // As int32 bit patterns (two's complement).
  packed = packed - (packed >= (int64_t{1} << 31)).to(at::kLong) * (int64_t{1} << 32);
  return packed.to(at::kInt);
}

at::Tensor UnpackAwqOrder(const at::Tensor& packed) {
  at::Tensor p = packed.to(at::kLong).bitwise_and(static_cast<int64_t>(0xFFFFFFFFLL));  // (rows, c)
  at::Tensor out = at::empty({packed.size(0), packed.size(1), 8}, at::kInt);
  for (int i = 0; i < 8; ++i) out.select(2, kOrder[i]).copy_(p.div(int64_t{1} << (4 * i), "floor").bitwise_and(15));
  return out.reshape({packed.size(0), packed.size(1) * 8});
}

}  // namespace pc::awq
