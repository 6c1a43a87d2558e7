// CUDA kernels of the convert family (normalize): a flat, vectorised pass when input and output
// share a dense layout, else a strided pass over output pixels (layout changes).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../ops/convert.h"

namespace torchaug {
namespace {

constexpr int kThreads = 256;
constexpr int kVec = 4;

template <typename scalar_t>
__global__ void normalize_flat_kernel(const scalar_t* __restrict__ in, NormalizeParams p, int64_t n) {
  // kVec consecutive elements per thread: their loads and stores sit side by side.
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * kVec;
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec; i < n; i += stride) {
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      if (i + k < n) normalize_flat_px(in, p, i + k);
    }
  }
}

// uint8 -> float32 with 4-byte loads and 16-byte stores; needs n % 4 == 0 and, for NCHW, H*W % 4 == 0
// so that the four elements share a channel.
__global__ void normalize_u8_f32_nchw_kernel(const uchar4* __restrict__ in, float4* __restrict__ out, NormalizeParams p,
                                             int64_t n4) {
  const int64_t hw4 = p.height * p.width / 4;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const int64_t k = i / hw4;  // b * C + c
    const int64_t b = k / p.channels, c = k % p.channels;
    const float m = p.mean[p.ms.at(b, c)], s = p.std[p.ss.at(b, c)], im = p.inv_max;
    const uchar4 v = in[i];
    float4 r;
    r.x = kernels::normalize_px<float>(static_cast<float>(v.x), im, m, s);
    r.y = kernels::normalize_px<float>(static_cast<float>(v.y), im, m, s);
    r.z = kernels::normalize_px<float>(static_cast<float>(v.z), im, m, s);
    r.w = kernels::normalize_px<float>(static_cast<float>(v.w), im, m, s);
    out[i] = r;
  }
}

template <typename scalar_t>
__global__ void normalize_strided_kernel(const scalar_t* __restrict__ in, NormalizeParams p, int64_t B) {
  const int64_t x = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x;
  const int64_t y = static_cast<int64_t>(blockIdx.y) * 8 + threadIdx.y;
  if (x >= p.width || y >= p.height) return;
  for (int64_t b = blockIdx.z; b < B; b += gridDim.z)
    for (int64_t c = 0; c < p.channels; ++c) normalize_output_px(in, p, b, c, y, x);
}

int blocks_for(int64_t work) {
  return static_cast<int>(std::min<int64_t>((work + kThreads - 1) / kThreads, 65535 * 8));
}

at::Tensor normalize_cuda(const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std,
                          std::optional<at::ScalarType> out_dtype, std::optional<at::MemoryFormat> memory_format) {
  check_defined("normalize", "images", images);  // before the guard reads its device
  c10::cuda::CUDAGuard guard(images.device());
  auto plan = plan_normalize(images, mean, std, out_dtype, memory_format);
  const int64_t n = images.numel();
  if (n == 0) return plan.out;
  const NormalizeParams& p = plan.p;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const bool vec_ok = p.flat && !p.channels_last && images.scalar_type() == at::kByte && p.out_kind == kPixF32 &&
                      (p.height * p.width) % 4 == 0 && reinterpret_cast<uintptr_t>(images.data_ptr()) % 4 == 0 &&
                      reinterpret_cast<uintptr_t>(plan.out.data_ptr()) % 16 == 0;
  if (vec_ok) {
    normalize_u8_f32_nchw_kernel<<<blocks_for(n / 4), kThreads, 0, stream>>>(
        reinterpret_cast<const uchar4*>(images.data_ptr()), reinterpret_cast<float4*>(plan.out.data_ptr()), p, n / 4);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return plan.out;
  }
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "normalize_cuda", [&] {
    if (p.flat) {
      normalize_flat_kernel<scalar_t><<<blocks_for((n + kVec - 1) / kVec), kThreads, 0, stream>>>(
          images.data_ptr<scalar_t>(), p, n);
    } else {
      const int64_t B = images.size(0);
      const dim3 grid(static_cast<unsigned>((p.width + 31) / 32), static_cast<unsigned>((p.height + 7) / 8),
                      static_cast<unsigned>(std::min<int64_t>(B, 65535)));
      normalize_strided_kernel<scalar_t><<<grid, dim3(32, 8), 0, stream>>>(images.data_ptr<scalar_t>(), p, B);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return plan.out;
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CUDA, m) { m.impl("normalize", &normalize_cuda); }

}  // namespace torchaug
