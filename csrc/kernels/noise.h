// Per-pixel math of the noise family (gaussian_noise, salt_and_pepper, erase): each element's
// output depends only on its value, its sample's parameters and the counter-based random numbers
// of (seed, element index) (random.h). Shared by csrc/cpu/noise.cpp, csrc/cuda/noise.cu and the
// GoogleTest suite.
#pragma once

#include "color.h"
#include "common.h"
#include "random.h"

namespace torchaug {
namespace kernels {

enum NoiseMode : int {
  kNoiseGaussian = 0,
  kNoiseSaltPepper = 1,
  kNoiseErase = 2,
};

// The pixels of a plane that share one Philox call (random_words: four words): salt_and_pepper
// takes two words a pixel (or element), gaussian_noise and erase's random fill one word or one
// normal value (standard_normal_pair) each.
TORCHAUG_HOST_DEVICE inline int noise_group(int mode) { return mode == kNoiseSaltPepper ? 2 : 4; }

// The per-sample parameters of one element, already read for its sample.
//   gaussian:     p0 mean, p1 sigma (fractions of the value range), clip
//   salt_pepper:  p0 probability, p1 salt share, p2 salt value, p3 pepper value (image units)
//   erase:        p0 the fill value of this channel (unless random_fill)
struct NoiseSample {
  float p0, p1, p2, p3;
  int64_t seed;
};

// gaussian_noise, torchvision v2 semantics:
//   floating: x + (mean + z * sigma), clamped to [0, 1] when clip
//   uint8:    x + int16(trunc(mean * 255 + z * (sigma * 255))), clamped to [0, 255] when clip,
//             wrapped modulo 256 otherwise
// z: the element's standard normal value.
template <typename acc_t, bool kU8>
TORCHAUG_HOST_DEVICE inline acc_t gaussian_noise_px(acc_t x, const NoiseSample& s, bool clip, float z) {
  if (kU8) {
    const float n = rn_add(rn_mul(z, s.p1 * 255.0f), s.p0 * 255.0f);
    const int v = static_cast<int>(x) + static_cast<int>(static_cast<int16_t>(static_cast<int>(n)));
    return static_cast<acc_t>(clip ? clamp_of(v, 0, 255) : (v & 255));
  }
  const acc_t n = rn_add(rn_mul(static_cast<acc_t>(z), static_cast<acc_t>(s.p1)), static_cast<acc_t>(s.p0));
  const acc_t v = rn_add(x, n);
  return clip ? clamp_of(v, acc_t(0), acc_t(1)) : v;
}

// salt_and_pepper, DALI semantics: with probability p0 the element (or the whole pixel, when the
// random words are drawn per pixel) becomes salt (p2) with probability p1, else pepper (p3); w0 and
// w1: its two random words.
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t salt_pepper_px(acc_t x, const NoiseSample& s, uint32_t w0, uint32_t w1) {
  if (uniform01(w0) >= s.p0) return x;
  return uniform01(w1) < s.p1 ? static_cast<acc_t>(s.p2) : static_cast<acc_t>(s.p3);
}

// erase's random fill of the k-th pixel of a group: a standard normal value z[k] for floating
// images (torchvision's RandomErasing(value="random")), a uniform integer in [0, 255] (the top byte
// of word k) for uint8 images.
template <typename acc_t, bool kU8>
TORCHAUG_HOST_DEVICE inline acc_t erase_random_px(const Philox4& r, const float* z, int k) {
  if (kU8) return static_cast<acc_t>(r.v[k] >> 24);
  return static_cast<acc_t>(z[k]);
}

// RandomErasing's rectangle for one image of height x width from its draws u (kErasingDraws: per
// attempt k, u[4k] the area fraction, u[4k + 1] the log aspect ratio, u[4k + 2] and u[4k + 3] the
// top and left offsets; u[40] < p erases): torchvision's get_params, the first of 10 attempts whose
// rounded height and width fit, at a uniform offset; box = [top, left, h, w], h = w = 0 where no
// attempt fits or u[40] >= p (top and left then as attempt 0 gives them). torch's float64 steps one
// by one, each rounded and never contracted: the same boxes on the host and the device.
constexpr int kErasingAttempts = 10;
constexpr int kErasingDraws = 4 * kErasingAttempts + 1;

TORCHAUG_HOST_DEVICE inline void erasing_box(const double* u, double p, double height, double width, double scale_min,
                                             double scale_max, double log_ratio_min, double log_ratio_max, int64_t* box) {
  const double area = rn_mul(height, width);
  int pick = -1;
  double h = 0.0, w = 0.0;
  for (int k = 0; k < kErasingAttempts; ++k) {
    const double* a = u + 4 * k;
    const double target = rn_mul(area, rn_add(scale_min, rn_mul(rn_sub(scale_max, scale_min), a[0])));
    const double aspect = exp(rn_add(log_ratio_min, rn_mul(rn_sub(log_ratio_max, log_ratio_min), a[1])));
    const double hk = rint(sqrt(rn_mul(target, aspect))), wk = rint(sqrt(rn_div(target, aspect)));
    const bool fits = hk < height && wk < width;
    if (k == 0 || fits) {  // attempt 0's size stands where none fits
      h = hk;
      w = wk;
    }
    if (fits) {
      pick = k;
      break;
    }
  }
  const bool found = pick >= 0;
  const double* a = u + 4 * (found ? pick : 0);
  const double top = floor(rn_mul(a[2], rn_add(rn_sub(height, h), 1.0)));
  const double left = floor(rn_mul(a[3], rn_add(rn_sub(width, w), 1.0)));
  box[0] = top == top ? static_cast<int64_t>(top) : 0;  // a NaN draw (a caller's, not a uniform) gives 0
  box[1] = left == left ? static_cast<int64_t>(left) : 0;
  const bool erase = found && u[4 * kErasingAttempts] < p;
  box[2] = erase ? static_cast<int64_t>(h) : 0;
  box[3] = erase ? static_cast<int64_t>(w) : 0;
}

}  // namespace kernels
}  // namespace torchaug
