// store/untrusted.h — opening results files that perpcomp did not just write (a results file
// given to rank or merge, an --out to append to): libhdf5 1.10 can crash or hang on a malformed
// file, so the whole file is read once in a child process first, and a crash there becomes an
// error naming the file (docs/RELIABILITY.md, "libhdf5").
#pragma once

#include <string>

#include "store/file.h"

namespace pc::store {

// Reads every object, attribute and dataset of `path` (datasets up to 256 MiB each) in a forked
// child. Throws "the file '<path>' is damaged: reading it crashes libhdf5 (Segmentation fault)"
// when the child dies by a signal, or "... did not finish in 120 s" when it hangs. HDF5 errors in
// the child are not reported there (the real open reports them with their context).
void CheckNotDamaged(const std::string& path);

// CheckNotDamaged, then File::OpenRead.
File OpenUntrusted(const std::string& path, const std::string& expected_kind = "");

}  // namespace pc::store
