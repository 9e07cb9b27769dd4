// core/fs.h — files and folders, written crash-safely (docs/RELIABILITY.md).
//
// Every output is written under a temporary name beside its final place and renamed into
// place when complete, so a crash never leaves a half-written file or folder under the
// final name, and an existing output is replaced only with --overwrite.
#pragma once

#include <cstdint>
#include <string>

namespace pc::fs {

bool Exists(const std::string& path);
bool IsDirectory(const std::string& path);
int64_t FileSize(const std::string& path);  // throws naming the file
// Whole file as bytes; throws "cannot read '<path>': <reason>".
std::string ReadFile(const std::string& path);
// Writes `bytes` to `path` through `path.tmp-<pid>` + fsync + rename.
void WriteFileAtomic(const std::string& path, const std::string& bytes);
void RemoveAll(const std::string& path);
void MakeDirs(const std::string& path);
std::string Join(const std::string& a, const std::string& b);
std::string Parent(const std::string& path);
std::string Basename(const std::string& path);
// True when `path` (after resolving "..", symlinks of existing parts) lies inside `dir`.
bool IsInside(const std::string& dir, const std::string& path);
// Fails early, before any work, when `path` exists and `overwrite` is false, or its parent
// folder cannot be created or written. `what` names the option ("--out").
void CheckOutputPath(const std::string& path, bool overwrite, const std::string& what);

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
