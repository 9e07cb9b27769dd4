// store/file.h — perpcomp results files: versioned, typed by kind, written crash-safely.
//
// Every file carries the root attributes perpcomp_schema (int), perpcomp_kind (string),
// created_by ("perpcomp <version>") and created_at (ISO-8601 UTC). Readers check them on
// open and ignore attributes, columns and groups they do not know (append-only evolution).
//
// Crash safety (docs/HDF5.md): HDF5 1.10 has no journaling, so results are
// written with CreateStaged: under a temporary name beside the final one, renamed into place
// by Commit(). A results file gathering many runs is rebuilt into a new staged file from the
// complete run files with CopyGroup; results files are never edited in place.
//
//   StagedWriter out = File::CreateStaged(path, kind::kMeasure, overwrite);
//   Group run = out.root().CreateGroup("run");
//   run.SetAttr("recipe", "awq-w4g128");
//   run.WriteTable("sites", table);
//   out.Commit();
//
//   File in = File::OpenRead(path, kind::kMeasure);
//   Table sites = in.root().OpenGroup("run").ReadTable("sites");
//
// Not thread-safe (serial HDF5): use the store from one thread (docs/HDF5.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "store/group.h"

namespace pc::fs {
class StagedFile;
}

namespace pc::store {

// The schema this build writes and the newest it reads. Bump only for changes old readers
// would misread; adding attributes, columns, datasets or groups needs no bump.
inline constexpr int64_t kSchemaVersion = 1;

// File kinds (perpcomp_kind). A kind is lower-case letters, digits and '-'.
namespace kind {
inline constexpr const char* kCompressLog = "compress-log";
inline constexpr const char* kMeasure = "measure";
inline constexpr const char* kEval = "eval";
inline constexpr const char* kSweepRun = "sweep-run";
inline constexpr const char* kSweepResults = "sweep-results";
inline constexpr const char* kProbe = "probe";
inline constexpr const char* kKldBase = "kld-base";  // perpcomp kld --save-base (metrics/kld_base.h)
inline constexpr const char* kSensitivity = "sensitivity";  // perpcomp sensitivity (pipeline/sensitivity.h)
}  // namespace kind

// "perpcomp <version>" (the created_by attribute).
std::string CreatedBy();

class StagedWriter;

class File {
 public:
  // Creates `path` directly (no staging; prefer CreateStaged for outputs). An existing file
  // is refused unless `overwrite`.
  static File Create(const std::string& path, const std::string& kind, bool overwrite = false);
  // Crash-safe output: see StagedWriter. `what` names the option in errors ("--out").
  static StagedWriter CreateStaged(const std::string& final_path, const std::string& kind, bool overwrite,
                                   const std::string& what = "--out");
  // Opens a perpcomp file; `expected_kind` ("" accepts any) is checked against perpcomp_kind.
  // Errors: missing file, not HDF5, not a perpcomp file, a newer schema, the wrong kind.
  static File OpenRead(const std::string& path, const std::string& expected_kind = "");
  static File OpenReadWrite(const std::string& path, const std::string& expected_kind = "");

  Group root() const;
  const std::string& path() const;  // as given (the final path for a staged file)
  std::string kind() const { return root().GetAttr<std::string>("perpcomp_kind"); }
  int64_t schema() const { return root().GetAttr<int64_t>("perpcomp_schema"); }
  bool writable() const;
  bool is_open() const;

  void Flush() const;  // writes HDF5's caches to disk; throws on a write error
  // Flushes and closes; throws on a write error (disk full). Groups of this file throw
  // when used afterwards. The destructor closes quietly.
  void Close();

 private:
  friend class StagedWriter;
  File() = default;
  static File Open(const std::string& path, const std::string& expected_kind, bool writable);
  void CloseQuietly();
  std::shared_ptr<detail::FileState> state_;
};

// A file being written under a temporary name ("<final>.tmp-<pid>-<n>"). Commit() flushes,
// closes, fsyncs and renames it to the final path (replacing an old file only when
// `overwrite` was given). Destroyed without Commit (an error, an exception) the temporary
// file is removed and the final path is untouched; after a crash it is left under its
// ".tmp-" name, never under the final one.
class StagedWriter {
 public:
  StagedWriter(StagedWriter&&) noexcept;
  StagedWriter& operator=(StagedWriter&&) noexcept;
  ~StagedWriter();

  Group root() const { return file_.root(); }
  File& file() { return file_; }
  const std::string& final_path() const;
  const std::string& temp_path() const;
  void Commit();  // throws (final path untouched) when a write, the close or the rename fails
  bool committed() const { return committed_; }

 private:
  friend class File;
  StagedWriter(std::unique_ptr<fs::StagedFile> staged, File file);
  std::unique_ptr<fs::StagedFile> staged_;
  File file_;  // declared after staged_: closed before the temporary file is removed
  bool committed_ = false;
};

// Copies the object `name` of `src` (a group and everything below it) to `dst` as
// `new_name` (H5Ocopy), between files or within one. Error if `dst` already has `new_name`.
void CopyGroup(const Group& src, const std::string& name, const Group& dst, const std::string& new_name);

}  // namespace pc::store
