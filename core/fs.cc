#include "core/fs.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/log.h"

namespace pc::fs {
namespace stdfs = std::filesystem;

bool Exists(const std::string& path) {
  std::error_code ec;
  return stdfs::exists(stdfs::symlink_status(path, ec)) || stdfs::exists(path, ec);
}

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return stdfs::is_directory(path, ec);
}

int64_t FileSize(const std::string& path) {
  std::error_code ec;
  auto size = stdfs::file_size(path, ec);
  PC_CHECK(!ec, "cannot read '", path, "': ", ec.message());
  return static_cast<int64_t>(size);
}

std::string ReadFile(const std::string& path) {
  PC_CHECK(!IsDirectory(path), "cannot read '", path, "': it is a folder, expected a file");
  FILE* f = std::fopen(path.c_str(), "rb");
  PC_CHECK(f != nullptr, "cannot read '", path, "': ", std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  PC_CHECK(!failed, "cannot read '", path, "': read error");
  return out;
}

void SyncPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string TempNameBeside(const std::string& path) {
  static std::atomic<int> counter{0};
  std::string clean = path;
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  return Str(clean, ".tmp-", ::getpid(), "-", counter++);
}

void WriteFileAtomic(const std::string& path, const std::string& bytes) {
  std::string tmp = TempNameBeside(path);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  PC_CHECK(f != nullptr, "cannot write '", tmp, "': ", std::strerror(errno));
  size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  bool ok = written == bytes.size() && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  int err = errno;
  std::fclose(f);
  if (!ok) {
    std::remove(tmp.c_str());
    PC_THROW("cannot write '", path, "': ", std::strerror(err), " (nothing was changed at '", path, "')");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    PC_THROW("cannot rename '", tmp, "' to '", path, "': ", std::strerror(err));
  }
}

void RemoveAll(const std::string& path) {
  std::error_code ec;
  stdfs::remove_all(path, ec);
}

void MakeDirs(const std::string& path) {
  std::error_code ec;
  stdfs::create_directories(path, ec);
  PC_CHECK(!ec, "cannot create folder '", path, "': ", ec.message());
}

std::string Join(const std::string& a, const std::string& b) { return (stdfs::path(a) / b).string(); }

std::string Parent(const std::string& path) {
  stdfs::path p(path);
  while (p.has_relative_path() && p.filename().empty()) p = p.parent_path();  // trailing '/'
  auto parent = p.parent_path();
  return parent.empty() ? "." : parent.string();
}

std::string Basename(const std::string& path) {
  stdfs::path p(path);
  while (p.has_relative_path() && p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

bool IsInside(const std::string& dir, const std::string& path) {
  std::error_code ec;
  auto base = stdfs::weakly_canonical(stdfs::absolute(dir, ec), ec);
  if (ec) return false;
  auto target = stdfs::weakly_canonical(stdfs::absolute(path, ec), ec);
  if (ec) return false;
  auto b = base.begin(), t = target.begin();
  for (; b != base.end(); ++b, ++t) {
    if (t == target.end() || *b != *t) return false;
  }
  return t != target.end();  // strictly inside
}

void CheckOutputPath(const std::string& path, bool overwrite, const std::string& what) {
  PC_CHECK(!path.empty(), what, " is empty: expected a path");
  if (Exists(path) && !overwrite) {
    PC_THROW(what, " '", path, "' already exists; pass --overwrite to replace it (the new one is written beside it ",
             "and swapped in when complete)");
  }
  std::string parent = Parent(path);
  if (!Exists(parent)) {
    std::error_code ec;
    stdfs::create_directories(parent, ec);
    PC_CHECK(!ec, what, " '", path, "': cannot create its folder '", parent, "': ", ec.message());
  }
  PC_CHECK(IsDirectory(parent), what, " '", path, "': '", parent, "' is not a folder");
  PC_CHECK(::access(parent.c_str(), W_OK) == 0, what, " '", path, "': folder '", parent, "' is not writable");
}

namespace {
// Moves `temp` to `final`, replacing an existing `final` (a folder or file) when allowed.
void SwapIntoPlace(const std::string& temp, const std::string& final, bool overwrite) {
  std::error_code ec;
  std::string old;
  if (Exists(final)) {
    PC_CHECK(overwrite, "'", final, "' appeared while writing; pass --overwrite to replace it");
    const bool dirs = IsDirectory(final) && IsDirectory(temp);
    if (!dirs && !IsDirectory(final) && !IsDirectory(temp) && std::rename(temp.c_str(), final.c_str()) == 0) {
      SyncPath(Parent(final));  // a file replaced atomically
      return;
    }
    // Folders: swapped atomically, so that a crash at any moment leaves the old or the new
    // folder under the final name (then the old one, now under the temporary name, is removed).
    if (dirs && ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, final.c_str(), RENAME_EXCHANGE) == 0) {
      SyncPath(Parent(final));
      RemoveAll(temp);
      return;
    }
    // File systems without RENAME_EXCHANGE: the old one is moved aside first.
    old = TempNameBeside(final) + ".old";
    stdfs::rename(final, old, ec);
    PC_CHECK(!ec, "cannot move the old '", final, "' aside: ", ec.message());
  }
  stdfs::rename(temp, final, ec);
  if (ec) {
    std::string msg = ec.message();
    if (!old.empty()) stdfs::rename(old, final, ec);  // put the old one back
    PC_THROW("cannot rename '", temp, "' to '", final, "': ", msg);
  }
  SyncPath(Parent(final));
  if (!old.empty()) RemoveAll(old);
}
}  // namespace

namespace {
// Removes "<path>.tmp-<pid>-<n>[.old]" beside `path` whose process <pid> no longer runs: what a
// killed command left. A live process's temporaries (another command writing the same output
// now) are kept.
void RemoveStaleTemporaries(const std::string& path) {
  const std::string prefix = Basename(path) + ".tmp-";
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(Parent(path), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const size_t digits = name.find_first_not_of("0123456789", prefix.size());
    if (digits == prefix.size() || digits == std::string::npos || name[digits] != '-') continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    log::Info("fs", "removing '", e.path().string(), "', left by an interrupted run (process ", pid, ")");
    RemoveAll(e.path().string());
  }
}
}  // namespace

StagedDir::StagedDir(std::string final_path, bool overwrite, const std::string& what)
    : final_(std::move(final_path)), overwrite_(overwrite) {
  while (final_.size() > 1 && final_.back() == '/') final_.pop_back();
  CheckOutputPath(final_, overwrite_, what);
  RemoveStaleTemporaries(final_);
  temp_ = TempNameBeside(final_);
  MakeDirs(temp_);
}

StagedDir::~StagedDir() {
  if (!committed_) RemoveAll(temp_);
}

void StagedDir::Commit() {
  PC_ASSERT(!committed_);
  SyncPath(temp_);
  SwapIntoPlace(temp_, final_, overwrite_);
  committed_ = true;
}

StagedFile::StagedFile(std::string final_path, bool overwrite, const std::string& what)
    : final_(std::move(final_path)), overwrite_(overwrite) {
  CheckOutputPath(final_, overwrite_, what);
  RemoveStaleTemporaries(final_);
  temp_ = TempNameBeside(final_);
}

StagedFile::~StagedFile() {
  if (!committed_) std::remove(temp_.c_str());
}

void StagedFile::Commit() {
  PC_ASSERT(!committed_);
  PC_CHECK(Exists(temp_), "nothing was written to '", temp_, "' for '", final_, "'");
  SyncPath(temp_);
  SwapIntoPlace(temp_, final_, overwrite_);
  committed_ = true;
}

}  // namespace pc::fs
