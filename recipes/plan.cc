#include "recipes/plan.h"

#include <map>
#include <sstream>

#include "compress/sparsity.h"
#include "core/error.h"
#include "core/strings.h"
#include "model/sizes.h"

namespace pc::recipes {

ParamScalar ToScalar(const ParamValue& v, const std::string& what) {
  switch (v.type()) {
    case ParamValue::Type::kInt:
      return v.AsInt(what);
    case ParamValue::Type::kDouble:
      return v.AsDouble(what);
    case ParamValue::Type::kBool:
      return v.AsBool(what);
    case ParamValue::Type::kString:
      return v.AsString(what);
    case ParamValue::Type::kList:
      break;
  }
  PC_THROW(v.loc().Str(), ": ", what, " is a list; a recipe parameter takes one value (grids belong in sweep files)");
}

ResolvedRecipe ResolvePlan(const RecipeSpec& recipe, const Model& model, const MethodRegistry& registry) {
  ResolvedRecipe out;
  const MethodInfo& main = registry.Get(recipe.method.value, recipe.method.loc.Str());
  out.method = main.name;
  out.family = main.family;
  std::map<std::string, int> instances;  // "method(params)" -> index
  std::vector<int> override_hits(recipe.overrides.size(), 0);
  const ArchSpec& arch = model.arch();
  for (int layer = 0; layer < model.num_layers(); ++layer) {
    for (size_t i = 0; i < arch.linears.size(); ++i) {
      PlanEntry e;
      e.layer = layer;
      e.index = static_cast<int>(i);
      e.role = arch.linears[i].role;
      e.name = ExpandName(arch.linears[i].name.hf, layer);
      ModuleStep step = ResolveModule(recipe, e.name);
      if (step.override_index >= 0) override_hits[step.override_index]++;
      if (step.skip) {
        e.skip_reason = step.skip_reason;
      } else {
        const std::string where = step.method_loc.Str();
        const MethodInfo& info = registry.Get(step.method, where);
        std::map<std::string, ParamScalar> given;
        std::map<std::string, std::string> locs;
        for (const auto& [k, v] : step.params) {
          given[k] = ToScalar(v, "'" + k + "'");
          locs[k] = v.loc().Str();
        }
        MethodParams params = ResolveParams(info.name, info.params, given, locs, where);
        // An N:M pattern needs at least one window of M inputs, else the linear is left dense (exit 0, nothing pruned).
        if (params.Has("pattern") && params.Has("sparsity")) {
          const SparsityPattern p = SparsityFromParams(params, where);
          const int64_t in = BlockLinearDims(model.config(), e.role).in;
          PC_CHECK(!p.nm() || p.m <= in, where, ": pattern '", p.Describe(), "' prunes windows of ", p.m,
                   " consecutive input weights, but '", e.name, "' has only ", in,
                   " inputs: it would prune nothing; use a smaller M or exclude the linear");
        }
        std::string key = info.name + "(" + params.Describe() + ")";
        auto it = instances.find(key);
        if (it == instances.end()) {
          out.plan.methods.push_back(info.create(params, where));
          out.plan.infos.push_back(&info);
          it = instances.emplace(key, static_cast<int>(out.plan.methods.size()) - 1).first;
        }
        e.method = it->second;
      }
      out.plan.entries.push_back(std::move(e));
    }
  }
  // An override that decides no linear is a mistake in the recipe (a typo in its pattern).
  for (size_t i = 0; i < recipe.overrides.size(); ++i) {
    if (override_hits[i] > 0) continue;
    bool matches_any = false;
    for (const auto& e : out.plan.entries) matches_any = matches_any || recipe.overrides[i].match.Matches(e.name);
    PC_THROW(recipe.overrides[i].Describe(),
             (matches_any ? " matches only linears that an ignore pattern or an earlier "
                            "override already decides"
                          : " matches no linear"),
             " of this ", model.config().model_type, " model (linear names look like '", out.plan.entries[0].name,
             "')");
  }
  // So is an ignore pattern that matches no linear. The output head is not a plan entry: it is
  // never compressed, so an ignore of it (which the shipped recipes used to carry) is refused too.
  for (const Pattern& p : recipe.ignore) {
    bool matches_any = false;
    for (const auto& e : out.plan.entries) matches_any = matches_any || p.Matches(e.name);
    const std::string head = WeightOf(arch.lm_head.hf);
    PC_CHECK(matches_any, p.loc().Str(), ": ignore pattern '", p.pattern(), "' matches no linear of this ",
             model.config().model_type, " model (linear names look like '", out.plan.entries[0].name, "'",
             p.Matches(head.substr(0, head.size() - 7))
                 ? "; the output head is never compressed, so it needs no ignore pattern: remove it"
                 : "",
             ")");
  }
  out.plan.propagate_compressed =
      recipe.propagate ? recipe.propagate->value == Propagate::kCompressed : main.default_propagate_compressed;
  // Calibration defaults: the recipe's, else the method's conventions (docs/RECIPES.md).
  CalibSpec& c = out.calib;
  c.windowing = ParseWindowing(main.default_windowing, "method " + main.name);
  if (recipe.calibration.windowing) {
    c.windowing =
        recipe.calibration.windowing->value == recipes::Windowing::kAwq ? pc::Windowing::kAwq : pc::Windowing::kRandom;
  }
  if (recipe.calibration.samples) c.samples = recipe.calibration.samples->value;
  if (recipe.calibration.seq_len) c.seq_len = recipe.calibration.seq_len->value;
  if (recipe.calibration.seed) c.seed = static_cast<uint64_t>(recipe.calibration.seed->value);
  if (recipe.calibration.text_field) c.text_field = recipe.calibration.text_field->value;
  return out;
}

std::string FormatPlan(const ResolvedRecipe& r, const Model& model) {
  std::ostringstream os;
  size_t width = 0;
  for (const auto& e : r.plan.entries) width = std::max(width, e.name.size());
  int compressed = 0;
  for (const auto& e : r.plan.entries) {
    os << "  " << e.name << std::string(width - e.name.size() + 2, ' ');
    if (e.method >= 0) {
      os << r.plan.methods[e.method]->Describe();
      ++compressed;
    } else {
      os << "skip: " << e.skip_reason;
    }
    os << "\n";
  }
  const std::string head = WeightOf(model.arch().lm_head.hf);
  os << "  " << head.substr(0, head.size() - 7)
     << std::string(width + 9 > head.size() ? width + 9 - head.size() : 2, ' ')
     << "skip: the output head is not compressed (as llm-awq, Wanda and GPTQ leave it)\n";
  os << compressed << " of " << r.plan.entries.size() << " block linears compressed; next block fed with "
     << (r.plan.propagate_compressed ? "compressed" : "original") << " outputs\n";
  return os.str();
}

}  // namespace pc::recipes
