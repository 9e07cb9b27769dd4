// compress/awq.cc — placeholder: the method is being written (registers nothing yet).
#include "compress/method.h"

namespace pc {

void RegisterAwq(MethodRegistry& r) {}

}  // namespace pc
