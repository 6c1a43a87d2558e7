// Glue of the color family between csrc/kernels/color.h and the two backends: the program of a
// batch (op ids and parameters per sample and slot), the statistics buffers, and the pixel loop
// shared by the CPU and CUDA kernels.
//
// Execution of a program of n slots over a batch (the same results on both backends):
//   CPU, per sample: for every slot k whose op needs statistics (contrast, autocontrast,
//     equalize), each pixel runs slots 0..k-1 and feeds k's statistics, which are then derived;
//     then each pixel runs slots 0..n-1 and is stored.
//   CUDA, for each rank r < n (stats_rank: a sample's r-th statistics op, at slot k_r):
//     stats pass: each pixel runs slots k_(r-1)..k_r - 1 from where rank r - 1 left it (the images
//                 for r = 0, else the output), feeds k_r's statistics and is stored in the output
//     finalize:   raw statistics -> mean / min and scale / LUT of (sample, slot k_r)
//   then the apply pass runs each pixel from the sample's last statistics slot (or 0) to n - 1.
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include <type_traits>

#include "../kernels/color.h"
#include "common.h"

namespace torchaug {

struct ColorParams {
  int64_t batch, channels, height, width;
  int64_t out_channels;  // the first out_channels channels are stored (rgb_to_grayscale to 1 channel)
  Strides4 is, os;
  // dense: pixel p of a sample sits at p * stride_x (stride_y == W * stride_x) in input and output
  bool dense;
  int n;  // slots
  const int64_t* ops;  // (B, n) with strides ops_s; nullptr: every sample runs const_op in slot 0
  Strides2 ops_s;
  int const_op;
  const float* p0;  // (B, n) first parameter; nullptr: p0_default
  Strides2 p0_s;
  const float* p1;  // (B, n) second parameter; nullptr: p1_default
  Strides2 p1_s;
  float p0_default, p1_default;
  uint32_t* raw;     // (B, n, kColorRawWords) raw statistics, zeroed
  double* stats;     // (B, n, kColorStatFloats) derived statistics
  uint8_t* luts;     // (B, n, 3, 256) equalize LUTs
  bool may_need_stats;
  bool is_u8, is_f64;
};

// The program of one sample, read once per sample (CPU) or per block (CUDA).
struct SampleProgram {
  int n;
  int op[kernels::kColorMaxSlots];
  float p0[kernels::kColorMaxSlots];
  float p1[kernels::kColorMaxSlots];
};

C10_HOST_DEVICE inline int color_op_at(const ColorParams& P, int64_t b, int k) {
  return P.ops ? static_cast<int>(P.ops[P.ops_s.at(b, k)]) : P.const_op;
}

C10_HOST_DEVICE inline void load_sample_program(const ColorParams& P, int64_t b, int k, SampleProgram& sp) {
  int op = color_op_at(P, b, k);
  sp.op[k] = (op >= 0 && op < kernels::kColorNumOps) ? op : kernels::kColorIdentity;
  sp.p0[k] = P.p0 ? P.p0[P.p0_s.at(b, k)] : P.p0_default;
  sp.p1[k] = P.p1 ? P.p1[P.p1_s.at(b, k)] : P.p1_default;
}

C10_HOST_DEVICE inline kernels::ColorStats slot_stats(const ColorParams& P, int64_t b, int k) {
  const int64_t i = b * P.n + k;
  return {P.stats + i * kernels::kColorStatFloats, P.luts + i * 3 * 256};
}

// How a value of an image of type T is held between ops: uint8 ops round for themselves; float16
// and bfloat16 results are rounded to the image dtype after every op, as a chain of torchvision
// ops on such images stores each result.
template <typename T>
C10_HOST_DEVICE inline typename AccOf<T>::type requantize(typename AccOf<T>::type v) {
  if constexpr (std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16>) {
    return static_cast<float>(static_cast<T>(v));
  } else {
    return v;
  }
}

// One op of a program on the pixel v of an image of type T (om: see kernels::apply_color_op).
template <typename T, int C>
C10_HOST_DEVICE TORCHAUG_INLINE_ON_HOST inline void color_slot(int op, typename AccOf<T>::type* v, typename AccOf<T>::type p0,
                                       typename AccOf<T>::type p1, typename AccOf<T>::type om,
                                       kernels::ColorStats st) {
  using acc_t = typename AccOf<T>::type;
  // a threshold compared with a float16 / bfloat16 image is rounded to its dtype first
  if (op == kernels::kColorSolarize) p0 = requantize<T>(p0);
  if (op == kernels::kColorSolarizeAdd) p1 = requantize<T>(p1);
  kernels::apply_color_op<acc_t, std::is_same_v<T, uint8_t>>(op, v, C, p0, p1, om, st);
  TORCHAUG_UNROLL
  for (int c = 0; c < C; ++c) v[c] = requantize<T>(v[c]);
}

// Runs slots [begin, end) of the sample's program on the pixel v.
// C: the channel count (1 or 3) as a compile-time constant, so that v stays in registers.
template <typename T, int C>
C10_HOST_DEVICE inline void run_color_program(const ColorParams& P, const SampleProgram& sp, int64_t b, int begin,
                                              int end, typename AccOf<T>::type* v) {
  using acc_t = typename AccOf<T>::type;
  for (int k = begin; k < end; ++k) {
    const int op = sp.op[k];
    if (op == kernels::kColorIdentity) continue;
    const acc_t p0 = static_cast<acc_t>(sp.p0[k]);
    color_slot<T, C>(op, v, p0, static_cast<acc_t>(sp.p1[k]), kernels::one_minus(p0), slot_stats(P, b, k));
  }
}

// The statistics slots of a sample's program, by rank: `slot` is the slot of its r-th op that
// needs statistics (-1: it has fewer), `start` the slot of the one before (0 for r = 0). The CUDA
// statistics pass of rank r runs slots [start, slot) on each pixel, feeds slot's statistics and
// stores the pixel (the input of `slot`) in the output, where the pass of rank r + 1 and the apply
// pass resume: no slot is computed twice. With r past the last, start is where the apply pass
// begins (the last statistics slot; 0 when there is none, and the pass reads the images).
struct StatsRank {
  int start, slot;
};
C10_HOST_DEVICE inline StatsRank stats_rank(const SampleProgram& sp, int r) {
  int start = 0, seen = 0;
  for (int k = 0; k < sp.n; ++k) {
    if (!kernels::color_op_needs_stats(sp.op[k])) continue;
    if (seen == r) return {start, k};
    start = k;
    ++seen;
  }
  return {start, -1};
}

// Calls f(std::integral_constant<int, C>) with the images' channel count.
template <typename F>
inline void with_channels(int64_t channels, F&& f) {
  if (channels == 1) f(std::integral_constant<int, 1>());
  else f(std::integral_constant<int, 3>());
}

// The statistics of one slot, accumulated pixel by pixel (per sample on the CPU, per thread on
// CUDA, then merged): the grayscale sum (contrast), ~ordered(min) and ordered(max) per channel,
// max-accumulated from 0 (autocontrast); equalize bins go to hist_add(bin index).
struct ColorSlotAccum {
  uint64_t usum = 0;  // uint8 images: integer grayscale values
  double fsum = 0.0;  // floating images
  uint64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};

  template <typename acc_t, bool kU8, int C, typename HistAdd>
  C10_HOST_DEVICE void add(int op, const acc_t* v, HistAdd&& hist_add) {
    if (op == kernels::kColorContrast) {
      const acc_t g = kernels::blend_gray<acc_t, kU8>(v, C);
      if (kU8) usum += static_cast<uint64_t>(g); else fsum += static_cast<double>(g);
    } else if (op == kernels::kColorAutocontrast) {
      for (int c = 0; c < C; ++c) {
        const uint64_t e = kernels::ordered_bits(static_cast<double>(v[c]));
        lo[c] = kernels::max_of(lo[c], ~e);
        hi[c] = kernels::max_of(hi[c], e);
      }
    } else {
      for (int c = 0; c < C; ++c) hist_add(c * 256 + kernels::equalize_bin<acc_t, kU8>(v[c]));
    }
  }
};

// Element offsets of pixel p (row-major over H x W) of sample b.
C10_HOST_DEVICE inline int64_t color_in_offset(const ColorParams& P, int64_t b, int64_t p) {
  if (P.dense) return b * P.is.b + p * P.is.x;
  return b * P.is.b + (p / P.width) * P.is.y + (p % P.width) * P.is.x;
}
C10_HOST_DEVICE inline int64_t color_out_offset(const ColorParams& P, int64_t b, int64_t p) {
  if (P.dense) return b * P.os.b + p * P.os.x;
  return b * P.os.b + (p / P.width) * P.os.y + (p % P.width) * P.os.x;
}

struct ColorPlan {
  at::Tensor out, ops, p0, p1, raw, stats, luts;
  ColorParams p;
};

// One mechanism for every color op. ops: (B, n) int64 program or undefined (const_op in one slot);
// p0/p1: (B, n) float32 (a (B,) tensor is one slot) or undefined (defaults). The statistics
// buffers are made by color_stats_buffers, where the backend's passes use them.
ColorPlan plan_color(const char* op, const at::Tensor& images, const at::Tensor& ops, int const_op,
                     const at::Tensor& p0, const at::Tensor& p1, float p0_default, float p1_default,
                     int64_t out_channels);

// The zeroed raw statistics, derived statistics and equalize tables of the plan's (sample, slot)s,
// where a slot may need statistics (plan.p.may_need_stats).
void color_stats_buffers(ColorPlan& plan, const at::Tensor& images);

// The public op entry points build their program and call the backend's run function.
using ColorRunFn = void (*)(const at::Tensor& images, ColorPlan& plan);
at::Tensor color_single_op(const char* name, ColorRunFn run, const at::Tensor& images, int op,
                           const at::Tensor& p0, const at::Tensor& p1, float p0_default, float p1_default,
                           int64_t out_channels = -1);
at::Tensor color_program_op(ColorRunFn run, const at::Tensor& images, const at::Tensor& ops, const at::Tensor& params);

// _color_jitter_program: the backend maps each sample's kernels::kJitterDraws draws to its program
// (kernels::jitter_sample) into ops (B, 4) and params (B, 4, 2), both contiguous.
using ColorJitterFn = void (*)(const Draws& draws, int64_t B, const kernels::JitterSpace& space, int64_t* ops,
                               float* params);
std::tuple<at::Tensor, at::Tensor> color_jitter_program_op(ColorJitterFn fn, const std::optional<at::Tensor>& rand,
                                                           at::ArrayRef<double> lo, at::ArrayRef<double> span,
                                                           at::IntArrayRef codes, int64_t batch,
                                                           const std::optional<at::Tensor>& like,
                                                           const std::optional<at::Generator>& generator);

// The public pointwise color ops, each a one-slot program of the color mechanism, and ColorJitter's
// programs; registered for a backend by passing its functions (csrc/cpu/color.cpp, csrc/cuda/color.cu).
template <ColorRunFn run, ColorJitterFn jitter>
void register_color_ops(torch::Library& m) {
  using at::Tensor;
  using namespace kernels;
  m.impl("adjust_brightness", [](const Tensor& images, const Tensor& factor) {
    return color_single_op("adjust_brightness", run, images, kColorBrightness, factor, Tensor(), 1.0f, 1.0f);
  });
  m.impl("adjust_contrast", [](const Tensor& images, const Tensor& factor) {
    return color_single_op("adjust_contrast", run, images, kColorContrast, factor, Tensor(), 1.0f, 1.0f);
  });
  m.impl("adjust_saturation", [](const Tensor& images, const Tensor& factor) {
    return color_single_op("adjust_saturation", run, images, kColorSaturation, factor, Tensor(), 1.0f, 1.0f);
  });
  m.impl("adjust_hue", [](const Tensor& images, const Tensor& factor) {
    return color_single_op("adjust_hue", run, images, kColorHue, factor, Tensor(), 0.0f, 1.0f);
  });
  m.impl("adjust_gamma", [](const Tensor& images, const Tensor& gamma, const Tensor& gain) {
    return color_single_op("adjust_gamma", run, images, kColorGamma, gamma, gain, 1.0f, 1.0f);
  });
  m.impl("rgb_to_grayscale", [](const Tensor& images, int64_t num_output_channels) {
    return color_single_op("rgb_to_grayscale", run, images, kColorGrayscale, Tensor(), Tensor(), 0.0f, 1.0f,
                           num_output_channels);
  });
  m.impl("invert", [](const Tensor& images) {
    return color_single_op("invert", run, images, kColorInvert, Tensor(), Tensor(), 0.0f, 1.0f);
  });
  m.impl("posterize", [](const Tensor& images, const Tensor& bits) {
    return color_single_op("posterize", run, images, kColorPosterize, bits, Tensor(), 8.0f, 1.0f);
  });
  m.impl("solarize", [](const Tensor& images, const Tensor& threshold) {
    return color_single_op("solarize", run, images, kColorSolarize, threshold, Tensor(), 0.0f, 1.0f);
  });
  m.impl("solarize_add", [](const Tensor& images, const Tensor& shift, const Tensor& threshold) {
    return color_single_op("solarize_add", run, images, kColorSolarizeAdd, shift, threshold, 0.0f, 128.0f);
  });
  m.impl("autocontrast", [](const Tensor& images) {
    return color_single_op("autocontrast", run, images, kColorAutocontrast, Tensor(), Tensor(), 0.0f, 1.0f);
  });
  m.impl("equalize", [](const Tensor& images) {
    return color_single_op("equalize", run, images, kColorEqualize, Tensor(), Tensor(), 0.0f, 1.0f);
  });
  m.impl("color_program", [](const Tensor& images, const Tensor& ops, const Tensor& params) {
    return color_program_op(run, images, ops, params);
  });
  m.impl("_color_jitter_program", [](const std::optional<Tensor>& rand, at::ArrayRef<double> lo, at::ArrayRef<double> span,
                                     at::IntArrayRef codes, int64_t batch, const std::optional<Tensor>& like,
                                     const std::optional<at::Generator>& generator) {
    return color_jitter_program_op(jitter, rand, lo, span, codes, batch, like, generator);
  });
}


}  // namespace torchaug
