// tools/run_io.h — the options of the reference cache, shared by `measure`, `eval` and `sweep`.
// What the runs read and write (token windows, run files) is in pipeline/run_io.h.
#pragma once

#include <string>

#include "metrics/reference_cache.h"
#include "tools/cli.h"

namespace pc::cli {

// --cache DIR, --no-cache, --cache-limit SIZE (the reference cache, docs/METRICS.md).
struct CacheFlags {
  std::string dir, limit = "64G";
  bool none = false;
};
void AddCacheOptions(po::options_description& desc, CacheFlags& flags);
CacheOptions ToCacheOptions(const CacheFlags& flags);

}  // namespace pc::cli
