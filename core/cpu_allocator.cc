#include "core/cpu_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/alignment.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/error.h"

namespace pc {
namespace {

constexpr size_t kPage = 4096;

// The cache's state; one per process (LibTorch's allocator is global).
class BufferCache {
 public:
  static BufferCache& Get() {
    static BufferCache* cache = new BufferCache();  // never destroyed: tensors may outlive statics
    return *cache;
  }

  void* Allocate(size_t n) {
    if (n < static_cast<size_t>(kCachedMinBytes)) return Checked(AlignedAlloc(n), n);
    const size_t want = (n + kPage - 1) / kPage * kPage;
    std::lock_guard<std::mutex> lock(mu_);
    // The smallest cached buffer that holds n, if it wastes at most an eighth.
    auto it = by_size_.lower_bound(want);
    if (it != by_size_.end() && it->first <= want + want / 8) {
      const size_t size = it->first;
      void* p = it->second->second;
      lru_.erase(it->second);
      by_size_.erase(it);
      cached_ -= size;
      Use(p, size);
      ++hits_;
      return p;
    }
    void* p = FreshBuffer(want);
    Use(p, want);
    ++misses_;
    return p;
  }

  void Free(void* p) {
    if (p == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) {  // a small buffer
      std::free(p);
      return;
    }
    const size_t size = it->second;
    live_.erase(it);
    in_use_ -= size;
    if (size > limit_) {
      std::free(p);
      return;
    }
    while (!lru_.empty() && cached_ + size > limit_) EvictOldest();
    lru_.emplace_back(size, p);
    by_size_.emplace(size, std::prev(lru_.end()));
    cached_ += size;
  }

  void SetLimit(int64_t bytes) {
    PC_ASSERT(bytes >= 0, "a negative cache limit");
    std::lock_guard<std::mutex> lock(mu_);
    limit_ = static_cast<size_t>(bytes);
    while (!lru_.empty() && cached_ > limit_) EvictOldest();
  }

  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    while (!lru_.empty()) EvictOldest();
  }

  CpuAllocatorStats Stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {static_cast<int64_t>(in_use_), static_cast<int64_t>(peak_), static_cast<int64_t>(cached_), hits_,
            misses_};
  }

 private:
  static void* AlignedAlloc(size_t n) {
    void* p = nullptr;
    // As c10's alloc_cpu: gAlignment-aligned; a zero-byte tensor still gets a valid pointer.
    return posix_memalign(&p, c10::gAlignment, std::max<size_t>(n, 1)) == 0 ? p : nullptr;
  }

  // A fresh buffer (under mu_); when the system has none, the cache goes back first and it is
  // asked again.
  void* FreshBuffer(size_t n) {
    void* p = AlignedAlloc(n);
    if (p == nullptr && !lru_.empty()) {
      while (!lru_.empty()) EvictOldest();
      p = AlignedAlloc(n);
    }
    return Checked(p, n);
  }

  // Fails as c10's allocator does (tools/perpcomp.cc reports it as out of memory).
  static void* Checked(void* p, size_t n) {
    TORCH_CHECK(p != nullptr, "CachingCpuAllocator: can't allocate memory: you tried to allocate ", n, " bytes.");
    return p;
  }

  void EvictOldest() {  // under mu_; lru_ not empty
    const auto [size, p] = lru_.front();
    auto range = by_size_.equal_range(size);
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second == lru_.begin()) {
        by_size_.erase(it);
        break;
      }
    }
    lru_.pop_front();
    cached_ -= size;
    std::free(p);
  }

  void Use(void* p, size_t size) {  // under mu_
    live_.emplace(p, size);
    in_use_ += size;
    peak_ = std::max(peak_, in_use_);
  }

  std::mutex mu_;
  using Cached = std::list<std::pair<size_t, void*>>;  // (size, buffer), the longest cached first
  Cached lru_;
  std::multimap<size_t, Cached::iterator> by_size_;  // the same buffers by size
  std::unordered_map<void*, size_t> live_;  // large buffers in use, by address
  size_t in_use_ = 0, peak_ = 0, cached_ = 0;
  size_t limit_ = static_cast<size_t>(kCpuBufferCacheBytes);
  int64_t hits_ = 0, misses_ = 0;
};

void Delete(void* p) { BufferCache::Get().Free(p); }

class CachingCpuAllocator final : public c10::Allocator {
 public:
#if PC_TORCH_MAJOR >= 2  // LibTorch 2.x: allocate is not const, copy_data is pure virtual
  c10::DataPtr allocate(size_t n) override { return Allocate(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t n) const override { return Allocate(n); }
#endif
  c10::DeleterFnPtr raw_deleter() const override { return &Delete; }

 private:
  static c10::DataPtr Allocate(size_t n) {
    void* p = BufferCache::Get().Allocate(n);
    return {p, p, &Delete, c10::Device(c10::DeviceType::CPU)};
  }
};

}  // namespace

void InstallCachingCpuAllocator() {
  static CachingCpuAllocator allocator;
  static std::once_flag once;
  std::call_once(once, [] { c10::SetCPUAllocator(&allocator, /*priority=*/1); });
}

CpuAllocatorStats CachingCpuAllocatorStats() { return BufferCache::Get().Stats(); }

void ReleaseCachedCpuBuffers() { BufferCache::Get().Release(); }

void SetCpuBufferCacheLimit(int64_t bytes) { BufferCache::Get().SetLimit(bytes); }

}  // namespace pc
