// CUDA kernels of the color family (csrc/ops/color.h): programs of several slots on uint8 images that
// fit a block's shared memory run on the resident path (color_resident_cuda); the others as per
// statistics rank a stats pass (blocks of samples with fewer statistics ops exit at once) and a
// finalize pass, then one apply pass. Grid:
// x = chunks of a sample's pixels, y = sample; the sample's program sits in shared memory and every
// branch on an op id is uniform across the block.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>


#include "../ops/augment.h"
#include "../ops/color.h"
#include "dependent_launch.cuh"
#include "draws.cuh"

namespace torchaug {
namespace {

using kernels::kColorAutocontrast;
using kernels::kColorContrast;
using kernels::kColorEqualize;

constexpr int kThreads = 256;  // also the size of a uint8 lookup table (color_apply_u8_planar_kernel)
constexpr int kApplyPix = 4;   // pixels per thread of the apply pass
constexpr int kStatsPix = 16;  // pixels per thread of the stats pass

// The sample's program into shared memory, a thread per slot (one load latency, not one per slot:
// blocks of a statistics rank the sample does not reach do nothing else).
__device__ inline void load_program_shared(const ColorParams& P, int64_t b, SampleProgram& sp) {
  if (threadIdx.x == 0) sp.n = P.n;
  if (threadIdx.x < P.n) load_sample_program(P, b, threadIdx.x, sp);
  __syncthreads();
}

// kW bytes of a uint8 image plane as one load (16 or 4).
template <int kW>
struct Bytes;
template <>
struct Bytes<16> {
  using type = uint4;
  static __device__ uint8_t get(const uint4& v, int j) { return (reinterpret_cast<const uint32_t*>(&v)[j / 4] >> (8 * (j % 4))) & 0xffu; }
  static __device__ void set(uint4& v, int j, uint8_t x) {
    uint32_t& w = reinterpret_cast<uint32_t*>(&v)[j / 4];
    w = (w & ~(0xffu << (8 * (j % 4)))) | (static_cast<uint32_t>(x) << (8 * (j % 4)));
  }
};
template <>
struct Bytes<4> {
  using type = uint32_t;
  static __device__ uint8_t get(const uint32_t& v, int j) { return (v >> (8 * j)) & 0xffu; }
  static __device__ void set(uint32_t& v, int j, uint8_t x) { v = (v & ~(0xffu << (8 * j))) | (static_cast<uint32_t>(x) << (8 * j)); }
};

// The statistics pass of rank r (stats_rank): per sample, the slot of its r-th statistics op. Each
// pixel runs the slots before it from where the previous rank stopped (the images, or the
// intermediate image that rank stored in out), feeds the slot's statistics, and is stored in out
// when a slot ran. kW: 16 (uint8 dense NCHW, 16 pixels per load; single-op programs, where no slot
// runs before the statistics), 4 (uint8 dense, 4 pixels per load; any program) or 0 (any layout
// and dtype). out may be nullptr for single-op programs.
template <typename T, int C, int kW>
__global__ void __launch_bounds__(kThreads) color_stats_kernel(const T* in, T* out, ColorParams P, int r) {
  using acc_t = typename AccOf<T>::type;
  constexpr bool kU8 = std::is_same_v<T, uint8_t>;
  __shared__ SampleProgram sp;
  __shared__ uint32_t hist[3 * 256];
  const int64_t b = blockIdx.y;
  load_program_shared(P, b, sp);
  const StatsRank rank = stats_rank(sp, r);
  const int k = rank.slot, start = rank.start;
  if (k < 0) return;
  const int op = sp.op[k];
  const int64_t n = P.height * P.width;
  if (op == kColorEqualize) {
    for (int i = threadIdx.x; i < 3 * 256; i += blockDim.x) hist[i] = 0;
    __syncthreads();
  }
  // where this rank's pixels come from, and whether it stores them (the input of slot k)
  const bool from_out = start > 0, store = k > start;
  const T* src = from_out ? out : in;
  const Strides4 ss = from_out ? P.os : P.is;
  ColorSlotAccum acc;
  auto feed = [&](acc_t* v) {
    if constexpr (kW != 16) run_color_program<T, C>(P, sp, b, start, k, v);
    acc.add<acc_t, kU8, C>(op, v, [&](int i) { atomicAdd(&hist[i], 1u); });
  };
  acc_t v[3];
  if constexpr (kW > 0) {
    using vec_t = typename Bytes<kW>::type;
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const uint8_t* base = reinterpret_cast<const uint8_t*>(src) + b * ss.b;
    uint8_t* obase = reinterpret_cast<uint8_t*>(out) + b * P.os.b;
    for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < n / kW; q += step) {
      vec_t px[C];
#pragma unroll
      for (int c = 0; c < C; ++c) px[c] = reinterpret_cast<const vec_t*>(base + c * ss.c)[q];
#pragma unroll
      for (int j = 0; j < kW; ++j) {
#pragma unroll
        for (int c = 0; c < C; ++c) v[c] = Bytes<kW>::get(px[c], j);
        feed(v);
        if constexpr (kW != 16) {
#pragma unroll
          for (int c = 0; c < C; ++c) Bytes<kW>::set(px[c], j, static_cast<uint8_t>(v[c]));
        }
      }
      if (kW != 16 && store) {
#pragma unroll
        for (int c = 0; c < C; ++c) reinterpret_cast<vec_t*>(obase + c * P.os.c)[q] = px[c];
      }
    }
  } else {
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < n; p += step) {
      const int64_t o = from_out ? color_out_offset(P, b, p) : color_in_offset(P, b, p);
      for (int c = 0; c < C; ++c) v[c] = static_cast<acc_t>(src[o + c * ss.c]);
      feed(v);
      if (store) {
        const int64_t oo = color_out_offset(P, b, p);
        for (int c = 0; c < C; ++c) out[oo + c * P.os.c] = static_cast<T>(v[c]);
      }
    }
  }
  uint32_t* raw = P.raw + (b * P.n + k) * kernels::kColorRawWords;
  unsigned long long* raw64 = reinterpret_cast<unsigned long long*>(raw);
  const int lane = threadIdx.x % 32;
  if (op == kColorContrast) {
    for (int off = 16; off > 0; off /= 2) {
      acc.usum += __shfl_down_sync(0xffffffffu, acc.usum, off);
      acc.fsum += __shfl_down_sync(0xffffffffu, acc.fsum, off);
    }
    if (lane == 0) {
      if (kU8) atomicAdd(&raw64[0], static_cast<unsigned long long>(acc.usum));
      else atomicAdd(reinterpret_cast<double*>(&raw64[0]), acc.fsum);
    }
  } else if (op == kColorAutocontrast) {
    for (int c = 0; c < C; ++c) {
      for (int off = 16; off > 0; off /= 2) {
        acc.lo[c] = max(acc.lo[c], static_cast<uint64_t>(__shfl_down_sync(0xffffffffu, acc.lo[c], off)));
        acc.hi[c] = max(acc.hi[c], static_cast<uint64_t>(__shfl_down_sync(0xffffffffu, acc.hi[c], off)));
      }
      if (lane == 0) {
        atomicMax(&raw64[c], static_cast<unsigned long long>(acc.lo[c]));
        atomicMax(&raw64[3 + c], static_cast<unsigned long long>(acc.hi[c]));
      }
    }
  } else {
    __syncthreads();
    for (int i = threadIdx.x; i < C * 256; i += blockDim.x)
      if (hist[i]) atomicAdd(&raw[i], hist[i]);
  }
}

// Raw -> derived statistics of rank r's slot (stats_rank): one block of kThreads per sample. Contrast and autocontrast:
// a thread per channel. Equalize: per channel, the 256 bins in parallel (the last non-empty bin by
// an atomic max, the cumulative counts by a scan), with the arithmetic of
// kernels::equalize_derive_channel.
__global__ void __launch_bounds__(kThreads) color_finalize_kernel(ColorParams P, int r) {
  __shared__ SampleProgram sp;
  const int64_t b = blockIdx.x;
  load_program_shared(P, b, sp);
  const int k = stats_rank(sp, r).slot;
  if (k < 0) return;
  const int op = sp.op[k];
  const int64_t i = b * P.n + k;
  const uint32_t* raw = P.raw + i * kernels::kColorRawWords;
  const uint64_t* raw64 = reinterpret_cast<const uint64_t*>(raw);
  double* f = P.stats + i * kernels::kColorStatFloats;
  const int64_t n = P.height * P.width;
  const bool u8 = P.is_u8;
  const int t = threadIdx.x;
  if (op == kColorEqualize) {
    __shared__ unsigned long long scan[kThreads];
    __shared__ int last;
    uint8_t* lut = P.luts + i * 3 * 256;
    for (int c = 0; c < P.channels; ++c) {
      const uint32_t* hist = raw + c * 256;
      const uint32_t h = hist[t];
      if (t == 0) last = 0;
      scan[t] = h;
      __syncthreads();
      if (h != 0) atomicMax(&last, t);
      for (int off = 1; off < kThreads; off *= 2) {
        const unsigned long long v = t >= off ? scan[t - off] : 0ull;
        __syncthreads();
        scan[t] += v;
        __syncthreads();
      }
      const int64_t step = (n - static_cast<int64_t>(hist[last])) / 255;
      const int64_t s = step > 0 ? step : 1;
      const int64_t q = (static_cast<int64_t>(scan[t] - h) + step / 2) / s;  // cumulative count below bin t
      lut[c * 256 + t] = t == 0 ? 0 : static_cast<uint8_t>(q > 255 ? 255 : q);
      if (t == 0) f[c] = step != 0 ? 1.0 : 0.0;
      __syncthreads();
    }
    return;
  }
  if (t >= P.channels) return;
  if (op == kColorContrast) {
    if (t == 0) kernels::contrast_derive(raw64, u8, P.is_f64, n, f);
  } else {
    kernels::autocontrast_derive_channel(raw64, t, u8, P.is_f64, f);
  }
}

// The slot the apply pass of sample b begins at, and whether it reads the intermediate image the
// statistics passes stored in out (stats_rank). Programs without statistics begin at 0.
__device__ inline StatsRank apply_start(const ColorParams& P, const SampleProgram& sp) {
  return P.may_need_stats ? stats_rank(sp, kernels::kColorMaxSlots) : StatsRank{0, -1};
}

template <typename T, int C>
__global__ void __launch_bounds__(kThreads) color_apply_kernel(const T* in, T* out, ColorParams P) {
  using acc_t = typename AccOf<T>::type;
  __shared__ SampleProgram sp;
  const int64_t b = blockIdx.y;
  load_program_shared(P, b, sp);
  const int start = apply_start(P, sp).start;
  const T* src = start > 0 ? out : in;
  const int64_t n = P.height * P.width;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x * kApplyPix;
  for (int64_t p0 = static_cast<int64_t>(blockIdx.x) * blockDim.x * kApplyPix + threadIdx.x; p0 < n; p0 += step) {
#pragma unroll
    for (int j = 0; j < kApplyPix; ++j) {
      const int64_t p = p0 + j * blockDim.x;
      if (p >= n) continue;
      acc_t v[3];
      const int64_t o = start > 0 ? color_out_offset(P, b, p) : color_in_offset(P, b, p);
      const int64_t sc = start > 0 ? P.os.c : P.is.c;
      for (int c = 0; c < C; ++c) v[c] = static_cast<acc_t>(src[o + c * sc]);
      run_color_program<T, C>(P, sp, b, start, P.n, v);
      const int64_t oo = color_out_offset(P, b, p);
      for (int c = 0; c < P.out_channels; ++c) out[oo + c * P.os.c] = static_cast<T>(v[c]);
    }
  }
}

// uint8, dense NCHW in and out: kW consecutive pixels per thread (kW = 16 or 4) with one kW-byte
// load and store per channel plane. Single-op programs issue their loads before the block waits for
// its program; a longer one may resume from the intermediate image in out (apply_start).
template <int C, int kW>
__global__ void __launch_bounds__(kThreads) color_apply_u8_planar_kernel(const uint8_t* in, uint8_t* out,
                                                                         ColorParams P) {
  using vec_t = typename Bytes<kW>::type;
  __shared__ SampleProgram sp;
  const int64_t b = blockIdx.y;
  const int64_t nq = P.height * P.width / kW;
  const int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  vec_t px[C];
  const bool early = P.n == 1;  // the only slot is where the pass begins: it reads the images
  auto load = [&](const uint8_t* src, const Strides4& ss) {
    if (q < nq) {
#pragma unroll
      for (int c = 0; c < C; ++c) px[c] = reinterpret_cast<const vec_t*>(src + b * ss.b + c * ss.c)[q];
    }
  };
  if (early) load(in, P.is);
  load_program_shared(P, b, sp);
  const int start = early ? 0 : apply_start(P, sp).start;
  if (!early) {
    if (start > 0) load(out, P.os);
    else load(in, P.is);
  }
  // a program of per-channel ops is a table per channel: 256 evaluations per block instead of one
  // per pixel (the costly ops, gamma's pow say, then cost a lookup)
  __shared__ uint8_t lut[C][256];
  bool separable = true;
  for (int k = start; k < sp.n; ++k) separable = separable && kernels::color_op_is_separable(sp.op[k]);
  if (separable) {
    float v[3] = {float(threadIdx.x), float(threadIdx.x), float(threadIdx.x)};  // kThreads == 256
    run_color_program<uint8_t, C>(P, sp, b, start, P.n, v);
#pragma unroll
    for (int c = 0; c < C; ++c) lut[c][threadIdx.x] = static_cast<uint8_t>(v[c]);
    __syncthreads();
  }
  if (q >= nq) return;
  vec_t r[C];
  if (separable) {
#pragma unroll
    for (int j = 0; j < kW; ++j) {
#pragma unroll
      for (int c = 0; c < C; ++c) Bytes<kW>::set(r[c], j, lut[c][Bytes<kW>::get(px[c], j)]);
    }
  } else if constexpr (kW == 4) {
    // a word per channel slot by slot (color_words: the same bytes as run_color_program, and
    // hue's word path)
#pragma unroll
    for (int c = 0; c < C; ++c) r[c] = px[c];
    for (int k = start; k < sp.n; ++k) {
      const int op = sp.op[k];
      if (op == kernels::kColorIdentity) continue;
      color_words<C>(op, r, sp.p0[k], sp.p1[k], kernels::one_minus(sp.p0[k]), slot_stats(P, b, k));
    }
  } else {
#pragma unroll
    for (int j = 0; j < kW; ++j) {
      float v[3];
#pragma unroll
      for (int c = 0; c < C; ++c) v[c] = Bytes<kW>::get(px[c], j);
      run_color_program<uint8_t, C>(P, sp, b, start, P.n, v);
#pragma unroll
      for (int c = 0; c < C; ++c) Bytes<kW>::set(r[c], j, static_cast<uint8_t>(v[c]));
    }
  }
#pragma unroll
  for (int c = 0; c < C; ++c) {
    if (c < P.out_channels) reinterpret_cast<vec_t*>(out + b * P.os.b + c * P.os.c)[q] = r[c];
  }
}

unsigned chunks_for(int64_t work, int per_block) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((work + per_block - 1) / per_block, 1 << 16)));
}

// The statistics passes and finalizes of ranks [0, ranks) (stats_rank). out: the apply pass's
// output (the intermediate images go there), or nullptr for single-op programs.
template <typename T, int C>
void launch_color_stats(const T* in, T* out, const ColorParams& P, int ranks, cudaStream_t stream) {
  const int64_t n = P.height * P.width;
  auto aligned = [&](int w) {
    const bool io = P.is.b % w == 0 && P.is.c % w == 0 && reinterpret_cast<uintptr_t>(in) % w == 0;
    const bool oo = out == nullptr || (P.os.b % w == 0 && P.os.c % w == 0 && reinterpret_cast<uintptr_t>(out) % w == 0 &&
                                       P.os.x == 1);
    return std::is_same_v<T, uint8_t> && P.dense && P.is.x == 1 && n % w == 0 && io && oo;
  };
  TORCHAUG_CHECK(P.n == 1 || (out != nullptr && P.out_channels == P.channels),
                 "torchaug::color: internal: a program's statistics passes need its output");
  for (int r = 0; r < ranks; ++r) {
    if (P.n == 1 && aligned(16)) {
      const dim3 grid(chunks_for(n, kThreads * 16), static_cast<unsigned>(P.batch));
      color_stats_kernel<T, C, 16><<<grid, kThreads, 0, stream>>>(in, out, P, r);
    } else if (aligned(4)) {
      // 16 pixels per thread as 4 words (a quarter of the blocks: ranks a sample does not reach
      // cost a program load per block)
      const dim3 grid(chunks_for(n, kThreads * 16), static_cast<unsigned>(P.batch));
      color_stats_kernel<T, C, 4><<<grid, kThreads, 0, stream>>>(in, out, P, r);
    } else {
      const dim3 grid(chunks_for(n, kThreads * kStatsPix), static_cast<unsigned>(P.batch));
      color_stats_kernel<T, C, 0><<<grid, kThreads, 0, stream>>>(in, out, P, r);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    color_finalize_kernel<<<static_cast<unsigned>(P.batch), kThreads, 0, stream>>>(P, r);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
}

// Pixels per thread of the uint8 planar apply kernel. The kernel unrolls the op switch once per
// pixel; with hue's long per-pixel code in it, 16 copies cost more than the wide loads save. On an
// H200 (256x3x224x224): adjust_hue 2.18M img/s with 16 pixels, 2.35M with 4; ColorJitter's program
// 631k vs 706k; brightness 8.8M vs 6.4M the other way; saturation, through its word path
// (kernels::saturation_words), 4.7M with 16 pixels, 6.4M with 4. So 4 for programs that may hold
// hue (a per-sample program), hue and saturation (at 4 pixels a thread the pass runs color_words
// slot by slot, their word paths included), else 16.
int apply_width(const ColorParams& P) {
  return (P.ops != nullptr || P.const_op == kernels::kColorHue || P.const_op == kernels::kColorSaturation) ? 4 : 16;
}

void color_run_cuda(const at::Tensor& images, ColorPlan& plan) {
  c10::cuda::CUDAGuard guard(images.device());
  ColorParams& P = plan.p;
  // a program of several slots on uint8 images small enough for a block's shared memory: the whole
  // program in one launch (csrc/cuda/augment_resident.cu), its statistics made in the block
  if (P.ops != nullptr && P.n >= 2 && P.out_channels == P.channels &&
      color_resident_cuda(images, plan.out, plan.ops, plan.p0)) {
    return;
  }
  TORCHAUG_CHECK(P.batch <= 65535, "torchaug::color: batches of more than 65535 images are not supported on CUDA, got ",
                 P.batch);
  color_stats_buffers(plan, images);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const int64_t n = P.height * P.width;
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "color_cuda", [&] {
    const scalar_t* in = images.data_ptr<scalar_t>();
    scalar_t* out = plan.out.data_ptr<scalar_t>();
    with_channels(P.channels, [&](auto ch) {
    constexpr int C = decltype(ch)::value;
    // one statistics rank per slot that may hold a statistics op (a sample's r-th one is at slot r
    // or later); ranks past a sample's last exit at once
    if (P.may_need_stats) launch_color_stats<scalar_t, C>(in, out, P, P.n, stream);
    if (std::is_same_v<scalar_t, uint8_t> && P.dense && P.is.x == 1 && P.os.x == 1) {
      const auto u8in = reinterpret_cast<const uint8_t*>(in);
      const auto u8out = reinterpret_cast<uint8_t*>(out);
      auto aligned = [&](int w) {
        return n % w == 0 && P.is.b % w == 0 && P.is.c % w == 0 && P.os.b % w == 0 && P.os.c % w == 0 &&
               reinterpret_cast<uintptr_t>(in) % w == 0 && reinterpret_cast<uintptr_t>(out) % w == 0;
      };
      if (apply_width(P) == 16 && aligned(16) && n / 16 / kThreads < 65535) {
        const dim3 grid(chunks_for(n / 16, kThreads), static_cast<unsigned>(P.batch));
        color_apply_u8_planar_kernel<C, 16><<<grid, kThreads, 0, stream>>>(u8in, u8out, P);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        return;
      }
      if (aligned(4) && n / 4 / kThreads < 65535) {
        const dim3 grid(chunks_for(n / 4, kThreads), static_cast<unsigned>(P.batch));
        color_apply_u8_planar_kernel<C, 4><<<grid, kThreads, 0, stream>>>(u8in, u8out, P);
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

// ColorJitter's programs (kernels::jitter_sample), a thread a sample (map_draw_rows).
__global__ void color_jitter_program_kernel(const double* __restrict__ u, KernelDraws draws, int64_t B,
                                            kernels::JitterSpace space, int64_t* ops, float* params) {
  map_draw_rows(u, draws, B, kernels::kJitterDraws, [&](int64_t b, const double* row) {
    kernels::jitter_sample(space, row, ops + 4 * b, params + 8 * b);
  });
}

void color_jitter_program_cuda(const Draws& draws, int64_t B, const kernels::JitterSpace& space, int64_t* ops,
                               float* params) {
  const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream();
  launch_dependent(color_jitter_program_kernel, draw_grid(draws.data() != nullptr, B, kernels::kJitterDraws),
                   dim3(kDrawThreads), 0, stream, stream.device_index(), draws.data(), draws.kernel, B, space, ops, params);
}

}  // namespace

void color_stats_cuda(const at::Tensor& images, ColorParams& P) {
  c10::cuda::CUDAGuard guard(images.device());
  TORCHAUG_CHECK(P.batch <= 65535, "torchaug::color: batches of more than 65535 images are not supported on CUDA, got ",
                 P.batch);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "color_stats_cuda", [&] {
    with_channels(P.channels, [&](auto ch) {
      launch_color_stats<scalar_t, decltype(ch)::value>(images.data_ptr<scalar_t>(), nullptr, P, 1, stream);
    });
  });
}

TORCH_LIBRARY_IMPL(torchaug, CUDA, m) { register_color_ops<color_run_cuda, color_jitter_program_cuda>(m); }

}  // namespace torchaug
