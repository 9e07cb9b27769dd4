#include "reports/rank_tables.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "reports/csv.h"
#include "reports/outcomes.h"
#include "reports/predictors.h"

namespace pc::reports {
namespace {

using nlohmann::json;

constexpr char kFormat[] = "perpcomp-rank-inputs";
constexpr int64_t kVersion = 1;
constexpr double kReferenceTolerance = 1e-6;  // relative, for the reference mean NLL
constexpr char kCalibrationDiffers[] = "differs between the joined folders: each run's calibration is in runs.csv";

template <typename T>
void AddDistinct(std::vector<T>* v, const T& x) {
  if (std::find(v->begin(), v->end(), x) == v->end()) v->push_back(x);
}

// ---- rank_inputs.json ----

// The value at `key` of the object `j` (absent or null: nullopt), checked with `is`; errors name the file and key.
std::optional<json> Member(const json& j, const char* key, bool (json::*is)() const noexcept, const char* expected,
                           const std::string& path) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  PC_CHECK((j[key].*is)(), path, ": '", key, "' is not ", expected, " (got ", j[key].dump(), ")");
  return j[key];
}

std::string String(const json& j, const char* key, const std::string& path) {
  const auto v = Member(j, key, &json::is_string, "a string", path);
  return v ? v->get<std::string>() : "";
}

double Number(const json& j, const char* key, const std::string& path) {
  const auto v = Member(j, key, &json::is_number, "a number", path);
  return v ? v->get<double>() : std::numeric_limits<double>::quiet_NaN();
}

// A list whose every element passes `is`.
template <typename T>
std::vector<T> List(const json& j, const char* key, bool (json::*is)() const noexcept, const char* expected,
                    const std::string& path) {
  const auto v = Member(j, key, &json::is_array, expected, path);
  std::vector<T> out;
  if (!v) return out;
  for (const json& e : *v) {
    PC_CHECK((e.*is)(), path, ": '", key, "' is not ", expected, " (got ", v->dump(), ")");
    out.push_back(e.get<T>());
  }
  return out;
}

// ---- CSV files ----

CsvRecords ReadCsv(const std::string& folder, const std::string& name) {
  const std::string path = fs::Join(folder, name);
  PC_CHECK(fs::Exists(path), "--tables '", folder, "': no ", name,
           " (expected a folder that perpcomp rank --out wrote; docs/RANKING.md \"Ranking from saved tables\")");
  return ParseCsv(fs::ReadFile(path), path);
}

size_t RequireColumn(const CsvRecords& csv, const std::string& name) {
  const std::optional<size_t> c = csv.Column(name);
  PC_CHECK(c.has_value(), csv.path, ": line 1 (the header) has no '", name, "' column");
  return *c;
}

// A number cell as rank writes it (FormatDouble, 17 significant digits; nan, inf, -inf); nullopt when empty.
std::optional<double> NumberCell(const CsvRecords& csv, size_t row, size_t column) {
  const std::string& t = csv.rows[row][column];
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  PC_CHECK(!std::isspace(static_cast<unsigned char>(t[0])) && end == t.c_str() + t.size(), csv.Where(row, column),
           ": expected a number or an empty cell, got '", t, "'");
  return v;
}

// The rows of a values file by run name: a `run` column, every run once, each one a run of runs.csv.
std::map<std::string, size_t> RowsByRun(const CsvRecords& csv, const std::map<std::string, size_t>& known,
                                        const std::string& runs_path) {
  const size_t run = RequireColumn(csv, "run");
  std::map<std::string, size_t> rows;
  for (size_t r = 0; r < csv.rows.size(); ++r) {
    const std::string& name = csv.rows[r][run];
    PC_CHECK(known.count(name), csv.Where(r, run), ": run '", name, "' is not in ", runs_path);
    PC_CHECK(rows.emplace(name, r).second, csv.Where(r, run), ": run '", name, "' appears twice (first on line ",
             csv.lines[rows[name]], ")");
  }
  for (const auto& [name, line] : known) {
    PC_CHECK(rows.count(name), csv.path, ": no row for run '", name, "' (", runs_path, " line ", line, ")");
  }
  return rows;
}

// The method family of a runs.csv row. Its params cell is ParamsText's "k=v, k=v" (strings bare, other values
// as JSON), read back into the JSON object MethodFamily reads (SparseGPT's `bits`: joint quantization).
std::string SavedMethodFamily(const std::string& method, const std::string& params) {
  json j = json::object();
  for (const std::string& term : Split(ReplaceAll(params, ", ", "\n"), '\n')) {
    const size_t eq = term.find('=');
    if (eq == std::string::npos) continue;
    const json v = json::parse(term.substr(eq + 1), nullptr, /*allow_exceptions=*/false);
    j[term.substr(0, eq)] = v.is_discarded() ? json(term.substr(eq + 1)) : v;
  }
  return MethodFamily(method, j.dump());
}

// One folder's runs with their saved values; `folder` gets its columns and what its rank_inputs.json records.
std::vector<SweepRun> ReadFolder(TablesFolder* folder, std::optional<RankInputs>* recorded) {
  const std::string& dir = folder->path;
  PC_CHECK(fs::IsDirectory(dir), "--tables '", dir,
           "': not a folder (expected a folder that perpcomp rank --out wrote)");
  const std::string inputs_path = fs::Join(dir, "rank_inputs.json");
  if (fs::Exists(inputs_path)) *recorded = ParseRankInputs(fs::ReadFile(inputs_path), inputs_path);

  const CsvRecords runs = ReadCsv(dir, "runs.csv");
  const size_t index = RequireColumn(runs, "index"), name = RequireColumn(runs, "run");
  const size_t method = RequireColumn(runs, "method"), family = RequireColumn(runs, "family");
  auto optional_cell = [&](size_t row, const char* column) {
    const std::optional<size_t> c = runs.Column(column);
    return c ? runs.rows[row][*c] : std::string();
  };
  std::vector<SweepRun> out;
  std::map<std::string, size_t> lines;  // run -> its line in runs.csv
  for (size_t r = 0; r < runs.rows.size(); ++r) {
    SweepRun run;
    run.name = runs.rows[r][name];
    PC_CHECK(!run.name.empty(), runs.Where(r, name), ": expected a run name, got an empty cell");
    PC_CHECK(lines.emplace(run.name, runs.lines[r]).second, runs.Where(r, name), ": run '", run.name,
             "' appears twice (first on line ", lines[run.name], ")");
    run.index = ParseInt(runs.rows[r][index], runs.Where(r, index));
    run.method = runs.rows[r][method];
    run.family = runs.rows[r][family];
    run.recipe = optional_cell(r, "recipe");
    run.params = optional_cell(r, "params");
    run.method_family = SavedMethodFamily(run.method, run.params);
    run.status = "complete";
    run.seconds_compress = run.seconds_measure = run.seconds_eval = std::numeric_limits<double>::quiet_NaN();
    if (*recorded) {
      if ((*recorded)->text_sha256.size() == 1) run.text_sha256 = (*recorded)->text_sha256[0];
      if ((*recorded)->seq_len.size() == 1) run.seq_len = (*recorded)->seq_len[0];
      if ((*recorded)->windows.size() == 1) run.windows = (*recorded)->windows[0];
    }
    SavedRun saved;
    saved.folder = dir;
    saved.calibration = optional_cell(r, "calibration");
    saved.seconds = optional_cell(r, "seconds (compress / measure / eval)");
    run.saved = std::move(saved);
    out.push_back(std::move(run));
  }
  PC_CHECK(!out.empty(), runs.path, ": no runs (only a header)");
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < out.size(); ++i) position[out[i].name] = i;

  const CsvRecords predictors = ReadCsv(dir, "predictor_values.csv");
  const std::map<std::string, size_t> p_rows = RowsByRun(predictors, lines, runs.path);
  const CsvRecords outcomes = ReadCsv(dir, "outcome_values.csv");
  const std::map<std::string, size_t> o_rows = RowsByRun(outcomes, lines, runs.path);
  for (const CsvRecords* csv : {&predictors, &outcomes}) {
    const bool is_predictors = csv == &predictors;
    for (size_t c = 0; c < csv->header.size(); ++c) {
      const std::string& column = csv->header[c];
      if (column == "run" || column == "family" || column == "method") continue;
      if (is_predictors ? FindPredictor(column) == nullptr : !DescribeOutcome(column).has_value()) {
        folder->ignored.push_back(fs::Basename(csv->path) + ": " + column);
        continue;
      }
      if (!is_predictors) folder->outcomes.push_back(column);
      for (const auto& [run, row] : is_predictors ? p_rows : o_rows) {
        SavedRun& saved = *out[position[run]].saved;
        const std::optional<double> v = NumberCell(*csv, row, c);
        if (is_predictors) {
          saved.predictors[column] = v.value_or(std::numeric_limits<double>::quiet_NaN());
        } else if (v) {
          saved.outcomes[column] = *v;
        }
      }
    }
  }
  if (*recorded) {
    folder->checked = true;
    folder->sweeps = (*recorded)->sweeps;
    folder->unchecked = (*recorded)->unchecked;
  }
  return out;
}

std::string PrimaryText(const std::vector<std::pair<std::string, std::string>>& primary) {
  std::vector<std::string> pairs;
  for (const auto& [perp, iso] : primary) pairs.push_back(perp + ":" + iso);
  return pairs.empty() ? "none" : Join(pairs, ",");
}

template <typename T>
std::string ListText(const std::vector<T>& v) {
  std::vector<std::string> parts;
  for (const T& x : v) parts.push_back(Str(x));
  return "[" + Join(parts, ", ") + "]";
}

// A folder's conventions without "calib": nullopt when they are not a JSON object.
std::optional<json> ConventionsBesideCalibration(const std::string& conventions) {
  json j = json::parse(conventions, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  j.erase("calib");
  return j;
}

// The joined conventions: the first folder's, with "calib" replaced by a note where a later folder's differs.
void JoinCalibration(std::string* joined, const std::string& conventions) {
  json j = json::parse(*joined, nullptr, /*allow_exceptions=*/false);
  const json other = json::parse(conventions, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !other.is_object()) return;
  const json none;
  if (j.value("calib", none) == other.value("calib", none)) return;
  j["calib"] = kCalibrationDiffers;
  *joined = j.dump();
}

// Refuses two folders' records that a join must not mix (see the top of rank_tables.h).
void CheckAgree(const TablesFolder& fa, const RankInputs& a, const TablesFolder& fb, const RankInputs& b,
                bool check_primary) {
  auto refuse = [&](const std::string& field, const std::string& va, const std::string& vb, const std::string& more) {
    PC_THROW("--tables: ", fa.path, " and ", fb.path, " differ in ", field, " (", va, " vs ", vb, more,
             "); runs made under different settings cannot be ranked together");
  };
  // The calibration is recorded per run (runs.csv's calibration column), so folders whose sweeps calibrated on
  // other data join; every other convention must agree.
  if (!a.conventions_key.empty() && !b.conventions_key.empty() && a.conventions_key != b.conventions_key) {
    const std::optional<json> ca = ConventionsBesideCalibration(a.conventions);
    const std::optional<json> cb = ConventionsBesideCalibration(b.conventions);
    if (!ca || !cb || *ca != *cb) {
      const std::string diff =
          ca && cb ? FirstConventionDifference(ca->dump(), cb->dump()) : FirstConventionDifference(a.conventions, b.conventions);
      refuse("conventions_key", a.conventions_key, b.conventions_key,
             diff.empty() ? std::string() : "; first differing convention: " + diff);
    }
  }
  const double na = a.reference_mean_nll, nb = b.reference_mean_nll;
  if (!std::isnan(na) && !std::isnan(nb) &&
      !(std::fabs(na - nb) <= kReferenceTolerance * std::max(std::fabs(na), std::fabs(nb)))) {
    refuse("the reference mean NLL", FormatDouble(na, 17), FormatDouble(nb, 17), "");
  }
  if (!a.text_sha256.empty() && !b.text_sha256.empty() && a.text_sha256 != b.text_sha256) {
    refuse("the measured text (text_sha256)", ListText(a.text_sha256), ListText(b.text_sha256), "");
  }
  if (!a.seq_len.empty() && !b.seq_len.empty() && a.seq_len != b.seq_len) {
    refuse("the measure seq_len", ListText(a.seq_len), ListText(b.seq_len), "");
  }
  if (!a.windows.empty() && !b.windows.empty() && a.windows != b.windows) {
    refuse("the measure windows", ListText(a.windows), ListText(b.windows), "");
  }
  if (check_primary && a.primary != b.primary) {
    refuse("primary_comparisons", PrimaryText(a.primary), PrimaryText(b.primary),
           "; --primary PERP:ISO,... chooses them for the join");
  }
}

}  // namespace

RankInputs RankInputsOf(const SweepResults& results, const RankingAnalysis& analysis) {
  RankInputs in;
  in.runs = results.runs.size();
  if (results.tables.empty() && !results.sweep.empty()) in.sweeps.push_back(results.sweep);
  for (const TablesFolder& f : results.tables) {
    for (const std::string& s : f.sweeps) AddDistinct(&in.sweeps, s);
  }
  in.primary = analysis.primary;
  in.conventions_key = results.conventions_key;
  in.conventions = results.conventions;
  in.reference_mean_nll = results.reference_mean_nll;
  in.reference_ppl = results.reference_ppl;
  in.reference_pairs_accuracy = results.reference_pairs_accuracy;
  for (const SweepRun& r : results.runs) {
    if (!r.text_sha256.empty()) AddDistinct(&in.text_sha256, r.text_sha256);
    if (r.seq_len >= 0) AddDistinct(&in.seq_len, r.seq_len);
    if (r.windows >= 0) AddDistinct(&in.windows, r.windows);
  }
  std::sort(in.text_sha256.begin(), in.text_sha256.end());
  std::sort(in.seq_len.begin(), in.seq_len.end());
  std::sort(in.windows.begin(), in.windows.end());
  in.unchecked = UncheckedFolders(results);
  return in;
}

std::string RankInputsJson(const RankInputs& in) {
  json j = {{"format", kFormat}, {"version", kVersion}, {"runs", in.runs}, {"sweeps", in.sweeps}};
  json primary = json::array();
  for (const auto& [perp, iso] : in.primary) primary.push_back({perp, iso});
  j["primary_comparisons"] = primary;
  if (!in.conventions_key.empty()) j["conventions_key"] = in.conventions_key;
  if (!in.conventions.empty()) {
    const json c = json::parse(in.conventions, nullptr, false);
    j["conventions"] = c.is_discarded() ? json(in.conventions) : c;
  }
  json reference = json::object();
  if (!std::isnan(in.reference_mean_nll)) reference["mean_nll"] = in.reference_mean_nll;
  if (!std::isnan(in.reference_ppl)) reference["ppl"] = in.reference_ppl;
  if (!std::isnan(in.reference_pairs_accuracy)) reference["pairs_accuracy"] = in.reference_pairs_accuracy;
  j["reference"] = reference;
  j["measure"] = {{"text_sha256", in.text_sha256}, {"seq_len", in.seq_len}, {"windows", in.windows}};
  j["unchecked"] = in.unchecked;
  return j.dump(2) + "\n";
}

RankInputs ParseRankInputs(const std::string& text, const std::string& path) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  PC_CHECK(j.is_object(), path, ": not a JSON object (expected the rank_inputs.json perpcomp rank writes)");
  PC_CHECK(String(j, "format", path) == kFormat, path, ": 'format' is not \"", kFormat, "\"");
  const auto version = Member(j, "version", &json::is_number_integer, "an integer", path);
  PC_CHECK(version && version->get<int64_t>() >= 1 && version->get<int64_t>() <= kVersion, path, ": version ",
           version ? version->dump() : "absent", " (this perpcomp reads version ", kVersion,
           "; a newer perpcomp may have written it)");
  RankInputs in;
  const auto runs = Member(j, "runs", &json::is_number_unsigned, "a number of runs", path);
  in.runs = runs ? runs->get<size_t>() : 0;
  in.sweeps = List<std::string>(j, "sweeps", &json::is_string, "a list of names", path);
  for (const json& pair :
       List<json>(j, "primary_comparisons", &json::is_array, "a list of [perp, iso] name pairs", path)) {
    PC_CHECK(pair.size() == 2 && pair[0].is_string() && pair[1].is_string(), path,
             ": 'primary_comparisons': expected [perp, iso] name pairs, got ", pair.dump());
    for (const json& name : pair) {
      PC_CHECK(FindPredictor(name.get<std::string>()) != nullptr, path, ": 'primary_comparisons' names ", name.dump(),
               ", which is not a predictor (perpcomp rank --list-predictors)");
    }
    in.primary.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
  }
  in.conventions_key = String(j, "conventions_key", path);
  if (j.contains("conventions") && !j["conventions"].is_null()) {
    in.conventions = j["conventions"].is_string() ? j["conventions"].get<std::string>() : j["conventions"].dump();
  }
  const json none = json::object();
  const json& reference = Member(j, "reference", &json::is_object, "an object", path) ? j["reference"] : none;
  in.reference_mean_nll = Number(reference, "mean_nll", path + " 'reference'");
  in.reference_ppl = Number(reference, "ppl", path + " 'reference'");
  in.reference_pairs_accuracy = Number(reference, "pairs_accuracy", path + " 'reference'");
  const json& measure = Member(j, "measure", &json::is_object, "an object", path) ? j["measure"] : none;
  const std::string where = path + " 'measure'";
  in.text_sha256 = List<std::string>(measure, "text_sha256", &json::is_string, "a list of strings", where);
  in.seq_len = List<int64_t>(measure, "seq_len", &json::is_number_integer, "a list of integers", where);
  in.windows = List<int64_t>(measure, "windows", &json::is_number_integer, "a list of integers", where);
  in.unchecked = List<std::string>(j, "unchecked", &json::is_string, "a list of folders", path);
  return in;
}

SweepResults ReadRankTables(const std::vector<std::string>& folders, const RankOptions& options) {
  PC_CHECK(!folders.empty(), "--tables: no folder given");
  SweepResults s;
  s.path = Join(folders, ", ");
  s.reference_mean_nll = s.reference_ppl = s.reference_pairs_accuracy = std::numeric_limits<double>::quiet_NaN();
  std::map<std::string, std::string> folder_of;                // run -> its folder
  std::vector<std::pair<size_t, RankInputs>> recorded_so_far;  // (folder, its rank_inputs.json)
  for (const std::string& path : folders) {
    TablesFolder folder;
    folder.path =
        path.find_last_not_of('/') == std::string::npos ? path : path.substr(0, path.find_last_not_of('/') + 1);
    for (const TablesFolder& f : s.tables) {
      PC_CHECK(f.path != folder.path, "--tables: ", folder.path, " is given twice");
    }
    std::optional<RankInputs> recorded;
    std::vector<SweepRun> runs = ReadFolder(&folder, &recorded);
    for (SweepRun& r : runs) {
      const auto [at, inserted] = folder_of.emplace(r.name, folder.path);
      PC_CHECK(inserted, "--tables: run '", r.name, "' is in both ", at->second, " and ", folder.path,
               " (a run may be ranked once; run names must be unique across the folders)");
      s.runs.push_back(std::move(r));
    }
    s.tables.push_back(std::move(folder));
    if (!recorded) continue;
    for (const auto& [k, other] : recorded_so_far) {
      CheckAgree(s.tables[k], other, s.tables.back(), *recorded, options.primary.empty());
    }
    // The joined record: each field from the first folder that has it (they agree where both have it).
    if (recorded_so_far.empty()) {
      s.primary = recorded->primary;
    } else if (s.primary != recorded->primary) {
      s.primary.clear();  // they differ, which only --primary allows: it replaces them
    }
    if (s.conventions_key.empty()) s.conventions_key = recorded->conventions_key;
    if (s.conventions.empty()) {
      s.conventions = recorded->conventions;
    } else {
      JoinCalibration(&s.conventions, recorded->conventions);
    }
    if (std::isnan(s.reference_mean_nll)) s.reference_mean_nll = recorded->reference_mean_nll;
    if (std::isnan(s.reference_ppl)) s.reference_ppl = recorded->reference_ppl;
    if (std::isnan(s.reference_pairs_accuracy)) s.reference_pairs_accuracy = recorded->reference_pairs_accuracy;
    recorded_so_far.emplace_back(s.tables.size() - 1, std::move(*recorded));
  }
  std::stable_sort(s.runs.begin(), s.runs.end(), [](const SweepRun& a, const SweepRun& b) {
    return a.index != b.index ? a.index < b.index : a.name < b.name;
  });
  s.runs_in_file = s.runs.size();
  return s;
}

}  // namespace pc::reports
