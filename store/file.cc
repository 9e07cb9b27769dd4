// Files: creating (staged), opening with schema/kind checks, closing, copying groups.
#include "store/file.h"

#include <ctime>

#include "core/error.h"
#include "core/fs.h"
#include "store/h5_internal.h"

#ifndef PC_VERSION
#define PC_VERSION "unknown"
#endif

namespace pc::store {
using detail::FileState;
using detail::Hid;
using detail::LastError;

std::string CreatedBy() { return Str("perpcomp ", PC_VERSION); }

namespace {

// "2025-01-31T12:00:00Z"
std::string NowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void CheckKind(const std::string& kind) {
  bool ok = !kind.empty();
  for (char c : kind) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  PC_CHECK(ok, "invalid perpcomp file kind '", kind, "': expected lower-case letters, digits and '-' (e.g. '",
           kind::kMeasure, "')");
}

// File access: close everything with the file (no object outlives Close), and file locks
// that are skipped on file systems without them (NFS, Lustre) instead of failing.
Hid AccessPlist() {
  Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  PC_ASSERT(fapl.valid() && H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG) >= 0 &&
                H5Pset_file_locking(fapl.get(), true, true) >= 0,
            LastError());
  return fapl;
}

// Creates the HDF5 file `real` (shown as `display` in errors) with the root attributes; `in_memory`:
// built in memory and written to `real` by FileState::WriteImage.
std::shared_ptr<FileState> CreateAt(const std::string& real, const std::string& display, unsigned flags,
                                    bool in_memory = false) {
  Hid fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  unsigned order = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;
  PC_ASSERT(fcpl.valid() && H5Pset_link_creation_order(fcpl.get(), order) >= 0 &&
                H5Pset_attr_creation_order(fcpl.get(), order) >= 0 &&
                H5Pset_attr_phase_change(fcpl.get(), detail::kMaxCompactAttributes, detail::kMaxCompactAttributes) >= 0,
            LastError());
  Hid fapl = AccessPlist();
  if (in_memory) {
    PC_ASSERT(H5Pset_fapl_core(fapl.get(), 1 << 20, /*backing_store=*/0) >= 0, LastError());
    flags = H5F_ACC_TRUNC;  // nothing is created on disk by libhdf5
  }
  hid_t id = H5Fcreate(real.c_str(), flags, fcpl.get(), fapl.get());
  PC_CHECK_OUTPUT(id >= 0, "cannot create '", display, "': ", LastError());
  auto state = std::make_shared<FileState>();
  state->id = id;
  state->display = display;
  state->real = real;
  state->writable = true;
  state->open = true;
  state->in_memory = in_memory;
  return state;
}

// Writes the root attributes of a new file.
void WriteRootAttributes(const Group& root, const std::string& kind) {
  root.SetAttr("perpcomp_schema", kSchemaVersion);
  root.SetAttr("perpcomp_kind", kind);
  root.SetAttr("created_by", CreatedBy());
  root.SetAttr("created_at", NowUtc());
}

}  // namespace

File File::Create(const std::string& path, const std::string& kind, bool overwrite) {
  detail::InitHdf5();
  CheckKind(kind);
  fs::CheckOutputPath(path, overwrite, "output file");
  File f;
  f.state_ = CreateAt(path, path, H5F_ACC_TRUNC);
  WriteRootAttributes(f.root(), kind);
  return f;
}

StagedWriter File::CreateStaged(const std::string& final_path, const std::string& kind, bool overwrite,
                                const std::string& what) {
  detail::InitHdf5();
  CheckKind(kind);
  auto staged = std::make_unique<fs::StagedFile>(final_path, overwrite, what);
  File f;
  // The temporary name is taken on disk at once (an empty file, what a crash now leaves); the
  // content is built in memory and written there by Flush and Commit.
  fs::WriteWholeFile(staged->path(), "", 0, final_path);
  f.state_ = CreateAt(staged->path(), final_path, H5F_ACC_EXCL, /*in_memory=*/true);
  StagedWriter writer(std::move(staged), std::move(f));
  WriteRootAttributes(writer.root(), kind);
  return writer;
}

File File::OpenRead(const std::string& path, const std::string& expected_kind) {
  return Open(path, expected_kind, false);
}

File File::OpenReadWrite(const std::string& path, const std::string& expected_kind) {
  return Open(path, expected_kind, true);
}

// Opens and checks perpcomp_schema / perpcomp_kind (the order of the checks is the order
// of the questions a user would ask: is it there, is it HDF5, is it ours, can we read it).
File File::Open(const std::string& path, const std::string& expected_kind, bool writable) {
  detail::InitHdf5();
  PC_CHECK(!path.empty(), "empty HDF5 file path");
  PC_CHECK(fs::Exists(path), "'", path, "' does not exist");
  PC_CHECK(!fs::IsDirectory(path), "'", path, "' is a folder, expected an HDF5 file");
  fs::CheckRegularFile(path);  // libhdf5 would block on a FIFO
  htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  PC_CHECK(is_hdf5 >= 0, "cannot read '", path, "': ", LastError());
  PC_CHECK(is_hdf5 > 0, "'", path, "' is not an HDF5 file");
  Hid fapl = AccessPlist();
  hid_t id = H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.get());
  PC_CHECK(id >= 0, "cannot open '", path, "'", writable ? " for writing" : "", ": ", LastError());
  auto state = std::make_shared<FileState>();
  state->id = id;
  state->display = path;
  state->real = path;
  state->writable = writable;
  state->open = true;
  File f;
  f.state_ = std::move(state);
  Group root = f.root();

  PC_CHECK(root.HasAttr("perpcomp_schema"), "'", path,
           "' is not a perpcomp results file (no perpcomp_schema attribute)");
  int64_t schema = root.GetAttr<int64_t>("perpcomp_schema");
  if (schema > kSchemaVersion) {
    std::string by = root.HasAttr("created_by") && root.AttrType("created_by") == DType::kString
                         ? root.GetAttr<std::string>("created_by")
                         : std::string("a newer perpcomp");
    PC_THROW("'", path, "' was written by a newer perpcomp: schema ", schema, ", this build reads up to ",
             kSchemaVersion, "; hint: read it with the perpcomp that wrote it ('", by,
             "') or a newer one, or rerun the stage with this build");
  }
  PC_CHECK(schema >= 1, "'", path, "' has an invalid perpcomp_schema ", schema, " (expected 1..", kSchemaVersion, ")");
  PC_CHECK(root.HasAttr("perpcomp_kind"), "'", path, "' has no perpcomp_kind attribute");
  std::string kind = root.GetAttr<std::string>("perpcomp_kind");
  PC_CHECK(expected_kind.empty() || kind == expected_kind, "'", path, "': expected a '", expected_kind, "' file, got '",
           kind, "'");
  return f;
}

Group File::root() const {
  PC_ASSERT(state_ != nullptr, "use of a moved-from File");
  return Group(state_, "/");
}

const std::string& File::path() const { return state_->display; }
bool File::writable() const { return state_ != nullptr && state_->writable; }
bool File::is_open() const { return state_ != nullptr && state_->open; }

void File::Flush() const {
  detail::CheckOpen(*state_, state_->display, "flush", true);
  if (state_->in_memory) {
    state_->WriteImage();  // the file as it stands, on disk under its temporary name
    return;
  }
  PC_CHECK_OUTPUT(H5Fflush(state_->id, H5F_SCOPE_LOCAL) >= 0, "cannot write '", state_->display, "': ", LastError());
}

void File::Close() {
  if (state_ == nullptr) return;
  std::string error;
  PC_CHECK_OUTPUT(state_->Close(&error), "cannot write '", state_->display, "': ", error);
}

void File::CloseQuietly() {
  if (state_ == nullptr) return;
  std::string ignored;
  state_->Close(&ignored);
}

// ---- StagedWriter ----

StagedWriter::StagedWriter(std::unique_ptr<fs::StagedFile> staged, File file)
    : staged_(std::move(staged)), file_(std::move(file)) {}

StagedWriter::StagedWriter(StagedWriter&& other) noexcept = default;

StagedWriter::~StagedWriter() {
  if (!committed_) file_.CloseQuietly();  // then staged_ removes the temporary file
}

const std::string& StagedWriter::final_path() const { return staged_->final_path(); }
const std::string& StagedWriter::temp_path() const { return staged_->path(); }

void StagedWriter::Commit() {
  PC_CHECK(!committed_, "'", final_path(), "' was already committed");
  if (file_.state_->in_memory) {
    detail::CheckOpen(*file_.state_, final_path(), "commit", true);
    file_.state_->WriteImage();  // checked writes: a full disk is a clear error, the temporary removed
  }
  std::string error;
  PC_CHECK_OUTPUT(file_.state_->Close(&error), "cannot write '", final_path(), "': ", error, " (nothing was changed at '",
           final_path(), "')");
  staged_->Commit();
  committed_ = true;
}

// ---- copying ----

void CopyGroup(const Group& src, const std::string& name, const Group& dst, const std::string& new_name) {
  detail::CheckName(dst.Where(), "group", new_name);
  detail::CheckOpen(*src.file_, src.Where(), Str("copy '", name, "'"), false);
  detail::CheckOpen(*dst.file_, dst.Where(), Str("copy '", new_name, "' in"), true);
  PC_CHECK(src.IsGroup(name), src.Where(), ": cannot copy '", name,
           "': no such group (groups: ", detail::NameList(src.ListGroups()), ")");
  PC_CHECK(!dst.Has(new_name), dst.Where(), ": cannot copy '", name, "' in: '", new_name, "' already exists");
  Hid s = detail::OpenGroupAt(*src.file_, src.path(), src.Where());
  Hid d = detail::OpenGroupAt(*dst.file_, dst.path(), dst.Where());
  PC_CHECK(H5Ocopy(s.get(), name.c_str(), d.get(), new_name.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0, dst.Where(),
           ": cannot copy '", src.Where(), src.path() == "/" ? "" : "/", name, "' to '", new_name, "': ", LastError());
}

}  // namespace pc::store
