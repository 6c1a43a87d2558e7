// The reservation of an op's in-kernel uniform draws (csrc/cuda/draws.cuh): the generator's Philox
// state for the call and its offset advanced, as torch.rand of n float64 values (or a bernoulli_ of
// n bools) on CUDA does (ATen/native/cuda/DistributionTemplates.h: calc_execution_policy with the
// values a curand call gives as its unroll, then philox_cuda_state under the generator's mutex).
// Also the CUDA side of the draw-map ops (csrc/ops/params.h).
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "device_attribute.cuh"
#include "draws.cuh"

namespace torchaug {

KernelDraws reserve_kernel_draws(const std::optional<at::Generator>& generator, int64_t n, const at::Device& device,
                                 int per_call) {
  auto* gen = at::get_generator_or_default<at::CUDAGeneratorImpl>(
      generator, at::cuda::detail::getDefaultCUDAGenerator(device.index()));
  const int64_t block = 256;
  const int64_t per_sm = device_attribute<cudaDevAttrMaxThreadsPerMultiProcessor>(device.index()) / block;
  const int64_t sms = device_attribute<cudaDevAttrMultiProcessorCount>(device.index());
  const int64_t grid = std::min<int64_t>(sms * per_sm, (n + block - 1) / block);
  const uint64_t increment = static_cast<uint64_t>((n - 1) / (block * grid * per_call) + 1) * 4;
  at::PhiloxCudaState state;
  {
    std::lock_guard<std::mutex> lock(gen->mutex_);
    state = gen->philox_cuda_state(increment);
  }
  KernelDraws d;
  std::memcpy(d.philox, &state, sizeof(state));
  d.stride = block * grid;
  return d;
}

namespace {

KernelDraws reserve_f64_draws(const std::optional<at::Generator>& generator, int64_t n, const at::Device& device) {
  return reserve_kernel_draws(generator, n, device, 2);
}

struct Register {
  Register() { cuda_kernel_draws() = &reserve_f64_draws; }
} register_kernel_draws;

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CUDA, m) { register_draw_map_ops<DrawMapCuda>(m); }

}  // namespace torchaug
