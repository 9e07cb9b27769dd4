#include "metrics/reference_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
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
    PC_CHECK_OUTPUT(n > 0, "cannot write the reference cache '", path, "': ", std::strerror(errno));
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

// sha256 of 64 blocks of 4 KiB spread evenly over the file (all of it when smaller): the cheap
// check that a memoised content hash still belongs to these bytes.
std::string SampleHash(const std::string& path, int64_t size) {
  constexpr int64_t kBlock = 4096, kBlocks = 64;
  const int fd = fs::OpenForRead(path);
  Sha256 h;
  std::vector<char> buf(kBlock);
  for (int64_t b = 0; b < kBlocks; ++b) {
    const int64_t at = size <= kBlock * kBlocks ? b * kBlock : (size - kBlock) * b / (kBlocks - 1);
    if (at >= size) break;
    const int64_t n = std::min(kBlock, size - at);
    PreadAll(fd, buf.data(), n, at, path);
    h.Update(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return h.HexDigest();
}

int64_t Nanoseconds(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000LL + t.tv_nsec; }

// Content hash of one file, memoised by its identity (path, size, mtime, ctime, device, inode)
// and a sample of its bytes.
std::string FileHash(const std::string& path, const std::string& memo_dir) {
  struct stat st {};
  PC_CHECK(::stat(path.c_str(), &st) == 0, "cannot read '", path, "': ", std::strerror(errno));
  const int64_t mtime_ns = Nanoseconds(st.st_mtim), ctime_ns = Nanoseconds(st.st_ctim);
  std::error_code ec;
  std::string abs = stdfs::absolute(path, ec).lexically_normal().string();
  if (ec) abs = path;
  std::string memo;
  if (!memo_dir.empty()) {
    memo = fs::Join(memo_dir, Sha256Hex(abs).substr(0, 32) + ".json");
    if (fs::Exists(memo)) {
      nlohmann::json j = nlohmann::json::parse(fs::ReadFile(memo), nullptr, /*allow_exceptions=*/false);
      if (j.is_object() && j.value("path", "") == abs && j.value("size", int64_t(-1)) == int64_t(st.st_size) &&
          j.value("mtime_ns", int64_t(-1)) == mtime_ns && j.value("ctime_ns", int64_t(-1)) == ctime_ns &&
          j.value("dev", uint64_t(0)) == uint64_t(st.st_dev) && j.value("ino", uint64_t(0)) == uint64_t(st.st_ino) &&
          j.contains("sha256") && j["sha256"].is_string() &&
          j.value("sample_sha256", "") == SampleHash(path, static_cast<int64_t>(st.st_size))) {
        return j["sha256"].get<std::string>();
      }
    }
  }
  std::string h = Sha256File(path);
  if (!memo.empty()) {
    fs::MakeDirs(memo_dir);
    nlohmann::json j = {{"path", abs},
                        {"size", int64_t(st.st_size)},
                        {"mtime_ns", mtime_ns},
                        {"ctime_ns", ctime_ns},
                        {"dev", uint64_t(st.st_dev)},
                        {"ino", uint64_t(st.st_ino)},
                        {"sample_sha256", SampleHash(path, static_cast<int64_t>(st.st_size))},
                        {"sha256", h}};
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

std::string WindowChecksum(const void* data, int64_t bytes) {
  // 64-bit multiply-xorshift over little-endian words, the tail zero-padded, the length mixed in.
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ static_cast<uint64_t>(bytes);
  auto mix = [&](uint64_t w) {
    h ^= w * 0xBF58476D1CE4E5B9ULL;
    h = (h << 27 | h >> 37) * 0x94D049BB133111EBULL;
  };
  int64_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    mix(w);
  }
  if (i < bytes) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, static_cast<size_t>(bytes - i));
    mix(w);
  }
  h ^= h >> 31;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
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
  std::vector<std::vector<std::string>> sums;
  if (ok) {
    ok = m.contains("checksums") && m["checksums"].is_array() && m["checksums"].size() == layout.items.size();
    for (size_t i = 0; ok && i < layout.items.size(); ++i) {
      const nlohmann::json& a = m["checksums"][i];
      ok = a.is_array() && static_cast<int64_t>(a.size()) == key.windows;
      std::vector<std::string> v;
      for (size_t w = 0; ok && w < a.size(); ++w) {
        ok = a[w].is_string();
        if (ok) v.push_back(a[w].get<std::string>());
      }
      sums.push_back(std::move(v));
    }
  }
  if (!ok) {
    log::Warn("cache", "'", entry_dir, "': part '", part, "' does not match this reference, text or layout; rebuilding it");
    return nullptr;
  }
  std::unique_ptr<CachePartReader> r(new CachePartReader());
  r->path_ = bin_path;
  r->fd_ = fs::OpenForRead(bin_path, "the reference cache");
  r->layout_ = layout;
  r->offsets_ = std::move(off);
  r->windows_ = key.windows;
  r->seq_len_ = key.seq_len;
  r->checksums_ = std::move(sums);
  // Every window verified once before any is used: a damaged part is rebuilt, never served.
  for (int item = 0; item < static_cast<int>(layout.items.size()); ++item) {
    for (int64_t w = 0; w < key.windows; ++w) {
      if (!r->WindowIntact(item, w)) {
        log::Warn("cache", "'", bin_path, "' is damaged (window ", w, " of '", layout.items[item].name,
                  "' fails its checksum); rebuilding it");
        return nullptr;
      }
    }
  }
  return r;
}

bool CachePartReader::WindowIntact(int item, int64_t window) const {
  const CacheItem& it = layout_.items[item];
  const int64_t per_window = seq_len_ * it.dim * ElementBytes(it.dtype);
  std::vector<char> buf(static_cast<size_t>(per_window));
  PreadAll(fd_, buf.data(), per_window, offsets_[item] + window * per_window, path_);
  return WindowChecksum(buf.data(), per_window) == checksums_[item][window];
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
  const char* p = static_cast<const char*>(t.data_ptr());
  for (int64_t w = 0; w < count; ++w) {
    PC_CHECK(WindowChecksum(p + w * per_window, per_window) == checksums_[item][first_window + w],
             "the reference cache '", path_, "' was damaged while in use (window ", first_window + w, " of '", it.name,
             "' fails its checksum); remove its folder '", fs::Parent(path_), "' or run with --no-cache");
  }
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
  checksums_.assign(layout.items.size(), std::vector<std::string>(static_cast<size_t>(windows_)));
  staged_ = std::make_unique<fs::StagedFile>(fs::Join(entry_dir, part + ".bin"), /*overwrite=*/true, "--cache");
  fd_ = ::open(staged_->path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  PC_CHECK_OUTPUT(fd_ >= 0, "cannot write the reference cache '", staged_->path(), "': ", std::strerror(errno));
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
  const char* p = static_cast<const char*>(c.data_ptr());
  for (int64_t w = 0; w < t.size(0); ++w) checksums_[item][first_window + w] = WindowChecksum(p + w * per_window, per_window);
}

void CachePartWriter::Commit() {
  PC_ASSERT(fd_ >= 0, "cache part already committed");
  int rc = ::close(fd_);
  fd_ = -1;
  PC_CHECK_OUTPUT(rc == 0, "cannot write the reference cache '", staged_->path(), "': ", std::strerror(errno));
  for (const auto& item : checksums_) {
    for (const auto& s : item) PC_ASSERT(!s.empty(), "cache part committed with a window never written");
  }
  manifest_["checksums"] = checksums_;
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
