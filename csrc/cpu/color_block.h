// The CPU's color slots a block of pixels at a time (csrc/cpu/color.cpp's programs, the color steps
// of csrc/cpu/augment.cpp): pixels held per channel in arrays, each slot's loop with its op fixed at
// compile time, so that the op's switch leaves the pixel loop and the compiler vectorizes it.
#pragma once

#include <type_traits>
#include <utility>

#include "../ops/color.h"

namespace torchaug {

constexpr int kBlock = 256;

template <typename acc_t>
using BlockValues = acc_t[3][kBlock];

// f(std::integral_constant<int, op>) for op in [1, kColorNumOps) (every op of kernels::ColorOp but
// the identity, which leaves the pixels as they are).
template <typename F, int... Ops>
void with_color_op_in(int op, F&& f, std::integer_sequence<int, Ops...>) {
  (void)((op == Ops + 1 ? (f(std::integral_constant<int, Ops + 1>()), true) : false) || ...);
}
template <typename F>
void with_color_op(int op, F&& f) {
  with_color_op_in(op, f, std::make_integer_sequence<int, kernels::kColorNumOps - 1>());
}

// n pixels of C channels, channel stride cs and pixel stride xs from src, into v. A unit pixel
// stride (NCHW rows) gets its own loop, which the compiler vectorizes (AVX2 clone beside the
// baseline, TORCHAUG_CPU_CLONES).
template <typename T, int C>
TORCHAUG_CPU_CLONES void load_pixels(const T* src, int64_t cs, int64_t xs, int n, BlockValues<typename AccOf<T>::type>& v) {
  using acc_t = typename AccOf<T>::type;
  for (int c = 0; c < C; ++c) {
    const T* __restrict s = src + c * cs;
    acc_t* __restrict d = v[c];
    if (xs == 1) {
      for (int i = 0; i < n; ++i) d[i] = static_cast<acc_t>(s[i]);
    } else {
      for (int i = 0; i < n; ++i) d[i] = static_cast<acc_t>(s[i * xs]);
    }
  }
}

// The first `channels` channels of the n pixels of v into dst (strides as load_pixels). Color slots
// leave values T holds exactly (each slot quantizes a uint8 image's values), so a cast stores them.
template <typename T>
TORCHAUG_CPU_CLONES void store_pixels(const BlockValues<typename AccOf<T>::type>& v, int channels, int n, T* dst,
                                      int64_t cs, int64_t xs) {
  using acc_t = typename AccOf<T>::type;
  for (int c = 0; c < channels; ++c) {
    const acc_t* __restrict s = v[c];
    T* __restrict d = dst + c * cs;
    if (xs == 1) {
      for (int i = 0; i < n; ++i) d[i] = static_cast<T>(s[i]);
    } else {
      for (int i = 0; i < n; ++i) d[i * xs] = static_cast<T>(s[i]);
    }
  }
}

// One slot, op Op, on the n pixels of v: the loop where the pixel math runs, compiled for AVX2 and
// FMA beside the baseline (TORCHAUG_CPU_CLONES).
template <typename T, int C, int Op>
TORCHAUG_CPU_CLONES void run_slot(BlockValues<typename AccOf<T>::type>& v, int n, typename AccOf<T>::type p0,
                                  typename AccOf<T>::type p1, typename AccOf<T>::type om, kernels::ColorStats st) {
  using acc_t = typename AccOf<T>::type;
  for (int i = 0; i < n; ++i) {
    acc_t px[C];
    for (int c = 0; c < C; ++c) px[c] = v[c][i];
    color_slot<T, C>(Op, px, p0, p1, om, st);
    for (int c = 0; c < C; ++c) v[c][i] = px[c];
  }
}

}  // namespace torchaug
