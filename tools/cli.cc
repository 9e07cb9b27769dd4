#include "tools/cli.h"

#include <cstdlib>
#include <iostream>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/strings.h"
#include "core/blas.h"
#include "core/cores.h"
#include "core/threads.h"
#include "pipeline/compress_run.h"
#include "recipes/recipe_spec.h"

namespace pc::cli {

void AddCommonOptions(po::options_description& desc, CommonOptions& opts) {
  desc.add_options()
    ("threads", po::value<int>(&opts.threads)->default_value(0), "intra-op threads (0: all cores; at most the cores available)")
    ("verbose,v", po::bool_switch(&opts.verbose), "more log lines")
    ("quiet,q", po::bool_switch(&opts.quiet), "errors only, no progress")
    ("help,h", "show this help");
}

bool Parse(const std::string& verb, const std::string& usage, const po::options_description& desc,
           const std::vector<std::string>& args, po::variables_map& vm,
           const po::positional_options_description* positional, CommonOptions* common) {
  auto parser = po::command_line_parser(args).options(desc);
  if (positional != nullptr) parser.positional(*positional);
  po::store(parser.run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: perpcomp " << verb << " " << usage << "\n\n" << desc << "\n";
    return false;
  }
  po::notify(vm);
  if (common != nullptr) {
    log::SetLevel(common->quiet ? log::Level::kWarn : common->verbose ? log::Level::kVerbose : log::Level::kInfo);
    common->threads = CheckedThreads(common->threads);
    SetThreads(common->threads);
    PrepareBlas(common->threads);  // an address-space limit too small for the BLAS fails here, not in a spin
  }
  return true;
}

std::string SharedDataDir() {
  const char* env = std::getenv("PERPCOMP_SHARED");
  // README.md: $PERPCOMP_SHARED, else ../shared beside the repository (not the working folder).
  std::string base = (env != nullptr && *env) ? std::string(env) : fs::Join(pipeline::SourceRootDir(), "../shared");
  return fs::Join(base, "data");
}

void AddCalibTextOption(po::options_description& desc, std::vector<std::string>& specs) {
  desc.add_options()("calib-text", po::value<std::vector<std::string>>(&specs)->composing(),
                     "NAME=FILE: a calibration text that recipes select with calibration: text: NAME (repeatable)");
}

std::map<std::string, std::string> ParseCalibTexts(const std::vector<std::string>& specs) {
  std::map<std::string, std::string> texts;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    PC_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < spec.size(), "--calib-text '", spec,
             "' must be NAME=FILE (for example wiki-train=wiki.train.raw.txt)");
    const std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    PC_CHECK(recipes::IsValidName(name), "--calib-text '", spec, "': the name '", name,
             "' must start with a letter or digit and use only letters, digits, '.', '_' and '-'");
    PC_CHECK(!texts.count(name), "--calib-text names '", name, "' twice (", texts[name], " and ", file, ")");
    PC_CHECK(fs::Exists(file), "--calib-text ", name, "='", file,
             "' does not exist (give a text file, plain or *.jsonl)");
    fs::CheckRegularFile(file, "--calib-text " + name);
    texts[name] = file;
  }
  return texts;
}

void CheckCalibOption(const std::string& source) {
  int64_t self_n = 0;
  if (source.empty() || ParseSelfSpec(source, "--calib", &self_n)) return;
  PC_CHECK(fs::Exists(source), "--calib '", source, "' does not exist (give a text file, plain or *.jsonl, or self:N)");
  fs::CheckRegularFile(source, "--calib");
}

}  // namespace pc::cli
