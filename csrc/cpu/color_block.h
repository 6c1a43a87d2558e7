// The CPU's color slots a block of pixels at a time (csrc/cpu/color.cpp's programs, the color steps
// of csrc/cpu/augment.cpp): pixels held per channel in arrays, each slot's loop with its op fixed at
// compile time, so that the op's switch leaves the pixel loop and the compiler vectorizes it.
#pragma once

#include <type_traits>

#include "../ops/color.h"

namespace torchaug {

constexpr int kBlock = 256;

template <typename acc_t>
using BlockValues = acc_t[3][kBlock];

// f(std::integral_constant<int, op>) for the ops of kernels::ColorOp but the identity.
template <typename F>
void with_color_op(int op, F&& f) {
  using namespace kernels;
  switch (op) {
    case kColorBrightness: f(std::integral_constant<int, kColorBrightness>()); break;
    case kColorContrast: f(std::integral_constant<int, kColorContrast>()); break;
    case kColorSaturation: f(std::integral_constant<int, kColorSaturation>()); break;
    case kColorHue: f(std::integral_constant<int, kColorHue>()); break;
    case kColorGamma: f(std::integral_constant<int, kColorGamma>()); break;
    case kColorGrayscale: f(std::integral_constant<int, kColorGrayscale>()); break;
    case kColorInvert: f(std::integral_constant<int, kColorInvert>()); break;
    case kColorPosterize: f(std::integral_constant<int, kColorPosterize>()); break;
    case kColorSolarize: f(std::integral_constant<int, kColorSolarize>()); break;
    case kColorSolarizeAdd: f(std::integral_constant<int, kColorSolarizeAdd>()); break;
    case kColorAutocontrast: f(std::integral_constant<int, kColorAutocontrast>()); break;
    case kColorEqualize: f(std::integral_constant<int, kColorEqualize>()); break;
    default: break;
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
