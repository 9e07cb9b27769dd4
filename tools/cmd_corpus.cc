#include "core/error.h"
#include "tools/cli.h"

namespace pc::cli {

int RunCorpus(const std::vector<std::string>& args) { PC_THROW("corpus: not implemented yet"); }

}  // namespace pc::cli
