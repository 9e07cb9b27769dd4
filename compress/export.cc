// compress/export.cc — placeholder: the AWQ GEMM exporter is being written.
#include "compress/export.h"

#include "core/error.h"

namespace pc {

void ExportAwqGemm(Model& model, const Plan& plan, const std::string& dir) {
  PC_THROW("--format awq-gemm is not implemented yet");
}

}  // namespace pc
