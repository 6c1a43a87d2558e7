// The CPU loops that take a batch a sample at a time (a crop of each sample's own box, each sample's
// own augmentation program): samples handed out one by one from a shared counter.
#pragma once

#include <atomic>
#include <cstdint>

#include <ATen/Parallel.h>

namespace torchaug {

// Calls task(next) once on each thread at::parallel_for runs B items on (a single call, inline,
// inside another parallel region), where next() returns the next sample not yet taken, or -1 once
// none is left. A sample's cost varies with its parameters (a crop's area, RandAugment's ops) by up
// to ~6x, so at::parallel_for's even split of [0, B) can leave one thread with the costly half while
// the others wait; taken one at a time, every thread works until the batch's last sample is taken.
// Each sample must write only its own output (the order samples are taken in varies between calls).
// task may set up per-thread state (scratch) before its first next().
template <typename Task>
void for_samples(int64_t B, Task&& task) {
  std::atomic<int64_t> counter{0};
  at::parallel_for(0, B, 1, [&](int64_t, int64_t) {
    task([&counter, B]() -> int64_t {
      const int64_t b = counter.fetch_add(1, std::memory_order_relaxed);
      return b < B ? b : -1;
    });
  });
}

}  // namespace torchaug
