// core/cpu_allocator.h — LibTorch's CPU allocator with a bounded cache of freed large buffers.
//
// Block-by-block work allocates tensors of the same few sizes again and again (every matmul and
// element-wise op writes a fresh output). From glibc, a buffer of 1 MiB or more (compress's mmap
// threshold, core/heap.h) is a fresh mapping, and its first touch costs the kernel a page fault
// per 4 KiB page: GPTQ on SmolLM2-135M took 30.7 M minor faults and 66 s of system time beside 154 s
// of user time (docs/PERFORMANCE.md "Page faults and the buffer cache"). This allocator keeps up to
// kCpuBufferCacheBytes of freed buffers of kCachedMinBytes or more and hands one out again to a
// request of its size (or up to an eighth smaller), so its pages stay mapped. When a freed buffer
// does not fit under the limit, the longest-cached buffers are released first.
//
// The cache can add up to its limit to a command's peak resident memory (the memory estimate,
// pipeline/memory_estimate.cc, counts it in the process overhead). compress empties it after every
// block (compress/engine.cc), before the block is written.
#pragma once

#include <cstdint>

namespace pc {

inline constexpr int64_t kCachedMinBytes = 1LL << 20;
inline constexpr int64_t kCpuBufferCacheBytes = 128LL << 20;

// Installs the allocator as LibTorch's CPU allocator (c10::SetCPUAllocator; main() does, before
// any tensor exists). Tensors allocated before keep their own deleter. Idempotent.
void InstallCachingCpuAllocator();

struct CpuAllocatorStats {
  int64_t in_use = 0, peak_in_use = 0, cached = 0;  // bytes of buffers ≥ kCachedMinBytes
  int64_t hits = 0, misses = 0;                     // such requests served from the cache or not
};
CpuAllocatorStats CachingCpuAllocatorStats();

// Frees every cached buffer (buffers in use are untouched).
void ReleaseCachedCpuBuffers();

// The cache's limit in bytes (default kCpuBufferCacheBytes; 0 caches nothing); a lower limit
// releases the longest-cached buffers at once.
void SetCpuBufferCacheLimit(int64_t bytes);

}  // namespace pc
