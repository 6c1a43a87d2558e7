// CUDA passes of torchaug::augment (csrc/augment_impl.h). The switch pass: a block computes a
// kTileW x kTileH tile of one sample (kTileH / kRows rows per thread); the sample's lowered step
// sits in shared memory, so that the branch on its kind is uniform across the block.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "../augment_impl.h"
#include "color_stats.cuh"

namespace torchaug {
namespace {

constexpr int kTileW = 32, kRows = 8, kTileH = 32;
static_assert(kTileW * kRows == 256, "the uint8 lookup table is built by one thread per entry");
static_assert(kTileW * kRows / (kTileW / 4) == kTileH, "the word path covers a tile with one word per thread");

__global__ void augment_lower_kernel(const int64_t* __restrict__ ops, Strides2 os, const float* __restrict__ mags,
                                     Strides2 ms, double* __restrict__ steps, int64_t B, int64_t n, int64_t height,
                                     int64_t width, double bound) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= B * n) return;
  const int64_t b = i / n, k = i % n;
  const auto s = kernels::lower_aug(static_cast<int>(ops[os.at(b, k)]), mags[ms.at(b, k)], height, width, bound);
  kernels::store_aug_step(s, steps + i * kernels::kAugStepWords);
}

template <typename T, int C>
__global__ void __launch_bounds__(kTileW * kRows) augment_slot_kernel(const T* __restrict__ in, T* __restrict__ out,
                                                                      AugmentParams P, int64_t k, int tiles_x,
                                                                      bool words) {
  using acc_t = typename AccOf<T>::type;
  __shared__ AugStepT<acc_t> step;
  __shared__ uint8_t lut[C][256];
  const int64_t b = blockIdx.y;
  if (threadIdx.x == 0 && threadIdx.y == 0) step = aug_step_at<acc_t>(P, b, k);
  __syncthreads();
  const AugStepT<acc_t> s = step;
  const kernels::ColorStats st = aug_stats_at(P, b);
  // uint8 and an op whose output channel depends on its input channel only: a 256-entry table per
  // channel, evaluated once per block (kTileW * kRows == 256 threads)
  bool use_lut = false;
  if constexpr (std::is_same_v<T, uint8_t>) {
    use_lut = s.kind == kernels::kAugKindColor && kernels::color_op_is_separable(s.op);
    if (use_lut) {
      const int t = threadIdx.y * kTileW + threadIdx.x;
      float v[3] = {float(t), float(t), float(t)};
      color_slot<uint8_t, C>(s.op, v, s.p0, s.p1, s.om, st);
#pragma unroll
      for (int c = 0; c < C; ++c) lut[c][t] = static_cast<uint8_t>(v[c]);
      __syncthreads();
    }
  }
  const int64_t x0 = static_cast<int64_t>(blockIdx.x % tiles_x) * kTileW;
  const int64_t y0 = static_cast<int64_t>(blockIdx.x / tiles_x) * kTileH;
  if constexpr (std::is_same_v<T, uint8_t>) {
    if (words && (use_lut || s.kind == kernels::kAugKindCopy || s.kind == kernels::kAugKindColor)) {
      // dense uint8 rows: a thread takes 4 pixels of one tile row as one 32-bit word per channel
      // (kTileW / 4 threads per row, kTileH rows), every load before the first store
      const int t = threadIdx.y * kTileW + threadIdx.x;
      const int64_t x = x0 + (t % (kTileW / 4)) * 4, y = y0 + t / (kTileW / 4);
      if (x >= P.width || y >= P.height) return;
      const uint8_t* src = reinterpret_cast<const uint8_t*>(in) + b * P.is.b + y * P.is.y + x;
      uint8_t* dst = reinterpret_cast<uint8_t*>(out) + b * P.os.b + y * P.os.y + x;
      uint32_t w[C];
#pragma unroll
      for (int c = 0; c < C; ++c) w[c] = *reinterpret_cast<const uint32_t*>(src + c * P.is.c);
      if (use_lut) {
#pragma unroll
        for (int c = 0; c < C; ++c)
          w[c] = lut[c][w[c] & 0xffu] | (lut[c][(w[c] >> 8) & 0xffu] << 8) | (lut[c][(w[c] >> 16) & 0xffu] << 16) |
                 (static_cast<uint32_t>(lut[c][w[c] >> 24]) << 24);
      } else if (s.kind == kernels::kAugKindColor) {
        uint32_t r[C];
#pragma unroll
        for (int c = 0; c < C; ++c) r[c] = 0;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          float v[3];
#pragma unroll
          for (int c = 0; c < C; ++c) v[c] = static_cast<float>((w[c] >> (8 * j)) & 0xffu);
          color_slot<uint8_t, C>(s.op, v, s.p0, s.p1, s.om, st);
#pragma unroll
          for (int c = 0; c < C; ++c) r[c] |= static_cast<uint32_t>(static_cast<uint8_t>(v[c])) << (8 * j);
        }
#pragma unroll
        for (int c = 0; c < C; ++c) w[c] = r[c];
      }
#pragma unroll
      for (int c = 0; c < C; ++c) *reinterpret_cast<uint32_t*>(dst + c * P.os.c) = w[c];
      return;
    }
  }
  const int64_t x = x0 + threadIdx.x;
  if (x >= P.width) return;
  constexpr int kPix = kTileH / kRows;
  if (s.kind == kernels::kAugKindSharpness) {
    // pixel by pixel: holding the 3x3 windows of all the thread's pixels made it slower (H100, one
    // slot of sharpness: 0.181 -> 0.213 ms)
#pragma unroll
    for (int r = 0; r < kPix; ++r) {
      const int64_t y = y0 + r * kRows + threadIdx.y;
      if (y < P.height) {
        acc_t v[C];
        augment_value_px<T, C>(in, P, s, st, b, y, x, v);
        augment_store_px<T, C>(out, P, b, y, x, v);
      }
    }
    return;
  }
  // the values of all the thread's pixels computed before the first store: the stores may alias
  // the image for all the compiler knows, so it would not move the next pixel's loads (the
  // sampler's gathers, a copy's loads) above them (H100, one slot of rotate: 0.182 -> 0.114 ms)
  acc_t val[kPix][C];
#pragma unroll
  for (int r = 0; r < kPix; ++r) {
    const int64_t y = y0 + r * kRows + threadIdx.y;
    if (y >= P.height) continue;
    if (use_lut) {
      const int64_t io = b * P.is.b + y * P.is.y + x * P.is.x;
#pragma unroll
      for (int c = 0; c < C; ++c) val[r][c] = lut[c][static_cast<uint8_t>(in[io + c * P.is.c])];
    } else {
      augment_value_px<T, C>(in, P, s, st, b, y, x, val[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < kPix; ++r) {
    const int64_t y = y0 + r * kRows + threadIdx.y;
    if (y < P.height) augment_store_px<T, C>(out, P, b, y, x, val[r]);
  }
}

// ---------------------------------------------------------------------------------------------
// Fused programs (kernels::aug_cuts): per sample, rank pass r runs the segment that ends at its r-th
// cut, stores that image in scratch buffer r % 2 and feeds the cut slot's statistics when its op
// needs them (finalized by the finalize pass of rank r); the final pass runs the last segment
// into the output. A rank a sample does not reach costs its blocks one load of the plan.
// ---------------------------------------------------------------------------------------------

constexpr int kMaxFused = kernels::kAugMaxFusedSlots;
constexpr int kPlanWords = 1 + kMaxFused;  // the cut count, then the cuts
constexpr int kTilesPerBlock = 4;

struct FusedParams {
  AugmentParams a;    // is: the images', os: the output's strides; steps, warp
  Strides4 ss;        // the scratch buffers' strides
  const int32_t* plan;  // (B, kPlanWords)
  uint32_t* raw;      // (n, B, kColorRawWords), zeroed
  double* stats;      // (n, B, kColorStatFloats)
  uint8_t* luts;      // (n, B, 3 * 256)
  bool is_u8, is_f64;
};

// Slots [a, e) of a fused program on the pixel v (copies skipped). Not inlined: a segment pass
// runs it at every tap of its gather, and each inlined copy of the color ops' switch (hue's long
// code among them) cost compile time and registers for the common paths (uint8 tables, copies).
template <typename T, int C>
__device__ __noinline__ void run_fused_slots(const AugStepT<typename AccOf<T>::type>* st, int a, int e,
                                             const double* stats, const uint8_t* luts, int64_t batch, int64_t b,
                                             typename AccOf<T>::type* v) {
  for (int k = a; k < e; ++k) {
    const auto& s = st[k];
    if (s.kind != kernels::kAugKindColor) continue;
    const int64_t i = k * batch + b;
    color_slot<T, C>(s.op, v, s.p0, s.p1, s.om, {stats + i * kernels::kColorStatFloats, luts + i * 3 * 256});
  }
}

// A warp per sample: lane k lowers slot k (the step buffer), then lane 0 writes the sample's cuts
// (the plan).
constexpr int kPlanSamplesPerBlock = 4;
__global__ void __launch_bounds__(32 * kPlanSamplesPerBlock)
    augment_plan_kernel(const int64_t* __restrict__ ops, Strides2 os, const float* __restrict__ mags, Strides2 ms,
                        double* __restrict__ steps, int32_t* __restrict__ plan, int64_t B, int n, int64_t height,
                        int64_t width, double bound, bool bilinear) {
  __shared__ int s_kind[kPlanSamplesPerBlock][kMaxFused], s_op[kPlanSamplesPerBlock][kMaxFused];
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t b = static_cast<int64_t>(blockIdx.x) * kPlanSamplesPerBlock + w;
  if (b >= B) return;  // a whole warp
  if (lane < n) {
    const auto s = kernels::lower_aug(static_cast<int>(ops[os.at(b, lane)]), mags[ms.at(b, lane)], height, width, bound);
    kernels::store_aug_step(s, steps + (b * n + lane) * kernels::kAugStepWords);
    s_kind[w][lane] = s.kind;
    s_op[w][lane] = s.op;
  }
  __syncwarp();
  if (lane == 0) {
    int cuts[kMaxFused];
    const int count = kernels::aug_cuts(s_kind[w], s_op[w], n, bilinear, cuts);
    plan[b * kPlanWords] = count;
    for (int i = 0; i < count; ++i) plan[b * kPlanWords + 1 + i] = cuts[i];
  }
}

// How a run of pointwise slots is applied in a segment pass: not at all (copies only), by the
// block's uint8 table (separable color ops), or op by op.
enum RangeMode : int { kRangeNone = 0, kRangeTable = 1, kRangeOps = 2 };

// Rank pass (rank >= 0) or final pass (rank < 0) of a fused program. Blocks as the switch pass:
// a kTileW x kTileH tile of one sample. N: the affine tap count (the interpolation).
template <typename T, int C, int N>
__global__ void __launch_bounds__(kTileW * kRows, 3) augment_segment_kernel(const T* __restrict__ images, T* buf0, T* buf1,
                                                                         T* __restrict__ out, FusedParams F, int rank,
                                                                         int tiles_x, int tiles, bool words) {
  using acc_t = typename AccOf<T>::type;
  constexpr bool kU8 = std::is_same_v<T, uint8_t>;
  const AugmentParams& P = F.a;
  __shared__ int s_plan[kPlanWords];
  __shared__ AugStepT<acc_t> st[kMaxFused];
  __shared__ uint8_t lut[2][C][256];  // the table of the slots before the gather, and after it
  __shared__ uint32_t hist[3 * 256];
  const int tid = threadIdx.y * kTileW + threadIdx.x;
  const int64_t b = blockIdx.y;
  if (tid < kPlanWords) s_plan[tid] = F.plan[b * kPlanWords + tid];
  if (tid < P.n) st[tid] = aug_step_at<acc_t>(P, b, tid);  // n <= kMaxFused
  __syncthreads();
  const int ncuts = s_plan[0];
  const bool ranked = rank >= 0;
  if (ranked && rank >= ncuts) return;
  const int idx = ranked ? rank : ncuts;  // the segment ends at cut idx (or at n)
  const int begin = idx == 0 ? 0 : s_plan[idx];
  const int end = ranked ? s_plan[1 + rank] : static_cast<int>(P.n);
  // the segment's input: the images at slot 0, else the buffer the rank ending at `begin` stored
  const T* src = begin == 0 ? images : ((idx - 1) % 2 == 0 ? buf0 : buf1);
  const Strides4 ss = begin == 0 ? P.is : F.ss;
  T* dst = ranked ? (rank % 2 == 0 ? buf0 : buf1) : out;
  const Strides4 ds = ranked ? F.ss : P.os;
  const bool store = !ranked || end > begin;
  const int stats_op = ranked && st[end].kind == kernels::kAugKindColor && kernels::color_op_needs_stats(st[end].op)
                           ? st[end].op
                           : -1;
  int gather = -1;
  for (int k = begin; k < end; ++k) {
    if (st[k].kind == kernels::kAugKindAffine || st[k].kind == kernels::kAugKindSharpness) {
      gather = k;
      break;
    }
  }
  const int pre_end = gather >= 0 ? gather : end;  // pointwise slots [begin, pre_end) and (gather, end)
  auto range_mode = [&](int a, int e) {
    bool any = false, separable = true;
    for (int k = a; k < e; ++k) {
      if (st[k].kind != kernels::kAugKindColor) continue;
      any = true;
      separable = separable && kernels::color_op_is_separable(st[k].op);
    }
    return !any ? kRangeNone : (kU8 && separable ? kRangeTable : kRangeOps);
  };
  auto run_ops = [&](int a, int e, acc_t* v) {
    // through a copy: only the copy's address is taken, so that the caller's arrays (a tile's
    // values, sharpness's window) can stay in registers
    acc_t t[C];
#pragma unroll
    for (int c = 0; c < C; ++c) t[c] = v[c];
    run_fused_slots<T, C>(st, a, e, F.stats, F.luts, P.batch, b, t);
#pragma unroll
    for (int c = 0; c < C; ++c) v[c] = t[c];
  };
  const int pre_mode = range_mode(begin, pre_end);
  const int post_mode = gather >= 0 ? range_mode(gather + 1, end) : kRangeNone;
  if constexpr (kU8) {
    // kTileW * kRows == 256 threads: one table entry each
    if (pre_mode == kRangeTable || post_mode == kRangeTable) {
      float v[3] = {float(tid), float(tid), float(tid)};
      if (pre_mode == kRangeTable) {
        run_ops(begin, pre_end, v);
#pragma unroll
        for (int c = 0; c < C; ++c) lut[0][c][tid] = static_cast<uint8_t>(v[c]);
      }
      if (post_mode == kRangeTable) {
        v[0] = v[1] = v[2] = float(tid);
        run_ops(gather + 1, end, v);
#pragma unroll
        for (int c = 0; c < C; ++c) lut[1][c][tid] = static_cast<uint8_t>(v[c]);
      }
    }
  }
  if (stats_op == kernels::kColorEqualize) {
    for (int i = tid; i < 3 * 256; i += kTileW * kRows) hist[i] = 0;
  }
  __syncthreads();
  auto run_range = [&](int mode, int table, int a, int e, acc_t* v) {
    if (mode == kRangeTable) {
#pragma unroll
      for (int c = 0; c < C; ++c) v[c] = static_cast<acc_t>(lut[table][c][static_cast<int>(v[c])]);
    } else if (mode == kRangeOps) {
      run_ops(a, e, v);
    }
  };
  auto load_px = [&](int64_t y, int64_t x, acc_t* v) {
    const int64_t io = b * ss.b + y * ss.y + x * ss.x;
#pragma unroll
    for (int c = 0; c < C; ++c) v[c] = static_cast<acc_t>(src[io + c * ss.c]);
  };
  // the gather slot's input pixel (y, x): loaded, then the slots before the gather
  auto tap_px = [&](int64_t y, int64_t x, acc_t* v) {
    load_px(y, x, v);
    run_range(pre_mode, 0, begin, pre_end, v);
  };
  // the segment's result at pixel (y, x)
  auto value_px = [&](int64_t y, int64_t x, acc_t* v) {
    if (gather < 0) {
      tap_px(y, x, v);
      return;
    }
    const AugStepT<acc_t>& s = st[gather];
    if (s.kind == kernels::kAugKindAffine) {
      // warp_affine_px with each tap computed by the slots before the gather
      acc_t sx, sy;
      kernels::affine_source(s.m, x, y, &sx, &sy);
      const auto taps = kernels::affine_taps<acc_t, N>(sx, sy, P.height, P.width);
      acc_t sum[C];
#pragma unroll
      for (int c = 0; c < C; ++c) sum[c] = acc_t(0);
#pragma unroll
      for (int j = 0; j < N; ++j) {
        if (taps.valid[j]) {
          acc_t t[C];
          tap_px(taps.iy[j], taps.ix[j], t);
#pragma unroll
          for (int c = 0; c < C; ++c) sum[c] += taps.w[j] * t[c];
        }
      }
      const float* fill = P.warp.fill ? P.warp.fill + b * C : nullptr;
#pragma unroll
      for (int c = 0; c < C; ++c) {
        const acc_t fc = fill != nullptr ? static_cast<acc_t>(fill[c]) : acc_t(0);
        v[c] = kernels::PixelStore<T>::quantize(
            kernels::affine_blend(sum[c], taps.mask, fill != nullptr, fc, P.warp.interpolation));
      }
    } else {
      // sharpness (augment_value_px) with each window pixel computed by the slots before it
      const bool interior = y > 0 && x > 0 && y < P.height - 1 && x < P.width - 1;
      // window_sum's products in its order (row by row from 0), one tap at a time
      acc_t sum[C], center[C];
#pragma unroll
      for (int c = 0; c < C; ++c) sum[c] = acc_t(0);
      if (interior) {
        for (int i = 0; i < 9; ++i) {
          acc_t t[C];
          tap_px(y + i / 3 - 1, x + i % 3 - 1, t);
          const acc_t wi = static_cast<acc_t>(i == 4 ? 5.0 / 13.0 : 1.0 / 13.0);  // kernels::sharpness_weights
#pragma unroll
          for (int c = 0; c < C; ++c) {
            sum[c] = kernels::fma_of(wi, t[c], sum[c]);
            if (i == 4) center[c] = t[c];
          }
        }
      } else {
        tap_px(y, x, center);
      }
#pragma unroll
      for (int c = 0; c < C; ++c)
        v[c] = kernels::PixelStore<T>::quantize(kernels::sharpness_blend<acc_t, kU8>(center[c], sum[c], s.om, interior));
    }
    run_range(post_mode, 1, gather + 1, end, v);
  };
  ColorSlotAccum acc;
  auto feed = [&](const acc_t* v) {
    if (stats_op >= 0) acc.add<acc_t, kU8, C>(stats_op, v, [&](int i) { atomicAdd(&hist[i], 1u); });
  };
  auto store_px = [&](int64_t y, int64_t x, const acc_t* v) {
    if (!store) return;
    const int64_t o = b * ds.b + y * ds.y + x * ds.x;
#pragma unroll
    for (int c = 0; c < C; ++c) dst[o + c * ds.c] = kernels::PixelStore<T>::from(v[c]);
  };
  // the block's tiles: blockIdx.x, + gridDim.x, ... (its program, tables and statistics set up once)
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t x0 = static_cast<int64_t>(tile % tiles_x) * kTileW;
    const int64_t y0 = static_cast<int64_t>(tile / tiles_x) * kTileH;
    bool done = false;
    if constexpr (kU8) {
      if (words && gather < 0) {
        // dense uint8 rows: 4 pixels of one tile row per thread, one 32-bit word per channel
        done = true;
        const int64_t x = x0 + (tid % (kTileW / 4)) * 4, y = y0 + tid / (kTileW / 4);
        if (x < P.width && y < P.height) {
          const uint8_t* sp = reinterpret_cast<const uint8_t*>(src) + b * ss.b + y * ss.y + x;
          uint32_t wd[C];
#pragma unroll
          for (int c = 0; c < C; ++c) wd[c] = *reinterpret_cast<const uint32_t*>(sp + c * ss.c);
          if (pre_mode != kRangeNone || stats_op >= 0) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              float v[3];
#pragma unroll
              for (int c = 0; c < C; ++c) v[c] = static_cast<float>((wd[c] >> (8 * j)) & 0xffu);
              run_range(pre_mode, 0, begin, pre_end, v);
              feed(v);
#pragma unroll
              for (int c = 0; c < C; ++c)
                wd[c] = (wd[c] & ~(0xffu << (8 * j))) | (static_cast<uint32_t>(static_cast<uint8_t>(v[c])) << (8 * j));
            }
          }
          if (store) {
            uint8_t* dp = reinterpret_cast<uint8_t*>(dst) + b * ds.b + y * ds.y + x;
#pragma unroll
            for (int c = 0; c < C; ++c) *reinterpret_cast<uint32_t*>(dp + c * ds.c) = wd[c];
          }
        }
      }
    }
    if (!done) {
      const int64_t x = x0 + threadIdx.x;
      constexpr int kPix = kTileH / kRows;
      if (x < P.width) {
        if (gather >= 0 && st[gather].kind == kernels::kAugKindSharpness) {
          // pixel by pixel, as the switch pass does sharpness
          for (int r = 0; r < kPix; ++r) {
            const int64_t y = y0 + r * kRows + threadIdx.y;
            if (y >= P.height) continue;
            acc_t v[C];
            value_px(y, x, v);
            feed(v);
            store_px(y, x, v);
          }
        } else {
          // every value before the first store (the stores may alias the loads for all the compiler knows)
          acc_t val[kPix][C];
#pragma unroll
          for (int r = 0; r < kPix; ++r) {
            const int64_t y = y0 + r * kRows + threadIdx.y;
            if (y < P.height) value_px(y, x, val[r]);
          }
#pragma unroll
          for (int r = 0; r < kPix; ++r) {
            const int64_t y = y0 + r * kRows + threadIdx.y;
            if (y >= P.height) continue;
            feed(val[r]);
            store_px(y, x, val[r]);
          }
        }
      }
    }
  }
  if (stats_op >= 0) {
    color_stats_flush<kU8, C>(stats_op, acc, hist, F.raw + (end * P.batch + b) * kernels::kColorRawWords);
  }
}

// Finalize of rank r: the statistics of each sample's r-th cut, when its op needs them.
__global__ void __launch_bounds__(kColorStatsThreads) augment_finalize_kernel(FusedParams F, int r) {
  const int64_t b = blockIdx.x;
  const int32_t* plan = F.plan + b * kPlanWords;
  if (r >= plan[0]) return;
  const int k = plan[1 + r];
  const double* step = F.a.steps + (b * F.a.n + k) * kernels::kAugStepWords;
  const int kind = static_cast<int>(step[0]), op = static_cast<int>(step[1]);
  if (kind != kernels::kAugKindColor || !kernels::color_op_needs_stats(op)) return;
  const int64_t i = k * F.a.batch + b;
  color_finalize_slot(op, F.raw + i * kernels::kColorRawWords, F.stats + i * kernels::kColorStatFloats,
                      F.luts + i * 3 * 256, F.a.height * F.a.width, F.a.channels, F.is_u8, F.is_f64);
}

// A whole program of at most kMaxFused slots: plan, then per rank a segment pass and a finalize,
// then the final segment pass into out.
void augment_program_cuda(const at::Tensor& images, const at::Tensor& out, const at::Tensor& ops,
                          const at::Tensor& magnitudes, int64_t interpolation, const at::Tensor& fill) {
  const c10::cuda::CUDAGuard guard(images.device());
  const int64_t B = images.size(0), n = ops.size(1);
  TORCHAUG_CHECK(B <= 65535, "torchaug::augment: batches of more than 65535 images are not supported on CUDA, got ", B);
  TORCHAUG_CHECK(n <= kMaxFused, "torchaug::augment: internal: a fused program has at most ", kMaxFused, " slots");
  const auto opts = images.options();
  const auto stream = c10::cuda::getCurrentCUDAStream();
  FusedParams F;
  AugmentParams& P = F.a;
  set_image_layout(P, images, out);
  P.n = n;
  P.warp = warp_affine_params(images, out, interpolation, fill);
  P.stats = nullptr;
  P.luts = nullptr;
  F.is_u8 = images.scalar_type() == at::kByte;
  F.is_f64 = images.scalar_type() == at::kDouble;
  const at::Tensor steps = at::empty({B, n, kernels::kAugStepWords}, opts.dtype(at::kDouble));
  const at::Tensor plan = at::empty({B, kPlanWords}, opts.dtype(at::kInt));
  double* step_words = steps.data_ptr<double>();
  int32_t* plan_words = plan.data_ptr<int32_t>();
  P.steps = step_words;
  F.plan = plan_words;
  const double bound = images.scalar_type() == at::kByte ? 255.0 : 1.0;
  augment_plan_kernel<<<static_cast<unsigned>((B + kPlanSamplesPerBlock - 1) / kPlanSamplesPerBlock),
                        32 * kPlanSamplesPerBlock, 0, stream>>>(
      ops.data_ptr<int64_t>(), strides2(ops), magnitudes.data_ptr<float>(), strides2(magnitudes), step_words, plan_words, B,
      static_cast<int>(n), P.height, P.width, bound, interpolation != kernels::kNearest);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const at::Tensor raw = at::zeros({n, B, kernels::kColorRawWords}, opts.dtype(at::kInt));
  const at::Tensor stats = at::empty({n, B, kernels::kColorStatFloats}, opts.dtype(at::kDouble));
  const at::Tensor luts = at::empty({n, B, 3 * 256}, opts.dtype(at::kByte));
  F.raw = reinterpret_cast<uint32_t*>(raw.data_ptr<int32_t>());
  F.stats = stats.data_ptr<double>();
  F.luts = luts.data_ptr<uint8_t>();
  // a rank's segment ends at a cut after slot 0 only in programs of 2 slots or more
  const at::Tensor buf0 = n > 1 ? at::empty_like(out) : at::Tensor(), buf1 = n > 1 ? at::empty_like(out) : at::Tensor();
  F.ss = n > 1 ? strides4(buf0) : P.os;
  const int tiles_x = static_cast<int>((P.width + kTileW - 1) / kTileW);
  const int64_t tiles = tiles_x * ((P.height + kTileH - 1) / kTileH);
  TORCHAUG_CHECK(tiles <= 0x7fffffff, "torchaug::augment: images of ", P.height, "x", P.width, " are too large");
  // kTilesPerBlock tiles per block: each block loads its sample's plan and program and builds its
  // tables once for them
  const dim3 grid(static_cast<unsigned>((tiles + kTilesPerBlock - 1) / kTilesPerBlock), static_cast<unsigned>(B));
  const dim3 block(kTileW, kRows);
  auto dense_words = [](const at::Tensor& t) {
    return !t.defined() || (t.stride(3) == 1 && t.stride(2) % 4 == 0 && t.stride(1) % 4 == 0 && t.stride(0) % 4 == 0 &&
                            reinterpret_cast<uintptr_t>(t.data_ptr()) % 4 == 0);
  };
  const bool words = images.scalar_type() == at::kByte && P.width % 4 == 0 && dense_words(images) &&
                     dense_words(out) && dense_words(buf0) && dense_words(buf1);
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "augment_cuda", [&] {
    with_channels(P.channels, [&](auto ch) {
      constexpr int C = decltype(ch)::value;
      with_affine_taps(interpolation, [&](auto taps) {
        const auto kernel = augment_segment_kernel<scalar_t, C, decltype(taps)::value>;
        const scalar_t* in = images.data_ptr<scalar_t>();
        scalar_t* b0 = buf0.defined() ? buf0.data_ptr<scalar_t>() : nullptr;
        scalar_t* b1 = buf1.defined() ? buf1.data_ptr<scalar_t>() : nullptr;
        scalar_t* o = out.data_ptr<scalar_t>();
        // a sample has at most n cuts
        for (int r = 0; r < n; ++r) {
          kernel<<<grid, block, 0, stream>>>(in, b0, b1, o, F, r, tiles_x, static_cast<int>(tiles), words);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
          augment_finalize_kernel<<<static_cast<unsigned>(B), kColorStatsThreads, 0, stream>>>(F, r);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
        kernel<<<grid, block, 0, stream>>>(in, b0, b1, o, F, -1, tiles_x, static_cast<int>(tiles), words);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
    });
  });
}

void augment_lower_cuda(const at::Tensor& ops, const at::Tensor& magnitudes, const at::Tensor& steps, int64_t height,
                        int64_t width, double bound) {
  const c10::cuda::CUDAGuard guard(ops.device());
  const int64_t B = ops.size(0), n = ops.size(1), total = B * n;
  const int threads = 128;
  const unsigned blocks = static_cast<unsigned>((total + threads - 1) / threads);
  augment_lower_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
      ops.data_ptr<int64_t>(), strides2(ops), magnitudes.data_ptr<float>(), strides2(magnitudes),
      steps.data_ptr<double>(), B, n, height, width, bound);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void augment_slot_cuda(const at::Tensor& in, const at::Tensor& out, const AugmentParams& P, int64_t k) {
  const c10::cuda::CUDAGuard guard(in.device());
  TORCHAUG_CHECK(P.batch <= 65535, "torchaug::augment: batches of more than 65535 images are not supported on CUDA, got ",
                 P.batch);
  const int tiles_x = static_cast<int>((P.width + kTileW - 1) / kTileW);
  const int64_t tiles = tiles_x * ((P.height + kTileH - 1) / kTileH);
  TORCHAUG_CHECK(tiles <= 0x7fffffff, "torchaug::augment: images of ", P.height, "x", P.width, " are too large");
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(P.batch));
  const dim3 block(kTileW, kRows);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  // dense uint8 rows of whole 32-bit words (kTileW is a multiple of 4): copy and color slots move
  // 4 pixels per load and store
  const bool words = in.scalar_type() == at::kByte && P.is.x == 1 && P.os.x == 1 && P.width % 4 == 0 &&
                     P.is.y % 4 == 0 && P.is.c % 4 == 0 && P.is.b % 4 == 0 && P.os.y % 4 == 0 && P.os.c % 4 == 0 &&
                     P.os.b % 4 == 0 && reinterpret_cast<uintptr_t>(in.data_ptr()) % 4 == 0 &&
                     reinterpret_cast<uintptr_t>(out.data_ptr()) % 4 == 0;
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, in.scalar_type(), "augment_cuda", [&] {
    with_channels(P.channels, [&](auto ch) {
      augment_slot_kernel<scalar_t, decltype(ch)::value><<<grid, block, 0, stream>>>(
          in.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), P, k, tiles_x, words);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
}

const AugmentBackend kCudaBackend{augment_lower_cuda, color_stats_cuda, augment_slot_cuda, augment_program_cuda};

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CUDA, m) { register_augment_ops<kCudaBackend>(m); }

}  // namespace torchaug
