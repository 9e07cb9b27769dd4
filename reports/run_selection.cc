#include "reports/run_selection.h"

#include <functional>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/strings.h"
#include "reports/outcomes.h"

namespace pc::reports {
namespace {

using RunTest = std::function<bool(size_t run)>;

RunTest FamilyTerm(const SweepResults& results, const std::string& term, const std::string& names) {
  std::set<std::string> known;
  for (const SweepRun& r : results.runs) {
    known.insert(r.family);
    known.insert(r.method_family);
  }
  std::set<std::string> wanted;
  for (const std::string& raw : Split(names, '|')) {
    const std::string name = Trim(raw);
    PC_CHECK(!name.empty(), "--runs '", term, "': expected family=NAME or family=A|B, got an empty name");
    PC_CHECK(known.count(name), "--runs '", term, "': no run of ", results.path, " has family '", name,
             "' (families: ", Join(std::vector<std::string>(known.begin(), known.end()), ", "), ")");
    wanted.insert(name);
  }
  return [&results, wanted](size_t run) {
    return wanted.count(results.runs[run].family) > 0 || wanted.count(results.runs[run].method_family) > 0;
  };
}

// run=A|B keeps the runs of those names, run!=A|B every other run; each name must be a run of the results.
RunTest NameTerm(const SweepResults& results, const std::string& term, const std::string& names, bool keep) {
  std::set<std::string> known, wanted;
  for (const SweepRun& r : results.runs) known.insert(r.name);
  for (const std::string& raw : Split(names, '|')) {
    const std::string name = Trim(raw);
    PC_CHECK(!name.empty(), "--runs '", term, "': expected run=NAME or run!=A|B, got an empty name");
    PC_CHECK(known.count(name), "--runs '", term, "': ", results.path, " has no run '", name, "'");
    wanted.insert(name);
  }
  return [&results, wanted, keep](size_t run) { return (wanted.count(results.runs[run].name) > 0) == keep; };
}

RunTest OutcomeTerm(const SweepResults& results, const OutcomeMatrix& outcomes, const std::string& term, size_t op_at) {
  const std::string name = Trim(term.substr(0, op_at));
  const bool or_equal = op_at + 1 < term.size() && term[op_at + 1] == '=';
  const bool less = term[op_at] == '<';
  const std::string number = term.substr(op_at + (or_equal ? 2 : 1));
  const double bound = ParseDouble(number, "--runs '" + term + "'");
  std::vector<std::string> names;
  for (size_t o = 0; o < outcomes.outcomes.size(); ++o) {
    if (outcomes.outcomes[o].name != name) {
      names.push_back(outcomes.outcomes[o].name);
      continue;
    }
    const std::vector<double> values = outcomes.values[o];
    const std::vector<uint8_t> present = outcomes.present[o];
    return [values, present, bound, less, or_equal](size_t run) {
      if (!present[run]) return false;
      const double v = values[run];
      if (less) return or_equal ? v <= bound : v < bound;
      return or_equal ? v >= bound : v > bound;
    };
  }
  PC_THROW("--runs '", term, "': '", name, "' is not an outcome of ", results.path, " (outcomes: ", Join(names, ", "),
           ")");
}

}  // namespace

SweepResults SelectRuns(SweepResults results, const std::string& spec) {
  PC_CHECK(!Trim(spec).empty(), "--runs: expected terms such as family=pruning or delta_nll<0.1, got an empty value");
  const OutcomeMatrix outcomes = ExtractOutcomes(results);
  std::vector<RunTest> tests;
  for (const std::string& raw : Split(spec, ',')) {
    const std::string term = Trim(raw);
    PC_CHECK(!term.empty(), "--runs '", spec, "': an empty term (terms are joined by ',')");
    const size_t op_at = term.find_first_of("<>");
    if (op_at == std::string::npos) {
      if (StartsWith(term, "run=") || StartsWith(term, "run!=")) {
        const bool keep = term[3] == '=';
        tests.push_back(NameTerm(results, term, term.substr(keep ? 4 : 5), keep));
        continue;
      }
      PC_CHECK(StartsWith(term, "family="), "--runs '", term,
               "': expected family=NAME[|NAME...], run=NAME[|NAME...], run!=NAME[|NAME...] or OUTCOME<X, <=, >, >= "
               "(such as delta_nll<0.1)");
      tests.push_back(FamilyTerm(results, term, term.substr(7)));
    } else {
      PC_CHECK(op_at > 0, "--runs '", term, "': expected an outcome name before '", term[op_at], "'");
      tests.push_back(OutcomeTerm(results, outcomes, term, op_at));
    }
  }
  std::vector<SweepRun> kept;
  for (size_t r = 0; r < results.runs.size(); ++r) {
    bool keep = true;
    for (const RunTest& t : tests) keep = keep && t(r);
    if (keep) kept.push_back(std::move(results.runs[r]));  // the tests read run r before it moves
  }
  PC_CHECK(!kept.empty(), "--runs '", spec, "': no run of ", results.path, " meets it (", results.runs.size(),
           " runs)");
  results.runs = std::move(kept);
  results.selection = spec;
  return results;
}

}  // namespace pc::reports
