// metrics/reference_cache.h — the reference model's activations and logits on a set of token
// windows, computed once and kept on disk for the next compressed model measured against the
// same reference (docs/METRICS.md "Reference cache").
//
// An entry is a folder <cache>/reference/<name>, <name> = the first 32 hex digits of the
// sha256 of its key: reference content hash (config.json + weight files), sha256 of the window
// tokens (covers text, tokenizer, seq_len and window count), compute dtype and
// kReferenceCacheVersion. It holds parts, each a pair <part>.bin + <part>.json:
//   "sites"   every tensor the measurement compares against (block inputs/outputs, linear
//             outputs, updates, MLP inputs, final norm), in the compute dtype;
//   "logits"  the logits, float32.
// A .bin is tensor-major: item k's values for all windows are contiguous, (windows, T, dim),
// so a batch of windows is one pread. Writes are crash-safe: the .bin is written under a
// temporary name and renamed, then the .json (its presence marks the part complete) is
// written atomically. A part whose .json does not match its key, layout or size is rebuilt.
// Every window of every item carries a 64-bit checksum in the .json (WindowChecksum): a part
// is verified in full when it is opened (a damaged one is rebuilt, with a warning), and every
// window read is verified again (a file damaged while in use is an error naming it).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pc::fs {
class StagedFile;
}

namespace pc {

inline constexpr int kReferenceCacheVersion = 2;  // 2: per-window checksums, content-verified model hashes

// $XDG_CACHE_HOME/perpcomp, else $HOME/.cache/perpcomp (docs/METRICS.md "Reference cache").
std::string DefaultCacheDir();

// sha256 over config.json and every *.safetensors / index file of `model_dir` (names and
// content hashes, sorted by name). Each file's sha256 (of all its bytes: the tensors and their
// header) is computed once and memoised under `memo_dir` when `memo_dir` is not empty; a memo is
// used only while the file's identity and a cheap sample of its content are unchanged: path, size,
// mtime, ctime (which no tool can set back: a file rewritten and given its old mtime again still
// has a new ctime), device, inode, and the sha256 of 64 blocks of 4 KiB spread over the file.
std::string ModelContentHash(const std::string& model_dir, const std::string& memo_dir);

// The checksum of one window's bytes in a cache part (64-bit, over 8-byte words; detects damage,
// not a forgery), as 16 hex digits.
std::string WindowChecksum(const void* data, int64_t bytes);

// sha256 of the int64 window tokens (windows, seq_len), little endian, row-major.
std::string TokensSha256(const at::Tensor& windows);

struct CacheItem {
  std::string name;        // "embed", "3.lin.1", "3.attn_update", "logits", ...
  int64_t dim = 0;         // features per token
  at::ScalarType dtype = at::kFloat;
};

struct CacheLayout {
  std::vector<CacheItem> items;
  int64_t BytesPerToken() const;
  int Find(const std::string& name) const;  // asserts presence
  nlohmann::json ToJson() const;
};

struct CacheKey {
  std::string model_hash;     // ModelContentHash of the reference
  std::string tokens_sha256;  // TokensSha256 of the windows
  std::string dtype;          // compute dtype ("f32", "bf16")
  int64_t windows = 0, seq_len = 0;
  // Recorded in the manifest, not part of the key (the tokens hash covers them).
  std::string model_dir, text_sha256;

  nlohmann::json KeyJson() const;  // the fields that make the key, with the version
  std::string EntryName() const;   // 32 hex digits
};

// A complete part, read by batches of windows.
class CachePartReader {
 public:
  // nullptr when the part is absent; a stale or damaged part (other key, layout or size) is
  // reported (log::Warn) and treated as absent.
  static std::unique_ptr<CachePartReader> Open(const std::string& entry_dir, const std::string& part,
                                               const CacheKey& key, const CacheLayout& layout);
  ~CachePartReader();
  CachePartReader(const CachePartReader&) = delete;
  CachePartReader& operator=(const CachePartReader&) = delete;
  // Item `item` for windows first .. first+count−1: (count, T, dim) in the item's dtype.
  // Throws naming the file when a window read fails its checksum.
  at::Tensor Read(int item, int64_t first_window, int64_t count) const;
  const CacheLayout& layout() const { return layout_; }

 private:
  CachePartReader() = default;
  bool WindowIntact(int item, int64_t window) const;  // reads the window and compares its checksum
  std::string path_;
  int fd_ = -1;
  CacheLayout layout_;
  std::vector<int64_t> offsets_;  // byte offset of each item
  std::vector<std::vector<std::string>> checksums_;  // [item][window] WindowChecksum
  int64_t windows_ = 0, seq_len_ = 0;
};

// Writes one part; nothing is visible under the final names until Commit().
class CachePartWriter {
 public:
  CachePartWriter(const std::string& entry_dir, const std::string& part, const CacheKey& key,
                  const CacheLayout& layout, int64_t batch);
  ~CachePartWriter();
  CachePartWriter(const CachePartWriter&) = delete;
  CachePartWriter& operator=(const CachePartWriter&) = delete;
  // t: (count, T, dim) for windows first .. first+count−1.
  void Write(int item, int64_t first_window, const at::Tensor& t);
  void Commit();
  const CacheLayout& layout() const { return layout_; }

 private:
  std::string json_path_;
  nlohmann::json manifest_;
  std::unique_ptr<fs::StagedFile> staged_;
  int fd_ = -1;
  std::vector<std::vector<std::string>> checksums_;  // [item][window], filled by Write
  CacheLayout layout_;
  std::vector<int64_t> offsets_;
  int64_t windows_ = 0, seq_len_ = 0;
};

// Where and whether to cache.
struct CacheOptions {
  std::string dir;                    // "" : no cache (the reference runs in every measurement)
  int64_t limit_bytes = 64LL << 30;   // a part larger than this is not written (warned)
};

// The key of `ref_dir`'s activations on `windows` computed in `dtype`; the model hash is
// memoised under <cache_dir>/model-hashes.
CacheKey MakeCacheKey(const std::string& cache_dir, const std::string& ref_dir, at::ScalarType dtype,
                      const at::Tensor& windows, const std::string& text_sha256);
// <cache_dir>/reference/<key.EntryName()>
std::string CacheEntryDir(const std::string& cache_dir, const CacheKey& key);
// The "logits" part: one float32 item of `vocab` features.
CacheLayout LogitsLayout(int64_t vocab);
// True when a part of `bytes` may be written under `cache.dir` (limit and free space with a
// 1 GiB margin); otherwise warns once, naming the sizes, and returns false.
bool CacheHasRoom(const CacheOptions& cache, const std::string& part, int64_t bytes);

// Free bytes on the file system holding `path` (or its nearest existing parent); -1 unknown.
int64_t FreeDiskBytes(const std::string& path);

}  // namespace pc
