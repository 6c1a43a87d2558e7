// Uniform draws made inside an op's kernel, equal to those of torch.rand((B, R), dtype=torch.float64)
// on CUDA from the same generator state (resolve_draws in csrc/ops/common.h; the numbers:
// kernels::torch_cuda_uniform_f64 in csrc/kernels/random.h).
#pragma once

#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/PhiloxUtils.cuh>

#include <cstring>
#include <type_traits>

#include "../kernels/random.h"
#include "../ops/common.h"

namespace torchaug {

static_assert(std::is_trivially_copyable<at::PhiloxCudaState>::value &&
                  sizeof(at::PhiloxCudaState) <= sizeof(KernelDraws::philox) && alignof(at::PhiloxCudaState) <= 8,
              "KernelDraws holds an at::PhiloxCudaState as bytes");

// A kernel that draws its own uniforms runs blocks of kDrawThreads threads, each block for
// draw_rows_per_block(R) samples: the block's threads draw the samples' rows into shared memory (one
// or two draws a thread; one thread drawing a sample's 22 took the boxes kernel from ~4 to ~40 us on
// an H100), then one thread a sample maps them.
constexpr int kDrawThreads = 128;
__host__ __device__ inline int draw_rows_per_block(int R) { return R > 0 && R < kDrawThreads ? kDrawThreads / R : 1; }
static_assert(kMaxKernelDraws <= kDrawThreads, "a block's shared buffer of kDrawThreads draws holds at least one row");

// Rows [b0, b0 + rows) of a (B, R) call into u (rows x R doubles, shared), by every thread of the
// block; ends with __syncthreads (so every thread of the block must call it). It reads only d and
// the generator's state, so a dependent launch may call it before its wait (dependent_launch.cuh).
__device__ inline void kernel_draw_rows(const KernelDraws& d, int64_t b0, int rows, int R, double* u) {
  at::PhiloxCudaState state;
  memcpy(&state, d.philox, sizeof(state));
  const auto so = at::cuda::philox::unpack(state);  // read from the graph's buffers when captured
  for (int k = threadIdx.x; k < rows * R; k += blockDim.x)
    u[k] = kernels::torch_cuda_uniform_f64(std::get<0>(so), std::get<1>(so), d.stride, b0 * R + k);
  __syncthreads();
}

}  // namespace torchaug
