#include "tools/run_io.h"

#include "core/error.h"
#include "core/strings.h"

namespace pc::cli {

void AddCacheOptions(po::options_description& desc, CacheFlags& c) {
  desc.add_options()
    ("cache", po::value<std::string>(&c.dir), "reference cache folder (default $XDG_CACHE_HOME/perpcomp or ~/.cache/perpcomp)")
    ("no-cache", po::bool_switch(&c.none), "run the reference every time; write no cache")
    ("cache-limit", po::value<std::string>(&c.limit)->default_value("64G"), "largest reference cache part to write");
}

CacheOptions ToCacheOptions(const CacheFlags& c) {
  PC_CHECK(!(c.none && !c.dir.empty()), "--cache and --no-cache exclude each other");
  CacheOptions o;
  if (!c.none) o.dir = c.dir.empty() ? DefaultCacheDir() : c.dir;
  o.limit_bytes = ParseBytes(c.limit, "--cache-limit");
  return o;
}

}  // namespace pc::cli
