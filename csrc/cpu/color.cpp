// CPU kernels of the color family: a program per sample (csrc/ops/color.h), samples in parallel.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../ops/color.h"
#include "../ops/augment.h"
#include "color_block.h"

namespace torchaug {
namespace {

using kernels::kColorAutocontrast;
using kernels::kColorContrast;
using kernels::kColorEqualize;

// Pixels [first, first + n) of sample b into v.
template <typename T, int C>
void load_block(const T* in, const ColorParams& P, int64_t b, int64_t first, int n, BlockValues<typename AccOf<T>::type>& v) {
  using acc_t = typename AccOf<T>::type;
  if (P.dense) return load_pixels<T, C>(in + b * P.is.b + first * P.is.x, P.is.c, P.is.x, n, v);
  for (int c = 0; c < C; ++c)
    for (int i = 0; i < n; ++i) v[c][i] = static_cast<acc_t>(in[color_in_offset(P, b, first + i) + c * P.is.c]);
}

// Slots [begin, end) of the sample's program on the n pixels of v.
template <typename T, int C>
void run_block(const ColorParams& P, const SampleProgram& sp, int64_t b, int begin, int end, int n,
               BlockValues<typename AccOf<T>::type>& v) {
  using acc_t = typename AccOf<T>::type;
  for (int k = begin; k < end; ++k) {
    const acc_t p0 = static_cast<acc_t>(sp.p0[k]), p1 = static_cast<acc_t>(sp.p1[k]), om = kernels::one_minus(p0);
    const kernels::ColorStats st = slot_stats(P, b, k);
    with_color_op(sp.op[k], [&](auto op) { run_slot<T, C, decltype(op)::value>(v, n, p0, p1, om, st); });
  }
}

// The sum of the grayscale values contrast blends with, over the n pixels of v: uint8 images in
// integers (exact in any order, so that the loop vectorizes), floating images in double, in pixel
// order.
template <typename T, int C>
TORCHAUG_CPU_CLONES void add_gray(const BlockValues<typename AccOf<T>::type>& v, int n, ColorSlotAccum& acc) {
  using acc_t = typename AccOf<T>::type;
  constexpr bool kU8 = std::is_same_v<T, uint8_t>;
  if constexpr (kU8) {
    int32_t sum = 0;  // at most 256 values of at most 255
    for (int i = 0; i < n; ++i) {
      acc_t px[C];
      for (int c = 0; c < C; ++c) px[c] = v[c][i];
      sum += static_cast<int32_t>(kernels::blend_gray<acc_t, true>(px, C));
    }
    acc.usum += static_cast<uint64_t>(sum);
  } else {
    for (int i = 0; i < n; ++i) {
      acc_t px[C];
      for (int c = 0; c < C; ++c) px[c] = v[c][i];
      acc.fsum += static_cast<double>(kernels::blend_gray<acc_t, false>(px, C));
    }
  }
}

// Statistics of slot k of sample b: every pixel runs slots 0..k-1, then is accumulated; the raw
// statistics are derived into P.stats / P.luts with the functions the CUDA finalize kernel uses.
template <typename T, int C>
void color_stats_sample(const T* in, const ColorParams& P, const SampleProgram& sp, int64_t b, int k) {
  using acc_t = typename AccOf<T>::type;
  constexpr bool kU8 = std::is_same_v<T, uint8_t>;
  const int64_t n = P.height * P.width;
  const int op = sp.op[k];
  std::vector<uint32_t> hist(op == kColorEqualize ? 3 * 256 : 0, 0u);
  ColorSlotAccum acc;
  BlockValues<acc_t> v;
  for (int64_t first = 0; first < n; first += kBlock) {
    const int m = static_cast<int>(std::min<int64_t>(kBlock, n - first));
    load_block<T, C>(in, P, b, first, m, v);
    run_block<T, C>(P, sp, b, 0, k, m, v);
    if (op == kColorContrast) {
      add_gray<T, C>(v, m, acc);
      continue;
    }
    for (int i = 0; i < m; ++i) {
      acc_t px[C];
      for (int c = 0; c < C; ++c) px[c] = v[c][i];
      acc.add<acc_t, kU8, C>(op, px, [&](int j) { ++hist[j]; });
    }
  }
  // raw statistics in the layout the derive functions read (kernels/color.h)
  uint64_t raw64[6] = {0, 0, 0, 0, 0, 0};
  for (int c = 0; c < 3; ++c) {
    raw64[c] = acc.lo[c];
    raw64[3 + c] = acc.hi[c];
  }
  const kernels::ColorStats st = slot_stats(P, b, k);
  double* f = const_cast<double*>(st.f);
  constexpr bool kF64 = std::is_same_v<T, double>;
  if (op == kColorContrast) {
    if (kU8) {
      raw64[0] = acc.usum;
    } else {
      std::memcpy(&raw64[0], &acc.fsum, sizeof(acc.fsum));
    }
    kernels::contrast_derive(raw64, kU8, kF64, n, f);
  } else if (op == kColorAutocontrast) {
    for (int c = 0; c < C; ++c) kernels::autocontrast_derive_channel(raw64, c, kU8, kF64, f);
  } else {
    for (int c = 0; c < C; ++c)
      kernels::equalize_derive_channel(hist.data() + c * 256, n, f + c, const_cast<uint8_t*>(st.lut) + c * 256);
  }
}

template <typename T, int C>
void color_sample(const T* in, T* out, const ColorParams& P, int64_t b) {
  using acc_t = typename AccOf<T>::type;
  SampleProgram sp;
  sp.n = P.n;
  for (int k = 0; k < P.n; ++k) load_sample_program(P, b, k, sp);
  for (int k = 0; k < P.n; ++k)
    if (kernels::color_op_needs_stats(sp.op[k])) color_stats_sample<T, C>(in, P, sp, b, k);
  const int64_t n = P.height * P.width;
  BlockValues<acc_t> v;
  for (int64_t first = 0; first < n; first += kBlock) {
    const int m = static_cast<int>(std::min<int64_t>(kBlock, n - first));
    load_block<T, C>(in, P, b, first, m, v);
    run_block<T, C>(P, sp, b, 0, P.n, m, v);
    if (P.dense) {
      store_pixels<T>(v, P.out_channels, m, out + b * P.os.b + first * P.os.x, P.os.c, P.os.x);
      continue;
    }
    for (int c = 0; c < P.out_channels; ++c)
      for (int i = 0; i < m; ++i) out[color_out_offset(P, b, first + i) + c * P.os.c] = static_cast<T>(v[c][i]);
  }
}

void color_run_cpu(const at::Tensor& images, ColorPlan& plan) {
  color_stats_buffers(plan, images);
  const ColorParams& P = plan.p;
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "color_cpu", [&] {
    const scalar_t* in = images.data_ptr<scalar_t>();
    scalar_t* out = plan.out.data_ptr<scalar_t>();
    with_channels(P.channels, [&](auto ch) {
      at::parallel_for(0, P.batch, 1, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) color_sample<scalar_t, decltype(ch)::value>(in, out, P, b);
      });
    });
  });
}

void color_jitter_program_cpu(const Draws& draws, int64_t B, const kernels::JitterSpace& space, int64_t* ops, float* params) {
  const double* u = draws.data();  // always made on the host for the CPU (resolve_draws)
  for (int64_t b = 0; b < B; ++b) kernels::jitter_sample(space, u + b * kernels::kJitterDraws, ops + 4 * b, params + 8 * b);
}

}  // namespace

void color_stats_cpu(const at::Tensor& images, ColorParams& P) {
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "color_stats_cpu", [&] {
    const scalar_t* in = images.data_ptr<scalar_t>();
    with_channels(P.channels, [&](auto ch) {
      at::parallel_for(0, P.batch, 1, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          SampleProgram sp;
          sp.n = P.n;
          load_sample_program(P, b, 0, sp);
          if (kernels::color_op_needs_stats(sp.op[0])) color_stats_sample<scalar_t, decltype(ch)::value>(in, P, sp, b, 0);
        }
      });
    });
  });
}

TORCH_LIBRARY_IMPL(torchaug, CPU, m) { register_color_ops<color_run_cpu, color_jitter_program_cpu>(m); }

}  // namespace torchaug
