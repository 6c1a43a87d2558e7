// CPU passes of torchaug::augment (csrc/ops/augment.h): rows of all samples in parallel, or the
// samples in parallel, each through its whole program (augment_resident_cpu).
#include <cstring>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../ops/augment.h"
#include "../ops/convert.h"
#include "../ops/settings.h"
#include "color_block.h"
#include "samples.h"
#include "warp_rows.h"

namespace torchaug {
namespace {

void augment_lower_cpu(const at::Tensor& ops, const at::Tensor& magnitudes, const at::Tensor& steps, int64_t height,
                       int64_t width, double bound) {
  const int64_t B = ops.size(0), n = ops.size(1);
  const int64_t* o = ops.data_ptr<int64_t>();
  const float* m = magnitudes.data_ptr<float>();
  double* s = steps.data_ptr<double>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < n; ++k) {
      const auto step = kernels::lower_aug(static_cast<int>(o[b * ops.stride(0) + k * ops.stride(1)]),
                                           m[b * magnitudes.stride(0) + k * magnitudes.stride(1)], height, width, bound);
      kernels::store_aug_step(step, s + (b * n + k) * kernels::kAugStepWords);
    }
}

// Row y of sample b through a geometric or sharpness step, pixel by pixel (augment_value_px,
// the device's math), compiled for AVX2 and FMA beside the baseline.
template <typename scalar_t, int C>
TORCHAUG_CPU_CLONES void augment_row(const scalar_t* src, scalar_t* dst, const AugmentParams& P,
                                     const AugStepT<typename AccOf<scalar_t>::type>& s, kernels::ColorStats st,
                                     int64_t b, int64_t y) {
  using acc_t = typename AccOf<scalar_t>::type;
  for (int64_t x = 0; x < P.width; ++x) {
    acc_t v[C];
    augment_value_px<scalar_t, C>(src, P, s, st, b, y, x, v);
    augment_store_px<scalar_t, C>(dst, P, b, y, x, v);
  }
}

// Row y of one channel of a uint8 sample through sharpness, unit-stride rows: the border pixels
// keep their value; an interior pixel's blur is sharpness_blur_u8 of its window's integer sum and
// its value sharpness_mix_u8 (kernels/filter.h: the same bytes as augment_value_px), in a loop
// the compiler vectorizes (AVX2 clone beside the baseline).
TORCHAUG_CPU_CLONES void sharpness_row_u8(const uint8_t* __restrict top, const uint8_t* __restrict mid,
                                          const uint8_t* __restrict bot, uint8_t* __restrict dst, int64_t W,
                                          bool interior_row, float om) {
  if (!interior_row || W < 3) {
    std::memcpy(dst, mid, W);
    return;
  }
  dst[0] = mid[0];
  dst[W - 1] = mid[W - 1];
  for (int64_t x = 1; x < W - 1; ++x) {
    const uint32_t sum = uint32_t(top[x - 1]) + top[x] + top[x + 1] + mid[x - 1] + 5u * mid[x] + mid[x + 1] +
                         bot[x - 1] + bot[x] + bot[x + 1];
    dst[x] = static_cast<uint8_t>(
        kernels::sharpness_mix_u8(mid[x], kernels::sharpness_blur_u8(sum), om, static_cast<float>(mid[x])));
  }
}

// Row y of sample b through sharpness with sharpness_row_u8, where it applies (uint8, unit-stride
// rows); false where it does not.
template <int C, typename T>
bool sharpness_rows_u8(const T* src, T* dst, const AugmentParams& P, float om, int64_t b, int64_t y) {
  if constexpr (!std::is_same_v<T, uint8_t>) {
    return false;
  } else {
    if (P.is.x != 1 || P.os.x != 1) return false;
    const bool interior = y > 0 && y < P.height - 1;
    for (int c = 0; c < C; ++c) {
      const uint8_t* mid = src + b * P.is.b + c * P.is.c + y * P.is.y;
      sharpness_row_u8(interior ? mid - P.is.y : mid, mid, interior ? mid + P.is.y : mid,
                       dst + b * P.os.b + c * P.os.c + y * P.os.y, P.width, interior, om);
    }
    return true;
  }
}

void augment_slot_cpu(const at::Tensor& in, const at::Tensor& out, const AugmentParams& P, int64_t k) {
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, in.scalar_type(), "augment_cpu", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    const scalar_t* src = in.data_ptr<scalar_t>();
    scalar_t* dst = out.data_ptr<scalar_t>();
    with_channels(P.channels, [&](auto ch) {
      constexpr int C = decltype(ch)::value;
      const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(P.width, 1));
      at::parallel_for(0, P.batch * P.height, grain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const int64_t b = i / P.height, y = i % P.height;
          const AugStepT<acc_t> s = aug_step_at<acc_t>(P, b, k);
          const kernels::ColorStats st = aug_stats_at(P, b);
          if (s.kind == kernels::kAugKindColor || s.kind == kernels::kAugKindCopy) {  // a block of the row at a time (color_block.h)
            BlockValues<acc_t> v;
            for (int64_t x0 = 0; x0 < P.width; x0 += kBlock) {
              const int m = static_cast<int>(std::min<int64_t>(kBlock, P.width - x0));
              load_pixels<scalar_t, C>(src + b * P.is.b + y * P.is.y + x0 * P.is.x, P.is.c, P.is.x, m, v);
              if (s.kind == kernels::kAugKindColor)
                with_color_op(s.op, [&](auto op) { run_slot<scalar_t, C, decltype(op)::value>(v, m, s.p0, s.p1, s.om, st); });
              store_pixels<scalar_t>(v, C, m, dst + b * P.os.b + y * P.os.y + x0 * P.os.x, P.os.c, P.os.x);
            }
            continue;
          }
          if (s.kind == kernels::kAugKindSharpness && sharpness_rows_u8<C>(src, dst, P, s.om, b, y)) continue;
          if (s.kind == kernels::kAugKindAffine && P.warp.interpolation == kernels::kNearest) {
            warp_nearest_row<scalar_t>(src + b * P.is.b, dst + b * P.os.b + y * P.os.y, s.m,
                                       P.warp.sample_fill(b), P.warp, y);
            continue;
          }
          augment_row<scalar_t, C>(src, dst, P, s, st, b, y);
        }
      });
    });
  });
}

void policy_program_cpu(const Draws& draws, int64_t B, int kind, int num_ops, int64_t magnitude,
                        const kernels::PolicySpace& sp, int64_t* choice, int64_t* ops, float* mags) {
  const double* u = draws.data();  // always made on the host for the CPU (resolve_draws)
  const int R = kernels::policy_draws(kind, num_ops), n = kernels::policy_slots(kind, num_ops);
  for (int64_t b = 0; b < B; ++b)
    kernels::policy_sample(kind, num_ops, magnitude, u + b * R, sp, choice + b * n, ops + b * n, mags + b * n);
}

bool augment_resident_cpu(const at::Tensor& images, const at::Tensor& out, const at::Tensor& ops,
                          const at::Tensor& magnitudes, int64_t interpolation, const at::Tensor& fill,
                          const NormalizeParams* norm);  // below: it runs the backend's own passes

const AugmentBackend kCpuBackend{augment_lower_cpu, color_stats_cpu, augment_slot_cpu, augment_resident_cpu,
                                 policy_program_cpu};

// The CPU's resident path: a thread runs each of its samples' whole program in turn, the slot
// passes (the batch's passes, over one sample) between images of one sample, then the store (into
// the output's sample, or the fused normalize of a scratch image the thread keeps for all of its
// samples). Passes over the batch stream every image through memory twice a slot and allocate
// batch-sized intermediates, fresh pages that the kernel faults in at every call (7,271 faults a
// call for RandomResizedCrop + RandAugment(2, 9) + normalize of 32 224x224 images at one thread);
// a sample's intermediates stay in the core's cache and the allocator hands the same memory back
// for the next sample (none). Where the batch has fewer samples than threads, the passes over the
// batch, parallel over rows, occupy more cores. uint8 images (their statistics are integer sums:
// the same in any order), as on CUDA.
bool augment_resident_cpu(const at::Tensor& images, const at::Tensor& out, const at::Tensor& ops,
                          const at::Tensor& magnitudes, int64_t interpolation, const at::Tensor& fill,
                          const NormalizeParams* norm) {
  const int64_t mode = test_hooks::get(test_hooks::kAugmentResident);  // -1: where it pays, 0: never, 1: always
  if (mode == 0) return false;
  const bool u8 = images.scalar_type() == at::kByte;
  TORCHAUG_CHECK(u8 || mode != 1, "torchaug::augment: the forced resident path needs uint8 images, got ",
                 images.scalar_type());
  const int64_t B = images.size(0);
  if (!u8 || (mode == -1 && B < at::get_num_threads())) return false;
  const auto format = image_memory_format(images);
  for_samples(B, [&](auto next) {
    // the passes inside run on this thread (ATen runs a parallel_for inside another inline)
    const at::Tensor scratch = norm ? at::empty({1, images.size(1), images.size(2), images.size(3)},
                                                images.options().memory_format(format))
                                    : at::Tensor();
    for (int64_t b = next(); b >= 0; b = next()) {
      const at::Tensor dst = norm ? scratch : out.narrow(0, b, 1);
      augment_slot_passes(kCpuBackend, images.narrow(0, b, 1), ops.narrow(0, b, 1), magnitudes.narrow(0, b, 1), interpolation,
                          fill.defined() ? fill.narrow(0, b, 1) : fill, dst);
      if (norm) normalize_sample_cpu(scratch, *norm, b);
    }
  });
  return true;
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CPU, m) { register_augment_ops<kCpuBackend>(m); }

}  // namespace torchaug
