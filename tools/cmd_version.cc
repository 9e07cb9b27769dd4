#include <iostream>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/version.h>

#include "core/blas.h"
#include "tools/cli.h"

namespace pc::cli {

int RunVersion(const std::vector<std::string>& args) {
  CommonOptions common;
  po::options_description desc("options");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("version", "", desc, args, vm, nullptr, &common)) return 0;
  std::cout << "perpcomp 0.1.0\nLibTorch " << TORCH_VERSION << "\n"
            << at::get_parallel_info() << "BLAS kernels: " << BlasKernels() << "\n";
  return 0;
}

}  // namespace pc::cli
