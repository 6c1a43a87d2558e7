// Warp-wide helpers of the CUDA kernels (every lane of the warp takes part).
#pragma once

namespace torchaug {

// The sum of x over lanes 0 .. lane of the warp.
template <typename T>
__device__ __forceinline__ T warp_inclusive_sum(T x, int lane) {
  for (int off = 1; off < 32; off *= 2) {
    const T y = __shfl_up_sync(0xffffffffu, x, off);
    if (lane >= off) x += y;
  }
  return x;
}

}  // namespace torchaug
