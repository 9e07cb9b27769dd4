// tools/commands.h — the verbs of the `perpcomp` binary. Each lives in tools/cmd_<verb>.cc.
#pragma once

#include <string>
#include <vector>

namespace pc::cli {

using CommandFn = int (*)(const std::vector<std::string>& args);

struct Command {
  const char* name;
  const char* summary;
  CommandFn run;
};

const std::vector<Command>& Commands();

}  // namespace pc::cli
