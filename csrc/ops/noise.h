// Glue of the noise family (gaussian_noise, salt_and_pepper, erase) between csrc/kernels/noise.h
// and the two backends: one elementwise mechanism. Element (b, c, y, x) reads its sample's
// parameters and, where the op is random, the Philox words of (seed[b], stream, logical index), so
// that results do not depend on the backend, the launch or the memory format.
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include "../kernels/noise.h"
#include "common.h"

namespace torchaug {

struct NoiseParams {
  int64_t batch, channels, height, width;
  Strides4 is, os;
  int mode;                // kernels::NoiseMode
  const float* p[4];       // per-sample parameters (see kernels::NoiseSample); nullptr: default
  int64_t p_stride[4];
  float p_default[4];
  const int64_t* seed;     // (B,) or (1,); nullptr: no random numbers
  int64_t seed_stride;
  const int64_t* boxes;    // erase: (B, 4) [top, left, height, width]
  int64_t boxes_stride;
  const float* values;     // erase: fill values, (B or 1, C or 1) with strides values_s
  Strides2 values_s;
  bool clip, per_channel;
};

C10_HOST_DEVICE inline kernels::NoiseSample noise_sample(const NoiseParams& P, int64_t b) {
  float v[4];
  for (int i = 0; i < 4; ++i) v[i] = P.p[i] ? P.p[i][b * P.p_stride[i]] : P.p_default[i];
  return {v[0], v[1], v[2], v[3], P.seed ? P.seed[b * P.seed_stride] : 0};
}

// The work of the noise kernels comes in units: unit u of plane (b, c) is the plane's pixels
// [u G, u G + G), G = kernels::noise_group(P.mode), whose random numbers are the four words of one
// Philox call, counter c * units + u (units: noise_plane_units). salt_and_pepper drawn per pixel
// walks plane 0 only, each pixel with all its channels. So an element's values depend only on
// (seed, c, p), on any backend, launch or memory format.
C10_HOST_DEVICE inline int64_t noise_planes(const NoiseParams& P) {
  return P.mode == kernels::kNoiseSaltPepper && !P.per_channel ? 1 : P.channels;
}
C10_HOST_DEVICE inline int64_t noise_plane_units(const NoiseParams& P) {
  const int64_t g = kernels::noise_group(P.mode);
  return (P.height * P.width + g - 1) / g;
}

// Unit u of plane (b, c) from in to out; s: noise_sample(P, b), units: noise_plane_units(P). The
// unit's first pixel is split into its row and column once (a plane has fewer than 2^31 pixels:
// make_plan), the next ones step along the row, so that a pixel's offsets in any layout are a few
// adds and no division.
template <typename T>
C10_HOST_DEVICE inline void noise_unit(const T* __restrict__ in, T* __restrict__ out, const NoiseParams& P,
                                       const kernels::NoiseSample& s, int64_t b, int64_t c, int64_t u, int64_t units) {
  using namespace kernels;
  using acc_t = typename AccOf<T>::type;
  constexpr bool kU8 = std::is_same<T, uint8_t>::value;
  const int g = noise_group(P.mode);
  const int64_t p0 = u * g, left = P.height * P.width - p0, counter = c * units + u;
  const int count = left < g ? static_cast<int>(left) : g;
  const uint32_t width = static_cast<uint32_t>(P.width);
  uint32_t y = static_cast<uint32_t>(p0) / width, x = static_cast<uint32_t>(p0) - y * width;
  const T* in_c = in + b * P.is.b + c * P.is.c;
  T* out_c = out + b * P.os.b + c * P.os.c;
  // pixel k's offsets in in_c and out_c, then (y, x) moved to pixel k + 1
  int64_t io = 0, oo = 0;
  const auto locate = [&] {
    io = y * P.is.y + x * P.is.x;
    oo = y * P.os.y + x * P.os.x;
  };
  const auto next = [&] {
    if (++x == width) {
      x = 0;
      ++y;
    }
  };
  if (P.mode == kNoiseGaussian) {
    float z[4];
    standard_normal_quad(random_words(s.seed, kStreamGaussian, counter), z);
    for (int k = 0; k < count; ++k, next()) {
      locate();
      out_c[oo] = static_cast<T>(gaussian_noise_px<acc_t, kU8>(static_cast<acc_t>(in_c[io]), s, P.clip, z[k]));
    }
    return;
  }
  if (P.mode == kNoiseSaltPepper) {
    const Philox4 r = random_words(s.seed, kStreamSaltPepper, counter);
    const int64_t channels = P.per_channel ? 1 : P.channels;
    for (int k = 0; k < count; ++k, next()) {
      locate();
      for (int64_t ch = 0; ch < channels; ++ch) {
        const acc_t v = salt_pepper_px<acc_t>(static_cast<acc_t>(in_c[io + ch * P.is.c]), s, r.v[2 * k], r.v[2 * k + 1]);
        out_c[oo + ch * P.os.c] = static_cast<T>(kU8 ? trunc_u8(clamp_of(v, acc_t(0), acc_t(255))) : v);
      }
    }
    return;
  }
  const int64_t* box = P.boxes + b * P.boxes_stride;
  acc_t fill = acc_t(0);
  if (!P.seed && P.values) fill = static_cast<acc_t>(P.values[P.values_s.at(b, c)]);
  if (kU8) fill = trunc_u8(clamp_of(fill, acc_t(0), acc_t(255)));
  Philox4 r{};
  float z[4] = {0.f, 0.f, 0.f, 0.f};
  bool drawn = false;
  for (int k = 0; k < count; ++k, next()) {
    locate();
    if (y < box[0] || y >= box[0] + box[2] || x < box[1] || x >= box[1] + box[3]) {
      out_c[oo] = in_c[io];
      continue;
    }
    if (P.seed && !drawn) {  // the words only where the unit erases
      r = random_words(s.seed, kStreamEraseFill, counter);
      if (!kU8) standard_normal_quad(r, z);
      drawn = true;
    }
    out_c[oo] = static_cast<T>(P.seed ? erase_random_px<acc_t, kU8>(r, z, k) : fill);
  }
}

struct NoisePlan {
  at::Tensor out, p[4], seed, boxes, values;
  NoiseParams p_;
};

using NoiseRunFn = void (*)(const at::Tensor& images, NoisePlan& plan);

at::Tensor gaussian_noise_op(NoiseRunFn run, const at::Tensor& images, const at::Tensor& mean,
                             const at::Tensor& sigma, const at::Tensor& seed, bool clip);
at::Tensor salt_and_pepper_op(NoiseRunFn run, const at::Tensor& images, const at::Tensor& prob,
                              const at::Tensor& salt_vs_pepper, const at::Tensor& seed, bool per_channel,
                              const std::optional<at::Tensor>& salt_value,
                              const std::optional<at::Tensor>& pepper_value);
at::Tensor erase_op(NoiseRunFn run, const at::Tensor& images, const at::Tensor& boxes,
                    const std::optional<at::Tensor>& value, const std::optional<at::Tensor>& seed);

template <NoiseRunFn run>
void register_noise_ops(torch::Library& m) {
  using at::Tensor;
  m.impl("gaussian_noise", [](const Tensor& images, const Tensor& mean, const Tensor& sigma, const Tensor& seed,
                              bool clip) { return gaussian_noise_op(run, images, mean, sigma, seed, clip); });
  m.impl("salt_and_pepper", [](const Tensor& images, const Tensor& prob, const Tensor& salt_vs_pepper,
                               const Tensor& seed, bool per_channel, const std::optional<Tensor>& salt_value,
                               const std::optional<Tensor>& pepper_value) {
    return salt_and_pepper_op(run, images, prob, salt_vs_pepper, seed, per_channel, salt_value, pepper_value);
  });
  m.impl("erase", [](const Tensor& images, const Tensor& boxes, const std::optional<Tensor>& value,
                     const std::optional<Tensor>& seed) { return erase_op(run, images, boxes, value, seed); });
}

}  // namespace torchaug
