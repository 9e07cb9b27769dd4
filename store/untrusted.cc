// Reading a results file that perpcomp did not just write: libhdf5 1.10 is not hardened against
// malformed files and may crash or hang in them (docs/RELIABILITY.md, "libhdf5"), so the file is
// first read completely in a child process, where a crash cannot take perpcomp down.
#include "store/untrusted.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "store/h5_internal.h"

namespace pc::store {
namespace {

constexpr hsize_t kMaxReadBytes = hsize_t(256) << 20;  // of a larger dataset, its first rows up to this

// Reads one attribute in its native type (errors ignored: only crashes matter here).
herr_t ReadAttribute(hid_t obj, const char* name, const H5A_info_t*, void*) {
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) return 0;
  hid_t ft = H5Aget_type(a), space = H5Aget_space(a);
  if (ft >= 0 && space >= 0) {
    hid_t mt = H5Tget_native_type(ft, H5T_DIR_ASCEND);
    const hssize_t n = H5Sget_simple_extent_npoints(space);
    const size_t size = mt >= 0 ? H5Tget_size(mt) : 0;
    if (mt >= 0 && n >= 0 && size > 0 && hsize_t(n) * size <= kMaxReadBytes) {
      std::vector<char> buf(std::max<size_t>(1, size_t(n) * size));
      if (H5Aread(a, mt, buf.data()) >= 0 && H5Tdetect_class(mt, H5T_VLEN) + H5Tis_variable_str(mt) > 0) {
        H5Dvlen_reclaim(mt, space, H5P_DEFAULT, buf.data());
      }
    }
    if (mt >= 0) H5Tclose(mt);
  }
  if (space >= 0) H5Sclose(space);
  if (ft >= 0) H5Tclose(ft);
  H5Aclose(a);
  return 0;
}

// Reads a dataset in its native type: all of it, or its first rows up to kMaxReadBytes.
void ReadDataset(hid_t obj) {
  hid_t ft = H5Dget_type(obj), space = H5Dget_space(obj);
  hid_t mt = ft >= 0 ? H5Tget_native_type(ft, H5T_DIR_ASCEND) : -1;
  const int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
  const size_t size = mt >= 0 ? H5Tget_size(mt) : 0;
  if (rank >= 0 && rank <= 32 && size > 0) {
    std::vector<hsize_t> dims(std::max(rank, 1), 1);
    if (rank > 0) H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    hsize_t row = size;  // bytes of one index of the first dimension
    for (int d = 1; d < rank; ++d) row = dims[d] > 0 && row > kMaxReadBytes / dims[d] ? kMaxReadBytes + 1 : row * dims[d];
    const hsize_t rows = rank > 0 ? std::min<hsize_t>(dims[0], kMaxReadBytes / std::max<hsize_t>(1, row)) : 1;
    if (row <= kMaxReadBytes && rows > 0) {
      std::vector<hsize_t> start(dims.size(), 0), count = dims;
      count[0] = rows;
      if (rank > 0) H5Sselect_hyperslab(space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
      hid_t mem = rank > 0 ? H5Screate_simple(rank, count.data(), nullptr) : H5Screate(H5S_SCALAR);
      std::vector<char> buf(static_cast<size_t>(rows * row));
      if (mem >= 0 && H5Dread(obj, mt, mem, space, H5P_DEFAULT, buf.data()) >= 0 &&
          H5Tdetect_class(mt, H5T_VLEN) + H5Tis_variable_str(mt) > 0) {
        H5Dvlen_reclaim(mt, mem, H5P_DEFAULT, buf.data());
      }
      if (mem >= 0) H5Sclose(mem);
    }
  }
  if (mt >= 0) H5Tclose(mt);
  if (space >= 0) H5Sclose(space);
  if (ft >= 0) H5Tclose(ft);
}

// Every object below the root: its attributes, and a dataset's values.
herr_t VisitObject(hid_t root, const char* name, const H5O_info_t* info, void*) {
  hid_t obj = H5Oopen(root, name, H5P_DEFAULT);
  if (obj < 0) return 0;
  for (H5_index_t index : {H5_INDEX_NAME, H5_INDEX_CRT_ORDER}) {  // store reads attributes in creation order
    hsize_t idx = 0;
    H5Aiterate2(obj, index, H5_ITER_INC, &idx, ReadAttribute, nullptr);
  }
  if (info->type == H5O_TYPE_DATASET) ReadDataset(obj);
  H5Oclose(obj);
  return 0;
}

// The child: opens and reads everything, then exits 0 (its HDF5 errors are not its concern: the
// parent reads the file again and reports them with their context).
[[noreturn]] void ReadAllAndExit(const std::string& path) {
  // The fault signals end the child with their default action (a handler inherited from the
  // parent, a test framework's for instance, would otherwise carry on in the child).
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) ::signal(sig, SIG_DFL);
  alarm(120);  // a hang inside libhdf5 ends as SIGALRM
  detail::InitHdf5();
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f >= 0) {
    // Every link by both indices (store::Group::List walks creation order), then every object.
    auto link = [](hid_t, const char*, const H5L_info_t*, void*) -> herr_t { return 0; };
    for (H5_index_t index : {H5_INDEX_NAME, H5_INDEX_CRT_ORDER}) H5Lvisit(f, index, H5_ITER_INC, link, nullptr);
    H5Ovisit(f, H5_INDEX_NAME, H5_ITER_NATIVE, VisitObject, nullptr);
    H5Fclose(f);
  }
  ::_exit(0);
}

}  // namespace

void CheckNotDamaged(const std::string& path) {
  fs::CheckRegularFile(path);
  PC_CHECK(fs::FileSize(path) > 0, "'", path, "' is empty, expected an HDF5 file");
  const pid_t pid = ::fork();
  PC_CHECK(pid >= 0, "cannot start a process to check '", path, "': ", std::strerror(errno));
  if (pid == 0) ReadAllAndExit(path);
  int status = 0;
  pid_t w;
  while ((w = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  PC_CHECK(w == pid, "cannot check '", path, "': ", std::strerror(errno));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    PC_THROW("the file '", path, "' is damaged: ",
             sig == SIGALRM ? std::string("reading it did not finish in 120 s")
                            : Str("reading it crashes libhdf5 (", strsignal(sig), ")"),
             "; it was not used (perpcomp reads results files it did not just write in a separate process first)");
  }
}

File OpenUntrusted(const std::string& path, const std::string& expected_kind) {
  PC_CHECK(fs::Exists(path), "'", path, "' does not exist");
  if (!fs::IsDirectory(path)) CheckNotDamaged(path);
  return File::OpenRead(path, expected_kind);
}

}  // namespace pc::store
