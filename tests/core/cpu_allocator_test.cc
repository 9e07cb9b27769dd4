// core/cpu_allocator.h: freed large tensors come back to a request of their size, small ones are
// never cached, and the cache stays under its limit.
#include <catch2/catch.hpp>

#include "core/cpu_allocator.h"
#include "tests/test_support.h"

namespace {
constexpr int64_t kMiB = 1 << 20;
at::Tensor Floats(int64_t bytes) { return at::empty({bytes / 4}, at::kFloat); }
}  // namespace

TEST_CASE("caching CPU allocator: reuse, small buffers, limit, release", "[core]") {
  pc::InstallCachingCpuAllocator();
  pc::InstallCachingCpuAllocator();  // idempotent
  pc::ReleaseCachedCpuBuffers();
  pc::SetCpuBufferCacheLimit(pc::kCpuBufferCacheBytes);

  // A freed 4 MiB tensor's buffer serves the next request of its size, and of up to an eighth less.
  const pc::CpuAllocatorStats s0 = pc::CachingCpuAllocatorStats();
  void* first = nullptr;
  {
    at::Tensor t = Floats(4 * kMiB);
    first = t.data_ptr();
    CHECK(pc::CachingCpuAllocatorStats().in_use == s0.in_use + 4 * kMiB);
  }
  CHECK(pc::CachingCpuAllocatorStats().cached == 4 * kMiB);
  // The peak counts the buffer while it was in use, and stays when it is freed.
  CHECK(pc::CachingCpuAllocatorStats().peak_in_use >= s0.in_use + 4 * kMiB);
  CHECK(pc::CachingCpuAllocatorStats().in_use == s0.in_use);
  {
    at::Tensor t = Floats(4 * kMiB - 256 * 1024);
    CHECK(t.data_ptr() == first);
    CHECK(pc::CachingCpuAllocatorStats().hits == s0.hits + 1);
    CHECK(pc::CachingCpuAllocatorStats().cached == 0);
    t.fill_(2.0f);
    CHECK(t.sum().item<double>() == 2.0 * t.numel());
  }
  {  // more than an eighth smaller: a fresh buffer
    at::Tensor t = Floats(2 * kMiB);
    CHECK(t.data_ptr() != first);
  }
  // Below kCachedMinBytes nothing is cached.
  const int64_t cached = pc::CachingCpuAllocatorStats().cached;
  { at::Tensor t = Floats(pc::kCachedMinBytes / 2); }
  CHECK(pc::CachingCpuAllocatorStats().cached == cached);

  // The limit: three 48 MiB buffers freed under a 100 MiB limit leave two cached, the latest ones.
  pc::ReleaseCachedCpuBuffers();
  pc::SetCpuBufferCacheLimit(100 * kMiB);
  std::vector<at::Tensor> ts;
  std::vector<void*> ptrs;
  for (int i = 0; i < 3; ++i) {
    ts.push_back(Floats(48 * kMiB));
    ptrs.push_back(ts.back().data_ptr());
  }
  ts.clear();
  CHECK(pc::CachingCpuAllocatorStats().cached == 96 * kMiB);
  at::Tensor a = Floats(48 * kMiB), b = Floats(48 * kMiB);
  CHECK(((a.data_ptr() == ptrs[1] && b.data_ptr() == ptrs[2]) || (a.data_ptr() == ptrs[2] && b.data_ptr() == ptrs[1])));
  a = at::Tensor();
  b = at::Tensor();
  // A buffer larger than the limit is never cached; a lower limit releases at once.
  { at::Tensor t = Floats(128 * kMiB); }
  CHECK(pc::CachingCpuAllocatorStats().cached == 96 * kMiB);
  pc::SetCpuBufferCacheLimit(50 * kMiB);
  CHECK(pc::CachingCpuAllocatorStats().cached == 48 * kMiB);
  pc::ReleaseCachedCpuBuffers();
  CHECK(pc::CachingCpuAllocatorStats().cached == 0);
  pc::SetCpuBufferCacheLimit(pc::kCpuBufferCacheBytes);
}
