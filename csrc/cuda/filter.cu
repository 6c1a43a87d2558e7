// CUDA kernels of the filter family (csrc/ops/filter.h). A block computes a kTileW x kTileH tile of
// one image plane: the tile plus its window margin (reflect-101 at the image borders) and the
// sample's window are staged in shared memory as acc_t, then every thread applies the window to
// kTileH / kRows pixels of a column. A separable window (gaussian_blur) goes in two steps: the row
// sums of the tile's columns over all its staged rows, into shared memory, then the column sums of
// those; both read each value from shared memory once for several sums (tile_row_sums, and the
// column sums' weight once for a thread's rows).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../ops/filter.h"

namespace torchaug {
namespace {

constexpr int kTileW = 64, kTileH = 16, kRows = 4;  // block: kTileW x kRows threads

// The image index a tile position i (margin r) loads: reflect-101 within the margin; positions
// past the image's last pixel and its margin (a tile wider than the image) are never read by an
// output pixel and load the last pixel, as one reflection would leave them outside the image.
// 32-bit: the host refuses planes of 2^31 pixels or more.
__device__ inline int tile_source(int i, int n, int r) {
  return i > n - 1 + r ? n - 1 : kernels::reflect101(i, n);
}

// The shared memory of a block, in acc_t elements from a 16-byte aligned base: the window (separable:
// the ky row weights, then the kx column weights from a multiple of 4), the tile of input (sh rows
// of `stride` elements, a multiple of 4) and, separable, the sh x kTileW row sums.
struct FilterSmem {
  int wx, tile, stride, sums, total;
};
__host__ __device__ inline int round4(int n) { return (n + 3) & ~3; }
__host__ __device__ inline FilterSmem filter_smem(int ky, int kx, bool separable) {
  FilterSmem m;
  m.wx = separable ? round4(ky) : 0;
  m.tile = round4(separable ? m.wx + kx : ky * kx);
  m.stride = round4(kTileW + kx - 1);
  m.sums = m.tile + (kTileH + ky - 1) * m.stride + 4;  // 4: what the row sums' reads past the last row reach
  m.total = m.sums + (separable ? (kTileH + ky - 1) * kTileW : 0);
  return m;
}

// The row sums of a separable window over the tile (kernels::row_sum of each of the sh x kTileW
// positions: the same multiply-adds in the same order). float: a thread sums 4 consecutive columns
// of a row from 16-byte reads of the tile and the weights, every value read serving 4 sums (the
// per-position form read two values from shared memory for each multiply-add, and shared memory's
// load throughput bounded the kernel); other types a position a thread.
template <typename acc_t>
__device__ inline void tile_row_sums(const acc_t* tile, int stride, int sh, const acc_t* wx, int kx, acc_t* sums, int tid) {
  constexpr int kThreads = kTileW * kRows;
  if constexpr (std::is_same_v<acc_t, float>) {
    constexpr int kRuns = kTileW / 4;
    for (int i = tid; i < sh * kRuns; i += kThreads) {
      const int r = i / kRuns, x = (i % kRuns) * 4;
      const float* t = tile + r * stride + x;  // 16-byte aligned: stride, x and the tile's offset are multiples of 4
      float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
      float4 a = *reinterpret_cast<const float4*>(t);
      int j = 0;
      // t[j + 4 .. j + 7] reads up to 7 values past the window's last (x + kx - 1 <= sw - 1): the
      // row's padding, the next row's, or past the last row the 4 spare values, never used
      for (; j + 4 <= kx; j += 4) {
        const float4 b = *reinterpret_cast<const float4*>(t + j + 4);
        const float4 w = *reinterpret_cast<const float4*>(wx + j);
        s0 = fmaf(w.x, a.x, s0), s1 = fmaf(w.x, a.y, s1), s2 = fmaf(w.x, a.z, s2), s3 = fmaf(w.x, a.w, s3);
        s0 = fmaf(w.y, a.y, s0), s1 = fmaf(w.y, a.z, s1), s2 = fmaf(w.y, a.w, s2), s3 = fmaf(w.y, b.x, s3);
        s0 = fmaf(w.z, a.z, s0), s1 = fmaf(w.z, a.w, s1), s2 = fmaf(w.z, b.x, s2), s3 = fmaf(w.z, b.y, s3);
        s0 = fmaf(w.w, a.w, s0), s1 = fmaf(w.w, b.x, s1), s2 = fmaf(w.w, b.y, s2), s3 = fmaf(w.w, b.z, s3);
        a = b;
      }
      if (j < kx) {  // the last kx % 4 taps, from one more 16-byte read (its values past the row unused)
        const float4 b = *reinterpret_cast<const float4*>(t + j + 4);
        const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
        for (int d = 0; d < 3; ++d) {
          if (j + d < kx) {
            const float w = wx[j + d];
            s0 = fmaf(w, v[d], s0), s1 = fmaf(w, v[d + 1], s1), s2 = fmaf(w, v[d + 2], s2), s3 = fmaf(w, v[d + 3], s3);
          }
        }
      }
      *reinterpret_cast<float4*>(sums + r * kTileW + x) = make_float4(s0, s1, s2, s3);
    }
  } else {
    for (int i = tid; i < sh * kTileW; i += kThreads) {
      const int r = i / kTileW, x = i % kTileW;
      const acc_t* t = tile + r * stride + x;
      sums[i] = kernels::row_sum<acc_t>(wx, kx, [&](int j) { return t[j]; });
    }
  }
}

// KY, KX: the window at compile time (3x3: adjust_sharpness, the common laplacian), whose taps then
// unroll; 0: P.ky, P.kx at run time. Thread (tx, ty) makes column tx of the tile's output rows
// kRowsEach * ty .. + kRowsEach - 1.
template <typename T, int KY, int KX>
__global__ void __launch_bounds__(kTileW * kRows) filter_kernel(const T* __restrict__ in, T* __restrict__ out,
                                                                FilterParams P, int tiles_x) {
  using acc_t = typename AccOf<T>::type;
  constexpr bool kU8 = std::is_same_v<T, uint8_t>;
  constexpr int kRowsEach = kTileH / kRows;
  const int ky = KY > 0 ? KY : P.ky, kx = KX > 0 ? KX : P.kx;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const FilterSmem m = filter_smem(ky, kx, P.separable);
  acc_t* w = reinterpret_cast<acc_t*>(smem_raw);
  acc_t* tile = w + m.tile;
  acc_t* sums = w + m.sums;
  const int sw = kTileW + kx - 1, sh = kTileH + ky - 1, stride = m.stride;
  const int tid = threadIdx.y * kTileW + threadIdx.x;
  const int x0 = static_cast<int>(blockIdx.x % tiles_x) * kTileW;
  const int y0 = static_cast<int>(blockIdx.x / tiles_x) * kTileH;
  const int rx = kx / 2, ry = ky / 2;
  const int height = static_cast<int>(P.height), width = static_cast<int>(P.width);
  for (int64_t plane = blockIdx.y; plane < P.batch * P.channels; plane += gridDim.y) {
    const int64_t b = plane / P.channels, c = plane % P.channels;
    const acc_t* wg = static_cast<const acc_t*>(P.weights) + b * P.weights_stride;
    if (P.separable) {
      for (int i = tid; i < ky + kx; i += kTileW * kRows) w[i < ky ? i : m.wx + i - ky] = wg[i];
    } else {
      for (int i = tid; i < ky * kx; i += kTileW * kRows) w[i] = wg[i];
    }
    const T* src = in + b * P.is.b + c * P.is.c;
    T* dst = out + b * P.os.b + c * P.os.c;
    // rows of the tile by threadIdx.y, columns by threadIdx.x: consecutive threads read
    // consecutive pixels, and no index is divided
    for (int r = threadIdx.y; r < sh; r += kRows) {
      const T* row = src + tile_source(y0 + r - ry, height, ry) * P.is.y;
      for (int col = threadIdx.x; col < sw; col += kTileW)
        tile[r * stride + col] = static_cast<acc_t>(row[tile_source(x0 + col - rx, width, rx) * P.is.x]);
    }
    __syncthreads();
    if (P.separable) {
      tile_row_sums<acc_t>(tile, stride, sh, w + m.wx, kx, sums, tid);
      __syncthreads();
    }
    const acc_t param = P.param ? static_cast<acc_t>(P.param[b * P.param_stride]) : acc_t(1);
    const int x = x0 + threadIdx.x, r0 = threadIdx.y * kRowsEach;
    acc_t s[kRowsEach];
    if (P.separable) {
      // kernels::column_sum of the thread's rows, the window's weight read once for all of them
#pragma unroll
      for (int k = 0; k < kRowsEach; ++k) s[k] = acc_t(0);
      const acc_t* col = sums + r0 * kTileW + threadIdx.x;
      for (int i = 0; i < ky; ++i) {
        const acc_t wi = w[i];
#pragma unroll
        for (int k = 0; k < kRowsEach; ++k) s[k] = kernels::fma_of(wi, col[(i + k) * kTileW], s[k]);
      }
    } else {
#pragma unroll
      for (int k = 0; k < kRowsEach; ++k) {
        const acc_t* t = tile + (r0 + k) * stride + threadIdx.x;
        s[k] = kernels::window_sum<acc_t>(w, ky, kx, [&](int i, int j) { return t[i * stride + j]; });
      }
    }
#pragma unroll
    for (int k = 0; k < kRowsEach; ++k) {
      const int y = y0 + r0 + k;
      if (x < width && y < height) {
        const acc_t v = tile[(r0 + k + ry) * stride + threadIdx.x + rx];
        const bool interior = y > 0 && x > 0 && y < height - 1 && x < width - 1;
        dst[y * P.os.y + x * P.os.x] = static_cast<T>(kernels::filter_epilogue<acc_t, kU8>(P.mode, v, s[k], param, interior));
      }
    }
    __syncthreads();
  }
}

void filter_run_cuda(const at::Tensor& images, FilterPlan& plan) {
  const FilterParams& P = plan.p;
  const c10::cuda::CUDAGuard guard(images.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const int tiles_x = static_cast<int>((P.width + kTileW - 1) / kTileW);
  const int64_t tiles = tiles_x * ((P.height + kTileH - 1) / kTileH);
  TORCHAUG_CHECK(tiles <= 0x7fffffff && P.height * P.width < (int64_t(1) << 31), "torchaug::filter: images of ",
                 P.height, "x", P.width, " are too large (a plane of 2^31 pixels or more)");
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(std::min<int64_t>(P.batch * P.channels, 65535)));
  const dim3 block(kTileW, kRows);
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "filter_cuda", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    const size_t smem = sizeof(acc_t) * filter_smem(static_cast<int>(P.ky), static_cast<int>(P.kx), P.separable).total;
    const auto kernel = !P.separable && P.ky == 3 && P.kx == 3 ? filter_kernel<scalar_t, 3, 3> : filter_kernel<scalar_t, 0, 0>;
    if (smem > 48 * 1024) {
      C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    }
    kernel<<<grid, block, smem, stream>>>(images.data_ptr<scalar_t>(), plan.out.data_ptr<scalar_t>(), P, tiles_x);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CUDA, m) { register_filter_ops<filter_run_cuda>(m); }

}  // namespace torchaug
