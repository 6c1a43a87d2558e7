// Programmatic dependent launch (PDL, sm_90 and later): a kernel launched by launch_dependent may
// be launched while the kernel before it on the stream is still running, and its blocks wait in
// dependent_launch_begin until that kernel has completed and its writes are visible. The launch's
// latency (~2 us between two dependent kernels on an H100) then overlaps the kernel before it
// instead of following it. The RandomResizedCrop + flip + RandAugment + normalize chain launches
// eight kernels a call, five of them small; a micro-benchmark of five dependent launches on an
// H100 measured 299 -> 292 us with PDL, ~1.7 us a boundary.
//
// Every kernel launched by launch_dependent must call dependent_launch_begin() in every block,
// before any global memory access (a read of the kernel before's output, or a write into memory
// that kernel may still read): a kernel that did not wait could complete before the kernel it
// follows, and the next kernel's wait would then not cover that one. The one exception is work
// that reads only the kernel's arguments and the generator's Philox state (in a captured graph,
// buffers filled before the replay starts) and writes only registers and shared memory: the
// parameter kernels' draws run before the wait, beside the last blocks of the kernel before
// (csrc/cuda/draws.cuh). When a kernel begins, every kernel before the one it follows has
// completed (that one began after all of them had waited), so only the kernel just before may
// still be running.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <utility>

#include "../ops/common.h"
#include "../ops/settings.h"
#include "device_attribute.cuh"

namespace torchaug {

// The first statement of a kernel launched by launch_dependent: wait for the kernel before it on
// the stream (griddepcontrol.wait; a no-op where the launch was an ordinary one), then let the
// kernel after it launch (griddepcontrol.launch_dependents: it takes effect once every block of
// this kernel has run it, so the next kernel's blocks never take the place of blocks of this one).
__device__ __forceinline__ void dependent_launch_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether launches on `device` are dependent launches: a device of compute capability 9.0 or later,
// unless the dependent_launch test hook turns them off.
inline bool dependent_launch_enabled(int device) {
  return test_hooks::get(test_hooks::kDependentLaunch) != 0 &&
         device_attribute<cudaDevAttrComputeCapabilityMajor>(device) >= 9;
}

// kernel<<<grid, block, smem, stream>>>(args...) on `device`, as a dependent launch where
// dependent_launch_enabled says so; errors are raised as the launch check raises them.
template <typename... KernelArgs, typename... Args>
void launch_dependent(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, int device,
                      Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = dependent_launch_enabled(device) ? 1 : 0;
  const cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess) (void)cudaGetLastError();  // raised below, not left for a later check to find
  C10_CUDA_CHECK(err);
}

}  // namespace torchaug
