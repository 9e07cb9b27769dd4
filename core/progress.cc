#include "core/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>

#include "core/current_work.h"
#include "core/log.h"

namespace pc {

bool Progress::Enabled() {
  if (log::GetLevel() < log::Level::kInfo) return false;
  const char* env = std::getenv("PERPCOMP_PROGRESS");
  if (env != nullptr) return std::strcmp(env, "0") != 0;
  return isatty(STDERR_FILENO) == 1;
}

std::string Progress::FormatSeconds(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  long t = std::lround(s);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  } else if (t >= 60) {
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lds", t);
  }
  return buf;
}

namespace {
std::mutex g_current_work_mutex;  // Progress objects may live on several threads at once
std::string g_current_work;       // CurrentWork(): the most recent Progress of this process
thread_local Progress* t_innermost = nullptr;  // the last live Progress made on this thread
thread_local bool t_quiet = false;             // a QuietProgress lives on this thread

void SetCurrentWork(std::string s) {
  std::lock_guard<std::mutex> lock(g_current_work_mutex);
  g_current_work = std::move(s);
}
}  // namespace

std::string CurrentWork() {
  std::lock_guard<std::mutex> lock(g_current_work_mutex);
  return g_current_work;
}

QuietProgress::QuietProgress() : previous_(t_quiet) { t_quiet = true; }
QuietProgress::~QuietProgress() { t_quiet = previous_; }

Progress::Progress(std::string what, int64_t total, std::string unit)
    : what_(std::move(what)), unit_(std::move(unit)), total_(total) {
  enabled_ = !t_quiet && Enabled();
  start_ = last_draw_ = std::chrono::steady_clock::now();
  outer_ = t_innermost;
  t_innermost = this;
  SetCurrentWork(Str(what_, ": 0 of ", total_, " ", unit_, " done"));
}

Progress::~Progress() {
  if (t_innermost == this) t_innermost = outer_;
  Finish();
  if (std::uncaught_exceptions() == 0) SetCurrentWork("");  // kept for the error message
}

void Progress::Add(int64_t n, const std::string& note) {
  done_ += n;
  inner_.clear();  // a new item: the previous item's SubProgress is over
  SetCurrentWork(Str(what_, ": ", done_, " of ", total_, " ", unit_, " done"));
  if (!note.empty()) note_ = note;
  Draw(false);
}

void Progress::SetNote(const std::string& note) {
  note_ = note;
  Draw(false);
}

void Progress::Finish() {
  if (finished_) return;
  finished_ = true;
  if (!enabled_ || !drawn_) return;
  Draw(true);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

void Progress::Draw(bool force) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(200) && done_ < total_) return;
  last_draw_ = now;
  drawn_ = true;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double rate = elapsed > 0 ? done_ / elapsed : 0.0;
  double eta = (rate > 0 && total_ > done_) ? (total_ - done_) / rate : 0.0;
  char line[512];
  if (total_ > 0) {
    std::snprintf(line, sizeof line, "\r%s: %lld/%lld %s (%3.0f%%) %.2f/s elapsed %s ETA %s %s\x1b[K", what_.c_str(),
                  static_cast<long long>(done_), static_cast<long long>(total_), unit_.c_str(),
                  100.0 * done_ / total_, rate, FormatSeconds(elapsed).c_str(), FormatSeconds(eta).c_str(),
                  (note_ + inner_).c_str());
  } else {
    std::snprintf(line, sizeof line, "\r%s: %lld %s %.2f/s elapsed %s %s\x1b[K", what_.c_str(),
                  static_cast<long long>(done_), unit_.c_str(), rate, FormatSeconds(elapsed).c_str(),
                  (note_ + inner_).c_str());
  }
  std::fputs(line, stderr);
  std::fflush(stderr);
}

SubProgress::SubProgress(std::string what, int64_t total) : what_(std::move(what)), total_(total) {
  if (t_innermost != nullptr && t_innermost->enabled_ && !t_innermost->finished_) line_ = t_innermost;
  start_ = last_ = std::chrono::steady_clock::now();
}

SubProgress::~SubProgress() {
  // Only while its line is still the innermost one: a SubProgress outliving an inner Progress
  // must not write into a destroyed object.
  if (line_ != nullptr && t_innermost == line_) line_->inner_.clear();
}

void SubProgress::Add(int64_t n) {
  done_ += n;
  if (line_ == nullptr || t_innermost != line_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(200) && done_ < total_) return;  // as Progress draws
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? done_ / elapsed : 0.0;
  const double eta = (rate > 0 && total_ > done_) ? (total_ - done_) / rate : 0.0;
  char buf[256];
  std::snprintf(buf, sizeof buf, " | %s %lld/%lld %.1f/s ETA %s", what_.c_str(), static_cast<long long>(done_),
                static_cast<long long>(total_), rate, Progress::FormatSeconds(eta).c_str());
  line_->inner_ = buf;
  line_->Draw(false);
}

}  // namespace pc
