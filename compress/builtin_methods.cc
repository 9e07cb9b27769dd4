// compress/builtin_methods.cc — registers the methods beyond RTN. Each method's file defines
// its Register<Method>() function; add a line here to register a new one.
#include "compress/method.h"

namespace pc {

void RegisterBuiltinExtras(MethodRegistry& r) {}

}  // namespace pc
