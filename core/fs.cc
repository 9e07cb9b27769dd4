#include "core/fs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
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

namespace {

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a plain file";
}

std::string Prefix(const std::string& what) { return what.empty() ? std::string() : what + " "; }

}  // namespace

int OpenForRead(const std::string& path, const std::string& what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  PC_CHECK(fd >= 0, "cannot read ", Prefix(what), "'", path, "': ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    PC_THROW("cannot read ", Prefix(what), "'", path, "': ", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    PC_THROW(Prefix(what), "'", path, "' is ", FileKind(st.st_mode), ", expected a regular file");
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

void CheckRegularFile(const std::string& path, const std::string& what) {
  struct stat st;
  PC_CHECK(::stat(path.c_str(), &st) == 0, "cannot read ", Prefix(what), "'", path, "': ", std::strerror(errno));
  PC_CHECK(S_ISREG(st.st_mode), Prefix(what), "'", path, "' is ", FileKind(st.st_mode), ", expected a regular file");
}

std::string ReadFile(const std::string& path) {
  FILE* f = ::fdopen(OpenForRead(path), "rb");
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
  PC_CHECK_OUTPUT(f != nullptr, "cannot write '", tmp, "': ", std::strerror(errno));
  size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  bool ok = written == bytes.size() && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  int err = errno;
  std::fclose(f);
  if (!ok) {
    std::remove(tmp.c_str());
    PC_THROW_OUTPUT("cannot write '", path, "': ", std::strerror(err), " (nothing was changed at '", path, "')");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    std::remove(tmp.c_str());
    PC_THROW("cannot rename '", tmp, "' to '", path, "': ", std::strerror(err));
  }
}

void WriteWholeFile(const std::string& path, const void* data, size_t size, const std::string& display) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  PC_CHECK_OUTPUT(fd >= 0, "cannot write '", display, "': cannot create '", path, "': ", std::strerror(errno));
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  int err = 0;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : ENOSPC;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0) return;
  std::remove(path.c_str());
  const char* what = err == ENOSPC ? "no space left writing" : err == EFBIG ? "file size limit reached writing"
                                                                           : "cannot write";
  PC_THROW_OUTPUT(what, " '", display, "' (", size, " bytes): ", std::strerror(err), "; nothing was changed at '", display,
           "' and the temporary file was removed");
}

void RemoveAll(const std::string& path) {
  std::error_code ec;
  stdfs::remove_all(path, ec);
}

void MakeDirs(const std::string& path) {
  std::error_code ec;
  stdfs::create_directories(path, ec);
  PC_CHECK_OUTPUT(!ec, "cannot create folder '", path, "': ", ec.message());
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

namespace {

const char* KindName(OutputKind kind) { return kind == OutputKind::kFolder ? "a folder" : "a file"; }

// The kind of an existing path (symlinks followed; a dangling link counts as a file).
OutputKind ExistingKind(const std::string& path) { return IsDirectory(path) ? OutputKind::kFolder : OutputKind::kFile; }

}  // namespace

void CheckOutputPath(const std::string& path, bool overwrite, const std::string& what, OutputKind kind) {
  PC_CHECK(!path.empty(), what, " is empty: expected a path");
  if (Exists(path) && !overwrite) {
    PC_THROW(what, " '", path, "' already exists; pass --overwrite to replace it (the new one is written beside it ",
             "and swapped in when complete)");
  }
  if (Exists(path) && kind != OutputKind::kAny && ExistingKind(path) != kind) {
    PC_THROW(what, " '", path, "' is ", KindName(ExistingKind(path)), ", but this output is ", KindName(kind),
             "; --overwrite replaces only an output of the same kind: choose another path or remove it yourself");
  }
  std::string parent = Parent(path);
  if (!Exists(parent)) {
    std::error_code ec;
    stdfs::create_directories(parent, ec);
    PC_CHECK_OUTPUT(!ec, what, " '", path, "': cannot create its folder '", parent, "': ", ec.message());
  }
  PC_CHECK(IsDirectory(parent), what, " '", path, "': '", parent, "' is not a folder");
  PC_CHECK(::access(parent.c_str(), W_OK) == 0, what, " '", path, "': folder '", parent, "' is not writable");
}

void CheckNotAnInput(const std::string& output, const std::string& what,
                     const std::vector<std::pair<std::string, std::string>>& inputs) {
  if (output.empty()) return;
  std::error_code ec;
  const stdfs::path out = stdfs::weakly_canonical(stdfs::absolute(output, ec), ec);
  struct stat out_st;
  const bool out_exists = ::stat(output.c_str(), &out_st) == 0;
  for (const auto& [option, input] : inputs) {
    if (input.empty() || !Exists(input)) continue;
    const stdfs::path in = stdfs::weakly_canonical(stdfs::absolute(input, ec), ec);
    struct stat in_st;
    const bool same_inode = out_exists && ::stat(input.c_str(), &in_st) == 0 && in_st.st_dev == out_st.st_dev &&
                            in_st.st_ino == out_st.st_ino;
    PC_CHECK(!same_inode && in != out, what, " '", output, "' is the input ", option, " '", input,
             "'; an output may never be an input of the same command (it would be destroyed): choose another ", what);
    PC_CHECK(!IsInside(output, input), what, " '", output, "' contains the input ", option, " '", input,
             "'; an output may never hold an input of the same command (replacing it would destroy the input): ",
             "choose another ", what);
  }
}

namespace {
// Moves `temp` to `final`, replacing an existing `final` (a folder or file) when allowed and of
// the same kind.
void SwapIntoPlace(const std::string& temp, const std::string& final, bool overwrite) {
  std::error_code ec;
  std::string old;
  if (Exists(final)) {
    PC_CHECK(overwrite, "'", final, "' appeared while writing; pass --overwrite to replace it");
    PC_CHECK(IsDirectory(final) == IsDirectory(temp), "'", final, "' is ", KindName(ExistingKind(final)),
             ", but the new output is ", KindName(ExistingKind(temp)),
             "; --overwrite replaces only an output of the same kind (the new one was not put in its place)");
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
  CheckOutputPath(final_, overwrite_, what, OutputKind::kFolder);
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
  CheckOutputPath(final_, overwrite_, what, OutputKind::kFile);
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
