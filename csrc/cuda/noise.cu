// CUDA kernels of the noise family (csrc/ops/noise.h). Grid: y = image plane (b, c), x = the
// plane's units (noise_unit: a few pixels that share one Philox call), a thread a unit; the
// sample's parameters are read once per plane.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../ops/noise.h"

namespace torchaug {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads) noise_kernel(const T* __restrict__ in, T* __restrict__ out, NoiseParams P) {
  const int64_t planes = noise_planes(P), units = noise_plane_units(P);
  for (int64_t plane = blockIdx.y; plane < P.batch * planes; plane += gridDim.y) {
    const int64_t b = plane / planes, c = plane - b * planes;
    const kernels::NoiseSample s = noise_sample(P, b);
    for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
         u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      noise_unit(in, out, P, s, b, c, u, units);
    }
  }
}

void noise_run_cuda(const at::Tensor& images, NoisePlan& plan) {
  const NoiseParams& P = plan.p_;
  const c10::cuda::CUDAGuard guard(images.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const int64_t units = noise_plane_units(P);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((units + kThreads - 1) / kThreads, 1 << 16)),
                  static_cast<unsigned>(std::min<int64_t>(P.batch * noise_planes(P), 65535)));
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "noise_cuda", [&] {
    noise_kernel<scalar_t><<<grid, kThreads, 0, stream>>>(images.data_ptr<scalar_t>(), plan.out.data_ptr<scalar_t>(), P);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CUDA, m) { register_noise_ops<noise_run_cuda>(m); }

}  // namespace torchaug
