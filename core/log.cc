#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace pc::log {
namespace {
std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::mutex g_mutex;
}  // namespace

void SetLevel(Level level) { g_level = static_cast<int>(level); }
Level GetLevel() { return static_cast<Level>(g_level.load()); }

void Write(Level level, const char* component, const std::string& message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const char* tag = level == Level::kWarn ? "warning: " : "";
  std::fprintf(stderr, "%s: %s%s\n", component, tag, message.c_str());
  std::fflush(stderr);
}

}  // namespace pc::log
