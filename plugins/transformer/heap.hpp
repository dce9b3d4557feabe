// Keeps freed tensor memory in the process instead of handing it back to the
// kernel: every training step frees and reallocates the same few-megabyte
// activations, and glibc's defaults (mmap above a sliding threshold, trimming
// the heap top) turn that into thousands of page faults per step, each zeroing
// a page: about 6% of the transformer step on CPU. The worker process hosts
// this one workload, so the process-wide setting is this workload's to make.
#pragma once

#include <malloc.h>

namespace gpusweep::transformer {

inline void keep_freed_memory() {
  constexpr int kMmapThreshold = 32 << 20;  // glibc's largest allowed value
  constexpr int kTrimThreshold = 1 << 30;
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, kTrimThreshold);
}

}  // namespace gpusweep::transformer
