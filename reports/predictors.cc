#include "reports/predictors.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.h"
#include "core/strings.h"
#include "metrics/site_columns.h"

namespace pc::reports {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Quantity {
  const char* name;
  Direction direction;
  double centre;
  const char* text;  // what it is
};
const Quantity kQuantities[] = {
    {"iso", Direction::kHigherIsWorse, 0, "isotropic error ‖e‖²"},
    {"par", Direction::kHigherIsWorse, 0, "parallel error p² (along the reference direction)"},
    {"perp", Direction::kHigherIsWorse, 0, "perpendicular error ‖e − p·u‖²"},
    {"p", Direction::kSigned, 0, "signed parallel coefficient p = e·u (> 0: grew along its direction)"},
    {"cos", Direction::kHigherIsBetter, 0, "cosine between the compressed and the reference vector"},
    {"norm_ratio", Direction::kSigned, 1, "norm ratio ‖ŷ‖/‖y‖"},
};

// The sites table's column of a form and a quantity (metrics/site_columns.h), or nullptr when
// the table has none (p has no norm forms; cos and norm_ratio only a mean).
const char* SiteColumnOf(const std::string& form, const std::string& quantity) {
  for (const SiteColumn& c : kSiteValueColumns) {
    if (form == c.form && quantity == c.quantity) return c.name;
  }
  return nullptr;
}

struct Context {
  const char* site;
  const char* kind;
  const char* frame;  // "" outside the updates
  bool layered;
  const char* text;
};
const Context kContexts[] = {
    {"block_output", "accumulated", "", true, "the residual stream after each block, accumulated"},
    {"block_output", "local", "", true,
     "the residual stream after each block, local (the block on the reference's input)"},
    {"attn_update", "accumulated", "self", true, "the attention update, accumulated, self frame"},
    {"attn_update", "accumulated", "incoming", true,
     "the attention update, accumulated, incoming frame (direction: the incoming residual; relative to ‖Δ‖²)"},
    {"attn_update", "local", "self", true, "the attention update, local, self frame"},
    {"attn_update", "local", "incoming", true, "the attention update, local, incoming frame"},
    {"mlp_update", "accumulated", "self", true, "the MLP update, accumulated, self frame"},
    {"mlp_update", "accumulated", "incoming", true, "the MLP update, accumulated, incoming frame"},
    {"mlp_update", "local", "self", true, "the MLP update, local, self frame"},
    {"mlp_update", "local", "incoming", true, "the MLP update, local, incoming frame"},
    {"block_update", "accumulated", "self", true,
     "the whole block update (block output − block input), accumulated, self frame"},
    {"block_update", "local", "self", true,
     "the whole block update (block output − block input), local (the block on the reference's input), self frame"},
    {"linear", "local", "", true, "the linear outputs, local (each layer: the mean over the block's linears)"},
    {"final_norm", "accumulated", "", false, "the final norm's output, accumulated"},
    {"final_norm", "local", "", false, "the final norm's output, local"},
    {"logits", "accumulated", "", false, "the logits, accumulated"},
    {"logits", "local", "", false, "the logits, local"},
};

// The worst-layer aggregate of a direction.
const char* WorstAggregate(Direction d) {
  switch (d) {
    case Direction::kHigherIsWorse:
      return "max";
    case Direction::kHigherIsBetter:
      return "min";
    case Direction::kSigned:
      return "maxdev";
  }
  return "max";
}

std::string AggregateText(const std::string& aggregate) {
  if (aggregate == "mean") return "mean over layers";
  if (aggregate == "final") return "the final layer";
  if (aggregate == "max") return "max over layers";
  if (aggregate == "min") return "min over layers (the worst layer)";
  if (aggregate == "maxdev") return "the layer value farthest from no damage (sign kept)";
  return aggregate;
}

std::vector<PredictorInfo> BuildCatalogue() {
  std::vector<PredictorInfo> out;
  for (const Context& c : kContexts) {
    for (const Quantity& q : kQuantities) {
      const std::string qn = q.name;
      std::vector<std::pair<std::string, std::string>> forms;  // (form, column), in kSiteForms' order
      for (const SiteForm& f : kSiteForms) {
        if (const char* column = SiteColumnOf(f.name, qn)) forms.push_back({f.name, column});
      }
      PC_ASSERT(!forms.empty(), "predictor quantity ", qn, " has no column in metrics/site_columns.h");
      const bool single_form = forms.size() == 1;  // cos, norm_ratio: a mean over tokens only
      if (single_form && std::string(c.frame) == "incoming") continue;  // identical to the self frame
      for (const auto& [form, column] : forms) {
        std::vector<std::string> aggregates;
        if (c.layered)
          aggregates = {"mean", "final", WorstAggregate(q.direction)};
        else
          aggregates = {""};
        for (const std::string& agg : aggregates) {
          PredictorInfo p;
          p.quantity = qn;
          p.form = form;
          p.site = c.site;
          p.kind = c.kind;
          p.frame = c.frame;
          p.aggregate = agg;
          p.direction = q.direction;
          p.centre = q.centre;
          p.table = "sites";
          p.column = column;
          p.name = qn + "." + form + "." + c.site + "." + c.kind + (p.frame.empty() ? "" : "." + p.frame) +
                   (agg.empty() ? "" : "." + agg);
          std::string form_text = "mean over tokens";
          for (const SiteForm& f : kSiteForms) {
            if (!single_form && form == f.name) form_text = f.text;
          }
          p.description = Str(q.text, ", ", form_text, " (column ", column, "), at ", c.text,
                              agg.empty() ? "" : ", " + AggregateText(agg));
          out.push_back(p);
        }
      }
    }
  }
  PC_ASSERT(std::any_of(std::begin(kWeightValueColumns), std::end(kWeightValueColumns),
                        [](const char* c) { return std::string(c) == "rel_fro"; }),
            "the weights table has no rel_fro column (metrics/site_columns.h)");
  for (const char* agg : {"mean", "final", "max"}) {
    PredictorInfo p;
    p.quantity = "weight";
    p.form = "rel_fro";
    p.site = "weights";
    p.aggregate = agg;
    p.table = "weights";
    p.column = "rel_fro";
    p.name = std::string("weight.rel_fro.") + agg;
    p.description =
        Str("weight-space relative Frobenius error ‖Ŵ−W‖_F/‖W‖_F of the block linears (the mean "
            "over each block's linears), ",
            AggregateText(agg));
    out.push_back(p);
  }
  return out;
}

// Matches a comma-separated pattern list entry against a name.
bool Matches(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

}  // namespace

Orientation PredictorInfo::orientation() const {
  return direction == Direction::kHigherIsBetter ? Orientation::kHigherIsBetter : Orientation::kHigherIsWorse;
}

Compare PredictorInfo::compare() const {
  return direction == Direction::kSigned ? Compare::kAbsolute : Compare::kOriented;
}

const std::vector<PredictorInfo>& PredictorCatalogue() {
  static const std::vector<PredictorInfo> catalogue = BuildCatalogue();
  return catalogue;
}

const PredictorInfo* FindPredictor(const std::string& name) {
  for (const PredictorInfo& p : PredictorCatalogue()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const std::vector<std::string>& MainPredictorNames() {
  static const std::vector<std::string> names = {"iso.ratio.block_output.accumulated.mean",
                                                 "par.ratio.block_output.accumulated.mean",
                                                 "perp.ratio.block_output.accumulated.mean",
                                                 "iso.ratio.block_output.accumulated.final",
                                                 "perp.ratio.block_output.accumulated.final",
                                                 "iso.ratio.block_output.accumulated.max",
                                                 "perp.ratio.block_output.accumulated.max",
                                                 "cos.mean.block_output.accumulated.mean",
                                                 "weight.rel_fro.mean"};
  return names;
}

const std::vector<std::pair<std::string, std::string>>& MainDifferencePairs() {
  static const std::vector<std::pair<std::string, std::string>> pairs = {
      {"perp.ratio.block_output.accumulated.mean", "iso.ratio.block_output.accumulated.mean"},
      {"perp.ratio.block_output.accumulated.final", "iso.ratio.block_output.accumulated.final"},
      {"perp.ratio.block_output.accumulated.max", "iso.ratio.block_output.accumulated.max"},
      // The directional-decomposition paper's frame: the attention, MLP and whole-block updates, one
      // layer compressed on the dense input (local), against the dense update itself, ‖e⊥‖/‖Δ‖ on
      // the last token of each window.
      {"perp.last_relnorm.attn_update.local.self.mean", "iso.last_relnorm.attn_update.local.self.mean"},
      {"perp.last_relnorm.mlp_update.local.self.mean", "iso.last_relnorm.mlp_update.local.self.mean"},
      {"perp.last_relnorm.block_update.local.self.mean", "iso.last_relnorm.block_update.local.self.mean"}};
  return pairs;
}

std::string IsoSibling(const PredictorInfo& perp) {
  if (perp.quantity != "perp") return "";
  return "iso" + perp.name.substr(4);
}

std::vector<PredictorInfo> SelectPredictors(const std::vector<PredictorInfo>& from, const std::string& patterns) {
  if (Trim(patterns).empty()) return from;
  std::vector<std::string> include, exclude;
  for (const std::string& raw : Split(patterns, ',')) {
    const std::string p = Trim(raw);
    PC_CHECK(!p.empty(), "--predictors '", patterns, "': an empty pattern (patterns are separated by commas)");
    if (p[0] == '!') {
      PC_CHECK(p.size() > 1, "--predictors '", patterns, "': '!' needs a pattern after it");
      exclude.push_back(p.substr(1));
    } else {
      include.push_back(p);
    }
  }
  for (const auto* list : {&include, &exclude}) {
    for (const std::string& p : *list) {
      const bool any =
          std::any_of(from.begin(), from.end(), [&](const PredictorInfo& q) { return Matches(p, q.name); });
      PC_CHECK(any, "--predictors: the pattern '", p,
               "' matches no predictor (see --list-predictors; names look "
               "like perp.ratio.block_output.accumulated.mean)");
    }
  }
  std::vector<PredictorInfo> out;
  for (const PredictorInfo& q : from) {
    const bool in = include.empty() || std::any_of(include.begin(), include.end(),
                                                   [&](const std::string& p) { return Matches(p, q.name); });
    const bool out_ =
        std::any_of(exclude.begin(), exclude.end(), [&](const std::string& p) { return Matches(p, q.name); });
    if (in && !out_) out.push_back(q);
  }
  PC_CHECK(!out.empty(), "--predictors '", patterns, "' leaves no predictor");
  return out;
}

LayerValues SiteLayerValues(const store::Table& sites, const std::string& site, const std::string& kind,
                            const std::string& frame, const std::string& column) {
  const auto& s = sites.Get<std::string>("site");
  const auto& k = sites.Get<std::string>("kind");
  const auto& f = sites.Get<std::string>("frame");
  const auto& layer = sites.Get<int64_t>("layer");
  const auto& v = sites.Get<double>(column);
  const std::string want_frame = frame.empty() ? "self" : frame;
  std::map<int64_t, std::pair<double, int>> sums;  // layer -> (sum, count)
  for (size_t i = 0; i < s.size(); ++i) {
    if (layer[i] < 0 || s[i] != site || k[i] != kind || f[i] != want_frame) continue;
    auto& e = sums[layer[i]];
    e.first += v[i];
    e.second += 1;
  }
  LayerValues out;
  for (const auto& [l, e] : sums) {
    out.layers.push_back(l);
    out.values.push_back(e.first / double(e.second));
  }
  return out;
}

double AggregateLayers(const std::vector<double>& values, const std::string& aggregate, double centre) {
  if (values.empty()) return kNaN;
  const bool any_nan = std::any_of(values.begin(), values.end(), [](double v) { return std::isnan(v); });
  if (aggregate == "final") return values.back();
  if (any_nan) return kNaN;
  if (aggregate == "mean") {
    double sum = 0;
    for (double v : values) sum += v;
    return sum / double(values.size());
  }
  if (aggregate == "max") return *std::max_element(values.begin(), values.end());
  if (aggregate == "min") return *std::min_element(values.begin(), values.end());
  if (aggregate == "maxdev") {
    double best = values.front();
    for (double v : values) {
      if (std::fabs(v - centre) > std::fabs(best - centre)) best = v;
    }
    return best;
  }
  PC_THROW("unknown layer aggregate '", aggregate, "' (known: mean, final, max, min, maxdev)");
}

PredictorValue ExtractPredictor(const PredictorInfo& p, const SweepRun& run) {
  PredictorValue out;
  if (run.saved) {
    const auto it = run.saved->predictors.find(p.name);
    if (it == run.saved->predictors.end()) {
      out.missing = Str("not in ", run.saved->folder, "/predictor_values.csv (run '", run.name, "')");
    } else {
      out.value = it->second;
    }
    return out;
  }
  if (p.table == "weights") {
    if (!run.weights) {
      out.missing = Str("run '", run.name, "' has no weights table");
      return out;
    }
    const auto& layer = run.weights->Get<int64_t>("layer");
    const auto& v = run.weights->Get<double>(p.column);
    std::map<int64_t, std::pair<double, int>> sums;
    for (size_t i = 0; i < layer.size(); ++i) {
      if (layer[i] < 0) continue;  // lm_head
      sums[layer[i]].first += v[i];
      sums[layer[i]].second += 1;
    }
    std::vector<double> values;
    for (const auto& [l, e] : sums) values.push_back(e.first / double(e.second));
    if (values.empty()) {
      out.missing = Str("run '", run.name, "' has no block linears in its weights table");
      return out;
    }
    out.value = AggregateLayers(values, p.aggregate, p.centre);
    return out;
  }
  PC_CHECK(run.sites.Has(p.column), "run '", run.name, "': the sites table has no column '", p.column,
           "' (needed by predictor ", p.name, ")");
  if (p.layered()) {
    const LayerValues lv = SiteLayerValues(run.sites, p.site, p.kind, p.frame, p.column);
    if (lv.values.empty()) {
      out.missing = Str("run '", run.name, "' has no rows for site ", p.site, " (", p.kind,
                        p.frame.empty() ? "" : ", " + p.frame, ")");
      return out;
    }
    out.value = AggregateLayers(lv.values, p.aggregate, p.centre);
    return out;
  }
  const auto& s = run.sites.Get<std::string>("site");
  const auto& k = run.sites.Get<std::string>("kind");
  const auto& v = run.sites.Get<double>(p.column);
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == p.site && k[i] == p.kind) {
      out.value = v[i];
      return out;
    }
  }
  out.missing = Str("run '", run.name, "' has no rows for site ", p.site, " (", p.kind, ")");
  return out;
}

PredictorMatrix ExtractPredictors(const SweepResults& results, const std::vector<PredictorInfo>& selected) {
  PredictorMatrix m;
  for (const PredictorInfo& p : selected) {
    std::vector<double> values;
    std::string missing;
    for (const SweepRun& run : results.runs) {
      const PredictorValue v = ExtractPredictor(p, run);
      if (!v.missing.empty()) {
        missing = v.missing;
        break;
      }
      values.push_back(v.value);
    }
    if (!missing.empty()) {
      m.left_out.push_back(p.name + ": " + missing);
      continue;
    }
    m.predictors.push_back(p);
    m.values.push_back(std::move(values));
  }
  return m;
}

}  // namespace pc::reports
