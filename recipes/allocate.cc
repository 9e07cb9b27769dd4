#include "recipes/allocate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"
#include "model/arch.h"
#include "recipes/param_value.h"
#include "recipes/yaml_doc.h"
#include "store/file.h"

namespace pc::recipes {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(',', start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// "^model\.layers\.3\.self_attn\.q_proj$": the module name as an anchored regex.
std::string AnchoredRegex(const std::string& name) {
  std::string out = "^";
  for (char c : name) {
    if (std::string(".^$|()[]{}*+?\\").find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out + "$";
}

std::string YamlScalar(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) {
    std::string s = ShortestDouble(v.get<double>());
    if (s.find_first_of(".eE") == std::string::npos && s.find("inf") == std::string::npos) s += ".0";  // stays a double
    return s;
  }
  return yaml::QuoteString(v.get<std::string>());
}

std::string FlowParams(const std::string& params_json) {
  const nlohmann::json p = nlohmann::json::parse(params_json);
  std::string out = "{";
  bool first = true;
  for (auto it = p.begin(); it != p.end(); ++it) {
    out += (first ? "" : ", ") + it.key() + ": " + YamlScalar(it.value());
    first = false;
  }
  return out + "}";
}

const SensitivityCandidate& Cand(const SensitivityTable& t, int c) { return t.candidates.at(static_cast<size_t>(c)); }

}  // namespace

SensitivityTable ReadSensitivity(const std::string& path) {
  store::File f = store::File::OpenRead(path, store::kind::kSensitivity);
  const store::Group root = f.root();
  SensitivityTable t;
  t.path = path;
  t.model = root.GetAttr<std::string>("model");
  t.model_type = root.GetAttr<std::string>("model_type");
  t.calibration_json = root.GetAttr<std::string>("calibration_json");
  t.forward_equivalents = root.GetAttr<double>("forward_equivalents");
  const store::Table cands = root.ReadTable("candidates");
  for (int64_t i = 0; i < cands.rows(); ++i) {
    t.candidates.push_back({cands.Get<std::string>("name")[i], cands.Get<std::string>("method")[i],
                            cands.Get<std::string>("family")[i], cands.Get<std::string>("params_json")[i]});
  }
  const store::Table units = root.ReadTable("units");
  for (int64_t i = 0; i < units.rows(); ++i) {
    SensitivityUnit u;
    u.name = units.Get<std::string>("name")[i];
    u.layer = static_cast<int>(units.Get<int64_t>("layer")[i]);
    u.members = SplitComma(units.Get<std::string>("members")[i]);
    u.params = units.Get<int64_t>("params")[i];
    if (units.Has("in_features")) {
      for (const std::string& v : SplitComma(units.Get<std::string>("in_features")[i])) u.in_features.push_back(std::stoll(v));
    }
    t.units.push_back(std::move(u));
  }
  PC_CHECK(!t.units.empty() && !t.candidates.empty(), path, ": no units or no candidates");
  t.cells.assign(t.units.size(), std::vector<SensitivityCell>(t.candidates.size()));
  std::vector<std::vector<bool>> seen(t.units.size(), std::vector<bool>(t.candidates.size(), false));
  const store::Table c = root.ReadTable("costs");
  const auto& ui = c.Get<int64_t>("unit_index");
  const auto& ci = c.Get<int64_t>("candidate_index");
  for (int64_t r = 0; r < c.rows(); ++r) {
    PC_CHECK(ui[r] >= 0 && ui[r] < static_cast<int64_t>(t.units.size()) && ci[r] >= 0 &&
                 ci[r] < static_cast<int64_t>(t.candidates.size()),
             path, ": /costs row ", r, " names unit ", ui[r], " / candidate ", ci[r], ", out of range");
    SensitivityCell& x = t.cells[ui[r]][ci[r]];
    x.bits = c.Get<double>("bits")[r];
    x.sparsity = c.Get<double>("sparsity")[r];
    x.iso = c.Get<double>("iso")[r];
    x.par = c.Get<double>("par")[r];
    x.perp = c.Get<double>("perp")[r];
    x.acc_iso = c.Get<double>("acc_iso")[r];
    x.acc_par = c.Get<double>("acc_par")[r];
    x.acc_perp = c.Get<double>("acc_perp")[r];
    x.kl = c.Get<double>("kl")[r];
    x.weight_err = c.Get<double>("weight_err")[r];
    x.one_minus_cos = c.Get<double>("one_minus_cos")[r];
    seen[ui[r]][ci[r]] = true;
  }
  for (size_t u = 0; u < t.units.size(); ++u) {
    for (size_t k = 0; k < t.candidates.size(); ++k) {
      PC_CHECK(seen[u][k], path, ": /costs has no row for unit '", t.units[u].name, "' and candidate '",
               t.candidates[k].name, "' (an incomplete sensitivity file)");
    }
  }
  return t;
}

std::string Budget::Describe() const {
  return Str(kind == Kind::kBits ? "bits=" : "sparsity=", ShortestDouble(value));
}

Budget ParseBudget(const std::string& text) {
  const size_t eq = text.find('=');
  const std::string key = eq == std::string::npos ? "" : text.substr(0, eq);
  const std::string val = eq == std::string::npos ? "" : text.substr(eq + 1);
  PC_CHECK(key == "bits" || key == "sparsity", "--budget '", text,
           "': expected bits=B (average stored bits per weight, e.g. bits=3.5) or sparsity=S (average fraction of "
           "zero weights, e.g. sparsity=0.5)");
  PC_CHECK(yaml::IsDoubleText(val) || yaml::IsIntText(val), "--budget '", text, "': '", val, "' is not a number");
  Budget b;
  b.kind = key == "bits" ? Budget::Kind::kBits : Budget::Kind::kSparsity;
  b.value = std::stod(val);
  if (b.kind == Budget::Kind::kBits) {
    PC_CHECK(b.value > 0 && b.value <= 32, "--budget '", text, "': bits must be in (0, 32]");
  } else {
    PC_CHECK(b.value >= 0 && b.value < 1, "--budget '", text, "': sparsity must be in [0, 1)");
  }
  return b;
}

std::vector<std::string> PredictorNames() {
  return {"perp", "par", "iso", "acc-perp", "acc-par", "acc-iso", "kl", "weight", "cos-order"};
}

std::vector<std::vector<double>> PredictorDamage(const SensitivityTable& t, const std::string& p) {
  const auto names = PredictorNames();
  PC_CHECK(std::find(names.begin(), names.end(), p) != names.end(), "--predictor '", p,
           "' is unknown; valid predictors: ", Join(names, ", "));
  std::vector<std::vector<double>> d(t.units.size(), std::vector<double>(t.candidates.size()));
  for (size_t u = 0; u < t.units.size(); ++u) {
    for (size_t c = 0; c < t.candidates.size(); ++c) {
      const SensitivityCell& x = t.cells[u][c];
      double v = 0;
      if (p == "perp") v = x.perp;
      else if (p == "par") v = x.par;
      else if (p == "iso") v = x.iso;
      else if (p == "acc-perp") v = x.acc_perp;
      else if (p == "acc-par") v = x.acc_par;
      else if (p == "acc-iso") v = x.acc_iso;
      else if (p == "kl") v = x.kl;
      else if (p == "weight") v = x.weight_err * static_cast<double>(t.units[u].params);
      else v = x.one_minus_cos * x.weight_err;  // cos-order: layer importance times the weight error
      PC_CHECK(!std::isnan(v), t.path, ": predictor '", p, "' was not computed for unit '", t.units[u].name,
               "' (rerun perpcomp sensitivity with ", (p == "kl" ? "--kl" : "--accumulated"), ")");
      d[u][c] = v;
    }
  }
  return d;
}

Choice SolveMckp(const std::vector<std::vector<double>>& cost, const std::vector<std::vector<double>>& damage,
                 double capacity, int64_t steps) {
  const size_t n = cost.size();
  PC_CHECK(steps >= 1 && steps <= 10000000, "allocate: steps must be in 1..10^7, got ", steps);
  PC_CHECK(capacity >= 0, "allocate: negative capacity");
  PC_CHECK(static_cast<double>(n) * static_cast<double>(steps + 1) <= 4e8, "allocate: ", n, " units x ", steps,
           " budget steps is too large a table; lower --steps");
  const double q = capacity > 0 ? capacity / static_cast<double>(steps) : 1.0;
  const int64_t S = capacity > 0 ? steps : 0;
  // dp[k]: least damage of the items so far with rounded cost exactly k (inf: unreachable).
  std::vector<double> dp(S + 1, kInf), next(S + 1);
  dp[0] = 0;
  std::vector<std::vector<uint8_t>> pick(n, std::vector<uint8_t>(S + 1, 0));
  for (size_t i = 0; i < n; ++i) {
    PC_CHECK(cost[i].size() == damage[i].size() && !cost[i].empty() && cost[i].size() <= 255,
             "allocate: item ", i, " has no choices or mismatched tables");
    std::fill(next.begin(), next.end(), kInf);
    for (size_t c = 0; c < cost[i].size(); ++c) {
      PC_CHECK(cost[i][c] >= 0 && std::isfinite(damage[i][c]), "allocate: item ", i, " choice ", c,
               " has a negative cost or a non-finite damage");
      const double r = std::ceil(cost[i][c] / q * (1 - 1e-12));
      if (r > static_cast<double>(S)) continue;
      const int64_t ic = static_cast<int64_t>(r);
      for (int64_t k = ic; k <= S; ++k) {
        const double v = dp[k - ic] + damage[i][c];
        if (v < next[k]) {
          next[k] = v;
          pick[i][k] = static_cast<uint8_t>(c);
        }
      }
    }
    dp.swap(next);
  }
  Choice out;
  int64_t best = -1;
  for (int64_t k = 0; k <= S; ++k) {
    if (dp[k] < kInf && (best < 0 || dp[k] < dp[best])) best = k;  // strict: the lowest cost among ties
  }
  if (best < 0) return out;
  out.choice.assign(n, 0);
  int64_t k = best;
  for (size_t i = n; i-- > 0;) {
    const int c = pick[i][k];
    out.choice[i] = c;
    k -= static_cast<int64_t>(std::ceil(cost[i][c] / q * (1 - 1e-12)));
  }
  for (size_t i = 0; i < n; ++i) {
    out.damage += damage[i][out.choice[i]];
    out.cost += cost[i][out.choice[i]];
  }
  return out;
}

Choice BruteForceMckp(const std::vector<std::vector<double>>& cost, const std::vector<std::vector<double>>& damage,
                      double capacity) {
  double combos = 1;
  for (const auto& c : cost) combos *= static_cast<double>(c.size());
  PC_CHECK(combos <= 4194304, "allocate: brute force over ", combos, " combinations refused");
  const size_t n = cost.size();
  std::vector<int> cur(n, 0);
  Choice best;
  for (;;) {
    double c = 0, d = 0;
    for (size_t i = 0; i < n; ++i) {
      c += cost[i][cur[i]];
      d += damage[i][cur[i]];
    }
    if (c <= capacity && (!best.feasible() || d < best.damage || (d == best.damage && c < best.cost))) {
      best.choice = cur;
      best.damage = d;
      best.cost = c;
    }
    size_t i = 0;
    while (i < n && ++cur[i] == static_cast<int>(cost[i].size())) cur[i++] = 0;
    if (i == n) break;
  }
  return best;
}

namespace {

// Per-unit costs under a budget: stored bits × params, or density × params (a sparsity floor is a
// density ceiling); the capacity is the budget times the parameter count.
void Costs(const SensitivityTable& t, const Budget& b, std::vector<std::vector<double>>* cost, double* capacity) {
  double total = 0;
  cost->assign(t.units.size(), std::vector<double>(t.candidates.size()));
  for (size_t u = 0; u < t.units.size(); ++u) {
    const double np = static_cast<double>(t.units[u].params);
    total += np;
    for (size_t c = 0; c < t.candidates.size(); ++c) {
      const SensitivityCell& x = t.cells[u][c];
      (*cost)[u][c] = b.kind == Budget::Kind::kBits ? x.bits * np : (1 - x.sparsity) * np;
    }
  }
  *capacity = b.kind == Budget::Kind::kBits ? b.value * total : (1 - b.value) * total;
}

}  // namespace

double AchievedAverage(const SensitivityTable& t, const Budget& b, const std::vector<int>& choice) {
  double num = 0, total = 0;
  for (size_t u = 0; u < t.units.size(); ++u) {
    const double np = static_cast<double>(t.units[u].params);
    const SensitivityCell& x = t.cells[u][choice[u]];
    num += (b.kind == Budget::Kind::kBits ? x.bits : x.sparsity) * np;
    total += np;
  }
  return num / total;
}

Allocation Allocate(const SensitivityTable& t, const Budget& budget, const std::string& predictor, int64_t steps) {
  const auto damage = PredictorDamage(t, predictor);
  std::vector<std::vector<double>> cost;
  double capacity = 0;
  Costs(t, budget, &cost, &capacity);
  const Choice ch = SolveMckp(cost, damage, capacity, steps);
  if (!ch.feasible()) {
    std::vector<int> cheapest(t.units.size());
    for (size_t u = 0; u < t.units.size(); ++u) {
      cheapest[u] = static_cast<int>(std::min_element(cost[u].begin(), cost[u].end()) - cost[u].begin());
    }
    PC_THROW("--budget ", budget.Describe(), " cannot be met with the candidates of ", t.path, ": the cheapest plan has ",
             budget.kind == Budget::Kind::kBits ? "average bits " : "average sparsity ",
             ShortestDouble(AchievedAverage(t, budget, cheapest)));
  }
  Allocation a;
  a.budget = budget;
  a.predictor = predictor;
  a.choice = ch.choice;
  a.damage = ch.damage;
  a.average = AchievedAverage(t, budget, a.choice);
  return a;
}

Allocation Uniform(const SensitivityTable& t, const Budget& budget, const std::string& predictor, int candidate) {
  const auto damage = PredictorDamage(t, predictor);
  Allocation a;
  a.budget = budget;
  a.predictor = predictor;
  a.choice.assign(t.units.size(), candidate);
  for (size_t u = 0; u < t.units.size(); ++u) a.damage += damage[u][candidate];
  a.average = AchievedAverage(t, budget, a.choice);
  return a;
}

std::string AllocationRecipeYaml(const SensitivityTable& t, const Allocation& a, const std::string& name) {
  // The recipe's method: the most used non-dense candidate.
  std::vector<int64_t> uses(t.candidates.size(), 0);
  for (size_t u = 0; u < a.choice.size(); ++u) uses[a.choice[u]] += t.units[u].params;
  int main = -1;
  for (size_t c = 0; c < t.candidates.size(); ++c) {
    if (t.candidates[c].family != "dense" && (main < 0 || uses[c] > uses[main])) main = static_cast<int>(c);
  }
  PC_CHECK(main >= 0, t.path, ": every candidate is 'none'; there is nothing to compress");
  const nlohmann::json calib = nlohmann::json::parse(t.calibration_json);
  std::ostringstream os;
  os << "# perpcomp allocate: " << a.predictor << " under " << a.budget.Describe() << " (achieved "
     << ShortestDouble(a.average) << "), from " << t.path << "\n";
  os << "name: " << yaml::QuoteString(name) << "\n";
  os << "description: " << yaml::QuoteString(Str("per-linear plan minimising predicted ", a.predictor, " damage (",
                                                  ShortestDouble(a.damage), ") under ", a.budget.Describe()))
     << "\n";
  os << "method: " << Cand(t, main).method << "\n";
  os << "params: " << FlowParams(Cand(t, main).params_json) << "\n";
  os << "calibration:\n";
  if (calib.contains("seq_len")) os << "  seq_len: " << calib["seq_len"].get<int64_t>() << "\n";
  if (calib.contains("windowing") && (calib["windowing"] == "awq" || calib["windowing"] == "random")) {
    os << "  windowing: " << calib["windowing"].get<std::string>() << "\n";  // self-sampled sets have none
  }
  if (calib.contains("seed")) os << "  seed: " << calib["seed"].get<int64_t>() << "\n";
  os << "propagate: original\n";  // as the sensitivity scan measured
  bool any = false;
  for (size_t u = 0; u < a.choice.size(); ++u) {
    const int c = a.choice[u];
    if (c == main) continue;
    if (!any) os << "overrides:\n";
    any = true;
    for (const std::string& m : t.units[u].members) {
      os << "  - match: " << yaml::QuoteString(AnchoredRegex(m)) << "  # " << Cand(t, c).name << "\n";
      if (Cand(t, c).family == "dense") {
        os << "    skip: 'allocate: left dense'\n";
      } else {
        os << "    method: " << Cand(t, c).method << "\n";
        os << "    params: " << FlowParams(Cand(t, c).params_json) << "\n";
      }
    }
  }
  return os.str();
}

std::string LlamaCppType(int bits, bool zero_point) {
  switch (bits) {
    case 0: return "f16";
    case 2: return "q2_K";
    case 3: return "q3_K";
    case 4: return zero_point ? "q4_1" : "q4_0";
    case 5: return zero_point ? "q5_1" : "q5_0";
    case 6: return "q6_K";
    case 7: case 8: return "q8_0";
    default: break;
  }
  PC_THROW("llama-quantize export: no llama.cpp type for ", bits, " bits (perpcomp quantizes with 2..8 bits)");
}

namespace {
struct LlamaCppTypeInfo {
  const char* name;
  int64_t block;       // weights per block
  double bits;         // bits per weight, the block's scales included
  const char* fallback;  // llama.cpp's type when the row is not a multiple of `block` ("" : none)
};
// ggml's block layouts (ggml-common.h) and llama.cpp's fallbacks (src/llama-quant.cpp).
constexpr LlamaCppTypeInfo kLlamaCppTypes[] = {
    {"f16", 1, 16.0, ""},        {"q2_K", 256, 2.625, "q4_0"}, {"q3_K", 256, 3.4375, "q4_0"},
    {"q4_0", 32, 4.5, ""},       {"q4_1", 32, 5.0, ""},        {"q5_0", 32, 5.5, ""},
    {"q5_1", 32, 6.0, ""},       {"q6_K", 256, 6.5625, "q8_0"}, {"q8_0", 32, 8.5, ""},
};
const LlamaCppTypeInfo& LlamaCppInfo(const std::string& type) {
  for (const auto& i : kLlamaCppTypes) {
    if (type == i.name) return i;
  }
  PC_ASSERT(false, "no llama.cpp type info for ", type);
  return kLlamaCppTypes[0];
}
}  // namespace

std::string LlamaCppStoredType(const std::string& type, int64_t in_features) {
  const LlamaCppTypeInfo& i = LlamaCppInfo(type);
  if (in_features % i.block == 0) return type;
  if (*i.fallback != '\0' && in_features % LlamaCppInfo(i.fallback).block == 0) return i.fallback;
  return "f16";
}

double LlamaCppBitsPerWeight(const std::string& type) { return LlamaCppInfo(type).bits; }

std::string ExportLlmCompressor(const SensitivityTable& t, const Allocation& a) {
  std::ostringstream os;
  os << "# llm-compressor recipe exported by perpcomp allocate (" << a.predictor << " under " << a.budget.Describe()
     << ", from " << t.path << "); docs/ALLOCATION.md\n";
  std::set<std::string> methods;
  std::vector<std::string> dense;
  for (size_t u = 0; u < a.choice.size(); ++u) {
    const SensitivityCandidate& c = Cand(t, a.choice[u]);
    if (c.family == "dense") {
      for (const auto& m : t.units[u].members) dense.push_back("re:" + AnchoredRegex(m));
    } else {
      methods.insert(c.method);
    }
  }
  PC_CHECK(!methods.empty(), "llm-compressor export: the plan compresses nothing");
  std::string ignore = "[\"lm_head\"";
  for (const auto& d : dense) ignore += ", " + yaml::QuoteString(d);
  ignore += "]";
  std::map<std::string, std::vector<std::string>> by_setting;  // setting text -> targets, in model order
  std::vector<std::string> order;
  if (a.budget.kind == Budget::Kind::kBits) {
    for (const auto& m : methods) {
      PC_CHECK(m == "rtn" || m == "gptq" || m == "awq", "llm-compressor export: method '", m,
               "' has no llm-compressor quantization counterpart (rtn, gptq and awq do)");
    }
    const bool gptq = methods.size() == 1 && *methods.begin() == "gptq";
    if (!gptq && methods.count("gptq")) {
      methods.erase("gptq");
      PC_THROW("llm-compressor export: the plan mixes gptq with ", Join(std::vector<std::string>(methods.begin(), methods.end()), ", "),
               "; one llm-compressor quantization modifier runs one algorithm (allocate over gptq-only or gptq-free candidates)");
    }
    for (size_t u = 0; u < a.choice.size(); ++u) {
      const SensitivityCandidate& c = Cand(t, a.choice[u]);
      if (c.family == "dense") continue;
      const nlohmann::json p = nlohmann::json::parse(c.params_json);
      const int64_t bits = p.value("bits", 16), group = p.value("group_size", int64_t{-1});
      const bool zp = p.value("zero_point", false);
      // llm-compressor refuses group quantization of a linear whose inputs the group size does not
      // divide; perpcomp quantizes the remainder as a shorter last group, which has no counterpart.
      for (size_t k = 0; k < t.units[u].in_features.size() && group > 0; ++k) {
        PC_CHECK(t.units[u].in_features[k] % group == 0, "llm-compressor export: '", t.units[u].members[k], "' has ",
                 t.units[u].in_features[k], " inputs, which group_size ", group, " of candidate '", c.name,
                 "' does not divide; llm-compressor refuses such groups (perpcomp quantizes a shorter last group): use "
                 "a group size dividing every linear's inputs");
      }
      std::string w = Str("{num_bits: ", bits, ", type: int, symmetric: ", zp ? "false" : "true", ", strategy: ",
                          group > 0 ? Str("group, group_size: ", group) : std::string("channel"), "}");
      if (!by_setting.count(w)) order.push_back(w);
      for (const auto& m : t.units[u].members) by_setting[w].push_back("re:" + AnchoredRegex(m));
    }
    os << "quant_stage:\n  quant_modifiers:\n";
    if (methods.count("awq")) os << "    # perpcomp's awq scales are not exported: llm-compressor quantizes these round-to-nearest\n";
    os << "    " << (gptq ? "GPTQModifier" : "QuantizationModifier") << ":\n";
    os << "      ignore: " << ignore << "\n      config_groups:\n";
    for (size_t g = 0; g < order.size(); ++g) {
      os << "        group_" << g << ":\n          targets: [";
      const auto& targets = by_setting[order[g]];
      for (size_t i = 0; i < targets.size(); ++i) os << (i ? ", " : "") << yaml::QuoteString(targets[i]);
      os << "]\n          weights: " << order[g] << "\n";
    }
    return os.str();
  }
  // Pruning: one modifier per distinct (method, sparsity, pattern), each in its own modifier group.
  for (size_t u = 0; u < a.choice.size(); ++u) {
    const SensitivityCandidate& c = Cand(t, a.choice[u]);
    if (c.family == "dense") continue;
    PC_CHECK(c.family == "pruning", "llm-compressor export: candidate '", c.name, "' (", c.method,
             ") is not a pruning method, under a sparsity budget");
    const nlohmann::json p = nlohmann::json::parse(c.params_json);
    std::string type;
    if (c.method == "sparsegpt") type = "SparseGPTModifier";
    else if (c.method == "wanda" || c.method == "wanda-perp") type = "WandaPruningModifier";
    else PC_THROW("llm-compressor export: method '", c.method, "' has no llm-compressor one-shot pruning modifier (sparsegpt and wanda do)");
    const double s = p.value("sparsity", 0.0);
    const std::string pattern = p.value("pattern", std::string("unstructured"));
    const std::string mask = pattern == "unstructured" ? "0:0" : pattern;  // "2:4"
    std::string key = Str(type, "|", ShortestDouble(s), "|", mask);
    if (!by_setting.count(key)) order.push_back(key);
    for (const auto& m : t.units[u].members) by_setting[key].push_back("re:" + AnchoredRegex(m));
  }
  os << "sparsity_stage:\n";
  for (size_t g = 0; g < order.size(); ++g) {
    const std::vector<std::string> f = [&] {
      std::vector<std::string> v;
      size_t s = 0, e;
      while ((e = order[g].find('|', s)) != std::string::npos) { v.push_back(order[g].substr(s, e - s)); s = e + 1; }
      v.push_back(order[g].substr(s));
      return v;
    }();
    os << "  sparsity_" << g << "_modifiers:\n    " << f[0] << ":\n      sparsity: " << f[1]
       << "\n      mask_structure: " << yaml::QuoteString(f[2]) << "\n      ignore: " << ignore << "\n      targets: [";
    const auto& targets = by_setting[order[g]];
    for (size_t i = 0; i < targets.size(); ++i) os << (i ? ", " : "") << yaml::QuoteString(targets[i]);
    os << "]\n";
  }
  return os.str();
}

LlamaQuantizeExport ExportLlamaQuantize(const SensitivityTable& t, const Allocation& a) {
  PC_CHECK(a.budget.kind == Budget::Kind::kBits, "llama-quantize export: only for a bits budget (llama.cpp has no "
           "per-tensor sparsity)");
  const ArchSpec& arch = ArchSpecFor(t.model_type);
  PC_CHECK(*arch.gguf_arch != '\0', "llama-quantize export: llama.cpp has no architecture for ", t.model_type);
  LlamaQuantizeExport r;
  std::ostringstream os;
  double bits_sum = 0, weights = 0;
  for (size_t u = 0; u < a.choice.size(); ++u) {
    const SensitivityCandidate& c = Cand(t, a.choice[u]);
    const SensitivityUnit& unit = t.units[u];
    int bits = 0;
    bool zp = false;
    if (c.family != "dense") {
      const nlohmann::json p = nlohmann::json::parse(c.params_json);
      PC_CHECK(p.contains("bits") && p["bits"].get<int>() > 0, "llama-quantize export: candidate '", c.name, "' (",
               c.method, ") does not quantize");
      bits = p["bits"].get<int>();
      zp = p.value("zero_point", false);
    }
    const std::string type = LlamaCppType(bits, zp);
    r.checked = r.checked && unit.in_features.size() == unit.members.size();
    for (size_t k = 0; k < unit.members.size(); ++k) {
      const std::string& m = unit.members[k];
      std::string gguf;
      for (const auto& l : arch.linears) {
        if (ExpandName(l.name.hf, unit.layer) == m) gguf = ExpandName(l.name.gguf, unit.layer);
      }
      PC_CHECK(!gguf.empty(), "llama-quantize export: no GGUF name for '", m, "' in the ", t.model_type, " table");
      std::string stored = type;
      if (k < unit.in_features.size()) {
        const int64_t in = unit.in_features[k];
        stored = LlamaCppStoredType(type, in);
        if (stored != type) {
          r.fallbacks.push_back(Str(m, ": ", type, " needs rows that are a multiple of ", LlamaCppInfo(type).block,
                                    ", it has ", in, " inputs; llama.cpp stores ", stored));
        }
      }
      // The file holds a unit's weights, not each member's: an equal share per member, exact
      // whenever the members store one type (they do when they share their inputs, as groups do).
      const double n = static_cast<double>(unit.params) / static_cast<double>(unit.members.size());
      bits_sum += n * LlamaCppBitsPerWeight(stored);
      weights += n;
      os << "--tensor-type " << gguf << "=" << stored << "\n";
    }
  }
  r.args = os.str();
  r.bits_per_weight = weights > 0 ? bits_sum / weights : 0;
  return r;
}

}  // namespace pc::recipes
