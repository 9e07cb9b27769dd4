// compress/gptq.cc — placeholder: the method is being written (registers nothing yet).
#include "compress/method.h"

namespace pc {

void RegisterGptq(MethodRegistry& r) {}

}  // namespace pc
