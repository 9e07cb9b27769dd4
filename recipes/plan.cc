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
  // The method instance `step` names for linear `name` with `in` inputs (one instance per
  // distinct method and parameters).
  auto instance = [&](const ModuleStep& step, const std::string& name, int64_t in) {
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
      PC_CHECK(!p.nm() || p.m <= in, where, ": pattern '", p.Describe(), "' prunes windows of ", p.m,
               " consecutive input weights, but '", name, "' has only ", in,
               " inputs: it would prune nothing; use a smaller M or exclude the linear");
    }
    std::string key = info.name + "(" + params.Describe() + ")";
    auto it = instances.find(key);
    if (it == instances.end()) {
      out.plan.methods.push_back(info.create(params, where));
      out.plan.infos.push_back(&info);
      it = instances.emplace(key, static_cast<int>(out.plan.methods.size()) - 1).first;
    }
    return it->second;
  };
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
        e.method = instance(step, e.name, BlockLinearDims(model.config(), e.role).in);
      }
      out.plan.entries.push_back(std::move(e));
    }
  }
  // The output head: decided by an ignore pattern or an override that matches its name, like a
  // block linear, but never by the recipe's method alone (docs/RECIPES.md, "The output head").
  {
    PlanEntry& h = out.plan.head;
    const std::string head_weight = WeightOf(arch.lm_head.hf);
    h.name = head_weight.substr(0, head_weight.size() - 7);  // without ".weight"
    ModuleStep step = ResolveModule(recipe, h.name);
    if (step.override_index >= 0) override_hits[step.override_index]++;
    if (step.skip && (step.ignore_index >= 0 || step.override_index >= 0)) {
      h.skip_reason = step.skip_reason;
    } else if (step.override_index >= 0) {
      const std::string where = recipe.overrides[step.override_index].Describe();
      const ModelConfig& c = model.config();
      PC_CHECK(!c.tie_embeddings, where, " asks to compress the output head '", h.name, "', but this ", c.model_type,
               " model ties it to the token embedding (tie_word_embeddings): compressing it would compress the "
               "embedding too, and perpcomp does not untie on save; use a model with an untied head, or leave the "
               "head alone");
      PC_CHECK(c.embed_dim == c.hidden, where, " asks to compress the output head '", h.name, "', but this ",
               c.model_type, " model projects the final hidden state (", c.hidden, " wide) to ", c.embed_dim,
               " before the head (project_out), which the engine does not run: leave the head alone");
      h.method = instance(step, h.name, c.embed_dim);
      const Method& m = *out.plan.methods[h.method];
      PC_CHECK(!m.TransformsBlock(), where, ": ", m.name(), " cannot compress the output head '", h.name, "': ",
               m.name(), " searches scales over a block's linears and folds them into the norm or linear before "
               "them, and the head is outside every block; compress the head with rtn or gptq (an override with "
               "'method: rtn')");
    }
  }
  // An override that decides no linear is a mistake in the recipe (a typo in its pattern).
  auto names = [&]() {
    return Str("linear names look like '", out.plan.entries[0].name, "'; the output head is '", out.plan.head.name, "'");
  };
  for (size_t i = 0; i < recipe.overrides.size(); ++i) {
    if (override_hits[i] > 0) continue;
    bool matches_any = recipe.overrides[i].match.Matches(out.plan.head.name);
    for (const auto& e : out.plan.entries) matches_any = matches_any || recipe.overrides[i].match.Matches(e.name);
    PC_THROW(recipe.overrides[i].Describe(),
             (matches_any ? " matches only linears that an ignore pattern or an earlier "
                            "override already decides"
                          : " matches no linear"),
             " of this ", model.config().model_type, " model (", names(), ")");
  }
  // So is an ignore pattern that matches no linear and not the head.
  for (const Pattern& p : recipe.ignore) {
    bool matches_any = p.Matches(out.plan.head.name);
    for (const auto& e : out.plan.entries) matches_any = matches_any || p.Matches(e.name);
    PC_CHECK(matches_any, p.loc().Str(), ": ignore pattern '", p.pattern(), "' matches no linear of this ",
             model.config().model_type, " model (", names(), ")");
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
  out.calib_text = recipe.calibration.text;
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
  const PlanEntry& h = r.plan.head;
  os << "  " << h.name << std::string(width >= h.name.size() ? width - h.name.size() + 2 : 2, ' ')
     << (h.method >= 0 ? r.plan.methods[h.method]->Describe() : "skip: " + h.skip_reason) << "\n";
  os << compressed << " of " << r.plan.entries.size() << " block linears compressed"
     << (h.method >= 0 ? ", and the output head" : "") << "; next block fed with "
     << (r.plan.propagate_compressed ? "compressed" : "original") << " outputs\n";
  return os.str();
}

}  // namespace pc::recipes
