// compress/builtin_methods.cc — registers the methods beyond RTN. Each method's file defines
// its Register<Method>() function; add a line here to register a new one.
#include "compress/method.h"

namespace pc {

void RegisterAwq(MethodRegistry& r);        // awq, perp-awq          (compress/awq.cc)
void RegisterPruning(MethodRegistry& r);    // magnitude, wanda, wanda-perp (compress/pruning.cc)
void RegisterSparseGpt(MethodRegistry& r);  // sparsegpt             (compress/sparsegpt.cc)
void RegisterGptq(MethodRegistry& r);       // gptq                  (compress/gptq.cc)

void RegisterBuiltinExtras(MethodRegistry& r) {
  RegisterAwq(r);
  RegisterPruning(r);
  RegisterSparseGpt(r);
  RegisterGptq(r);
}

}  // namespace pc
