// perpcomp allocate --sensitivity FILE --budget bits=3.5|sparsity=0.5 [--predictor NAME] --out RECIPE.yaml
//                   [--llm-compressor FILE] [--llama-quantize FILE] [--uniform CANDIDATE]
#include <cstdio>
#include <map>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "recipes/allocate.h"
#include "recipes/param_value.h"
#include "recipes/recipe_spec.h"
#include "tools/cli.h"

namespace pc::cli {

int RunAllocate(const std::vector<std::string>& args) {
  CommonOptions common;
  std::string sens, budget_text, predictor, out, name, llmc, llamaq, uniform;
  int64_t steps = 0;
  bool overwrite = false;
  po::options_description desc("options");
  desc.add_options()
    ("sensitivity", po::value<std::string>(&sens), "sensitivity file (perpcomp sensitivity --out)")
    ("budget", po::value<std::string>(&budget_text), "bits=B (average stored bits per weight) or sparsity=S")
    ("predictor", po::value<std::string>(&predictor)->default_value("perp"),
     "damage to minimise: perp, par, iso, acc-perp, acc-par, acc-iso, kl, weight, cos-order")
    ("uniform", po::value<std::string>(&uniform), "instead of solving, put every unit on this candidate (a baseline)")
    ("steps", po::value<int64_t>(&steps)->default_value(100000), "budget quanta of the exact dynamic programme")
    ("out", po::value<std::string>(&out), "the plan as a perpcomp recipe (YAML)")
    ("name", po::value<std::string>(&name), "the recipe's name (default alloc-<predictor>-<budget>)")
    ("llm-compressor", po::value<std::string>(&llmc), "also export the plan as an llm-compressor recipe (YAML)")
    ("llama-quantize", po::value<std::string>(&llamaq), "also export llama-quantize --tensor-type arguments (bits budgets)")
    ("overwrite", po::bool_switch(&overwrite), "replace existing outputs");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("allocate", "--sensitivity FILE --budget bits=3.5|sparsity=0.5 --out RECIPE.yaml", desc, args, vm, nullptr,
             &common)) {
    return 0;
  }
  PC_CHECK(!sens.empty(), "--sensitivity is required");
  PC_CHECK(!budget_text.empty(), "--budget is required (bits=3.5 or sparsity=0.5)");
  PC_CHECK(!out.empty(), "--out is required (the recipe file)");
  const recipes::Budget budget = recipes::ParseBudget(budget_text);
  const recipes::SensitivityTable t = recipes::ReadSensitivity(sens);
  recipes::Allocation a;
  if (uniform.empty()) {
    a = recipes::Allocate(t, budget, predictor, steps);
  } else {
    int c = -1;
    std::vector<std::string> names;
    for (size_t i = 0; i < t.candidates.size(); ++i) {
      names.push_back(t.candidates[i].name);
      if (t.candidates[i].name == uniform) c = static_cast<int>(i);
    }
    PC_CHECK(c >= 0, "--uniform '", uniform, "' is not a candidate of ", sens, " (candidates: ", Join(names, ", "), ")");
    a = recipes::Uniform(t, budget, predictor, c);
  }
  if (name.empty()) {
    name = Str("alloc-", uniform.empty() ? predictor : "uniform-" + uniform, "-",
               budget.kind == recipes::Budget::Kind::kBits ? "bits" : "sparsity", recipes::ShortestDouble(budget.value));
  }
  const std::string yaml = recipes::AllocationRecipeYaml(t, a, name);
  recipes::ParseRecipeText(yaml, out);  // what compress will read: refuse to write a recipe it would not
  std::vector<std::pair<std::string, std::string>> files = {{out, yaml}};
  if (!llmc.empty()) files.emplace_back(llmc, recipes::ExportLlmCompressor(t, a));
  recipes::LlamaQuantizeExport lq;
  if (!llamaq.empty()) {
    lq = recipes::ExportLlamaQuantize(t, a);
    files.emplace_back(llamaq, lq.args);
  }
  for (const auto& [path, text] : files) {
    fs::CheckOutputPath(path, overwrite, path == out ? "--out" : "--llm-compressor/--llama-quantize", fs::OutputKind::kFile);
    fs::CheckNotAnInput(path, "--out", {{"--sensitivity", sens}});
  }
  for (const auto& [path, text] : files) fs::WriteFileAtomic(path, text);
  std::map<std::string, int64_t> params_by;
  int64_t total = 0;
  for (size_t u = 0; u < a.choice.size(); ++u) {
    params_by[t.candidates[a.choice[u]].name] += t.units[u].params;
    total += t.units[u].params;
  }
  std::printf("%s under %s: predicted %s damage %.6g; average %s %.4f\n", uniform.empty() ? "plan" : "uniform plan",
              budget.Describe().c_str(), predictor.c_str(), a.damage,
              budget.kind == recipes::Budget::Kind::kBits ? "bits" : "sparsity", a.average);
  for (const auto& [c, n] : params_by) {
    std::printf("  %-16s %6.2f%% of the weights\n", c.c_str(), 100.0 * static_cast<double>(n) / static_cast<double>(total));
  }
  if (!llamaq.empty()) {
    if (!lq.checked) {
      log::Warn("allocate", sens, " has no in_features column (an older sensitivity file): the llama.cpp types are "
                "not checked against llama.cpp's block sizes");
    }
    for (const std::string& f : lq.fallbacks) log::Warn("allocate", "llama-quantize: ", f);
    if (!lq.fallbacks.empty()) {
      log::Warn("allocate", lq.fallbacks.size(), " linear(s) get a wider llama.cpp type than the plan's bits (written "
                "so in ", llamaq, ")");
    }
    std::printf("llama.cpp: %.4f bits per weight of these linears as llama-quantize stores them (block scales "
                "included)\n", lq.bits_per_weight);
  }
  for (const auto& [path, text] : files) std::printf("wrote %s\n", path.c_str());
  return 0;
}

}  // namespace pc::cli
