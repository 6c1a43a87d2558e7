// The thread tiles of the per-pixel kernels: a block of 32 x 8 threads computes a 32 x 8 tile of
// output pixels of one sample (blockIdx.z, striding over the batch past the grid's z limit).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace torchaug {

constexpr int kTileX = 32;
constexpr int kTileY = 8;
constexpr int64_t kMaxGridZ = 65535;

inline dim3 pixel_grid(int64_t batch, int64_t height, int64_t width) {
  return dim3(static_cast<unsigned>((width + kTileX - 1) / kTileX), static_cast<unsigned>((height + kTileY - 1) / kTileY),
              static_cast<unsigned>(std::min(batch, kMaxGridZ)));
}

}  // namespace torchaug
