// core/current_work.h — the work in progress, for error messages that end a command (an
// allocation failure names the stage it happened in). Kept up to date by core/progress.h.
#pragma once

#include <string>

namespace pc {

// "compress: 3 of 12 blocks done": the most recent Progress of this process, kept when it is
// destroyed by an exception; "" when none is running.
std::string CurrentWork();

}  // namespace pc
