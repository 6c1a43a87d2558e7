// CUDA kernels of the noise family (csrc/noise_impl.h): one thread per element, grid-stride over
// the batch in logical (b, c, y, x) order; the random numbers depend only on (seed, index).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../noise_impl.h"

namespace torchaug {
namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads) noise_kernel(const T* __restrict__ in, T* __restrict__ out, NoiseParams P) {
  using acc_t = typename AccOf<T>::type;
  constexpr bool kU8 = std::is_same_v<T, uint8_t>;
  const int64_t plane = P.height * P.width, n = P.batch * P.channels * plane;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t x = i % P.width, y = (i / P.width) % P.height, c = (i / plane) % P.channels, b = i / (plane * P.channels);
    const kernels::NoiseSample s = noise_sample(P, b);
    const acc_t v = static_cast<acc_t>(in[b * P.is.b + c * P.is.c + y * P.is.y + x * P.is.x]);
    out[b * P.os.b + c * P.os.c + y * P.os.y + x * P.os.x] = static_cast<T>(noise_element<acc_t, kU8>(P, s, b, c, y, x, v));
  }
}

void noise_run_cuda(const at::Tensor& images, NoisePlan& plan) {
  const NoiseParams& P = plan.p_;
  const c10::cuda::CUDAGuard guard(images.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const int64_t n = images.numel();
  const int blocks = static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, 1 << 20));
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "noise_cuda", [&] {
    noise_kernel<scalar_t><<<blocks, kThreads, 0, stream>>>(images.data_ptr<scalar_t>(), plan.out.data_ptr<scalar_t>(), P);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CUDA, m) { register_noise_ops<noise_run_cuda>(m); }

}  // namespace torchaug
