// compress/sparsegpt.cc — placeholder: the method is being written (registers nothing yet).
#include "compress/method.h"

namespace pc {

void RegisterSparseGpt(MethodRegistry& r) {}

}  // namespace pc
