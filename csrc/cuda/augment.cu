// CUDA passes of torchaug::augment (csrc/ops/augment.h). The switch pass: a block computes a
// kTileW x kTileH tile of one sample (kTileH / kRows rows per thread); the sample's lowered step
// sits in shared memory, so that the branch on its kind is uniform across the block. uint8 images
// that fit in shared memory take the resident path instead (augment_resident.cu).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <torch/library.h>

#include "../ops/augment.h"
#include "dependent_launch.cuh"
#include "draws.cuh"

namespace torchaug {
namespace {

constexpr int kTileW = 32, kRows = 8, kTileH = 32;
static_assert(kTileW * kRows == 256, "the uint8 lookup table is built by one thread per entry");
static_assert(kTileW * kRows / (kTileW / 4) == kTileH, "the word path covers a tile with one word per thread");

__global__ void augment_lower_kernel(const int64_t* __restrict__ ops, Strides2 os, const float* __restrict__ mags,
                                     Strides2 ms, double* __restrict__ steps, int64_t B, int64_t n, int64_t height,
                                     int64_t width, double bound) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= B * n) return;
  const int64_t b = i / n, k = i % n;
  const auto s = kernels::lower_aug(static_cast<int>(ops[os.at(b, k)]), mags[ms.at(b, k)], height, width, bound);
  kernels::store_aug_step(s, steps + i * kernels::kAugStepWords);
}

template <typename T, int C>
__global__ void __launch_bounds__(kTileW * kRows) augment_slot_kernel(const T* __restrict__ in, T* __restrict__ out,
                                                                      AugmentParams P, int64_t k, int tiles_x,
                                                                      bool words) {
  using acc_t = typename AccOf<T>::type;
  __shared__ AugStepT<acc_t> step;
  __shared__ uint8_t lut[C][256];
  const int64_t b = blockIdx.y;
  if (threadIdx.x == 0 && threadIdx.y == 0) step = aug_step_at<acc_t>(P, b, k);
  __syncthreads();
  const AugStepT<acc_t> s = step;
  const kernels::ColorStats st = aug_stats_at(P, b);
  // uint8 and an op whose output channel depends on its input channel only: a 256-entry table per
  // channel, evaluated once per block (kTileW * kRows == 256 threads)
  bool use_lut = false;
  if constexpr (std::is_same_v<T, uint8_t>) {
    use_lut = s.kind == kernels::kAugKindColor && kernels::color_op_is_separable(s.op);
    if (use_lut) {
      const int t = threadIdx.y * kTileW + threadIdx.x;
      float v[3] = {float(t), float(t), float(t)};
      color_slot<uint8_t, C>(s.op, v, s.p0, s.p1, s.om, st);
#pragma unroll
      for (int c = 0; c < C; ++c) lut[c][t] = static_cast<uint8_t>(v[c]);
      __syncthreads();
    }
  }
  const int64_t x0 = static_cast<int64_t>(blockIdx.x % tiles_x) * kTileW;
  const int64_t y0 = static_cast<int64_t>(blockIdx.x / tiles_x) * kTileH;
  if constexpr (std::is_same_v<T, uint8_t>) {
    if (words && (use_lut || s.kind == kernels::kAugKindCopy || s.kind == kernels::kAugKindColor)) {
      // dense uint8 rows: a thread takes 4 pixels of one tile row as one 32-bit word per channel
      // (kTileW / 4 threads per row, kTileH rows), every load before the first store
      const int t = threadIdx.y * kTileW + threadIdx.x;
      const int64_t x = x0 + (t % (kTileW / 4)) * 4, y = y0 + t / (kTileW / 4);
      if (x >= P.width || y >= P.height) return;
      const uint8_t* src = reinterpret_cast<const uint8_t*>(in) + b * P.is.b + y * P.is.y + x;
      uint8_t* dst = reinterpret_cast<uint8_t*>(out) + b * P.os.b + y * P.os.y + x;
      uint32_t w[C];
#pragma unroll
      for (int c = 0; c < C; ++c) w[c] = *reinterpret_cast<const uint32_t*>(src + c * P.is.c);
      if (use_lut) {
#pragma unroll
        for (int c = 0; c < C; ++c) w[c] = lut_word(lut[c], w[c]);
      } else if (s.kind == kernels::kAugKindColor) {
        color_words<C>(s.op, w, s.p0, s.p1, s.om, st);
      }
#pragma unroll
      for (int c = 0; c < C; ++c) *reinterpret_cast<uint32_t*>(dst + c * P.os.c) = w[c];
      return;
    }
  }
  const int64_t x = x0 + threadIdx.x;
  if (x >= P.width) return;
  constexpr int kPix = kTileH / kRows;
  if (s.kind == kernels::kAugKindSharpness) {
    // pixel by pixel: holding the 3x3 windows of all the thread's pixels made it slower (H100, one
    // slot of sharpness: 0.181 -> 0.213 ms)
#pragma unroll
    for (int r = 0; r < kPix; ++r) {
      const int64_t y = y0 + r * kRows + threadIdx.y;
      if (y < P.height) {
        acc_t v[C];
        augment_value_px<T, C>(in, P, s, st, b, y, x, v);
        augment_store_px<T, C>(out, P, b, y, x, v);
      }
    }
    return;
  }
  // the values of all the thread's pixels computed before the first store: the stores may alias
  // the image for all the compiler knows, so it would not move the next pixel's loads (the
  // sampler's gathers, a copy's loads) above them (H100, one slot of rotate: 0.182 -> 0.114 ms)
  acc_t val[kPix][C];
#pragma unroll
  for (int r = 0; r < kPix; ++r) {
    const int64_t y = y0 + r * kRows + threadIdx.y;
    if (y >= P.height) continue;
    if (use_lut) {
      const int64_t io = b * P.is.b + y * P.is.y + x * P.is.x;
#pragma unroll
      for (int c = 0; c < C; ++c) val[r][c] = lut[c][static_cast<uint8_t>(in[io + c * P.is.c])];
    } else {
      augment_value_px<T, C>(in, P, s, st, b, y, x, val[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < kPix; ++r) {
    const int64_t y = y0 + r * kRows + threadIdx.y;
    if (y < P.height) augment_store_px<T, C>(out, P, b, y, x, val[r]);
  }
}

void augment_lower_cuda(const at::Tensor& ops, const at::Tensor& magnitudes, const at::Tensor& steps, int64_t height,
                        int64_t width, double bound) {
  const c10::cuda::CUDAGuard guard(ops.device());
  const int64_t B = ops.size(0), n = ops.size(1), total = B * n;
  const int threads = 128;
  const unsigned blocks = static_cast<unsigned>((total + threads - 1) / threads);
  augment_lower_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
      ops.data_ptr<int64_t>(), strides2(ops), magnitudes.data_ptr<float>(), strides2(magnitudes),
      steps.data_ptr<double>(), B, n, height, width, bound);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void augment_slot_cuda(const at::Tensor& in, const at::Tensor& out, const AugmentParams& P, int64_t k) {
  const c10::cuda::CUDAGuard guard(in.device());
  TORCHAUG_CHECK(P.batch <= 65535, "torchaug::augment: batches of more than 65535 images are not supported on CUDA, got ",
                 P.batch);
  const int tiles_x = static_cast<int>((P.width + kTileW - 1) / kTileW);
  const int64_t tiles = tiles_x * ((P.height + kTileH - 1) / kTileH);
  TORCHAUG_CHECK(tiles <= 0x7fffffff, "torchaug::augment: images of ", P.height, "x", P.width, " are too large");
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(P.batch));
  const dim3 block(kTileW, kRows);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  // dense uint8 rows of whole 32-bit words (kTileW is a multiple of 4): copy and color slots move
  // 4 pixels per load and store
  const bool words = in.scalar_type() == at::kByte && P.is.x == 1 && P.os.x == 1 && P.width % 4 == 0 &&
                     P.is.y % 4 == 0 && P.is.c % 4 == 0 && P.is.b % 4 == 0 && P.os.y % 4 == 0 && P.os.c % 4 == 0 &&
                     P.os.b % 4 == 0 && reinterpret_cast<uintptr_t>(in.data_ptr()) % 4 == 0 &&
                     reinterpret_cast<uintptr_t>(out.data_ptr()) % 4 == 0;
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, in.scalar_type(), "augment_cuda", [&] {
    with_channels(P.channels, [&](auto ch) {
      augment_slot_kernel<scalar_t, decltype(ch)::value><<<grid, block, 0, stream>>>(
          in.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), P, k, tiles_x, words);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
}

__global__ void policy_program_kernel(const double* __restrict__ u, KernelDraws draws, int64_t B, int kind, int num_ops,
                                      int64_t magnitude, kernels::PolicySpace sp, int64_t* choice, int64_t* ops, float* mags) {
  const int R = kernels::policy_draws(kind, num_ops), n = kernels::policy_slots(kind, num_ops);
  // the policy's tables (tensors) are read and the programs written after the wait (map_draw_rows)
  map_draw_rows(u, draws, B, R, [&](int64_t b, const double* row) {
    kernels::policy_sample(kind, num_ops, magnitude, row, sp, choice + b * n, ops + b * n, mags + b * n);
  });
}

void policy_program_cuda(const Draws& draws, int64_t B, int kind, int num_ops, int64_t magnitude,
                         const kernels::PolicySpace& sp, int64_t* choice, int64_t* ops, float* mags) {
  const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream();
  launch_dependent(policy_program_kernel, draw_grid(draws.data() != nullptr, B, kernels::policy_draws(kind, num_ops)),
                   dim3(kDrawThreads), 0, stream, stream.device_index(), draws.data(), draws.kernel, B, kind, num_ops,
                   magnitude, sp, choice, ops, mags);
}

const AugmentBackend kCudaBackend{augment_lower_cuda, color_stats_cuda, augment_slot_cuda, augment_resident_cuda,
                                  policy_program_cuda};

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CUDA, m) { register_augment_ops<kCudaBackend>(m); }

}  // namespace torchaug
