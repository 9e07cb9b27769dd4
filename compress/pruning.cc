// compress/pruning.cc — placeholder: the method is being written (registers nothing yet).
#include "compress/method.h"

namespace pc {

void RegisterPruning(MethodRegistry& r) {}

}  // namespace pc
