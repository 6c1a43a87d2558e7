// Per-pixel math of the filter family: a per-sample 2-D window of weights applied around every
// pixel, then an epilogue per op. adjust_sharpness, gaussian_blur and laplacian are the same
// stencil with different weights, borders and epilogues. Shared by csrc/cpu/filter.cpp,
// csrc/cuda/filter.cu and the GoogleTest suite.
#pragma once

#include "color.h"
#include "common.h"

namespace torchaug {
namespace kernels {

// What is done with the window sum s of a pixel whose own value is x (param: the sample's factor
// or scale):
//   kFilterConv      gaussian_blur: s (uint8: rounded half to even, as torchvision's round_())
//   kFilterScaled    laplacian: s * param (uint8: rounded and saturated, as DALI converts)
//   kFilterSharpness adjust_sharpness: interior pixels blend x with the rounded blur,
//                    x + (1 - param) * (blur - x), clamped (uint8: truncated); border pixels keep x
enum FilterMode : int {
  kFilterConv = 0,
  kFilterScaled = 1,
  kFilterSharpness = 2,
};

// The largest window side the filter ops take.
constexpr int kFilterMaxWindow = 65;

// Index i of a row of n pixels, mirrored at the borders without repeating the edge pixel
// (torch.nn.functional.pad mode "reflect", OpenCV/DALI BORDER_REFLECT_101). The window's half
// size is below n, so one reflection suffices. I: int64_t on the host, int in a CUDA tile.
template <typename I>
TORCHAUG_HOST_DEVICE inline I reflect101(I i, I n) {
  if (n == 1) return 0;
  if (i < 0) i = -i;
  if (i >= n) i = 2 * (n - 1) - i;
  return i;
}

// The weighted sum of a window: w is ky x kx row-major, at(r, c) the window's pixel (r, c).
// Row-major multiply-adds, as a direct convolution accumulates.
template <typename acc_t, typename At>
TORCHAUG_HOST_DEVICE inline acc_t window_sum(const acc_t* w, int ky, int kx, At&& at) {
  acc_t s = acc_t(0);
  for (int r = 0; r < ky; ++r)
    for (int c = 0; c < kx; ++c) s = fma_of(w[r * kx + c], at(r, c), s);
  return s;
}

// The weighted sum of a separable window (gaussian_blur's: weight wy[r] * wx[c] at (r, c)), as two
// 1-D convolutions: row r's sum rows(r) = window_sum of its kx pixels under wx (row_sum), then the ky
// row sums under wy (column_sum). kx + ky multiply-adds a pixel where the 2-D window takes kx * ky,
// and the same operations in the same order on the CPU (a plane of row sums) and on CUDA (a tile's).
template <typename acc_t, typename At>
TORCHAUG_HOST_DEVICE inline acc_t row_sum(const acc_t* wx, int kx, At&& at) {
  return window_sum<acc_t>(wx, 1, kx, [&](int, int c) { return at(c); });
}
template <typename acc_t, typename Rows>
TORCHAUG_HOST_DEVICE inline acc_t column_sum(const acc_t* wy, int ky, Rows&& rows) {
  return window_sum<acc_t>(wy, ky, 1, [&](int r, int) { return rows(r); });
}

// adjust_sharpness of a pixel x whose 3x3 window sum is s: torchvision's
// view.add_(blurred.sub_(view), alpha=om) with om = 1 - factor, clamp, cast; border pixels keep x.
template <typename acc_t, bool kU8>
TORCHAUG_HOST_DEVICE inline acc_t sharpness_blend(acc_t x, acc_t s, acc_t om, bool interior) {
  acc_t v = x;
  if (interior) {
    const acc_t blur = kU8 ? rint_small(s) : s;  // s in [0, 255] (weights summing to 1 over bytes)
    v = fma_of(rn_sub(blur, x), om, x);
  }
  v = clamp_of(v, acc_t(0), ColorRange<acc_t, kU8>::bound());
  return kU8 ? trunc_u8(v) : v;
}

// ---- adjust_sharpness of uint8 pixels, four at a time ------------------------------------------
// The blur of a uint8 pixel from its window's integer sum s = the 9 bytes + 4 * the centre (13 times
// the window's value under the weights 1/13 and 5/13): rint of window_sum's float sum is
// rint(s / 13) for every window, because s / 13 is never within 1/26 of a half integer (13 is odd)
// and the float sum is within 1e-3 of s / 13 (9 products and sums of values below 256, each
// rounded to 2^-24 relative, the weights too). So the blur is (2s + 13) / 26 in integers.
TORCHAUG_HOST_DEVICE inline uint32_t sharpness_blur_u8(uint32_t s) { return (2u * s + 13u) / 26u; }

// sharpness_blend's uint8 value from the pixel's byte x and its blur (integers of [0, 255]): the
// same float operations (blur - x is exact), clamped, truncated to the byte. v is never NaN (om is
// finite), so the host's clamp by comparisons is the same, and lets the CPU's row loop vectorize.
TORCHAUG_HOST_DEVICE inline uint32_t sharpness_mix_u8(uint32_t x, uint32_t blur, float om, float xf) {
  const float v = fma_of(small_int_to_float(static_cast<int>(blur) - static_cast<int>(x)), om, xf);
#if defined(__CUDA_ARCH__)
  return trunc_to_byte(fminf(fmaxf(v, 0.0f), 255.0f));
#else
  return trunc_to_byte(clamp_of(v, 0.0f, 255.0f));
#endif
}

// adjust_sharpness of four consecutive pixels of a uint8 row (a 32-bit word, the first pixel in the
// low byte): mid their bytes, top and bot the bytes above and below them, l and r the column sums
// (above + own + below) just left and right of them, keep 0xff in the bytes of pixels on the
// image's border (they keep their value). The window sums are formed two pixels a word: 16-bit
// lanes, at most 13 * 255 each. The same bytes as sharpness_blend of window_sum pixel by pixel
// (sharpness_blur_u8), in a fraction of the loads and instructions.
TORCHAUG_HOST_DEVICE inline uint32_t sharpness_word(uint32_t top, uint32_t mid, uint32_t bot, uint32_t l, uint32_t r,
                                                    float om, uint32_t keep) {
  constexpr uint32_t kLanes = 0x00ff00ffu;
  const uint32_t me = mid & kLanes, mo = (mid >> 8) & kLanes;
  const uint32_t e = (top & kLanes) + me + (bot & kLanes);                          // columns 0 and 2
  const uint32_t o = ((top >> 8) & kLanes) + mo + ((bot >> 8) & kLanes);           // columns 1 and 3
  const uint32_t pair = e + o;                                                      // 0 + 1, 2 + 3
  const uint32_t se = pair + (l | (o << 16)) + 4u * me;                             // pixels 0 and 2
  const uint32_t so = pair + ((e >> 16) | (r << 16)) + 4u * mo;                     // pixels 1 and 3
  const uint32_t s[4] = {se & 0xffffu, so & 0xffffu, se >> 16, so >> 16};
  uint32_t out = 0;
  TORCHAUG_UNROLL
  for (int j = 0; j < 4; ++j) {
    const uint32_t x = (mid >> (8 * j)) & 0xffu;
    out |= sharpness_mix_u8(x, sharpness_blur_u8(s[j]), om, word_byte_to_float(mid, j)) << (8 * j);
  }
  return (out & ~keep) | (mid & keep);
}

// The output value of a pixel (see FilterMode). interior: the pixel is at least one pixel away
// from every border (adjust_sharpness keeps the others).
template <typename acc_t, bool kU8>
TORCHAUG_HOST_DEVICE inline acc_t filter_epilogue(int mode, acc_t x, acc_t s, acc_t param, bool interior) {
  if (mode == kFilterConv) return kU8 ? clamp_of(acc_t(rint(s)), acc_t(0), acc_t(255)) : s;
  if (mode == kFilterScaled) {
    const acc_t v = rn_mul(s, param);
    return kU8 ? clamp_of(acc_t(rint(v)), acc_t(0), acc_t(255)) : v;
  }
  return sharpness_blend<acc_t, kU8>(x, s, one_minus(param), interior);
}

// adjust_sharpness's window: 1/13 around, 5/13 in the centre (torchvision's constants, rounded to
// the computation's precision).
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline void sharpness_weights(acc_t* w) {
  for (int i = 0; i < 9; ++i) w[i] = static_cast<acc_t>(1.0 / 13.0);
  w[4] = static_cast<acc_t>(5.0 / 13.0);
}

// DALI laplacian windows (OpenCV's Sobel-style): the smoothing window of size n is the binomial
// row C(n-1, i); the second-derivative window of size n >= 3 is the binomial row of size n - 2
// convolved with [1, -2, 1]. Integers, exact in float32 for the sizes taken here.
TORCHAUG_HOST_DEVICE inline void laplacian_smoothing_window(int n, double* w) {
  w[0] = 1.0;
  for (int i = 1; i < n; ++i) {
    w[i] = 0.0;
    for (int j = i; j > 0; --j) w[j] += w[j - 1];
  }
}
TORCHAUG_HOST_DEVICE inline void laplacian_derivative_window(int n, double* w) {
  double s[kFilterMaxWindow];
  laplacian_smoothing_window(n - 2, s);
  for (int i = 0; i < n; ++i) w[i] = 0.0;
  for (int i = 0; i < n - 2; ++i) {
    w[i] += s[i];
    w[i + 1] -= 2.0 * s[i];
    w[i + 2] += s[i];
  }
}

// The 2-D laplacian window of size wy x wx (the larger of each axis's derivative and smoothing
// sizes, windows centred): d2/dx2 (derivative dx along x, smoothing sy along y) plus d2/dy2
// (derivative dy along y, smoothing sx along x); normalized: each partial scaled by 2^(2 + 2 - s),
// s the sum of its window sizes (DALI's normalized_kernel).
TORCHAUG_HOST_DEVICE inline void laplacian_weights(int dy, int dx, int sy, int sx, bool normalized, int wy, int wx,
                                                  double* out) {
  double deriv_y[kFilterMaxWindow], deriv_x[kFilterMaxWindow], smooth_y[kFilterMaxWindow], smooth_x[kFilterMaxWindow];
  laplacian_derivative_window(dy, deriv_y);
  laplacian_derivative_window(dx, deriv_x);
  laplacian_smoothing_window(sy, smooth_y);
  laplacian_smoothing_window(sx, smooth_x);
  const double norm_x = normalized ? ldexp(1.0, 4 - (dx + sy)) : 1.0;
  const double norm_y = normalized ? ldexp(1.0, 4 - (dy + sx)) : 1.0;
  for (int i = 0; i < wy * wx; ++i) out[i] = 0.0;
  // d2/dx2: rows from smooth_y, columns from deriv_x
  for (int r = 0; r < sy; ++r)
    for (int c = 0; c < dx; ++c) out[(r + (wy - sy) / 2) * wx + c + (wx - dx) / 2] += norm_x * smooth_y[r] * deriv_x[c];
  // d2/dy2: rows from deriv_y, columns from smooth_x
  for (int r = 0; r < dy; ++r)
    for (int c = 0; c < sx; ++c) out[(r + (wy - dy) / 2) * wx + c + (wx - sx) / 2] += norm_y * deriv_y[r] * smooth_x[c];
}

}  // namespace kernels
}  // namespace torchaug
