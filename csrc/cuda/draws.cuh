// Uniform draws made inside an op's kernel, equal to those of torch.rand((B, R), dtype=torch.float64)
// on CUDA from the same generator state (resolve_draws in csrc/ops/common.h; the numbers:
// kernels::torch_cuda_uniform_f64 in csrc/kernels/random.h).
#pragma once

#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/PhiloxUtils.cuh>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstring>
#include <tuple>
#include <type_traits>

#include "../kernels/random.h"
#include "../ops/params.h"
#include "dependent_launch.cuh"

namespace torchaug {

static_assert(std::is_trivially_copyable<at::PhiloxCudaState>::value &&
                  sizeof(at::PhiloxCudaState) <= sizeof(KernelDraws::philox) && alignof(at::PhiloxCudaState) <= 8,
              "KernelDraws holds an at::PhiloxCudaState as bytes");

// The generator's state for n values of a torch distribution kernel whose curand calls give per_call
// values each (torch.rand float64: 2; the float uniforms of bernoulli_ on bools: 4), and its offset
// advanced as that kernel advances it (csrc/cuda/draws.cu).
KernelDraws reserve_kernel_draws(const std::optional<at::Generator>& generator, int64_t n, const at::Device& device,
                                 int per_call);

// A kernel that draws its own uniforms runs blocks of kDrawThreads threads, each block for
// draw_rows_per_block(R) samples: the block's threads draw the samples' rows into shared memory (one
// or two draws a thread; one thread drawing a sample's 22 took the boxes kernel from ~4 to ~40 us on
// an H100), then one thread a sample maps them.
constexpr int kDrawThreads = 128;
__host__ __device__ inline int draw_rows_per_block(int R) { return R > 0 && R < kDrawThreads ? kDrawThreads / R : 1; }
static_assert(kMaxKernelDraws <= kDrawThreads, "a block's shared buffer of kDrawThreads draws holds at least one row");

// The (seed, offset) of the generator's Philox state reserved in d (read from the graph's buffers
// when the launch was captured).
__device__ inline std::tuple<uint64_t, uint64_t> kernel_draws_seed_offset(const KernelDraws& d) {
  at::PhiloxCudaState state;
  memcpy(&state, d.philox, sizeof(state));
  return at::cuda::philox::unpack(state);
}

// Rows [b0, b0 + rows) of a (B, R) call into u (rows x R doubles, shared), by every thread of the
// block; ends with __syncthreads (so every thread of the block must call it). It reads only d and
// the generator's state, so a dependent launch may call it before its wait (dependent_launch.cuh).
__device__ inline void kernel_draw_rows(const KernelDraws& d, int64_t b0, int rows, int R, double* u) {
  const auto so = kernel_draws_seed_offset(d);
  for (int k = threadIdx.x; k < rows * R; k += blockDim.x)
    u[k] = kernels::torch_cuda_uniform_f64(std::get<0>(so), std::get<1>(so), d.stride, b0 * R + k);
  __syncthreads();
}

// The grid of a drawing kernel: blocks of kDrawThreads, a thread a sample where the draws are given,
// draw_rows_per_block(R) samples a block where the kernel makes them.
inline dim3 draw_grid(bool given, int64_t B, int R) {
  const int64_t per_block = given ? kDrawThreads : draw_rows_per_block(R);
  return dim3(static_cast<unsigned>((B + per_block - 1) / per_block));
}

// The body of a kernel (launched by launch_dependent on draw_grid) that maps each sample's R uniform
// draws to its parameters: map(b, row) for each of the block's samples b, row its R draws (given:
// u + b * R; else drawn here as torch.rand would have drawn them). The draws read nothing the kernels
// before this one write, so they are made before the dependent-launch wait; map runs after it
// (it writes the outputs, which may be memory the kernel before still reads).
template <typename Map>
__device__ inline void map_draw_rows(const double* u, const KernelDraws& draws, int64_t B, int R, Map&& map) {
  if (u != nullptr) {
    dependent_launch_begin();
    const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (b < B) map(b, u + b * R);
    return;
  }
  __shared__ double own[kDrawThreads];
  const int per_block = draw_rows_per_block(R);
  const int64_t b0 = static_cast<int64_t>(blockIdx.x) * per_block;
  const int rows = static_cast<int>(std::min<int64_t>(per_block, B - b0));
  kernel_draw_rows(draws, b0, rows, R, own);
  dependent_launch_begin();
  if (static_cast<int>(threadIdx.x) < rows) map(b0 + threadIdx.x, own + threadIdx.x * R);
}

// A draw map (csrc/ops/params.h) run over the batch, a thread a sample (map_draw_rows).
template <typename Map>
__global__ void draw_map_kernel(const double* __restrict__ u, KernelDraws draws, int64_t B, int R, Map map) {
  map_draw_rows(u, draws, B, R, [&](int64_t b, const double* row) { map(b, row); });
}

// CUDA's run of a draw map, on the current stream of the outputs' device.
struct DrawMapCuda {
  template <typename Map>
  static void run(const DrawMapPlan<Map>& plan) {
    if (plan.draws.B == 0) return;
    const c10::cuda::CUDAGuard guard(plan.device);
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream();
    launch_dependent(draw_map_kernel<Map>, draw_grid(plan.draws.data() != nullptr, plan.draws.B, plan.R), dim3(kDrawThreads),
                     0, stream, stream.device_index(), plan.draws.data(), plan.draws.kernel, plan.draws.B, plan.R, plan.map);
  }
};

}  // namespace torchaug
