// core/progress.h — progress of long work: done/total, rate, ETA.
//
// On a terminal (stderr is a TTY) it redraws one line at most 5 times a second; in CI logs
// (not a TTY) it stays quiet unless PERPCOMP_PROGRESS=1. A Progress and its SubProgress belong
// to the thread that made them (the process-wide CurrentWork() is locked).
//
// A SubProgress counts steps inside one item of the innermost live Progress of its thread (AWQ's
// grid inside one block of "compress: 3/30 blocks"), shown at the end of that line as
// "| awq grid mlp.up_proj 12/20 3.1/s ETA 4s", so that a long item never looks hung.
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

  friend class SubProgress;
  std::string what_, unit_, note_, inner_;
  int64_t total_ = 0, done_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool enabled_ = false, finished_ = false, drawn_ = false;
  Progress* outer_ = nullptr;  // the Progress that was innermost before this one (same thread)
};

// While one lives, Progress lines made on its thread stay quiet (work running side by side on
// several threads, as the demo trains and evaluates its two models, would draw over each other).
class QuietProgress {
 public:
  QuietProgress();
  ~QuietProgress();
  QuietProgress(const QuietProgress&) = delete;
  QuietProgress& operator=(const QuietProgress&) = delete;

 private:
  bool previous_ = false;
};

class SubProgress {
 public:
  // `what` names the inner work ("gptq columns model.layers.3.mlp.up_proj"); `total` its steps.
  // Without a live Progress on this thread, or when progress is not shown, it does nothing.
  SubProgress(std::string what, int64_t total);
  ~SubProgress();
  SubProgress(const SubProgress&) = delete;
  SubProgress& operator=(const SubProgress&) = delete;

  void Add(int64_t n = 1);

 private:
  Progress* line_ = nullptr;  // the innermost Progress when made; null: nothing to show
  std::string what_;
  int64_t total_ = 0, done_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace pc
