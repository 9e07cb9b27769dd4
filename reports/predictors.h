// reports/predictors.h — the candidate predictors of `perpcomp rank`: one number per run, taken from the run's
// measure tables (`sites`, `weights`; docs/HDF5.md "measure", definitions in docs/METRICS.md) and aggregated over
// layers. Every predictor is documented in docs/RANKING.md.
//
// Names: <quantity>.<form>.<site>.<kind>[.<frame>][.<aggregate>]
//   quantity  iso, par, perp (errors), p (signed parallel coefficient), cos (cosine), norm_ratio (‖ŷ‖/‖y‖)
//   form      mean (mean of the absolute form), mean_rel (mean of the relative form), ratio (ratio of sums);
//             cos and norm_ratio have only `mean`
//   site      block_output (the residual stream after each block), attn_update, mlp_update (the sublayer
//             updates), linear (the linear outputs; local only), final_norm, logits
//   kind      accumulated | local
//   frame     self | incoming — written for the updates only (the other sites are in the self frame);
//             cos and norm_ratio are the same in both frames, so they appear in the self frame only
//   aggregate over the layers' values (one value per layer; for `linear` the mean over the block's linears):
//             mean, final (the last layer), and the worst layer: max for errors, min for cos, maxdev for the
//             signed quantities (the layer value farthest from no damage: 0 for p, 1 for norm_ratio, sign kept).
//             final_norm and logits have one value and no aggregate.
// Weight space: weight.rel_fro.<mean|final|max> — ‖Ŵ−W‖_F/‖W‖_F of the block linears (`weights` table), the mean
// over each block's linears, aggregated over layers.
//   e.g. perp.ratio.block_output.accumulated.mean, iso.mean_rel.attn_update.local.incoming.max,
//        cos.mean.logits.accumulated, weight.rel_fro.final
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reports/stats.h"
#include "reports/sweep_results.h"

namespace pc::reports {

// How a predictor relates to damage. Signed quantities have no damage direction: their correlations are
// compared by |ρ|, and runs are ranked by the distance |v − centre|.
enum class Direction { kHigherIsWorse, kHigherIsBetter, kSigned };

struct PredictorInfo {
  std::string name;         // see the naming above
  std::string description;  // one sentence (docs/RANKING.md, --list-predictors, the report)
  Direction direction = Direction::kHigherIsWorse;
  double centre = 0;  // kSigned: the value of an undamaged model (0 for p, 1 for norm_ratio)
  std::string quantity, form, site, kind, frame, aggregate;  // frame "" for non-updates, aggregate "" if none
  std::string table;                                         // "sites" or "weights"
  std::string column;                                        // the table column ("ratio_perp", "rel_fro")

  bool layered() const { return !aggregate.empty(); }
  // The orientation and comparison rule for reports/stats.h (kSigned: kHigherIsWorse, compared by |ρ|).
  Orientation orientation() const;
  Compare compare() const;
};

// Every predictor perpcomp knows, in a fixed order (site context, then quantity and form, then aggregate).
const std::vector<PredictorInfo>& PredictorCatalogue();
// The predictor named `name`, or nullptr.
const PredictorInfo* FindPredictor(const std::string& name);

// The main predictors (scatter plots, the ranking table, the ⊥-vs-iso headline), in report order.
const std::vector<std::string>& MainPredictorNames();
// The (perp, iso) pairs of the headline comparison: ratio of sums at the block outputs (accumulated),
// aggregated as mean, final and max — the mean first.
const std::vector<std::pair<std::string, std::string>>& MainDifferencePairs();
// The iso predictor with the same form, site, kind, frame and aggregate as a perp predictor ("" for others).
std::string IsoSibling(const PredictorInfo& perp);

// Predictors whose names match `patterns`: comma-separated shell globs (fnmatch; `*` also matches '.'),
// a pattern starting with '!' excludes. Only exclusions: everything else is kept. "" keeps all.
// A pattern that matches no predictor is an error naming it (--predictors); so is an empty result.
std::vector<PredictorInfo> SelectPredictors(const std::vector<PredictorInfo>& from, const std::string& patterns);

// The per-layer values of one column at one (site, kind, frame) of a run's `sites` table: the rows with
// layer >= 0, grouped by layer (the mean over a layer's rows, e.g. its linears), layers ascending.
struct LayerValues {
  std::vector<int64_t> layers;
  std::vector<double> values;
};
LayerValues SiteLayerValues(const store::Table& sites, const std::string& site, const std::string& kind,
                            const std::string& frame, const std::string& column);

// The aggregate of per-layer values: "mean", "final", "max", "min", "maxdev" (about `centre`).
// NaN when `values` is empty; a NaN layer value makes mean/max/min/maxdev NaN.
double AggregateLayers(const std::vector<double>& values, const std::string& aggregate, double centre);

// One predictor of one run; `missing` says why there is no value (the tables lack the rows). A run read from
// saved tables (SweepRun::saved) has the value rank saved, or none when its folder has no such column.
struct PredictorValue {
  double value = 0;
  std::string missing;  // "" when value is set
};
PredictorValue ExtractPredictor(const PredictorInfo& p, const SweepRun& run);

// The selected predictors that every run has, with their values.
struct PredictorMatrix {
  std::vector<PredictorInfo> predictors;
  std::vector<std::vector<double>> values;  // [predictor][run]
  std::vector<std::string> left_out;        // one note per predictor left out: "name: run 'x' has no rows ..."
};
PredictorMatrix ExtractPredictors(const SweepResults& results, const std::vector<PredictorInfo>& selected);

}  // namespace pc::reports
