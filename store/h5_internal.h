// store/h5_internal.h — private to store/*.cc: RAII HDF5 ids, the HDF5 error stack as text,
// type mapping. The only header that includes hdf5.h; never include it outside store/.
#pragma once

#include <hdf5.h>

#include <string>
#include <vector>

#include "store/types.h"

namespace pc::store::detail {

static_assert(sizeof(hid_t) == sizeof(int64_t), "store: hid_t is int64_t from HDF5 1.10 on");

// Once per process, before any other HDF5 call: switches HDF5's automatic error printing
// off (errors become pc::Error) and its atexit handler off (see h5_internal.cc).
void InitHdf5();

// An owned HDF5 id, closed by `closer` (H5Gclose, H5Dclose, ...) when it goes out of scope.
class Hid {
 public:
  using Closer = herr_t (*)(hid_t);
  Hid() = default;
  Hid(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Hid() { Reset(); }
  Hid(Hid&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = -1; }
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      Reset();
      id_ = o.id_;
      closer_ = o.closer_;
      o.id_ = -1;
    }
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void Reset() {
    if (id_ >= 0 && closer_ != nullptr) closer_(id_);
    id_ = -1;
  }
  // Closes now and reports the result (< 0: failed, see LastError()).
  herr_t Close() {
    herr_t r = (id_ >= 0 && closer_ != nullptr) ? closer_(id_) : 0;
    id_ = -1;
    return r;
  }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

// The innermost message of HDF5's error stack ("object 'x' doesn't exist"; for a failed
// system call the errno text, "File too large"), then clears the stack.
std::string LastError();

// The state shared by a File and its Groups.
struct FileState {
  hid_t id = -1;
  std::string display;  // the path users know (the final path of a staged file)
  std::string real;     // the path on disk (the temporary name while staged)
  bool writable = false;
  bool open = false;
  // Built in memory (libhdf5's core driver, no backing store) and written to `real` by perpcomp
  // itself (WriteImage): libhdf5 never meets a failing write(2) on an output file, whose error
  // paths crash libhdf5 1.10 (docs/RELIABILITY.md, "A full disk").
  bool in_memory = false;
  ~FileState();
  // The file's bytes so far (in_memory only), written to `real` with checked writes.
  void WriteImage() const;
  // Flushes and closes; false (and `error` set) when HDF5 reports a failure. Idempotent.
  bool Close(std::string* error);
};

// Memory (native) and file (little-endian) types of an element type.
hid_t MemType(DType type);
hid_t FileType(DType type);
// The DType of a stored type; false (and `name` describing it: "uint16", "compound") when
// it has none. Fixed-length and variable-length strings are both kString.
bool ClassifyType(hid_t type, DType* out, std::string* name);
// A variable-length UTF-8 string type (caller owns).
Hid VarStringType();
// The extents of a dataspace: {} (rank 0) for a scalar, {0} for a null (empty) one.
Shape SpaceShape(hid_t space);
// The state of a usable file: open (and writable when `action` is a write), else throws
// "<where>: cannot <action>: ...".
void CheckOpen(const FileState& file, const std::string& where, const std::string& action, bool write);
// Opens the group at absolute `path` (which exists: Group objects are made for existing groups).
Hid OpenGroupAt(const FileState& file, const std::string& path, const std::string& where);
// Group creation properties: link and attribute creation order tracked and indexed.
Hid GroupCreatePlist();
// Attributes kept in compact storage (object header) per group; see GroupCreatePlist.
inline constexpr unsigned kMaxCompactAttributes = 1024;
// "a, b, c" for error messages (at most 20 names, then "... (N in all)"; "none" when empty).
std::string NameList(const std::vector<std::string>& names);
// Checks a user-given child/attribute name: not empty, no '/', not ".".
void CheckName(const std::string& where, const char* what, const std::string& name);
// Checks every string is NUL-free UTF-8 (stored as variable-length UTF-8).
void CheckStrings(const std::string& where, const std::string& what, const std::string* values, size_t count);
// Reads all `count` strings of a dataset or attribute (`is_attribute`) whose stored type
// `stored` is a variable- or fixed-length string; false and `error` set on failure.
bool ReadStrings(hid_t obj, bool is_attribute, hid_t stored, size_t count, std::vector<std::string>* out,
                 std::string* error);

}  // namespace pc::store::detail
