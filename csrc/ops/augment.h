// Glue of torchaug::augment (the auto-augmentation programs, csrc/kernels/augment.h) between the
// per-pixel code of the color, filter and geometry families and the two backends.
//
// A program of n slots runs as n passes of one "switch" pass; pass k applies to every sample the op
// its id names (a uniform branch per sample):
//   lower:  (op, magnitude) of every (sample, slot) -> kernels::AugStep (kind, color parameters,
//           affine matrix), one pass over the program
//   for every slot k:
//     stats:  the color family's statistics pass on the slot's input, for the samples whose op at
//             slot k needs them (contrast, autocontrast, equalize); the others exit at once
//     switch: every output pixel of every sample: copy, a color op, sharpness's 3x3 window, or the
//             affine sampler, from the slot's input
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include "color.h"
#include "convert.h"
#include "geometry.h"
#include "../kernels/augment.h"
#include "../kernels/filter.h"

namespace torchaug {

struct AugmentParams {
  int64_t batch, channels, height, width, n;
  Strides4 is, os;
  const double* steps;  // (B, n, kAugStepWords)
  const double* stats;  // (B, kColorStatFloats) statistics of the slot being run
  const uint8_t* luts;  // (B, 3, 256) its equalize tables
  WarpAffineParams warp;  // interpolation and fill of the geometric ops (in/out strides as is/os)
};

// The lowered step of (sample b, slot k), with its values in acc_t.
template <typename acc_t>
struct AugStepT {
  int kind, op;
  acc_t p0, p1, om;
  acc_t m[6];
};

C10_HOST_DEVICE inline kernels::ColorStats aug_stats_at(const AugmentParams& P, int64_t b) {
  return {P.stats + b * kernels::kColorStatFloats, P.luts + b * 3 * 256};
}

// A lowered step with its values in acc_t.
template <typename acc_t>
C10_HOST_DEVICE inline AugStepT<acc_t> aug_step_cast(const kernels::AugStep& s) {
  AugStepT<acc_t> t;
  t.kind = s.kind;
  t.op = s.op;
  t.p0 = static_cast<acc_t>(s.p0);
  t.p1 = static_cast<acc_t>(s.p1);
  t.om = static_cast<acc_t>(s.om);
  for (int i = 0; i < 6; ++i) t.m[i] = static_cast<acc_t>(s.m[i]);
  return t;
}

template <typename acc_t>
C10_HOST_DEVICE inline AugStepT<acc_t> aug_step_at(const AugmentParams& P, int64_t b, int64_t k) {
  return aug_step_cast<acc_t>(kernels::load_aug_step(P.steps + (b * P.n + k) * kernels::kAugStepWords));
}

// uint8 images 4 pixels at a time, one 32-bit word per channel (the CUDA passes' word paths).
// The 4 bytes of x through a 256-entry table.
C10_HOST_DEVICE inline uint32_t lut_word(const uint8_t* lut, uint32_t x) {
  return lut[x & 0xffu] | (lut[(x >> 8) & 0xffu] << 8) | (lut[(x >> 16) & 0xffu] << 16) |
         (static_cast<uint32_t>(lut[x >> 24]) << 24);
}

// Color op `op` on the 4 pixels of the words w (one per channel), in place. On the device, hue (shifts
// in [-1, 1]) and saturation of RGB words take their word paths (kernels::hue_words,
// saturation_words): the same bytes in fewer instructions.
template <int C>
C10_HOST_DEVICE inline void color_words(int op, uint32_t* w, float p0, float p1, float om, kernels::ColorStats st) {
#if defined(__CUDA_ARCH__)
  if constexpr (C == 3) {
    if (op == kernels::kColorHue && fabsf(p0) <= 1.0f) {
      kernels::hue_words(w, p0);
      return;
    }
    if (op == kernels::kColorSaturation) {
      kernels::saturation_words(w, p0, om);
      return;
    }
  }
#endif
  uint32_t r[C];
  TORCHAUG_UNROLL
  for (int c = 0; c < C; ++c) r[c] = 0;
  TORCHAUG_UNROLL
  for (int j = 0; j < 4; ++j) {
    float v[3];
    TORCHAUG_UNROLL
    for (int c = 0; c < C; ++c) v[c] = kernels::word_byte_to_float(w[c], j);
    color_slot<uint8_t, C>(op, v, p0, p1, om, st);
    TORCHAUG_UNROLL
    for (int c = 0; c < C; ++c) r[c] |= kernels::trunc_to_byte(v[c]) << (8 * j);
  }
  TORCHAUG_UNROLL
  for (int c = 0; c < C; ++c) w[c] = r[c];
}

// The C channel values of output pixel (y, x) of sample b under step s, before the store (v); in is
// the slot's input (strides P.is); st: the sample's statistics of this slot (color ops that need
// them).
template <typename T, int C>
C10_HOST_DEVICE TORCHAUG_INLINE_ON_HOST inline void augment_value_px(const T* in, const AugmentParams& P,
                                             const AugStepT<typename AccOf<T>::type>& s, kernels::ColorStats st,
                                             int64_t b, int64_t y, int64_t x, typename AccOf<T>::type* v) {
  using acc_t = typename AccOf<T>::type;
  constexpr bool kU8 = std::is_same_v<T, uint8_t>;
  if (s.kind == kernels::kAugKindAffine) {
    const float* fill = P.warp.sample_fill(b);
    with_affine_taps(P.warp.interpolation, [&](auto taps) {
      warp_affine_px<decltype(taps)::value, C>(in, s.m, fill, P.warp, b, y, x, [&](int64_t c, acc_t r) { v[c] = r; });
    });
    return;
  }
  const int64_t io = b * P.is.b + y * P.is.y + x * P.is.x;
  if (s.kind == kernels::kAugKindSharpness) {
    const bool interior = y > 0 && x > 0 && y < P.height - 1 && x < P.width - 1;
    acc_t w[9];
    kernels::sharpness_weights(w);
    TORCHAUG_UNROLL
    for (int c = 0; c < C; ++c) {
      const T* p = in + io + c * P.is.c;
      const acc_t x0 = static_cast<acc_t>(*p);
      acc_t sum = acc_t(0);
      if (interior) {
        sum = kernels::window_sum<acc_t>(w, 3, 3, [&](int r, int q) {
          return static_cast<acc_t>(p[(r - 1) * P.is.y + (q - 1) * P.is.x]);
        });
      }
      v[c] = kernels::sharpness_blend<acc_t, kU8>(x0, sum, s.om, interior);
    }
    return;
  }
  TORCHAUG_UNROLL
  for (int c = 0; c < C; ++c) v[c] = static_cast<acc_t>(in[io + c * P.is.c]);
  if (s.kind == kernels::kAugKindColor) color_slot<T, C>(s.op, v, s.p0, s.p1, s.om, st);
}

// Stores the values of output pixel (y, x) of sample b in out (strides P.os): the sampler's are
// rounded (uint8) as warp_affine stores them; the other kinds' are already whole numbers there.
template <typename T, int C>
C10_HOST_DEVICE inline void augment_store_px(T* out, const AugmentParams& P, int64_t b, int64_t y, int64_t x,
                                             const typename AccOf<T>::type* v) {
  const int64_t ob = b * P.os.b + y * P.os.y + x * P.os.x;
  TORCHAUG_UNROLL
  for (int c = 0; c < C; ++c) out[ob + c * P.os.c] = kernels::PixelStore<T>::from(v[c]);
}

// The backend's passes: lower fills P.steps from (ops, magnitudes); stats runs the color
// statistics pass (and finalize) of ColorParams slot 0; slot runs the switch pass of slot k.
struct AugmentBackend {
  void (*lower)(const at::Tensor& ops, const at::Tensor& magnitudes, const at::Tensor& steps, int64_t height,
                int64_t width, double bound);
  void (*stats)(const at::Tensor& in, ColorParams& P);
  void (*slot)(const at::Tensor& in, const at::Tensor& out, const AugmentParams& P, int64_t k);
  // The whole program sample by sample where the backend can (CUDA: uint8 images that fit in a
  // block's shared memory, one launch; CPU: uint8 batches of a sample or more per thread, each
  // sample's passes over images of one sample that stay in the core's cache); false: it did
  // nothing, and the passes above run over the batch. fill: (B, C) contiguous or undefined. norm:
  // the fused normalize (its plan's output is written instead of out), or nullptr. nullptr: never.
  bool (*resident)(const at::Tensor& images, const at::Tensor& out, const at::Tensor& ops,
                   const at::Tensor& magnitudes, int64_t interpolation, const at::Tensor& fill,
                   const NormalizeParams* norm);
  // _policy_program: kernels::policy_sample for each of B samples (draws (B, R): given, or, on
  // CUDA, drawn by the kernel; outputs (B, n) contiguous).
  void (*policy)(const Draws& draws, int64_t B, int kind, int num_ops, int64_t magnitude, const kernels::PolicySpace& sp,
                 int64_t* choice, int64_t* ops, float* mags);
};

// The slot passes of a validated program of n > 0 slots over a non-empty batch into out (the
// images' shape, dtype and memory format): lower, then per slot the statistics pass and the switch
// pass. fill: (B, C) contiguous or undefined.
at::Tensor augment_slot_passes(const AugmentBackend& be, const at::Tensor& images, const at::Tensor& ops,
                               const at::Tensor& magnitudes, int64_t interpolation, const at::Tensor& fill,
                               const at::Tensor& out);

// The CUDA backend's resident path (csrc/cuda/augment_resident.cu).
bool augment_resident_cuda(const at::Tensor& images, const at::Tensor& out, const at::Tensor& ops,
                           const at::Tensor& magnitudes, int64_t interpolation, const at::Tensor& fill,
                           const NormalizeParams* norm);
// The same path for a color program (color_program's ops (B, n) and params (B, n, 2), checked):
// each slot the color op as the color passes apply it. false: the images do not fit (or the
// augment_resident test hook is 0), and nothing ran.
bool color_resident_cuda(const at::Tensor& images, const at::Tensor& out, const at::Tensor& ops, const at::Tensor& params);

std::tuple<at::Tensor, at::Tensor, at::Tensor> policy_program_op(
    const AugmentBackend& be, const std::optional<at::Tensor>& rand, const at::Tensor& ids, const at::Tensor& mags,
    const at::Tensor& signed_, int64_t kind, int64_t num_ops, int64_t magnitude, const std::optional<at::Tensor>& sub_idx,
    const std::optional<at::Tensor>& sub_prob, const std::optional<at::Tensor>& sub_bins, int64_t batch,
    const std::optional<at::Generator>& generator);

at::Tensor augment_op(const AugmentBackend& be, const at::Tensor& images, const at::Tensor& ops,
                      const at::Tensor& magnitudes, int64_t interpolation, const std::optional<at::Tensor>& fill,
                      const std::optional<at::Tensor>& mean, const std::optional<at::Tensor>& std,
                      std::optional<at::ScalarType> out_dtype, std::optional<at::MemoryFormat> memory_format);

// The color family's statistics pass of slot 0 of a ColorParams (csrc/cpu/color.cpp,
// csrc/cuda/color.cu), used by the augment passes.
void color_stats_cpu(const at::Tensor& images, ColorParams& P);
void color_stats_cuda(const at::Tensor& images, ColorParams& P);

template <const AugmentBackend& be>
void register_augment_ops(torch::Library& m) {
  m.impl("augment", [](const at::Tensor& images, const at::Tensor& ops, const at::Tensor& magnitudes,
                       int64_t interpolation, const std::optional<at::Tensor>& fill,
                       const std::optional<at::Tensor>& mean, const std::optional<at::Tensor>& std,
                       std::optional<at::ScalarType> out_dtype, std::optional<at::MemoryFormat> memory_format) {
    return augment_op(be, images, ops, magnitudes, interpolation, fill, mean, std, out_dtype, memory_format);
  });
  m.impl("_policy_program", [](const std::optional<at::Tensor>& rand, const at::Tensor& ids, const at::Tensor& mags,
                               const at::Tensor& signed_, int64_t kind, int64_t num_ops, int64_t magnitude,
                               const std::optional<at::Tensor>& sub_idx, const std::optional<at::Tensor>& sub_prob,
                               const std::optional<at::Tensor>& sub_bins, int64_t batch,
                               std::optional<at::Generator> generator) {
    return policy_program_op(be, rand, ids, mags, signed_, kind, num_ops, magnitude, sub_idx, sub_prob, sub_bins, batch,
                             generator);
  });
}

}  // namespace torchaug
