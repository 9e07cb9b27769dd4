#include "metrics/pairs_file.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/strings.h"
#include "core/text.h"

namespace pc {

namespace {

std::string Stem(const std::string& path) {
  std::string b = fs::Basename(path);
  return EndsWith(b, ".jsonl") ? b.substr(0, b.size() - 6) : b;
}

std::string OptionalString(const nlohmann::json& obj, const std::string& key, const std::string& fallback,
                           const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  PC_CHECK(it->is_number(), where, ": '", key, "' is ", it->type_name(), ", expected a string");
  return it->dump();
}

}  // namespace

std::vector<MinimalPair> ReadMinimalPairs(const std::string& path) {
  PC_CHECK(fs::Exists(path), "--pairs: '", path, "' does not exist");
  return ParseMinimalPairs(fs::ReadFile(path), path);
}

std::vector<MinimalPair> ParseMinimalPairs(const std::string& bytes, const std::string& path) {
  const std::string stem = Stem(path);
  std::vector<MinimalPair> out;
  ForEachJsonLine(bytes, path, [&](const nlohmann::json& obj, const std::string& where, int64_t line_no) {
    MinimalPair p;
    p.good = JsonString(obj, "sentence_good", where);
    p.bad = JsonString(obj, "sentence_bad", where);
    // An empty sentence scores 0, so an empty sentence_good would always count as correct.
    PC_CHECK(!Trim(p.good).empty(), where, ": 'sentence_good' is empty; a minimal pair needs two non-empty sentences");
    PC_CHECK(!Trim(p.bad).empty(), where, ": 'sentence_bad' is empty; a minimal pair needs two non-empty sentences");
    p.file = stem;
    p.term = OptionalString(obj, "linguistics_term", "", where);
    p.uid = OptionalString(obj, "UID", stem, where);
    p.pair_id = OptionalString(obj, "pairID", std::to_string(line_no), where);
    p.line = line_no;
    out.push_back(std::move(p));
  });
  PC_CHECK(!out.empty(), "--pairs: '", path, "' holds no minimal pairs");
  return out;
}

const std::vector<std::string>& BlimpSvaFiles() {
  static const std::vector<std::string> files = {
      "distractor_agreement_relational_noun",    "distractor_agreement_relative_clause",
      "irregular_plural_subject_verb_agreement_1", "irregular_plural_subject_verb_agreement_2",
      "regular_plural_subject_verb_agreement_1",   "regular_plural_subject_verb_agreement_2"};
  return files;
}

std::vector<std::string> ResolvePairFiles(const std::string& spec, const std::string& shared_data_dir) {
  if (spec == "blimp-sva") {
    const std::string dir = fs::Join(shared_data_dir, "tasks/blimp/data");
    PC_CHECK(fs::IsDirectory(dir), "--pairs blimp-sva: the BLiMP data is not at '", dir,
             "' (set PERPCOMP_SHARED to the folder holding data/tasks/blimp, or pass the .jsonl files)");
    std::vector<std::string> files;
    for (const auto& stem : BlimpSvaFiles()) {
      std::string f = fs::Join(dir, stem + ".jsonl");
      PC_CHECK(fs::Exists(f), "--pairs blimp-sva: '", f, "' is missing");
      files.push_back(f);
    }
    return files;
  }
  PC_CHECK(fs::Exists(spec), "--pairs: '", spec, "' does not exist (expected a .jsonl file, a folder or blimp-sva)");
  if (!fs::IsDirectory(spec)) return {spec};
  std::vector<std::string> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(spec, ec), end; !ec && it != end; it.increment(ec)) {
    if (EndsWith(it->path().filename().string(), ".jsonl")) files.push_back(it->path().string());
  }
  PC_CHECK(!ec, "--pairs: cannot list '", spec, "': ", ec.message());
  PC_CHECK(!files.empty(), "--pairs: the folder '", spec, "' holds no .jsonl files");
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> ResolvePairSpecs(const std::vector<std::string>& specs, const std::string& shared_data_dir) {
  std::vector<std::string> files;
  std::vector<std::pair<std::string, std::string>> seen;  // resolved path, the spec that gave it
  for (const auto& spec : specs) {
    for (const auto& f : ResolvePairFiles(spec, shared_data_dir)) {
      std::error_code ec;
      const std::string key = std::filesystem::weakly_canonical(std::filesystem::absolute(f, ec), ec).string();
      for (const auto& [k, by] : seen) {
        PC_CHECK(k != key, "--pairs: '", f, "' is given twice (by --pairs '", by, "' and --pairs '", spec,
                 "'); its pairs would count twice");
      }
      seen.push_back({key, spec});
      files.push_back(f);
    }
  }
  return files;
}

}  // namespace pc
