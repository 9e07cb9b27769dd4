#include "core/heap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace pc {

void SetMmapThreshold(int64_t bytes) {
#if defined(__GLIBC__)
  ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(bytes));
#else
  (void)bytes;
#endif
}

}  // namespace pc
