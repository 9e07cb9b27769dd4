#include "tools/commands.h"

namespace pc::cli {

// One line per verb, in the order `perpcomp --help` lists them.
#define PC_DECLARE_COMMAND(fn) int fn(const std::vector<std::string>& args);
PC_DECLARE_COMMAND(RunVersion)
PC_DECLARE_COMMAND(RunCorpus)
#undef PC_DECLARE_COMMAND

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"corpus", "generate the synthetic agreement corpus (train/valid text, minimal pairs, depths)", RunCorpus},
      {"version", "print the version and the libraries in use", RunVersion},
  };
  return commands;
}

}  // namespace pc::cli
