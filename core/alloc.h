// Allocator settings for long training runs.
#pragma once

#include <malloc.h>

namespace gdp {

// glibc returns a freed block of 128 KiB or more to the kernel (munmap), and the next
// allocation of it faults its pages in again. The policy allocates and frees the same tensors
// every PPO iteration (a (N, 64) float tensor is 12.8 MiB at 50k ops), so on GNMT-8 a fifth of
// an iteration went to page faults in the kernel. Blocks up to 32 MiB (glibc's cap) now come
// from the heap and stay there, and the heap is trimmed only beyond 1 GiB free at its top:
// bench_rl's BM_PpoIteration_gnmt8 6.27 -> 5.21 s, peak memory unchanged (docs/performance.md).
inline void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace gdp
