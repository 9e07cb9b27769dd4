// Fuzz target: the HDF5 results reader on raw file bytes. The bytes reach libhdf5's own file
// format decoder, which is not hardened against hostile files: Debian 12's libhdf5 1.10.8 crashes
// (SEGV in H5F__accum_read) and leaks within seconds (docs/RELIABILITY.md). Therefore this target
// is opt-in (tools/fuzz.sh 60 1000000 hdf5_bytes), not in the default list nor in .ci/run; the
// default hdf5_reader target writes well-formed files of fuzzed content instead.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_hdf5_walk.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = pc::fuzz::ScratchPath("fuzz.h5");
  pc::fuzz::WriteScratch(path, data, size);
  pc::fuzz::WalkFile(path);
  return 0;
}
