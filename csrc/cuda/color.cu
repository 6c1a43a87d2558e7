// CUDA kernels of the color family (csrc/color_impl.h): per slot that may need statistics, a stats
// pass (blocks of samples that do not need them exit at once) and a finalize pass; then one apply
// pass. Grid: x = chunks of a sample's pixels, y = sample; the sample's program sits in shared
// memory and every branch on an op id is uniform across the block.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../color_impl.h"
#include "../color_ops.h"

namespace torchaug {
namespace {

using kernels::kColorAutocontrast;
using kernels::kColorContrast;
using kernels::kColorEqualize;

constexpr int kThreads = 256;
constexpr int kApplyPix = 4;   // pixels per thread of the apply pass
constexpr int kStatsPix = 16;  // pixels per thread of the stats pass

__device__ inline void load_program_shared(const ColorParams& P, int64_t b, SampleProgram& sp) {
  if (threadIdx.x == 0) {
    sp.n = P.n;
    for (int k = 0; k < P.n; ++k) load_sample_program(P, b, k, sp);
  }
  __syncthreads();
}

template <typename T, int C>
__global__ void __launch_bounds__(kThreads) color_stats_kernel(const T* __restrict__ in, ColorParams P, int k) {
  using acc_t = typename AccOf<T>::type;
  constexpr bool kU8 = std::is_same_v<T, uint8_t>;
  __shared__ SampleProgram sp;
  __shared__ uint32_t hist[3 * 256];
  const int64_t b = blockIdx.y;
  load_program_shared(P, b, sp);
  const int op = sp.op[k];
  if (!kernels::color_op_needs_stats(op)) return;
  const int64_t n = P.height * P.width;
  if (op == kColorEqualize) {
    for (int i = threadIdx.x; i < 3 * 256; i += blockDim.x) hist[i] = 0;
    __syncthreads();
  }
  uint64_t usum = 0;
  double fsum = 0.0;
  uint64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};  // ~ordered(min), ordered(max): max-accumulated
  acc_t v[3];
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < n; p += step) {
    const int64_t o = color_in_offset(P, b, p);
    for (int c = 0; c < C; ++c) v[c] = static_cast<acc_t>(in[o + c * P.is.c]);
    run_color_program<T, C>(P, sp, b, k, v);
    if (op == kColorContrast) {
      const acc_t g = kernels::blend_gray<acc_t, kU8>(v, C);
      if (kU8) usum += static_cast<uint64_t>(g); else fsum += static_cast<double>(g);
    } else if (op == kColorAutocontrast) {
      for (int c = 0; c < C; ++c) {
        const uint64_t e = kernels::ordered_bits(static_cast<double>(v[c]));
        lo[c] = max(lo[c], ~e);
        hi[c] = max(hi[c], e);
      }
    } else {
      for (int c = 0; c < C; ++c) atomicAdd(&hist[c * 256 + kernels::equalize_bin<acc_t, kU8>(v[c])], 1u);
    }
  }
  uint32_t* raw = P.raw + (b * P.n + k) * kernels::kColorRawWords;
  unsigned long long* raw64 = reinterpret_cast<unsigned long long*>(raw);
  const int lane = threadIdx.x % 32;
  if (op == kColorContrast) {
    for (int off = 16; off > 0; off /= 2) {
      usum += __shfl_down_sync(0xffffffffu, usum, off);
      fsum += __shfl_down_sync(0xffffffffu, fsum, off);
    }
    if (lane == 0) {
      if (kU8) atomicAdd(&raw64[0], static_cast<unsigned long long>(usum));
      else atomicAdd(reinterpret_cast<double*>(&raw64[0]), fsum);
    }
  } else if (op == kColorAutocontrast) {
    for (int c = 0; c < C; ++c) {
      for (int off = 16; off > 0; off /= 2) {
        lo[c] = max(lo[c], static_cast<uint64_t>(__shfl_down_sync(0xffffffffu, lo[c], off)));
        hi[c] = max(hi[c], static_cast<uint64_t>(__shfl_down_sync(0xffffffffu, hi[c], off)));
      }
      if (lane == 0) {
        atomicMax(&raw64[c], static_cast<unsigned long long>(lo[c]));
        atomicMax(&raw64[3 + c], static_cast<unsigned long long>(hi[c]));
      }
    }
  } else {
    __syncthreads();
    for (int i = threadIdx.x; i < C * 256; i += blockDim.x)
      if (hist[i]) atomicAdd(&raw[i], hist[i]);
  }
}

// Raw -> derived statistics of slot k: one block per sample, a thread per channel.
__global__ void color_finalize_kernel(ColorParams P, int k) {
  const int64_t b = blockIdx.x;
  const int op = color_op_at(P, b, k);
  const int c = threadIdx.x;
  if (!kernels::color_op_needs_stats(op) || c >= P.channels) return;
  const int64_t i = b * P.n + k;
  const uint32_t* raw = P.raw + i * kernels::kColorRawWords;
  const uint64_t* raw64 = reinterpret_cast<const uint64_t*>(raw);
  double* f = P.stats + i * kernels::kColorStatFloats;
  const int64_t n = P.height * P.width;
  const bool u8 = P.is_u8;
  if (op == kColorContrast) {
    if (c == 0) kernels::contrast_derive(raw64, u8, P.is_f64, n, f);
  } else if (op == kColorAutocontrast) {
    kernels::autocontrast_derive_channel(raw64, c, u8, P.is_f64, f);
  } else {
    kernels::equalize_derive_channel(raw + c * 256, n, f + c, P.luts + i * 3 * 256 + c * 256);
  }
}

template <typename T, int C>
__device__ inline void color_apply_px(const T* __restrict__ in, T* __restrict__ out, const ColorParams& P,
                                      const SampleProgram& sp, int64_t b, int64_t p) {
  using acc_t = typename AccOf<T>::type;
  acc_t v[3];
  const int64_t o = color_in_offset(P, b, p);
  for (int c = 0; c < C; ++c) v[c] = static_cast<acc_t>(in[o + c * P.is.c]);
  run_color_program<T, C>(P, sp, b, P.n, v);
  const int64_t oo = color_out_offset(P, b, p);
  for (int c = 0; c < P.out_channels; ++c) out[oo + c * P.os.c] = static_cast<T>(v[c]);
}

template <typename T, int C>
__global__ void __launch_bounds__(kThreads) color_apply_kernel(const T* __restrict__ in, T* __restrict__ out,
                                                               ColorParams P) {
  __shared__ SampleProgram sp;
  const int64_t b = blockIdx.y;
  load_program_shared(P, b, sp);
  const int64_t n = P.height * P.width;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x * kApplyPix;
  for (int64_t p0 = static_cast<int64_t>(blockIdx.x) * blockDim.x * kApplyPix + threadIdx.x; p0 < n; p0 += step) {
#pragma unroll
    for (int j = 0; j < kApplyPix; ++j) {
      const int64_t p = p0 + j * blockDim.x;
      if (p < n) color_apply_px<T, C>(in, out, P, sp, b, p);
    }
  }
}

// uint8, dense NCHW in and out, H*W % 4 == 0: 4 consecutive pixels per thread with one 4-byte load
// and store per channel plane.
template <int C>
__global__ void __launch_bounds__(kThreads) color_apply_u8_planar_kernel(const uint8_t* __restrict__ in,
                                                                         uint8_t* __restrict__ out, ColorParams P) {
  __shared__ SampleProgram sp;
  const int64_t b = blockIdx.y;
  load_program_shared(P, b, sp);
  const int64_t n4 = P.height * P.width / 4;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < n4; q += step) {
    uchar4 px[3];
    for (int c = 0; c < C; ++c) px[c] = reinterpret_cast<const uchar4*>(in + b * P.is.b + c * P.is.c)[q];
    float v[4][3];
    for (int c = 0; c < C; ++c) {
      v[0][c] = px[c].x;
      v[1][c] = px[c].y;
      v[2][c] = px[c].z;
      v[3][c] = px[c].w;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) run_color_program<uint8_t, C>(P, sp, b, P.n, v[j]);
    for (int c = 0; c < P.out_channels; ++c) {
      uchar4 r;
      r.x = static_cast<uint8_t>(v[0][c]);
      r.y = static_cast<uint8_t>(v[1][c]);
      r.z = static_cast<uint8_t>(v[2][c]);
      r.w = static_cast<uint8_t>(v[3][c]);
      reinterpret_cast<uchar4*>(out + b * P.os.b + c * P.os.c)[q] = r;
    }
  }
}

unsigned chunks_for(int64_t work, int per_block) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((work + per_block - 1) / per_block, 1 << 16)));
}

void color_run_cuda(const at::Tensor& images, ColorPlan& plan) {
  c10::cuda::CUDAGuard guard(images.device());
  ColorParams& P = plan.p;
  TORCHAUG_CHECK(P.batch <= 65535, "torchaug::color: batches of more than 65535 images are not supported on CUDA, got ",
                 P.batch);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const int64_t n = P.height * P.width;
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "color_cuda", [&] {
    const scalar_t* in = images.data_ptr<scalar_t>();
    scalar_t* out = plan.out.data_ptr<scalar_t>();
    with_channels(P.channels, [&](auto ch) {
    constexpr int C = decltype(ch)::value;
    if (P.may_need_stats) {
      for (int k = 0; k < P.n; ++k) {
        const dim3 grid(chunks_for(n, kThreads * kStatsPix), static_cast<unsigned>(P.batch));
        color_stats_kernel<scalar_t, C><<<grid, kThreads, 0, stream>>>(in, P, k);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        color_finalize_kernel<<<static_cast<unsigned>(P.batch), 32, 0, stream>>>(P, k);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
    }
    if (std::is_same_v<scalar_t, uint8_t>) {
      const bool planar = P.dense && P.is.x == 1 && P.os.x == 1 && n % 4 == 0 && P.is.b % 4 == 0 &&
                          P.is.c % 4 == 0 && P.os.b % 4 == 0 && P.os.c % 4 == 0 &&
                          reinterpret_cast<uintptr_t>(in) % 4 == 0 && reinterpret_cast<uintptr_t>(out) % 4 == 0;
      if (planar) {
        const dim3 grid(chunks_for(n / 4, kThreads), static_cast<unsigned>(P.batch));
        color_apply_u8_planar_kernel<C><<<grid, kThreads, 0, stream>>>(reinterpret_cast<const uint8_t*>(in),
                                                                     reinterpret_cast<uint8_t*>(out), P);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        return;
      }
    }
    const dim3 grid(chunks_for(n, kThreads * kApplyPix), static_cast<unsigned>(P.batch));
    color_apply_kernel<scalar_t, C><<<grid, kThreads, 0, stream>>>(in, out, P);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CUDA, m) { register_color_ops<color_run_cuda>(m); }

}  // namespace torchaug
