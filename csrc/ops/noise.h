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

// Whether pixel p of a plane sits at p * stride_x in input and output (contiguous or
// channels_last batches), so that no row / column split is needed.
C10_HOST_DEVICE inline bool noise_dense(const NoiseParams& P) {
  return P.is.y == P.width * P.is.x && P.os.y == P.width * P.os.x;
}

// The output value of element (b, c, pixel p = y * W + x) whose input value is v;
// s: noise_sample(P, b).
template <typename acc_t, bool kU8>
C10_HOST_DEVICE inline acc_t noise_element(const NoiseParams& P, const kernels::NoiseSample& s, int64_t b, int64_t c,
                                           int64_t p, acc_t v) {
  using namespace kernels;
  const int64_t element = c * P.height * P.width + p;
  if (P.mode == kNoiseGaussian) {
    const Philox4 r = random_words(s.seed, kStreamGaussian, element);
    return gaussian_noise_px<acc_t, kU8>(v, s, P.clip, standard_normal(r.v[0], r.v[1]));
  }
  if (P.mode == kNoiseSaltPepper) {
    const acc_t r = salt_pepper_px<acc_t>(v, s, random_words(s.seed, kStreamSaltPepper, P.per_channel ? element : p));
    return kU8 ? trunc_u8(clamp_of(r, acc_t(0), acc_t(255))) : r;
  }
  const int64_t* box = P.boxes + b * P.boxes_stride;
  // a plane has fewer than 2^31 pixels (make_plan): 32-bit division, far cheaper on the device
  const uint32_t row = static_cast<uint32_t>(p) / static_cast<uint32_t>(P.width);
  const int64_t y = row, x = p - static_cast<int64_t>(row) * P.width;
  if (y < box[0] || y >= box[0] + box[2] || x < box[1] || x >= box[1] + box[3]) return v;
  if (P.seed) return erase_random_px<acc_t, kU8>(random_words(s.seed, kStreamEraseFill, element));
  const acc_t fill = P.values ? static_cast<acc_t>(P.values[P.values_s.at(b, c)]) : acc_t(0);
  return kU8 ? trunc_u8(clamp_of(fill, acc_t(0), acc_t(255))) : fill;
}

// Element offsets of pixel p of plane (b, c).
C10_HOST_DEVICE inline int64_t noise_in_offset(const NoiseParams& P, bool dense, int64_t b, int64_t c, int64_t p) {
  const int64_t base = b * P.is.b + c * P.is.c;
  if (dense) return base + p * P.is.x;
  const int64_t y = p / P.width;
  return base + y * P.is.y + (p - y * P.width) * P.is.x;
}
C10_HOST_DEVICE inline int64_t noise_out_offset(const NoiseParams& P, bool dense, int64_t b, int64_t c, int64_t p) {
  const int64_t base = b * P.os.b + c * P.os.c;
  if (dense) return base + p * P.os.x;
  const int64_t y = p / P.width;
  return base + y * P.os.y + (p - y * P.width) * P.os.x;
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
