#pragma once
// The value columns of a measure file's `sites` and `weights` tables (docs/HDF5.md), declared once:
// the writer (metrics/results_h5.cc) fills each column from the member of the same name of
// SiteAggregate (metrics/site_stats.h) or WeightError (metrics/measure.h), and the reader
// (reports/predictors.cc) builds its predictor catalogue from the same lists. Header only, no
// LibTorch: the LibTorch-free reports library reads it through the pc_site_columns target.

#include <string>

// PC_SITE_VALUE_COLUMNS(X) calls X(member, form, quantity) for each error column of `sites`, in
// table order (after the key columns name, site, layer, role, kind, frame, dim, tokens,
// skipped_tokens, last_tokens):
//   member   — the column's name and the SiteAggregate member it holds;
//   form     — how the tokens are aggregated (one of kSiteForms below);
//   quantity — what is aggregated: iso ‖e‖², par p², perp ‖e⊥‖², p (signed parallel coefficient),
//              cos, norm_ratio ‖ŷ‖/‖y‖, ref_sq ‖y‖² (the denominator, not an error).
#define PC_SITE_VALUE_COLUMNS(X)                         \
  X(mean_rel_iso, "mean_rel", "iso")                     \
  X(mean_rel_par, "mean_rel", "par")                     \
  X(mean_rel_perp, "mean_rel", "perp")                   \
  X(mean_rel_p, "mean_rel", "p")                         \
  X(ratio_iso, "ratio", "iso")                           \
  X(ratio_par, "ratio", "par")                           \
  X(ratio_perp, "ratio", "perp")                         \
  X(ratio_p, "ratio", "p")                               \
  X(mean_iso, "mean", "iso")                             \
  X(mean_par, "mean", "par")                             \
  X(mean_perp, "mean", "perp")                           \
  X(mean_p, "mean", "p")                                 \
  X(mean_ref_sq, "mean", "ref_sq")                       \
  X(mean_cos, "mean", "cos")                             \
  X(mean_norm_ratio, "mean", "norm_ratio")               \
  X(mean_relnorm_iso, "mean_relnorm", "iso")             \
  X(mean_relnorm_par, "mean_relnorm", "par")             \
  X(mean_relnorm_perp, "mean_relnorm", "perp")           \
  X(last_relnorm_iso, "last_relnorm", "iso")             \
  X(last_relnorm_par, "last_relnorm", "par")             \
  X(last_relnorm_perp, "last_relnorm", "perp")

// PC_WEIGHT_VALUE_COLUMNS(X) calls X(member) for each value column of `weights`, in table order
// (after name, layer, role, numel): the WeightError member of the same name.
#define PC_WEIGHT_VALUE_COLUMNS(X) X(rel_fro) X(sparsity) X(ref_sparsity)

namespace pc {

struct SiteColumn {
  const char* name;
  const char* form;
  const char* quantity;
};
#define PC_SITE_COLUMN_ENTRY(member, form, quantity) {#member, form, quantity},
inline constexpr SiteColumn kSiteValueColumns[] = {PC_SITE_VALUE_COLUMNS(PC_SITE_COLUMN_ENTRY)};
#undef PC_SITE_COLUMN_ENTRY
inline constexpr int kNumSiteValueColumns = static_cast<int>(sizeof kSiteValueColumns / sizeof kSiteValueColumns[0]);

#define PC_WEIGHT_COLUMN_ENTRY(member) #member,
inline constexpr const char* kWeightValueColumns[] = {PC_WEIGHT_VALUE_COLUMNS(PC_WEIGHT_COLUMN_ENTRY)};
#undef PC_WEIGHT_COLUMN_ENTRY
inline constexpr int kNumWeightValueColumns =
    static_cast<int>(sizeof kWeightValueColumns / sizeof kWeightValueColumns[0]);

// The forms of aggregation over tokens, in the order the reader lists its predictors.
struct SiteForm {
  const char* name;
  const char* text;  // what it is
};
inline constexpr SiteForm kSiteForms[] = {
    {"mean", "mean over tokens of the absolute value"},
    {"mean_rel", "mean over tokens of the relative value (÷‖y‖², p÷‖y‖)"},
    {"ratio", "ratio of sums over tokens (Σ·/Σ‖y‖², p: Σp/Σ‖y‖)"},
    // The directional-decomposition paper's forms (iso, par, perp only): norms, not squares.
    {"mean_relnorm", "mean over tokens of ‖e_·‖/‖y‖ (not squared; the paper's form)"},
    {"last_relnorm", "mean over the last token of each window of ‖e_·‖/‖y‖ (not squared)"},
};

// The percentile columns of `sites`, after the value columns: p{level}_rel_{quantity} for each
// relative quantity (outer) and level (inner), SiteAggregate::percentile[quantity][level].
inline constexpr const char* kSitePercentileQuantities[3] = {"iso", "par", "perp"};
inline constexpr int kSitePercentileLevels[3] = {50, 90, 99};
inline std::string SitePercentileColumn(int quantity, int level) {
  return "p" + std::to_string(kSitePercentileLevels[level]) + "_rel_" + kSitePercentileQuantities[quantity];
}

}  // namespace pc
