// A kernel's dynamic shared memory opt-in (cudaFuncAttributeMaxDynamicSharedMemorySize), set once
// per kernel and device: a function attribute belongs to the device it was set on, so a process
// that launches the kernel on a second GPU must set it there too. Used by the launches of more than
// 48 KiB (resized_crop's tile kernel, the resident augment).
#pragma once

#include <c10/cuda/CUDAException.h>

#include <atomic>
#include <cstdint>

namespace torchaug {

// kKernel: the kernel (one set of flags per kernel, whatever its signature); bytes: the same for
// every launch of it.
template <auto kKernel>
void opt_in_shared(int device, int bytes) {
  static std::atomic<uint64_t> done{0};  // bit d: set on device d (devices past 63: every call)
  const uint64_t bit = device >= 0 && device < 64 ? uint64_t(1) << device : 0;
  if (bit != 0 && (done.load(std::memory_order_relaxed) & bit) != 0) return;
  C10_CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  done.fetch_or(bit, std::memory_order_relaxed);
}

}  // namespace torchaug
