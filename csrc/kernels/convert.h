// Per-pixel math of dtype conversion and normalization (the normalize op, and the fused epilogue of
// resized_crop), shared by the CPU and CUDA backends.
#pragma once

#include "common.h"

namespace torchaug {
namespace kernels {

// Storing an accumulated value into an image of type T: uint8 rounds half to even and saturates
// (torchvision: float_img.round_().to(uint8) after a clamp), floating types convert.
// quantize(v): the value an image of type T would hold, still as an accumulator value (no round
// trip through the integer type).
template <typename T>
struct PixelStore {
  template <typename acc_t>
  TORCHAUG_HOST_DEVICE static T from(acc_t v) { return static_cast<T>(v); }
  template <typename acc_t>
  TORCHAUG_HOST_DEVICE static acc_t quantize(acc_t v) { return static_cast<acc_t>(static_cast<T>(v)); }
};

template <>
struct PixelStore<uint8_t> {
  template <typename acc_t>
  TORCHAUG_HOST_DEVICE static uint8_t from(acc_t v) {
    return round_to_byte(static_cast<float>(v));
  }
  template <typename acc_t>
  TORCHAUG_HOST_DEVICE static acc_t quantize(acc_t v) { return static_cast<acc_t>(round_to_uint8(static_cast<float>(v))); }
};

// 1 / the largest value of an image of type T: 1/255 for uint8, 1 for floating images.
template <typename T>
struct PixelRange {
  static constexpr double inv_max = 1.0;
};
template <>
struct PixelRange<uint8_t> {
  static constexpr double inv_max = 1.0 / 255.0;
};

// torchvision v2: to_dtype(scale=True) multiplies by 1 / max_value (a float32 constant), normalize
// then computes (x - mean) / std. The same operations in the same order, so that float32 results
// match torchvision bit for bit. inv_max is 1 for floating inputs.
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t normalize_px(acc_t v, acc_t inv_max, acc_t mean, acc_t std) {
  return rn_div(rn_sub(rn_mul(v, inv_max), mean), std);
}

// normalize_px with std's rcp_for_div precomputed: the same result (float only).
TORCHAUG_HOST_DEVICE inline float normalize_px_by(float v, float inv_max, float mean, float std, float std_rcp) {
  return rn_div_by(rn_sub(rn_mul(v, inv_max), mean), std, std_rcp);
}

// Whether normalize_px_by needs no range check for any pixel value v in 0..255 (uint8 images),
// decided once per (sample, channel): then a = v * inv_max - mean (rounded twice) is 0 or in
// [2^-53, 2^51], inside rn_div_by's [2^-60, 2^60], and normalize_px_by_unchecked gives the same
// bits without the per-value test. Why: with inv_max in [2^-30, 2^30], x = RN(v * inv_max) is 0 or
// in [2^-30, 2^38]; with mean 0 or |mean| in [2^-30, 2^50], x and mean are both multiples of 2^-53
// (a float >= 2^-30 has 23 fraction bits above 2^-53), so x - mean is 0 or at least 2^-53 in
// magnitude, and rounding keeps that bound; |x - mean| <= 2^38 + 2^50.
TORCHAUG_HOST_DEVICE inline bool normalize_u8_in_range(float inv_max, float mean, float std_rcp) {
  const float im = inv_max < 0 ? -inv_max : inv_max, m = mean < 0 ? -mean : mean;
  return std_rcp != 0.0f && im >= 0x1p-30f && im <= 0x1p30f && (m == 0.0f || (m >= 0x1p-30f && m <= 0x1p50f));
}
TORCHAUG_HOST_DEVICE inline float normalize_px_by_unchecked(float v, float inv_max, float mean, float std,
                                                           float std_rcp) {
  return rn_div_by_in_range(rn_sub(rn_mul(v, inv_max), mean), std, std_rcp);
}

// One channel's normalize constants, for a kernel that normalizes many values of it with them (a
// tile of resized_crop, a sample of the resident augment): mean, std, std's rcp_for_div, and whether
// normalize_u8_in_range holds (then normalize_px_by_unchecked serves every uint8 value). Made once
// per block into shared memory, by threads that would otherwise wait at a barrier, instead of by
// every thread: two loads, a reciprocal and the range test per channel and thread took 8% of
// resized_crop's time (RandomResizedCrop + flip + normalize of 256 500x375 images on an H200).
struct NormalizeConstants {
  float mean, std, rcp;
  bool u8_in_range;
};
TORCHAUG_HOST_DEVICE inline NormalizeConstants normalize_constants(float inv_max, float mean, float std) {
  const float rcp = rcp_for_div(std);
  return {mean, std, rcp, normalize_u8_in_range(inv_max, mean, rcp)};
}

}  // namespace kernels
}  // namespace torchaug
