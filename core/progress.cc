#include "core/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

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
std::string g_current_work;  // Progress::CurrentWork (one thread: Progress is not thread-safe)
}  // namespace

std::string CurrentWork() { return g_current_work; }

Progress::Progress(std::string what, int64_t total, std::string unit)
    : what_(std::move(what)), unit_(std::move(unit)), total_(total) {
  enabled_ = Enabled();
  start_ = last_draw_ = std::chrono::steady_clock::now();
  g_current_work = Str(what_, ": 0 of ", total_, " ", unit_, " done");
}

Progress::~Progress() {
  Finish();
  if (std::uncaught_exceptions() == 0) g_current_work.clear();  // kept for the error message
}

void Progress::Add(int64_t n, const std::string& note) {
  done_ += n;
  g_current_work = Str(what_, ": ", done_, " of ", total_, " ", unit_, " done");
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
                  note_.c_str());
  } else {
    std::snprintf(line, sizeof line, "\r%s: %lld %s %.2f/s elapsed %s %s\x1b[K", what_.c_str(),
                  static_cast<long long>(done_), unit_.c_str(), rate, FormatSeconds(elapsed).c_str(), note_.c_str());
  }
  std::fputs(line, stderr);
  std::fflush(stderr);
}

}  // namespace pc
