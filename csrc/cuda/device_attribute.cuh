// A device attribute read once per device (devices past 63: on every call): the shared memory a
// block may opt in to (227 KiB on an H100), the SM count, the compute capability.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <atomic>

namespace torchaug {

template <cudaDeviceAttr kAttr>
int device_attribute(int device) {
  static std::atomic<int> cache[64] = {};
  const bool cached = device >= 0 && device < 64;
  int v = cached ? cache[device].load(std::memory_order_relaxed) : 0;
  if (v == 0) {
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&v, kAttr, device));
    if (cached) cache[device].store(v, std::memory_order_relaxed);
  }
  return v;
}

}  // namespace torchaug
