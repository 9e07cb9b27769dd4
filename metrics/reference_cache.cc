#include "metrics/reference_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/log.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "core/tensor_util.h"

namespace pc {
namespace {

namespace stdfs = std::filesystem;

int64_t ElementBytes(at::ScalarType t) { return static_cast<int64_t>(c10::elementSize(t)); }

// Every byte of [offset, offset + size) from fd; errors name `path`.
void PreadAll(int fd, void* dst, int64_t size, int64_t offset, const std::string& path) {
  char* p = static_cast<char*>(dst);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, static_cast<size_t>(size), offset);
    if (n < 0 && errno == EINTR) continue;
    PC_CHECK(n > 0, "cannot read the reference cache '", path, "' at byte ", offset, ": ",
             n == 0 ? "unexpected end of file" : std::strerror(errno));
    p += n;
    size -= n;
    offset += n;
  }
}

void PwriteAll(int fd, const void* src, int64_t size, int64_t offset, const std::string& path) {
  const char* p = static_cast<const char*>(src);
  while (size > 0) {
    ssize_t n = ::pwrite(fd, p, static_cast<size_t>(size), offset);
    if (n < 0 && errno == EINTR) continue;
    PC_CHECK(n > 0, "cannot write the reference cache '", path, "': ", std::strerror(errno));
    p += n;
    size -= n;
    offset += n;
  }
}

std::vector<int64_t> Offsets(const CacheLayout& layout, int64_t windows, int64_t seq_len) {
  std::vector<int64_t> off;
  int64_t at = 0;
  for (const auto& item : layout.items) {
    off.push_back(at);
    at += windows * seq_len * item.dim * ElementBytes(item.dtype);
  }
  off.push_back(at);  // total
  return off;
}

// Content hash of one file, memoised by (path, size, mtime).
std::string FileHash(const std::string& path, const std::string& memo_dir) {
  struct stat st {};
  PC_CHECK(::stat(path.c_str(), &st) == 0, "cannot read '", path, "': ", std::strerror(errno));
  const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  std::error_code ec;
  std::string abs = stdfs::absolute(path, ec).lexically_normal().string();
  if (ec) abs = path;
  std::string memo;
  if (!memo_dir.empty()) {
    memo = fs::Join(memo_dir, Sha256Hex(abs).substr(0, 32) + ".json");
    if (fs::Exists(memo)) {
      nlohmann::json j = nlohmann::json::parse(fs::ReadFile(memo), nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.value("path", "") == abs && j.value("size", int64_t(-1)) == int64_t(st.st_size) &&
          j.value("mtime_ns", int64_t(-1)) == mtime_ns && j.contains("sha256") && j["sha256"].is_string()) {
        return j["sha256"].get<std::string>();
      }
    }
  }
  std::string h = Sha256File(path);
  if (!memo.empty()) {
    fs::MakeDirs(memo_dir);
    nlohmann::json j = {{"path", abs}, {"size", int64_t(st.st_size)}, {"mtime_ns", mtime_ns}, {"sha256", h}};
    fs::WriteFileAtomic(memo, j.dump() + "\n");
  }
  return h;
}

}  // namespace

std::string DefaultCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg) return fs::Join(xdg, "perpcomp");
  const char* home = std::getenv("HOME");
  PC_CHECK(home != nullptr && *home, "neither XDG_CACHE_HOME nor HOME is set: pass --cache DIR");
  return fs::Join(fs::Join(home, ".cache"), "perpcomp");
}

std::string ModelContentHash(const std::string& model_dir, const std::string& memo_dir) {
  PC_CHECK(fs::IsDirectory(model_dir), "'", model_dir, "' is not a folder");
  std::vector<std::string> names;
  std::error_code ec;
  for (stdfs::directory_iterator it(model_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string n = it->path().filename().string();
    if (n == "config.json" || EndsWith(n, ".safetensors") || n == "model.safetensors.index.json") names.push_back(n);
  }
  PC_CHECK(!ec, "cannot list '", model_dir, "': ", ec.message());
  std::sort(names.begin(), names.end());
  Sha256 h;
  for (const auto& n : names) h.Update(n + "\n" + FileHash(fs::Join(model_dir, n), memo_dir) + "\n");
  return h.HexDigest();
}

std::string TokensSha256(const at::Tensor& windows) {
  at::Tensor t = windows.to(at::kLong).contiguous();
  Sha256 h;
  h.Update(t.data_ptr<int64_t>(), static_cast<size_t>(t.numel()) * sizeof(int64_t));
  return h.HexDigest();
}

int64_t CacheLayout::BytesPerToken() const {
  int64_t b = 0;
  for (const auto& i : items) b += i.dim * ElementBytes(i.dtype);
  return b;
}

int CacheLayout::Find(const std::string& name) const {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].name == name) return static_cast<int>(i);
  }
  PC_ASSERT(false, "cache layout has no item '", name, "'");
  return -1;
}

nlohmann::json CacheLayout::ToJson() const {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& i : items) a.push_back({{"name", i.name}, {"dim", i.dim}, {"dtype", DTypeName(i.dtype)}});
  return a;
}

nlohmann::json CacheKey::KeyJson() const {
  return {{"version", kReferenceCacheVersion}, {"model_hash", model_hash}, {"tokens_sha256", tokens_sha256},
          {"dtype", dtype},                    {"windows", windows},       {"seq_len", seq_len}};
}

std::string CacheKey::EntryName() const { return Sha256Hex(KeyJson().dump()).substr(0, 32); }

// ---- reader ---------------------------------------------------------------------------------

std::unique_ptr<CachePartReader> CachePartReader::Open(const std::string& entry_dir, const std::string& part,
                                                       const CacheKey& key, const CacheLayout& layout) {
  const std::string json_path = fs::Join(entry_dir, part + ".json");
  const std::string bin_path = fs::Join(entry_dir, part + ".bin");
  if (!fs::Exists(json_path) || !fs::Exists(bin_path)) return nullptr;
  nlohmann::json m = nlohmann::json::parse(fs::ReadFile(json_path), nullptr, /*allow_exceptions=*/false);
  std::vector<int64_t> off = Offsets(layout, key.windows, key.seq_len);
  bool ok = m.is_object() && m.contains("key") && m["key"] == key.KeyJson() && m.contains("items") &&
            m["items"] == layout.ToJson() && m.value("bytes", int64_t(-1)) == off.back() &&
            fs::FileSize(bin_path) == off.back();
  if (!ok) {
    log::Warn("cache", "'", entry_dir, "': part '", part, "' does not match this reference, text or layout; rebuilding it");
    return nullptr;
  }
  std::unique_ptr<CachePartReader> r(new CachePartReader());
  r->path_ = bin_path;
  r->fd_ = ::open(bin_path.c_str(), O_RDONLY | O_CLOEXEC);
  PC_CHECK(r->fd_ >= 0, "cannot open the reference cache '", bin_path, "': ", std::strerror(errno));
  r->layout_ = layout;
  r->offsets_ = std::move(off);
  r->windows_ = key.windows;
  r->seq_len_ = key.seq_len;
  return r;
}

CachePartReader::~CachePartReader() {
  if (fd_ >= 0) ::close(fd_);
}

at::Tensor CachePartReader::Read(int item, int64_t first_window, int64_t count) const {
  PC_ASSERT(item >= 0 && item < static_cast<int>(layout_.items.size()), "cache item ", item);
  PC_ASSERT(first_window >= 0 && count > 0 && first_window + count <= windows_, "cache windows ", first_window, "+",
            count);
  const CacheItem& it = layout_.items[item];
  at::Tensor t = at::empty({count, seq_len_, it.dim}, at::TensorOptions().dtype(it.dtype));
  const int64_t per_window = seq_len_ * it.dim * ElementBytes(it.dtype);
  PreadAll(fd_, t.data_ptr(), count * per_window, offsets_[item] + first_window * per_window, path_);
  return t;
}

// ---- writer ---------------------------------------------------------------------------------

CachePartWriter::CachePartWriter(const std::string& entry_dir, const std::string& part, const CacheKey& key,
                                 const CacheLayout& layout, int64_t batch)
    : layout_(layout), windows_(key.windows), seq_len_(key.seq_len) {
  fs::MakeDirs(entry_dir);
  json_path_ = fs::Join(entry_dir, part + ".json");
  offsets_ = Offsets(layout, windows_, seq_len_);
  manifest_ = {{"key", key.KeyJson()},
               {"items", layout.ToJson()},
               {"bytes", offsets_.back()},
               {"part", part},
               {"reference", key.model_dir},
               {"text_sha256", key.text_sha256},
               {"batch", batch}};
  if (fs::Exists(json_path_)) std::remove(json_path_.c_str());  // a stale part: invalid from here on
  staged_ = std::make_unique<fs::StagedFile>(fs::Join(entry_dir, part + ".bin"), /*overwrite=*/true, "--cache");
  fd_ = ::open(staged_->path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  PC_CHECK(fd_ >= 0, "cannot write the reference cache '", staged_->path(), "': ", std::strerror(errno));
  PC_CHECK(::ftruncate(fd_, static_cast<off_t>(offsets_.back())) == 0, "cannot size the reference cache '",
           staged_->path(), "' to ", offsets_.back(), " bytes: ", std::strerror(errno));
}

CachePartWriter::~CachePartWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void CachePartWriter::Write(int item, int64_t first_window, const at::Tensor& t) {
  PC_ASSERT(fd_ >= 0, "cache part already committed");
  const CacheItem& it = layout_.items[item];
  PC_ASSERT(t.dim() == 3 && t.size(1) == seq_len_ && t.size(2) == it.dim && first_window + t.size(0) <= windows_,
            "cache item ", it.name, ": shape ", ShapeString(t.sizes()));
  at::Tensor c = t.to(it.dtype).contiguous();
  const int64_t per_window = seq_len_ * it.dim * ElementBytes(it.dtype);
  PwriteAll(fd_, c.data_ptr(), t.size(0) * per_window, offsets_[item] + first_window * per_window, staged_->path());
}

void CachePartWriter::Commit() {
  PC_ASSERT(fd_ >= 0, "cache part already committed");
  int rc = ::close(fd_);
  fd_ = -1;
  PC_CHECK(rc == 0, "cannot write the reference cache '", staged_->path(), "': ", std::strerror(errno));
  staged_->Commit();
  fs::WriteFileAtomic(json_path_, manifest_.dump(1) + "\n");
}

CacheKey MakeCacheKey(const std::string& cache_dir, const std::string& ref_dir, at::ScalarType dtype,
                      const at::Tensor& windows, const std::string& text_sha256) {
  CacheKey k;
  k.model_hash = ModelContentHash(ref_dir, fs::Join(cache_dir, "model-hashes"));
  k.tokens_sha256 = TokensSha256(windows);
  k.dtype = DTypeName(dtype);
  k.windows = windows.size(0);
  k.seq_len = windows.size(1);
  k.model_dir = ref_dir;
  k.text_sha256 = text_sha256;
  return k;
}

std::string CacheEntryDir(const std::string& cache_dir, const CacheKey& key) {
  return fs::Join(fs::Join(cache_dir, "reference"), key.EntryName());
}

CacheLayout LogitsLayout(int64_t vocab) {
  CacheLayout l;
  l.items.push_back({"logits", vocab, at::kFloat});
  return l;
}

bool CacheHasRoom(const CacheOptions& cache, const std::string& part, int64_t bytes) {
  if (bytes > cache.limit_bytes) {
    log::Warn("cache", "the reference's ", part, " would take ", HumanBytes(static_cast<double>(bytes)),
              ", more than the cache limit of ", HumanBytes(static_cast<double>(cache.limit_bytes)),
              "; not cached (the reference runs again next time; raise --cache-limit or use fewer --max-windows)");
    return false;
  }
  int64_t free_bytes = FreeDiskBytes(cache.dir);
  if (free_bytes >= 0 && bytes + (1LL << 30) > free_bytes) {
    log::Warn("cache", "the reference's ", part, " would take ", HumanBytes(static_cast<double>(bytes)), " but only ",
              HumanBytes(static_cast<double>(free_bytes)), " are free under '", cache.dir, "'; not cached");
    return false;
  }
  return true;
}

int64_t FreeDiskBytes(const std::string& path) {
  std::string p = path;
  while (!p.empty() && !fs::Exists(p)) {
    std::string parent = fs::Parent(p);
    if (parent == p) break;
    p = parent;
  }
  struct statvfs s {};
  if (p.empty() || ::statvfs(p.c_str(), &s) != 0) return -1;
  return static_cast<int64_t>(s.f_bavail) * static_cast<int64_t>(s.f_frsize);
}

}  // namespace pc
