// perpcomp — compress transformer language models and measure their directional error.
// The only main(); the only place (with tools/) that catches exceptions.
#include <boost/program_options/errors.hpp>
#include <c10/util/Exception.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/blas.h"
#include "core/error.h"
#include "core/cpu_allocator.h"
#include "core/heap.h"
#include "core/current_work.h"
#include "core/threads.h"
#include "tools/commands.h"

namespace {

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "usage: perpcomp <command> [options]   (perpcomp <command> --help for its options)\n\n"
               "commands:\n");
  for (const auto& c : pc::cli::Commands()) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
  std::fprintf(out, "\nShared data (tests, presets): $PERPCOMP_SHARED or ../shared. Docs: README.md, docs/.\n");
}

// " during compress: 3 of 12 blocks done" (the work that was running), or "".
std::string Stage() {
  const std::string work = pc::CurrentWork();
  return work.empty() ? std::string() : " during " + work;
}

}  // namespace

int main(int argc, char** argv) {
  pc::SelectBlasKernels(argv);               // may re-execute with OPENBLAS_CORETYPE (core/blas.h)
  pc::SetMmapThreshold(pc::kMmapThreshold);  // a fixed threshold (core/heap.h)
  pc::InstallCachingCpuAllocator();           // freed large tensors are reused (core/cpu_allocator.h)
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    PrintUsage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string verb = argv[1];
  const pc::cli::Command* command = nullptr;
  for (const auto& c : pc::cli::Commands()) {
    if (verb == c.name) command = &c;
  }
  if (command == nullptr) {
    std::string names;
    for (const auto& c : pc::cli::Commands()) names += std::string(names.empty() ? "" : ", ") + c.name;
    std::fprintf(stderr, "perpcomp: unknown command '%s' (available: %s)\n", verb.c_str(), names.c_str());
    return 2;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  pc::SetThreads(0);  // all cores unless --threads says otherwise
  try {
    return command->run(args);
  } catch (const pc::Error& e) {
    std::fprintf(stderr, "\nperpcomp %s: error: %s\n", verb.c_str(), e.what());
    return 1;
  } catch (const boost::program_options::error& e) {
    std::fprintf(stderr, "perpcomp %s: %s (see perpcomp %s --help)\n", verb.c_str(), e.what(), verb.c_str());
    return 2;
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    if (what.find("can't allocate memory") != std::string::npos) {  // LibTorch's CPU allocator
      std::fprintf(stderr, "\nperpcomp %s: error: out of memory%s: %s\n", verb.c_str(), Stage().c_str(), what.c_str());
    } else {
      std::fprintf(stderr, "\nperpcomp %s: error in a tensor operation: %s\n", verb.c_str(), what.c_str());
    }
    return 3;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "\nperpcomp %s: error: out of memory%s\n", verb.c_str(), Stage().c_str());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nperpcomp %s: internal error: %s\n", verb.c_str(), e.what());
    return 3;
  }
}
