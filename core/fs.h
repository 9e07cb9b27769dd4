// core/fs.h — files and folders, written crash-safely (docs/RELIABILITY.md).
//
// Every output is written under a temporary name beside its final place and renamed into
// place when complete, so a crash never leaves a half-written file or folder under the
// final name, and an existing output is replaced only with --overwrite.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pc::fs {

bool Exists(const std::string& path);
bool IsDirectory(const std::string& path);
int64_t FileSize(const std::string& path);  // throws naming the file
// Whole file as bytes; throws "cannot read '<path>': <reason>". Only regular files are read
// (OpenForRead): a FIFO, device or socket is refused instead of blocking.
std::string ReadFile(const std::string& path);
// Opens an input for reading (O_RDONLY | O_CLOEXEC) and returns its descriptor, after checking that it
// is a regular file: it is opened with O_NONBLOCK (so that a FIFO without a writer cannot block
// the open), checked with fstat, and O_NONBLOCK is cleared again. Throws
// "cannot read '<path>': <reason>" or "'<path>' is not a regular file (a FIFO)" naming the kind.
// `what` prefixes the messages ("the reference cache").
int OpenForRead(const std::string& path, const std::string& what = "");
// The same check by path, for readers that open the file themselves (libhdf5): throws unless
// `path` is a regular file (after symlinks).
void CheckRegularFile(const std::string& path, const std::string& what = "");
// Writes `bytes` to `path` through `path.tmp-<pid>` + fsync + rename.
void WriteFileAtomic(const std::string& path, const std::string& bytes);
// Writes `size` bytes to `path` (created or truncated) and fsyncs it, checking every call; on a
// failure the file is removed and the error names `display` (the output users know) and the
// reason: "no space left writing '<display>' (...)" for ENOSPC, "file size limit reached writing
// '<display>' (...)" for EFBIG.
void WriteWholeFile(const std::string& path, const void* data, size_t size, const std::string& display);
void RemoveAll(const std::string& path);
void MakeDirs(const std::string& path);
std::string Join(const std::string& a, const std::string& b);
std::string Parent(const std::string& path);
std::string Basename(const std::string& path);
// True when `path` (after resolving "..", symlinks of existing parts) lies inside `dir`.
bool IsInside(const std::string& dir, const std::string& path);
// What an output is: --overwrite replaces only an existing output of the same kind (a report
// folder never replaces a results file, a file never replaces a folder).
enum class OutputKind { kAny, kFile, kFolder };

// Fails early, before any work, when `path` exists and `overwrite` is false, when it exists as
// another kind than `kind`, or when its parent folder cannot be created or written. `what` names
// the option ("--out").
void CheckOutputPath(const std::string& path, bool overwrite, const std::string& what,
                     OutputKind kind = OutputKind::kAny);

// An output may never be an input of the same command: refuses when `output` is one of
// `inputs` ({option, path}; empty paths are skipped) — the same resolved path or the same
// inode (hard links, bind mounts) — or when an input lies inside the folder `output` (which
// --overwrite would remove).
void CheckNotAnInput(const std::string& output, const std::string& what,
                     const std::vector<std::pair<std::string, std::string>>& inputs);

// A folder written under a temporary name beside `final_path` and renamed into place by
// Commit(). Without Commit() (an exception, a crash) the temporary folder is removed (or,
// after a crash, left under its ".tmp-" name, never under the final name, and removed by the
// next StagedDir or StagedFile for the same path once its process is gone).
class StagedDir {
 public:
  StagedDir(std::string final_path, bool overwrite, const std::string& what = "--out");
  ~StagedDir();
  StagedDir(const StagedDir&) = delete;
  StagedDir& operator=(const StagedDir&) = delete;

  const std::string& path() const { return temp_; }  // write here
  const std::string& final_path() const { return final_; }
  void Commit();  // rename into place (replacing an existing one when overwrite)

 private:
  std::string final_, temp_;
  bool overwrite_ = false, committed_ = false;
};

// The same for one file.
class StagedFile {
 public:
  StagedFile(std::string final_path, bool overwrite, const std::string& what = "--out");
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;

  const std::string& path() const { return temp_; }
  const std::string& final_path() const { return final_; }
  void Commit();

 private:
  std::string final_, temp_;
  bool overwrite_ = false, committed_ = false;
};

// Unique temporary name beside `path`: "<path>.tmp-<pid>-<n>".
std::string TempNameBeside(const std::string& path);
// fsync of a file or folder (best effort for folders).
void SyncPath(const std::string& path);

}  // namespace pc::fs
