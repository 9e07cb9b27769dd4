// core/progress.h — progress of long work: done/total, rate, ETA.
//
// On a terminal (stderr is a TTY) it redraws one line at most 5 times a second; in CI logs
// (not a TTY) it stays quiet unless PERPCOMP_PROGRESS=1. Not thread-safe: call from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace pc {

class Progress {
 public:
  // `what` names the work ("compress", "eval"); `unit` the items ("windows", "blocks").
  Progress(std::string what, int64_t total, std::string unit = "");
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void Add(int64_t n = 1, const std::string& note = "");
  void SetNote(const std::string& note);  // e.g. "loss 2.31"
  void Finish();                          // final line (terminal only)

  static bool Enabled();  // TTY or PERPCOMP_PROGRESS=1, and log level >= info
  // "1:02:03" / "4:05" / "12s"
  static std::string FormatSeconds(double seconds);

 private:
  void Draw(bool force);

  std::string what_, unit_, note_;
  int64_t total_ = 0, done_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool enabled_ = false, finished_ = false, drawn_ = false;
};

}  // namespace pc
