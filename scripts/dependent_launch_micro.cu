// Micro-benchmark behind csrc/cuda/dependent_launch.cuh: the gaps between dependent kernels on one
// stream, with and without programmatic dependent launch (PDL). A chain like case 4's: tiny, tiny,
// big (many blocks), tiny, big; then five tiny kernels. No torch needed:
//   nvcc -arch=sm_90 -O3 -o /tmp/pdl scripts/dependent_launch_micro.cu && /tmp/pdl
// (session 30, H100: the chain 299.0 us with ordinary launches, 292.0 with PDL, in three pairs.)
#include <cstdio>
#include <cuda_runtime.h>
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;" :::); }
template <bool kPdl>
__global__ void tiny(float* a, int n, int iters) {
  if (kPdl) { pdl_wait(); pdl_trigger(); }
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = a[i]; for (int k = 0; k < iters; ++k) v = v * 1.0001f + 0.5f; a[i] = v; }
}
template <bool kPdl>
__global__ void big(float* a, size_t n) {
  if (kPdl) { pdl_wait(); pdl_trigger(); }
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) a[i] = a[i] * 0.999f + 1.0f;
}
template <typename K, typename... Args>
void launch(bool pdl, K k, dim3 g, dim3 b, cudaStream_t s, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = g; cfg.blockDim = b; cfg.stream = s;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = at; cfg.numAttrs = pdl ? 1 : 0;
  cudaLaunchKernelEx(&cfg, k, args...);
}
int main() {
  size_t n = 40u << 20;  // 160 MB: the big kernels ~100 us
  float *a, *t;
  cudaMalloc(&a, n * 4); cudaMalloc(&t, 4096 * 4);
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  for (int mode = 0; mode < 6; ++mode) {
    const bool pdl = mode % 2;
    auto chain = [&]() {
      if (pdl) {
        launch(true, tiny<true>, dim3(2), dim3(128), s, t, 256, 200);
        launch(true, tiny<true>, dim3(2), dim3(128), s, t, 256, 200);
        launch(true, big<true>, dim3(132 * 8), dim3(256), s, a, n);
        launch(true, tiny<true>, dim3(1), dim3(1024), s, t, 1024, 100);
        launch(true, big<true>, dim3(132 * 8), dim3(256), s, a, n);
      } else {
        launch(false, tiny<false>, dim3(2), dim3(128), s, t, 256, 200);
        launch(false, tiny<false>, dim3(2), dim3(128), s, t, 256, 200);
        launch(false, big<false>, dim3(132 * 8), dim3(256), s, a, n);
        launch(false, tiny<false>, dim3(1), dim3(1024), s, t, 1024, 100);
        launch(false, big<false>, dim3(132 * 8), dim3(256), s, a, n);
      }
    };
    auto tinies = [&]() {  // tiny kernels only
      for (int k = 0; k < 5; ++k) {
        if (pdl) launch(true, tiny<true>, dim3(2), dim3(128), s, t, 256, 200);
        else launch(false, tiny<false>, dim3(2), dim3(128), s, t, 256, 200);
      }
    };
    for (int w = 0; w < 20; ++w) chain();
    cudaStreamSynchronize(s);
    float ms_chain, ms_tiny;
    cudaEventRecord(e0, s); for (int i = 0; i < 200; ++i) chain(); cudaEventRecord(e1, s); cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms_chain, e0, e1);
    cudaEventRecord(e0, s); for (int i = 0; i < 200; ++i) tinies(); cudaEventRecord(e1, s); cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms_tiny, e0, e1);
    printf("pdl=%d chain %.2f us  five tiny kernels %.2f us  (%s)\n", pdl, ms_chain * 1e3 / 200, ms_tiny * 1e3 / 200, cudaGetErrorString(cudaGetLastError()));
  }
  return 0;
}
