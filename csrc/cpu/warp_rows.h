// Nearest-neighbour affine rows on the CPU (torchaug::warp_affine, and the geometric steps of
// torchaug::augment): warp_affine_px's math with N = 1 a row at a time. The taps of the whole row
// come first, in a loop the compiler vectorizes; then each channel's row is gathered from them.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../ops/geometry.h"

namespace torchaug {

// Most output pixels of a row that warp_nearest_row takes at once.
constexpr int kWarpRowBlock = 512;

// The nearest taps (kernels::affine_source, kernels::affine_taps<N = 1>: the same positions and
// tests) of output pixels [x0, x0 + n) of row oy under the inverse matrix m: column and row in
// ix, iy, ix = -1 where the tap is outside the image.
template <typename acc_t>
TORCHAUG_CPU_CLONES void nearest_taps(const acc_t* m, int64_t in_h, int64_t in_w, int64_t oy, int64_t x0, int n,
                                      int32_t* __restrict ix, int32_t* __restrict iy) {
  const int32_t first = static_cast<int32_t>(x0), row = static_cast<int32_t>(oy);  // images below 2^31 pixels a side
  for (int32_t i = 0; i < n; ++i) {
    acc_t sx, sy;
    kernels::affine_source<acc_t, int32_t>(m, first + i, row, &sx, &sy);
    const auto t = kernels::affine_taps<acc_t, 1, int32_t>(sx, sy, in_h, in_w);
    ix[i] = t.valid[0] ? t.ix[0] : -1;
    iy[i] = t.iy[0];
  }
}

// Output row oy of sample b (in: the sample's first value, strides p.is; out: the row's first
// value, strides p.os) under the inverse matrix m; fill: the sample's C fill values or nullptr
// (zeros). The values warp_affine_px gives: the tap's value (through 0 + v, as its sum forms it), or
// the fill where the tap is outside.
template <typename T>
void warp_nearest_row(const T* in, T* out, const typename AccOf<T>::type* m, const float* fill,
                      const WarpAffineParams& p, int64_t oy) {
  using acc_t = typename AccOf<T>::type;
  int32_t ix[kWarpRowBlock], iy[kWarpRowBlock];
  for (int64_t x0 = 0; x0 < p.out_w; x0 += kWarpRowBlock) {
    const int n = static_cast<int>(std::min<int64_t>(kWarpRowBlock, p.out_w - x0));
    nearest_taps<acc_t>(m, p.in_h, p.in_w, oy, x0, n, ix, iy);
    for (int64_t c = 0; c < p.channels; ++c) {
      const T* plane = in + c * p.is.c;
      T* dst = out + c * p.os.c + x0 * p.os.x;
      const T outside = kernels::PixelStore<T>::from(fill != nullptr ? static_cast<acc_t>(fill[c]) : acc_t(0));
      for (int i = 0; i < n; ++i) {
        T v = outside;
        if (ix[i] >= 0) {
          const T s = plane[iy[i] * p.is.y + ix[i] * p.is.x];
          if constexpr (std::is_same_v<T, uint8_t>) {
            v = s;
          } else {
            v = kernels::PixelStore<T>::from(acc_t(0) + static_cast<acc_t>(s));
          }
        }
        dst[i * p.os.x] = v;
      }
    }
  }
}

}  // namespace torchaug
