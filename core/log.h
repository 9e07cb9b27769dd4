// core/log.h — levelled logging to stderr, each line prefixed with its component.
#pragma once

#include <string>

#include "core/error.h"

namespace pc::log {

enum class Level { kQuiet = 0, kWarn = 1, kInfo = 2, kVerbose = 3 };

void SetLevel(Level level);
Level GetLevel();
void Write(Level level, const char* component, const std::string& message);

template <typename... Args>
void Info(const char* component, Args&&... args) {
  if (GetLevel() >= Level::kInfo) Write(Level::kInfo, component, Str(std::forward<Args>(args)...));
}
template <typename... Args>
void Verbose(const char* component, Args&&... args) {
  if (GetLevel() >= Level::kVerbose) Write(Level::kVerbose, component, Str(std::forward<Args>(args)...));
}
template <typename... Args>
void Warn(const char* component, Args&&... args) {
  if (GetLevel() >= Level::kWarn) Write(Level::kWarn, component, Str(std::forward<Args>(args)...));
}

}  // namespace pc::log
