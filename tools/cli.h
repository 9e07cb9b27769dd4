// tools/cli.h — shared option groups and parsing for every `perpcomp <verb>`.
#pragma once

#include <boost/program_options.hpp>
#include <map>
#include <string>
#include <vector>

namespace pc::cli {

namespace po = boost::program_options;

struct CommonOptions {
  int threads = 0;  // 0: all cores; after Parse, the checked count (1 .. cores, core/cores.h)
  bool verbose = false;
  bool quiet = false;
};

// --threads, --verbose, --quiet.
void AddCommonOptions(po::options_description& desc, CommonOptions& opts);

// Parses `args` (after the verb). Returns false when --help was asked (help printed to
// stdout). Unknown options and bad values throw po errors, reported by main() as usage
// errors. Applies the common options (log level, threads) when present in `desc`: --threads is checked
// once here (negative refused, above the cores capped with a warning) and `common->threads` holds the result.
bool Parse(const std::string& verb, const std::string& usage, const po::options_description& desc,
           const std::vector<std::string>& args, po::variables_map& vm,
           const po::positional_options_description* positional = nullptr, CommonOptions* common = nullptr);

// --calib-text NAME=FILE (repeatable) as name -> file: names as recipe names, each once, files
// that exist (a recipe's `calibration: text: NAME` selects one; docs/RECIPES.md "Recipe files",
// the calibration keys).
void AddCalibTextOption(po::options_description& desc, std::vector<std::string>& specs);
std::map<std::string, std::string> ParseCalibTexts(const std::vector<std::string>& specs);

// --calib SPEC: empty (none given), self:N, or a file that exists (a regular file).
void CheckCalibOption(const std::string& source);

// The shared data folder for named presets: $PERPCOMP_SHARED/data or <cwd>/../shared/data.
std::string SharedDataDir();

}  // namespace pc::cli
