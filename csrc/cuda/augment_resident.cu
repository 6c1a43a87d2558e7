// CUDA resident path of torchaug::augment (csrc/ops/augment.h): uint8 images small enough for a
// block's shared memory run their whole program in one launch, a block per sample. One kernel with its
// device helpers and its launcher, which share the argument block: kept in one file although it passes
// 600 lines (the order of the samples is csrc/cuda/resident_order.cu).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_pipeline_primitives.h>

#include <type_traits>

#include "../ops/augment.h"
#include "../ops/settings.h"
#include "dependent_launch.cuh"
#include "device_attribute.cuh"
#include "resident_order.cuh"
#include "shared_opt_in.cuh"
#include "warp.cuh"

namespace torchaug {
namespace {

// ---- the resident path ---------------------------------------------------------------------
// uint8 images small enough for shared memory (224 x 224 x 3 on an H100, whose blocks may take 227
// KiB): a block per sample holds the image as C planes plus one free plane and runs the whole
// program there, in one launch per call instead of lower + (statistics + finalize + switch) per
// slot: the sample's statistics in the block, color slots in place (the separable ones as tables
// composed and applied where the pixels are read next), sharpness and geometric slots channel by
// channel into the free plane, which then takes the channel's place. The same per-pixel
// functions and the same statistics as the slot passes, so the same bytes (tests compare the two).

constexpr int kResThreads = 1024;
constexpr int kResWarps = kResThreads / 32;
// The steps of the first kResSteps slots are made at once, a thread each, while the image loads (one
// global load latency per sample instead of one per slot, and RandAugment's lowering in parallel);
// later slots' steps are made by thread 0 at their turn, into the same ring.
constexpr int kResSteps = 16;
constexpr int kResHeld = 13;  // 4-pixel words a thread holds in registers (geometric slots): planes up to 53,248 pixels
// the kinds of a sharpness or geometric slot, for the held loop's specializations
constexpr int kResSharp = 0, kResBytes = 1, kResTaps = 2;

struct ResidentArgs {
  const uint8_t* in;
  uint8_t* out;
  const int* order;  // block i runs sample order[i] (csrc/cuda/resident_order.cu), or sample i where nullptr
  Strides4 is, os;
  int height, width, n, plane;  // plane: bytes between planes (H * W rounded up to 16)
  const int64_t* ops;
  Strides2 ops_s;
  const float* mags;  // magnitudes (B, n), or a color program's params (B, n, 2) where p1_at >= 0
  Strides2 mags_s;
  int64_t p1_at;  // a color program: the elements from a slot's p0 to its p1 (params.stride(2)); -1: magnitudes
  const float* fill;  // (B, C) contiguous, or nullptr
  int64_t interpolation;
  bool vec_in, vec_out;  // dense planes of whole 16-byte words
  bool held;             // plane / 4 <= kResThreads * kResHeld: geometric slots hold their words in registers
  bool normalize;        // the store is the fused normalize's (norm) instead of uint8 into out
  int norm_words;        // the fused normalize's packed store (kNormWords*), or kNormWordsNone
  bool sharp_words;      // sharpness slots take 4-pixel words (W a multiple of 4; resident_sharp_word)
  NormalizeParams norm;
};

// The fused normalize's packed store: a thread normalizes 4 pixels (a word of each plane) and writes
// their 4 * C values as C groups of 4 consecutive output elements, each one 16-byte (float32) or
// 8-byte (float16 / bfloat16) store. NCHW: group c is channel c's 4 values, stored as each channel
// is computed; NHWC (channels_last): the 4 pixels' values are consecutive in memory, group i their
// elements 4i .. 4i + 3. Where the output is neither (strides, alignment, H * W not a multiple of
// 4, float64) each value is stored alone (store_pixel).
constexpr int kNormWordsNone = 0, kNormWordsNchw = 1, kNormWordsNhwc = 2;

// g: 4 output values, stored at once in the output's type as vector k of base (elements 4k .. 4k + 3;
// indexed in whole vectors, the form nvcc keeps as one 16- or 8-byte store). Evict-first
// (st.global.cs): this kernel never reads the output again, and the lines it would evict are the
// inputs of the blocks still to run, which the crop before it left in L2 (on an H100, the kernel of
// the RandAugment chain: 123.3 -> 121.4 us, 20 calls each).
template <int kKind>
__device__ __forceinline__ void store_norm_group(void* base, int64_t k, const float (&g)[4]) {
  if constexpr (kKind == kPixF32) {
    __stcs(reinterpret_cast<float4*>(base) + k, make_float4(g[0], g[1], g[2], g[3]));
  } else {
    uint32_t h[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {  // the conversions store_pixel makes, as bits
      if constexpr (kKind == kPixF16) {
        h[j] = c10::Half(g[j]).x;
      } else {
        h[j] = c10::BFloat16(g[j]).x;
      }
    }
    __stcs(reinterpret_cast<uint2*>(base) + k, make_uint2(h[0] | (h[1] << 16), h[2] | (h[3] << 16)));
  }
}

// Slot (op, p0, p1) of a color program as a step: the color op with the arguments the color passes
// give it (run_color_program); ids outside the color ops are the identity, as there.
__device__ __forceinline__ AugStepT<float> color_program_step(int op, float p0, float p1) {
  AugStepT<float> s{};
  const bool color = op > kernels::kColorIdentity && op < kernels::kColorNumOps;
  s.kind = color ? kernels::kAugKindColor : kernels::kAugKindCopy;
  s.op = color ? op : kernels::kColorIdentity;
  s.p0 = p0;
  s.p1 = p1;
  s.om = kernels::one_minus(p0);
  return s;
}

// Walks the pixels p = threadIdx.x + i * kResThreads of an H x W plane with their (y, x).
template <typename F>
__device__ inline void resident_pixels(int H, int W, F&& f) {
  const int HW = H * W, dy = kResThreads / W, dx = kResThreads % W;
  int y = threadIdx.x / W, x = threadIdx.x % W;
  for (int p = threadIdx.x; p < HW; p += kResThreads) {
    f(p, y, x);
    x += dx;
    y += dy;
    if (x >= W) {
      x -= W;
      ++y;
    }
  }
}

// The statistics of a contrast, autocontrast or equalize slot of the image in the planes, derived
// as the statistics pass and its finalize derive them (f, lut). kPend: pend holds the pending
// tables of the kernel's separable slots (256 bytes a channel), applied to each pixel as it is read
// and written back, so that the pass that reads every pixel anyway also applies them (a template
// argument: the loops without them keep no test per pixel).
template <int C, bool kPend>
__device__ void resident_stats(int op, uint8_t* planes, const int* pl, int plane, int HW, const uint8_t* pend,
                               double* f, uint8_t* lut, uint32_t* hist, unsigned long long* red, uint32_t* wsum,
                               int* last) {
  const int t = threadIdx.x, lane = t % 32;
  const auto byte_at = [&](uint8_t* src, int c, int p) -> uint32_t {  // the pixel, the pending table applied
    if constexpr (kPend) {
      const uint8_t v = pend[c * 256 + src[p]];
      src[p] = v;
      return v;
    } else {
      return src[p];
    }
  };
  if (op == kernels::kColorEqualize) {
    for (int i = t; i < C * 256; i += kResThreads) hist[i] = 0;
    if (t < C) last[t] = 0;
    __syncthreads();
#pragma unroll
    for (int c = 0; c < C; ++c) {
      uint8_t* src = planes + pl[c] * plane;
      for (int p = t; p < HW; p += kResThreads) atomicAdd(&hist[c * 256 + byte_at(src, c, p)], 1u);
    }
    __syncthreads();
    // per channel, the 256 bins in parallel: the last non-empty bin, the counts below each bin
    // (a warp scan, then the totals of the channel's warps before this one)
    uint32_t h = 0, x = 0;
    if (t < C * 256) {
      h = hist[t];
      if (h != 0) atomicMax(&last[t / 256], t % 256);
      x = warp_inclusive_sum(h, lane);
      if (lane == 31) wsum[t / 32] = x;
    }
    __syncthreads();
    if (t < C * 256) {
      const int c = t / 256, bin = t % 256;
      for (int w = c * 8; w < t / 32; ++w) x += wsum[w];
      const int64_t below = static_cast<int64_t>(x) - h;
      const int64_t step = (HW - static_cast<int64_t>(hist[c * 256 + last[c]])) / 255;
      const int64_t s = step > 0 ? step : 1;
      const int64_t q = (below + step / 2) / s;
      lut[t] = bin == 0 ? 0 : static_cast<uint8_t>(q > 255 ? 255 : q);
      if (bin == 0) f[c] = step != 0 ? 1.0 : 0.0;
    }
    __syncthreads();
    return;
  }
  if (t < 6) red[t] = 0;
  __syncthreads();
  if (op == kernels::kColorContrast) {
    // the sum of the floored grays, integers of [0, 255]: a 4-pixel word per channel at a time (no
    // byte load and int -> float conversion per value), the pixels past the last whole word alone
    uint32_t sum = 0;  // at most 255 * ceil(HW / kResThreads) a thread
    for (int q = t; q < HW / 4; q += kResThreads) {
      uint32_t w[C];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        uint32_t* wc = reinterpret_cast<uint32_t*>(planes + pl[c] * plane) + q;
        w[c] = *wc;
        if constexpr (kPend) *wc = w[c] = lut_word(pend + c * 256, w[c]);
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float v[C];
#pragma unroll
        for (int c = 0; c < C; ++c) v[c] = kernels::word_byte_to_float(w[c], j);
        sum += kernels::trunc_to_byte(kernels::blend_gray<float, true>(v, C));
      }
    }
    for (int p = HW / 4 * 4 + t; p < HW; p += kResThreads) {
      float v[C];
#pragma unroll
      for (int c = 0; c < C; ++c) v[c] = byte_at(planes + pl[c] * plane, c, p);
      sum += kernels::trunc_to_byte(kernels::blend_gray<float, true>(v, C));
    }
    for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
    if (lane == 0) atomicAdd(&red[0], static_cast<unsigned long long>(sum));
    __syncthreads();
    if (t == 0) kernels::contrast_derive(reinterpret_cast<const uint64_t*>(red), true, false, HW, f);
  } else {  // autocontrast: the channel's min and max as the statistics pass keeps them (ordered bits)
#pragma unroll
    for (int c = 0; c < C; ++c) {
      uint8_t* src = planes + pl[c] * plane;
      uint32_t lo = 255, hi = 0;
      for (int p = t; p < HW; p += kResThreads) {
        const uint32_t v = byte_at(src, c, p);
        lo = min(lo, v);
        hi = max(hi, v);
      }
      for (int off = 16; off > 0; off /= 2) {
        lo = min(lo, __shfl_down_sync(0xffffffffu, lo, off));
        hi = max(hi, __shfl_down_sync(0xffffffffu, hi, off));
      }
      if (lane == 0) {
        atomicMax(&red[c], static_cast<unsigned long long>(~kernels::ordered_bits(static_cast<double>(lo))));
        atomicMax(&red[3 + c], static_cast<unsigned long long>(kernels::ordered_bits(static_cast<double>(hi))));
      }
    }
    __syncthreads();
    if (t < C) kernels::autocontrast_derive_channel(reinterpret_cast<const uint64_t*>(red), t, true, false, f);
  }
  __syncthreads();
}

// The value of channel plane sp at pixel p = (y, x) under a sharpness or geometric slot (taps: the
// affine slot's, from resident_taps).
template <int N>
__device__ __forceinline__ uint32_t resident_value(const uint8_t* sp, bool sharp, float om, int H, int W, int p, int y,
                                                   int x, const kernels::AffineTaps<float, N, int>& taps, bool has_fill,
                                                   float fill, int64_t interpolation, bool nearest_bytes) {
  if constexpr (N == 1) {
    if (!sharp && nearest_bytes) {
      // nearest (RandAugment's default): the source byte itself, or the fill outside the image.
      // The float path below gives the same value (1 * v + 0, rounded back to v; a weight-0 tap
      // and fill blending give 0 or the fill's rounding) in a third of the instructions.
      if (taps.valid[0]) return sp[taps.iy[0] * W + taps.ix[0]];
      return has_fill ? static_cast<uint32_t>(kernels::PixelStore<uint8_t>::from(fill)) : 0u;
    }
  }
  float r;
  if (sharp) {
    const bool interior = y > 0 && x > 0 && y < H - 1 && x < W - 1;
    const float x0 = sp[p];
    float sum = 0.0f;
    if (interior) {
      float w9[9];
      kernels::sharpness_weights(w9);
      sum = kernels::window_sum<float>(w9, 3, 3, [&](int rr, int qq) { return static_cast<float>(sp[p + (rr - 1) * W + (qq - 1)]); });
    }
    r = kernels::sharpness_blend<float, true>(x0, sum, om, interior);
  } else {
    r = kernels::affine_blend(kernels::affine_plane(sp, W, taps), taps.mask, has_fill, fill, interpolation);
  }
  return static_cast<uint32_t>(kernels::PixelStore<uint8_t>::from(r));
}

// A sharpness slot's word g of channel plane sp: 4 pixels of one row, the first at (y, x), W a
// multiple of 4. kernels::sharpness_word takes the three rows' words and the column sums beside
// them: 9 shared loads instead of 10 a pixel (40 a word). Rows 0 and H - 1 keep their bytes (and
// so do the planes' padding words, past row H - 1).
__device__ __forceinline__ uint32_t resident_sharp_word(const uint8_t* sp, int g, int y, int x, int H, int W, float om) {
  const uint32_t* sw = reinterpret_cast<const uint32_t*>(sp);
  const uint32_t mid = sw[g];
  if (y == 0 || y >= H - 1) return mid;
  const uint32_t keep = (x == 0 ? 0xffu : 0u) | (x + 4 == W ? 0xff000000u : 0u);
  const int p = 4 * g, wq = W / 4;
  // the columns beside the word: on the row's ends, any column of the row (the border byte keeps)
  const int lc = x > 0 ? p - 1 : p, rc = x + 4 < W ? p + 4 : p + 3;
  const uint32_t l = static_cast<uint32_t>(sp[lc - W]) + sp[lc] + sp[lc + W];
  const uint32_t r = static_cast<uint32_t>(sp[rc - W]) + sp[rc] + sp[rc + W];
  return kernels::sharpness_word(sw[g - wq], mid, sw[g + wq], l, r, om, keep);
}

template <int N>
__device__ __forceinline__ kernels::AffineTaps<float, N, int> resident_taps(bool sharp, const float* m, int H, int W, int y,
                                                                           int x) {
  kernels::AffineTaps<float, N, int> taps{};
  if (!sharp) {
    float sx, sy;
    kernels::affine_source(m, x, y, &sx, &sy);
    taps = kernels::affine_taps<float, N, int>(sx, sy, H, W);
  }
  return taps;
}

template <int C, int N>
__global__ void __launch_bounds__(kResThreads) augment_resident_kernel(ResidentArgs A) {
  extern __shared__ __align__(16) uint8_t planes[];
  __shared__ uint32_t hist[3 * 256];
  __shared__ uint8_t eq_lut[3 * 256];
  __shared__ uint8_t tab[3 * 256];
  __shared__ double f[kernels::kColorStatFloats];
  __shared__ unsigned long long red[6];
  __shared__ uint32_t wsum[kResWarps];
  __shared__ int last[3];
  __shared__ AugStepT<float> steps[kResSteps];
  __shared__ kernels::NormalizeConstants s_norm[C];  // the fused normalize's, made while the image loads
  dependent_launch_begin();
  const int64_t b = A.order != nullptr ? A.order[blockIdx.x] : blockIdx.x;
  const int t = threadIdx.x, H = A.height, W = A.width, HW = H * W;
  int pl[C + 1];  // the plane of each channel, and the free one
#pragma unroll
  for (int c = 0; c <= C; ++c) pl[c] = c;

  // the second warp's first threads make the normalize constants, one channel each (the first warp
  // makes the steps)
  static_assert(kResSteps <= 32, "the steps are made by the first warp");
  const auto make_norm = [&] {
    const int c = t - 32;
    if (A.normalize && c >= 0 && c < C) {
      s_norm[c] = kernels::normalize_constants(A.norm.inv_max, A.norm.mean[A.norm.ms.at(b, c)], A.norm.std[A.norm.ss.at(b, c)]);
    }
  };
  const auto make_step = [&](int k) {
    const int op = static_cast<int>(A.ops[A.ops_s.at(b, k)]);
    const float* m = A.mags + A.mags_s.at(b, k);
    return A.p1_at >= 0 ? color_program_step(op, m[0], m[A.p1_at])
                        : aug_step_cast<float>(kernels::lower_aug(op, *m, H, W, 255.0));
  };
  const uint8_t* src = A.in + b * A.is.b;
  if (A.vec_in) {
    // cp.async (LDGSTS): all of the sample's 16-byte words in flight at once, through no register,
    // instead of a load and a shared store that waits for it (the kernel's main stall otherwise: one
    // block an SM, nothing else to run meanwhile); the barrier of the
    // first slot (or the one before the store) follows the wait
    for (int q = t; q < HW / 16; q += kResThreads) {
#pragma unroll
      for (int c = 0; c < C; ++c) __pipeline_memcpy_async(planes + c * A.plane + 16 * q, src + c * A.is.c + 16 * q, 16);
    }
    __pipeline_commit();
    if (t < min(A.n, kResSteps)) steps[t] = make_step(t);
    make_norm();
    __pipeline_wait_prior(0);
  } else {
    if (t < min(A.n, kResSteps)) steps[t] = make_step(t);
    make_norm();
    resident_pixels(H, W, [&](int p, int y, int x) {
#pragma unroll
      for (int c = 0; c < C; ++c) planes[c * A.plane + p] = src[c * A.is.c + y * A.is.y + x * A.is.x];
    });
  }

  // A separable color slot (each byte's output a function of that byte: brightness, posterize,
  // solarize, contrast once its mean is known, ...) is a 256-entry table a channel, and is not
  // applied where it comes: its table composes with the pending one (entry v becomes the slot's
  // output for the pending entry v, exactly what the two passes would make of v) and the result is
  // applied where the pixels are read next anyway: in a non-separable color slot's words, in a
  // statistics pass (which writes the pixels back), or in the store's. A sharpness or geometric
  // slot applies the pending tables in a pass of their own first. `pending` is uniform in the block.
  bool pending = false;
  const auto pending_word = [&](uint32_t w, int c) { return pending ? lut_word(tab + c * 256, w) : w; };
  const auto apply_pending = [&] {
    if (!pending) return;
    const int words = A.plane / 4;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      uint32_t* w = reinterpret_cast<uint32_t*>(planes + pl[c] * A.plane);
      for (int q = t; q < words; q += kResThreads) w[q] = pending_word(w[q], c);
    }
    pending = false;
    __syncthreads();
  };

  for (int k = 0; k < A.n; ++k) {
    // (a ring: a slot that syncs no more lets thread 0 run one slot ahead of the others' reads)
    AugStepT<float>& sk = steps[k % kResSteps];
    if (k >= kResSteps && t == 0) sk = make_step(k);
    __syncthreads();  // also: the image is in the planes and the first steps made (k == 0), the previous slot is done
    const AugStepT<float> s = sk;
    if (s.kind == kernels::kAugKindCopy) continue;
    if (s.kind == kernels::kAugKindColor) {
      if (kernels::color_op_needs_stats(s.op)) {
        if (pending) {
          resident_stats<C, true>(s.op, planes, pl, A.plane, HW, tab, f, eq_lut, hist, red, wsum, last);
        } else {
          resident_stats<C, false>(s.op, planes, pl, A.plane, HW, nullptr, f, eq_lut, hist, red, wsum, last);
        }
        pending = false;
      }
      const kernels::ColorStats st{f, eq_lut};
      if (kernels::color_op_is_separable(s.op)) {
        if (t < 256) {  // each thread its own entry of every channel's table
          float v[3] = {float(t), float(t), float(t)};
#pragma unroll
          for (int c = 0; c < C; ++c) v[c] = pending ? float(tab[c * 256 + t]) : v[c];
          color_slot<uint8_t, C>(s.op, v, s.p0, s.p1, s.om, st);
#pragma unroll
          for (int c = 0; c < C; ++c) tab[c * 256 + t] = static_cast<uint8_t>(v[c]);
        }
        pending = true;
      } else {
        const int words = A.plane / 4;  // the planes' padding bytes are computed and never read
        for (int q = t; q < words; q += kResThreads) {
          uint32_t w[C];
#pragma unroll
          for (int c = 0; c < C; ++c) w[c] = pending_word(reinterpret_cast<const uint32_t*>(planes + pl[c] * A.plane)[q], c);
          color_words<C>(s.op, w, s.p0, s.p1, s.om, st);
#pragma unroll
          for (int c = 0; c < C; ++c) reinterpret_cast<uint32_t*>(planes + pl[c] * A.plane)[q] = w[c];
        }
        pending = false;
      }
      __syncthreads();  // the table complete, or free again, and the statistics free again
      continue;
    }
    apply_pending();
    // sharpness and the geometric ops: the C values of a pixel at once (one set of taps); channel 0
    // goes to the free plane, the others stay in registers until every pixel is computed (planes of
    // at most kResHeld words a thread), else channel by channel into the free plane
    float fc[C];
#pragma unroll
    for (int c = 0; c < C; ++c) fc[c] = A.fill != nullptr ? A.fill[b * C + c] : 0.0f;
    // the slot specialized on its kind (sharpness, nearest byte copies, float taps): the same
    // functions with the kind a constant, so that no pixel re-tests it channel by channel
    const auto slot = [&](auto kind_constant) {
      constexpr int kKind = decltype(kind_constant)::value;
      constexpr bool kSharp = kKind == kResSharp, kBytes = kKind == kResBytes;
      const auto value_k = [&](const uint8_t* sp, int c, int p, int y, int x, const kernels::AffineTaps<float, N, int>& taps) {
        return resident_value<N>(sp, kSharp, s.om, H, W, p, y, x, taps, A.fill != nullptr, fc[c], A.interpolation, kBytes);
      };
      const auto taps_k = [&](int y, int x) { return resident_taps<N>(kSharp, s.m, H, W, y, x); };
      if constexpr (kSharp) {
        if (A.sharp_words) {  // in 4-pixel words, channel by channel into the free plane
          const int words = A.plane / 4;
          const int step_y = 4 * kResThreads / W, step_x = 4 * kResThreads % W;
#pragma unroll
          for (int c = 0; c < C; ++c) {
            const uint8_t* sp = planes + pl[c] * A.plane;
            uint32_t* dw = reinterpret_cast<uint32_t*>(planes + pl[C] * A.plane);
            int wy = 4 * t / W, wx = 4 * t - wy * W;
#pragma unroll 1
            for (int g = t; g < words; g += kResThreads) {
              dw[g] = resident_sharp_word(sp, g, wy, wx, H, W, s.om);
              wx += step_x;
              wy += step_y;
              if (wx >= W) {
                wx -= W;
                ++wy;
              }
            }
            const int tmp = pl[c];
            pl[c] = pl[C];
            pl[C] = tmp;
            __syncthreads();
          }
          return;
        }
      }
      if (!A.held) {  // planes larger than the registers hold: channel by channel into the free plane
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const uint8_t* sp = planes + pl[c] * A.plane;
          uint8_t* dp = planes + pl[C] * A.plane;
          resident_pixels(H, W, [&](int p, int y, int x) { dp[p] = static_cast<uint8_t>(value_k(sp, c, p, y, x, taps_k(y, x))); });
          const int tmp = pl[c];
          pl[c] = pl[C];
          pl[C] = tmp;
          __syncthreads();
        }
        return;
      }
      // nearest byte copies written out (resident_value's kBytes branch without a branch per channel:
      // the byte at the tap, or at pixel 0 and then replaced by the fill's byte outside the image)
      int poff[C];
      uint32_t fill_byte[C];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        poff[c] = pl[c] * A.plane;
        fill_byte[c] = A.fill != nullptr ? static_cast<uint32_t>(kernels::PixelStore<uint8_t>::from(fc[c])) : 0u;
      }
      const int words = A.plane / 4;
      uint32_t held[kResHeld][C > 1 ? C - 1 : 1];
      uint32_t* free_w = reinterpret_cast<uint32_t*>(planes + pl[C] * A.plane);
      // (y, x) of each word's first pixel, stepped from word to word (no division per word: its
      // reciprocal goes through the conversion unit)
      const int step_y = 4 * kResThreads / W, step_x = 4 * kResThreads % W;
      int wy = 4 * t / W, wx = 4 * t - wy * W;
#pragma unroll
      for (int i = 0; i < kResHeld; ++i) {
        const int g = t + i * kResThreads;
        if (i > 0) {
          wx += step_x;
          wy += step_y;
          if (wx >= W) {
            wx -= W;
            ++wy;
          }
        }
        if (g < words) {
          const int p = 4 * g;
          int y = wy, x = wx;
          uint32_t acc[C];
#pragma unroll
          for (int c = 0; c < C; ++c) acc[c] = 0;
#pragma unroll 1
          for (int j = 0; j < 4; ++j) {  // one pixel's taps live at a time (register pressure)
            if (p + j < HW) {
              const auto taps = taps_k(y, x);
              if constexpr (kBytes && N == 1) {
                const int at = taps.iy[0] * W + taps.ix[0];  // 0 outside the image (affine_taps)
#pragma unroll
                for (int c = 0; c < C; ++c) {
                  const uint32_t v = planes[poff[c] + at];
                  acc[c] |= (taps.valid[0] ? v : fill_byte[c]) << (8 * j);
                }
              } else {
#pragma unroll
                for (int c = 0; c < C; ++c) acc[c] |= value_k(planes + poff[c], c, p + j, y, x, taps) << (8 * j);
              }
            }
            if (++x == W) {
              x = 0;
              ++y;
            }
          }
          free_w[g] = acc[0];
#pragma unroll
          for (int c = 1; c < C; ++c) held[i][c - 1] = acc[c];
        }
      }
      __syncthreads();  // every source pixel read
#pragma unroll
      for (int i = 0; i < kResHeld; ++i) {
        const int g = t + i * kResThreads;
        if (g < words) {
#pragma unroll
          for (int c = 1; c < C; ++c) reinterpret_cast<uint32_t*>(planes + pl[c] * A.plane)[g] = held[i][c - 1];
        }
      }
      const int tmp = pl[0];
      pl[0] = pl[C];
      pl[C] = tmp;
      __syncthreads();
    };
    if (s.kind == kernels::kAugKindSharpness) {
      slot(std::integral_constant<int, kResSharp>{});
    } else if (N == 1) {
      slot(std::integral_constant<int, kResBytes>{});
    } else {
      slot(std::integral_constant<int, kResTaps>{});
    }
  }
  __syncthreads();
  // the pending tables: applied in the packed stores' words below, else in a pass of their own
  if (A.normalize ? A.norm_words == kNormWordsNone : !A.vec_out) apply_pending();

  if (A.normalize) {  // normalize_px per value, as the normalize op computes it
    // normalize_px_by with std's reciprocal taken once (the same quotient as normalize_px's division,
    // without a reciprocal per value), the bytes made floats by kernels::word_byte_to_float (no I2F)
    const NormalizeParams& np = A.norm;
    kernels::NormalizeConstants nk[C];  // the sample's, in registers for all of the thread's pixels
    bool in_range = true;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      nk[c] = s_norm[c];
      in_range = in_range && nk[c].u8_in_range;
    }
    // the quotient without the per-value range test where this sample's constants keep every byte
    // in range (normalize_u8_in_range: ImageNet's, and any ordinary mean and std), else checked
    const auto store_all = [&](auto unchecked) {
      const auto norm = [&](float v, int c) {
        if constexpr (decltype(unchecked)::value) {
          return kernels::normalize_px_by_unchecked(v, np.inv_max, nk[c].mean, nk[c].std, nk[c].rcp);
        } else {
          return kernels::normalize_px_by(v, np.inv_max, nk[c].mean, nk[c].std, nk[c].rcp);
        }
      };
      const auto packed = [&](auto kind, auto layout) {
        constexpr int kKind = decltype(kind)::value;
        const int64_t e = b * np.os.b;  // the sample's first output element
        const auto element = [&](int64_t i) -> void* {  // the address of output element e + i
          return kKind == kPixF32 ? static_cast<void*>(static_cast<float*>(np.out) + e + i)
                                  : static_cast<void*>(static_cast<uint16_t*>(np.out) + e + i);
        };
        for (int q = t; q < HW / 4; q += kResThreads) {
          if constexpr (decltype(layout)::value == kNormWordsNchw) {
#pragma unroll
            for (int c = 0; c < C; ++c) {
              const uint32_t w = pending_word(reinterpret_cast<const uint32_t*>(planes + pl[c] * A.plane)[q], c);
              float g[4];
#pragma unroll
              for (int j = 0; j < 4; ++j) g[j] = norm(kernels::word_byte_to_float(w, j), c);
              store_norm_group<kKind>(element(c * np.os.c), q, g);
            }
          } else {
            float v[4 * C];  // the 4 pixels' values in memory order: pixel-major, channel-minor
#pragma unroll
            for (int c = 0; c < C; ++c) {
              const uint32_t w = pending_word(reinterpret_cast<const uint32_t*>(planes + pl[c] * A.plane)[q], c);
#pragma unroll
              for (int j = 0; j < 4; ++j) v[j * C + c] = norm(kernels::word_byte_to_float(w, j), c);
            }
#pragma unroll
            for (int i = 0; i < C; ++i) {
              const float g[4] = {v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]};
              store_norm_group<kKind>(element(0), static_cast<int64_t>(q) * C + i, g);
            }
          }
        }
      };
      const auto packed_in = [&](auto layout) {
        if (np.out_kind == kPixF32) {
          packed(std::integral_constant<int, kPixF32>{}, layout);
        } else if (np.out_kind == kPixF16) {
          packed(std::integral_constant<int, kPixF16>{}, layout);
        } else {
          packed(std::integral_constant<int, kPixBF16>{}, layout);
        }
      };
      if (A.norm_words == kNormWordsNchw) {
        packed_in(std::integral_constant<int, kNormWordsNchw>{});
      } else if (A.norm_words == kNormWordsNhwc) {
        packed_in(std::integral_constant<int, kNormWordsNhwc>{});
      } else {
        resident_pixels(H, W, [&](int p, int y, int x) {
#pragma unroll
          for (int c = 0; c < C; ++c)
            store_pixel(np.out, b * np.os.b + c * np.os.c + y * np.os.y + x * np.os.x, np.out_kind,
                        norm(kernels::word_byte_to_float(planes[pl[c] * A.plane + p], 0), c));
        });
      }
    };
    if (in_range) {
      store_all(std::true_type{});
    } else {
      store_all(std::false_type{});
    }
    return;
  }
  uint8_t* dst = A.out + b * A.os.b;
  if (A.vec_out) {
    for (int q = t; q < HW / 16; q += kResThreads) {
      uint4 v[C];
#pragma unroll
      for (int c = 0; c < C; ++c) {
        v[c] = reinterpret_cast<const uint4*>(planes + pl[c] * A.plane)[q];
        v[c] = {pending_word(v[c].x, c), pending_word(v[c].y, c), pending_word(v[c].z, c), pending_word(v[c].w, c)};
      }
#pragma unroll
      for (int c = 0; c < C; ++c) reinterpret_cast<uint4*>(dst + c * A.os.c)[q] = v[c];
    }
  } else {
    resident_pixels(H, W, [&](int p, int y, int x) {
#pragma unroll
      for (int c = 0; c < C; ++c) dst[c * A.os.c + y * A.os.y + x * A.os.x] = planes[pl[c] * A.plane + p];
    });
  }
}

// Which packed store the fused normalize's output takes (store_norm_group), or kNormWordsNone.
int packed_norm_store(const NormalizeParams& n, int64_t C, int64_t H, int64_t W) {
  const bool f32 = n.out_kind == kPixF32, half = n.out_kind == kPixF16 || n.out_kind == kPixBF16;
  const Strides4& s = n.os;
  const uintptr_t align = f32 ? 16 : 8;
  if (!(f32 || half) || (H * W) % 4 != 0 || s.b % 4 != 0 || reinterpret_cast<uintptr_t>(n.out) % align != 0) {
    return kNormWordsNone;
  }
  if (s.x == 1 && s.y == W && s.c % 4 == 0) return kNormWordsNchw;
  if (s.c == 1 && s.x == C && s.y == W * C) return kNormWordsNhwc;
  return kNormWordsNone;
}

bool dense_planes(const Strides4& s, int64_t H, int64_t W, const void* ptr) {
  return s.x == 1 && s.y == W && (H * W) % 16 == 0 && s.c % 16 == 0 && s.b % 16 == 0 &&
         reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
}

}  // namespace

namespace {
// The launch of both entry points below: values holds magnitudes (p1_at -1) or a color program's
// params (p1_at: params.stride(2)).
bool launch_resident(const at::Tensor& images, const at::Tensor& out, const at::Tensor& ops, const at::Tensor& values,
                     int64_t p1_at, int64_t interpolation, const at::Tensor& fill, const NormalizeParams* norm) {
  const int64_t mode = test_hooks::get(test_hooks::kAugmentResident);  // -1: where it fits, 0: never, 1: always
  if (mode == 0) return false;
  const int64_t B = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
  const int64_t plane = (H * W + 15) / 16 * 16;
  const c10::cuda::CUDAGuard guard(images.device());
  // the statically sized shared memory of the kernel is under 8 KiB
  const int64_t bytes = (C + 1) * plane, limit = device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(images.get_device()) - 8192;
  const bool fits = images.scalar_type() == at::kByte && bytes <= limit && B <= 0x7fffffff;
  TORCHAUG_CHECK(fits || mode != 1, "torchaug::augment: the forced resident path needs uint8 images of at most ",
                 limit, " bytes for ", C, " planes and a free one, got ", images.scalar_type(), " images of ", C, "x", H,
                 "x", W);
  if (!fits) return false;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  // a block runs one sample on one SM: with samples for at most an eighth of the SMs, the passes,
  // spread over every SM, finish first on the GPU, but their launches (a lowering, then statistics
  // and a pass per slot) cost the host more than that saves. So the passes take such batches only
  // while the stream is being captured into a CUDA graph, whose replays cost no host time a launch
  // (H100, RandomResizedCrop(224) + flip + RandAugment(2, 9) + normalize from 500x375: batch 8 in
  // 54 us a replay against the resident kernel's 75, batch 16 in 67 against 81; called eagerly,
  // 287-314 us a call against 192 and 289 against 193; from batch 32 on the resident kernel is
  // ahead either way)
  if (mode == -1 && B * 8 <= device_attribute<cudaDevAttrMultiProcessorCount>(images.get_device())) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone) return false;
  }
  ResidentArgs A;
  A.order = nullptr;
  A.in = images.data_ptr<uint8_t>();
  A.out = norm ? nullptr : out.data_ptr<uint8_t>();
  A.is = strides4(images);
  A.os = norm ? Strides4{0, 0, 0, 0} : strides4(out);
  A.height = static_cast<int>(H);
  A.width = static_cast<int>(W);
  A.n = static_cast<int>(ops.size(1));
  A.plane = static_cast<int>(plane);
  A.ops = ops.data_ptr<int64_t>();
  A.ops_s = strides2(ops);
  A.mags = values.data_ptr<float>();
  A.mags_s = strides2(values);
  A.p1_at = p1_at;
  A.fill = fill.defined() ? fill.data_ptr<float>() : nullptr;
  A.interpolation = interpolation;
  A.vec_in = dense_planes(A.is, H, W, A.in);
  A.held = plane / 4 <= static_cast<int64_t>(kResThreads) * kResHeld;
  A.vec_out = !norm && dense_planes(A.os, H, W, A.out);
  A.normalize = norm != nullptr;
  A.sharp_words = W % 4 == 0;
  if (norm) {
    A.norm = *norm;
    A.norm_words = packed_norm_store(*norm, C, H, W);
  } else {
    A.norm_words = kNormWordsNone;
  }
  // where the launch has more blocks than the GPU runs at once, the blocks take the samples by cost
  // (csrc/cuda/resident_order.cu); the resident_order test hook keeps index order
  const bool ordered = test_hooks::get(test_hooks::kResidentOrder) != 0 && A.n > 0;
  with_channels(C, [&](auto ch) {
    with_affine_taps(interpolation, [&](auto taps) {
      constexpr auto kernel = augment_resident_kernel<decltype(ch)::value, decltype(taps)::value>;
      opt_in_shared<kernel>(images.get_device(), static_cast<int>(limit));  // every launch that fits fits `limit`
      // the order only matters where some blocks wait for others to finish
      int per_sm = 0;
      if (ordered) {
        C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kResThreads, static_cast<size_t>(bytes)));
      }
      at::Tensor order;
      const int64_t wave = static_cast<int64_t>(per_sm) * device_attribute<cudaDevAttrMultiProcessorCount>(images.get_device());
      if (ordered && B > wave) {
        order = at::empty({B}, images.options().dtype(at::kInt));
        const int lead = static_cast<int>(wave / 2);
        launch_resident_order(A.ops, A.ops_s, static_cast<int>(B), A.n, interpolation != 0, lead, order.data_ptr<int>(),
                              stream, images.get_device());
        A.order = order.data_ptr<int>();
      }
      launch_dependent(kernel, dim3(static_cast<unsigned>(B)), dim3(kResThreads), static_cast<size_t>(bytes), stream,
                       images.get_device(), A);
    });
  });
  return true;
}
}  // namespace

bool augment_resident_cuda(const at::Tensor& images, const at::Tensor& out, const at::Tensor& ops,
                           const at::Tensor& magnitudes, int64_t interpolation, const at::Tensor& fill,
                           const NormalizeParams* norm) {
  return launch_resident(images, out, ops, magnitudes, -1, interpolation, fill, norm);
}

bool color_resident_cuda(const at::Tensor& images, const at::Tensor& out, const at::Tensor& ops, const at::Tensor& params) {
  return launch_resident(images, out, ops, params, params.stride(2), 0, at::Tensor(), nullptr);
}

}  // namespace torchaug
