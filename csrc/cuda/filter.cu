// CUDA kernels of the filter family (csrc/ops/filter.h). A block computes a kTileW x kTileH tile of
// one image plane: the tile plus its window margin (reflect-101 at the image borders) and the
// sample's window are staged in shared memory as acc_t, then every thread applies the window to
// kTileH / kRows pixels. A separable window (gaussian_blur) goes in two steps: the row sums of the
// tile's columns over all its staged rows, into shared memory, then the column sums of those.
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

// KY, KX: the window at compile time (3x3: adjust_sharpness, the common laplacian), whose taps then
// unroll; 0: P.ky, P.kx at run time.
template <typename T, int KY, int KX>
__global__ void __launch_bounds__(kTileW * kRows) filter_kernel(const T* __restrict__ in, T* __restrict__ out,
                                                                FilterParams P, int tiles_x) {
  using acc_t = typename AccOf<T>::type;
  constexpr bool kU8 = std::is_same_v<T, uint8_t>;
  const int ky = KY > 0 ? KY : P.ky, kx = KX > 0 ? KX : P.kx;
  extern __shared__ unsigned char smem_raw[];
  acc_t* w = reinterpret_cast<acc_t*>(smem_raw);
  const int nw = P.separable ? ky + kx : ky * kx;
  const int sw = kTileW + kx - 1, sh = kTileH + ky - 1;
  acc_t* tile = w + nw;
  acc_t* sums = tile + sh * sw;  // separable: sh x kTileW row sums
  const int tid = threadIdx.y * kTileW + threadIdx.x;
  const int x0 = static_cast<int>(blockIdx.x % tiles_x) * kTileW;
  const int y0 = static_cast<int>(blockIdx.x / tiles_x) * kTileH;
  const int rx = kx / 2, ry = ky / 2;
  const int height = static_cast<int>(P.height), width = static_cast<int>(P.width);
  for (int64_t plane = blockIdx.y; plane < P.batch * P.channels; plane += gridDim.y) {
    const int64_t b = plane / P.channels, c = plane % P.channels;
    const acc_t* wg = static_cast<const acc_t*>(P.weights) + b * P.weights_stride;
    for (int i = tid; i < nw; i += kTileW * kRows) w[i] = wg[i];
    const T* src = in + b * P.is.b + c * P.is.c;
    T* dst = out + b * P.os.b + c * P.os.c;
    // rows of the tile by threadIdx.y, columns by threadIdx.x: consecutive threads read
    // consecutive pixels, and no index is divided
    for (int r = threadIdx.y; r < sh; r += kRows) {
      const T* row = src + tile_source(y0 + r - ry, height, ry) * P.is.y;
      for (int col = threadIdx.x; col < sw; col += kTileW)
        tile[r * sw + col] = static_cast<acc_t>(row[tile_source(x0 + col - rx, width, rx) * P.is.x]);
    }
    __syncthreads();
    if (P.separable) {
      for (int r = threadIdx.y; r < sh; r += kRows) {
        const acc_t* t = tile + r * sw + threadIdx.x;
        sums[r * kTileW + threadIdx.x] = kernels::row_sum<acc_t>(w + ky, kx, [&](int j) { return t[j]; });
      }
      __syncthreads();
    }
    const acc_t param = P.param ? static_cast<acc_t>(P.param[b * P.param_stride]) : acc_t(1);
    const int x = x0 + threadIdx.x;
    for (int r = threadIdx.y; r < kTileH; r += kRows) {
      const int y = y0 + r;
      if (x < width && y < height) {
        const acc_t* t = tile + r * sw + threadIdx.x;
        const acc_t* rs = sums + r * kTileW + threadIdx.x;
        const acc_t s = P.separable
            ? kernels::column_sum<acc_t>(w, ky, [&](int i) { return rs[i * kTileW]; })
            : kernels::window_sum<acc_t>(w, ky, kx, [&](int i, int j) { return t[i * sw + j]; });
        const acc_t v = t[ry * sw + rx];
        const bool interior = y > 0 && x > 0 && y < height - 1 && x < width - 1;
        dst[y * P.os.y + x * P.os.x] = static_cast<T>(kernels::filter_epilogue<acc_t, kU8>(P.mode, v, s, param, interior));
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
    const int sh = kTileH + P.ky - 1;
    const size_t smem = sizeof(acc_t) * (P.separable ? P.ky + P.kx + (kTileW + P.kx - 1) * sh + kTileW * sh
                                                     : P.ky * P.kx + (kTileW + P.kx - 1) * sh);
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
