// Device code of the color statistics shared by the color family's passes (color.cu) and the
// augment programs' (augment.cu): merging a block's per-thread accumulators into a slot's raw
// statistics, and deriving a slot's statistics from them. Blocks of kColorStatsThreads threads.
#pragma once

#include "../color_impl.h"

namespace torchaug {

constexpr int kColorStatsThreads = 256;

// Adds the thread's accumulator of statistics op `op` (and the block's shared equalize histogram
// `hist`, C * 256 bins) to raw. Every thread of the block calls it with the same op (blocks of any
// shape, a multiple of 32 threads).
template <bool kU8, int C>
__device__ inline void color_stats_flush(int op, ColorSlotAccum& acc, const uint32_t* hist, uint32_t* raw) {
  unsigned long long* raw64 = reinterpret_cast<unsigned long long*>(raw);
  // blocks of any shape: the bins are split over the block's threads by linear index
  const int tid = threadIdx.y * blockDim.x + threadIdx.x, threads = blockDim.x * blockDim.y;
  const int lane = tid % 32;
  if (op == kernels::kColorContrast) {
    for (int off = 16; off > 0; off /= 2) {
      acc.usum += __shfl_down_sync(0xffffffffu, acc.usum, off);
      acc.fsum += __shfl_down_sync(0xffffffffu, acc.fsum, off);
    }
    if (lane == 0) {
      if (kU8) atomicAdd(&raw64[0], static_cast<unsigned long long>(acc.usum));
      else atomicAdd(reinterpret_cast<double*>(&raw64[0]), acc.fsum);
    }
  } else if (op == kernels::kColorAutocontrast) {
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
    for (int i = tid; i < C * 256; i += threads)
      if (hist[i]) atomicAdd(&raw[i], hist[i]);
  }
}

// Raw -> derived statistics of one (sample, slot) whose op is `op`, for an image of n pixels and
// `channels` channels; every thread of the block (kColorStatsThreads) calls it. Contrast and
// autocontrast: a thread per channel. Equalize: per channel, the 256 bins in parallel (the last
// non-empty bin by an atomic max, the cumulative counts by a scan), with the arithmetic of
// kernels::equalize_derive_channel.
__device__ inline void color_finalize_slot(int op, const uint32_t* raw, double* f, uint8_t* lut, int64_t n,
                                           int64_t channels, bool u8, bool f64) {
  const uint64_t* raw64 = reinterpret_cast<const uint64_t*>(raw);
  const int t = threadIdx.x;
  if (op == kernels::kColorEqualize) {
    __shared__ unsigned long long scan[kColorStatsThreads];
    __shared__ int last;
    for (int c = 0; c < channels; ++c) {
      const uint32_t* hist = raw + c * 256;
      const uint32_t h = hist[t];
      if (t == 0) last = 0;
      scan[t] = h;
      __syncthreads();
      if (h != 0) atomicMax(&last, t);
      for (int off = 1; off < kColorStatsThreads; off *= 2) {
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
  if (t >= channels) return;
  if (op == kernels::kColorContrast) {
    if (t == 0) kernels::contrast_derive(raw64, u8, f64, n, f);
  } else {
    kernels::autocontrast_derive_channel(raw64, t, u8, f64, f);
  }
}

}  // namespace torchaug
