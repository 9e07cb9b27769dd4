// core/heap.h — how freed memory goes back to the system.
#pragma once

#include <cstdint>

namespace pc {

// The allocator's mmap threshold (glibc M_MMAP_THRESHOLD; a no-op elsewhere): buffers of this
// size and more are mapped on their own and returned to the system when freed; smaller ones come
// from the heap. Fixing it also stops glibc from raising it to the largest buffer freed, after
// which block-sized buffers stayed in the heap and block-by-block work grew with every block.
// Measured in docs/PERFORMANCE.md, "Compression memory":
//  - 4 MiB, every command (main): 256 KiB and 1 MiB made training 2x and 1.5x slower (page
//    faults of the many mid-sized buffers);
//  - 1 MiB, compress: its 1–4 MiB buffers (a window's activations, the log's row chunks)
//    fragmented the heap, so the peak rose by ~50 MiB over the first blocks (480 against 410 MiB
//    on a 12-layer 160M-shaped model) for 15 % more time.
inline constexpr int64_t kMmapThreshold = 4LL << 20;
inline constexpr int64_t kMmapThresholdCompress = 1LL << 20;
void SetMmapThreshold(int64_t bytes);

}  // namespace pc
