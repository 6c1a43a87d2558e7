// CUDA kernels of resized_crop (dense and ragged batches, with the fused flip and normalize
// epilogue) and its backward: separable tiles (below), built from the same axis functions as the
// CPU backend, with its per-pixel driver (csrc/ops/geometry.h) as the fallback.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/Atomic.cuh>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <climits>
#include <cmath>
#include <type_traits>

#include "../ops/geometry.h"
#include "dependent_launch.cuh"
#include "shared_opt_in.cuh"
#include "tiles.cuh"

namespace torchaug {
namespace {

// resized_crop, separable, one block per 32 x (8 * kRowsPerThread) output tile of one sample:
//  1. the taps of the tile's 32 columns and rows (input offsets and normalised weights from the
//     shared axis functions) are tabulated in shared memory; out-of-image taps get weight 0
//     (torchvision's zero padding);
//  2. horizontal pass: every input row the tile's rows need is resampled to the 32 output columns
//     into shared memory (each input pixel converted once per column tap, loads coalesced along
//     the row; the whole region is first asked of L2, prefetch_region);
//  3. vertical pass: each thread combines those rows for its kRowsPerThread output pixels and
//     runs the fused cast / normalize epilogue.
// A tile whose taps do not fit the tables (a downscale by more than ~kMaxTaps/2 per axis with
// antialias) or whose input rows exceed the region sized at launch takes the per-pixel driver
// instead: same taps, same weights, the 2-D sum.
constexpr int kMaxTaps = 16;
// The channels whose normalize constants a tile keeps in shared memory (s_norm); a normalized float32
// output of more channels takes the generic store (resized_crop_store), with the same values.
constexpr int kMaxNormChannels = 8;

// min / max over a warp (all 32 lanes take part)
__device__ __forceinline__ int warp_min(int v) {
#if __CUDA_ARCH__ >= 800
  return __reduce_min_sync(0xffffffffu, v);
#else
  for (int o = 16; o > 0; o >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
#endif
}
__device__ __forceinline__ int warp_max(int v) {
#if __CUDA_ARCH__ >= 800
  return __reduce_max_sync(0xffffffffu, v);
#else
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
#endif
}

// A vertical tap: the row (see s_ytap) and its weight, read by one 8-byte (float) load
template <typename acc_t>
struct alignas(2 * sizeof(acc_t)) RowTap {
  int row;
  acc_t w;
};

// The tile kernel's epilogues: resized_crop_store (any output), float32 written out (scaled, or
// normalized), uint8 written out.
constexpr int kOutGeneric = 0;
constexpr int kOutF32 = 1;
constexpr int kOutF32Norm = 2;
constexpr int kOutU8 = 3;

// Dynamic shared memory for the horizontally resampled rows: region_rows x the channels of a chunk
// x 32 columns, plus a row of zeros, sized at launch from the tile height and the crop scale bound.
constexpr int kMaxRegionBytes = 42 * 1024;

// How the horizontal pass turns a uint8 tap into a product ("scaled taps"; other dtypes multiply
// the pixel as it is): the byte's bits read as a float are v * 2^-149 exactly (a subnormal), and
// the column weights are tabulated times 2^126, so one FFMA adds w * v * 2^-23 (a normal number);
// the row's sum is scaled back by 2^23 once. Scaling normal numbers by a power of two commutes with
// rounding, so every sum is bitwise the one that converting the byte to float and multiplying gives
// (three ALU instructions a tap instead of one; 1-3% of the whole kernel's time on an H100). The
// FFMA is inline PTX without .ftz, so a -ftz / --use_fast_math build keeps the subnormal operand.
constexpr float kTapWeightScale = 0x1p126f;
constexpr float kTapSumScale = 0x1p23f;

__device__ __forceinline__ float fma_keep_subnormals(float a, float b, float c) {
  float d;
  asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(a), "f"(b), "f"(c));
  return d;
}

// acc + w * pixel in the tap mode kScaled selects (w already scaled by the table when it does;
// resized_crop_kernel asserts that scaled taps come with uint8 images and a float accumulator)
template <bool kScaled, typename acc_t, typename scalar_t>
__device__ __forceinline__ acc_t add_tap(acc_t acc, acc_t w, scalar_t v) {
  if constexpr (kScaled) {
    return fma_keep_subnormals(w, __uint_as_float(static_cast<uint32_t>(v)), acc);
  } else {
    return fma(w, static_cast<acc_t>(v), acc);  // the FFMA nvcc contracts `acc + w * p` to, spelled out
  }
}

template <bool kScaled, typename acc_t>
__device__ __forceinline__ acc_t finish_taps(acc_t acc) {
  if constexpr (kScaled) {
    return acc * kTapSumScale;
  } else {
    return acc;
  }
}

// Asks L2 for the lines holding columns xlo..xhi of image rows ylo .. ylo + nrows - 1 of every
// channel (prefetch.global.L2: a hint, no register written, nothing waits for it), threads t of
// nthreads taking (row, channel) segments in turn. Every address prefetched is a byte of the image:
// a segment's first byte and the starts of the further lines up to its last byte. kC: the channel
// count when the kernel is compiled for it (3: the segment index's division is a multiply, not
// int64 division's subroutine), else 0 and `channels`.
template <int kC, typename scalar_t>
__device__ __forceinline__ void prefetch_region(const scalar_t* base, const kernels::ImageView& v, int64_t channels,
                                                int ylo, int nrows, int xlo, int xhi, int t, int nthreads) {
  using index_t = std::conditional_t<(kC > 0), int, int64_t>;
  constexpr uintptr_t kLine = 128;
  const index_t ch = kC > 0 ? kC : channels;
  const index_t segments = nrows * ch;
  for (index_t i = t; i < segments; i += nthreads) {
    const index_t r = i / ch, c = i - r * ch;
    const scalar_t* row = base + static_cast<int64_t>(ylo + r) * v.stride_y + c * v.stride_c;
    const uintptr_t first = reinterpret_cast<uintptr_t>(row + static_cast<int64_t>(xlo) * v.stride_x);
    const uintptr_t last = reinterpret_cast<uintptr_t>(row + static_cast<int64_t>(xhi) * v.stride_x) + sizeof(scalar_t) - 1;
    asm volatile("prefetch.global.L2 [%0];" ::"l"(first));
    for (uintptr_t a = (first & ~(kLine - 1)) + kLine; a <= last; a += kLine) asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
  }
}

// The input of the tile whose output rows start at row0 and columns at col0 (rows_out x kTileX
// outputs), asked of L2 (prefetch_region) by threads t of nthreads while other warps make the tap
// tables, so that the horizontal pass finds it there. The rows and columns come from the box and the
// output range alone: each output coordinate o reads input pixels within 3 * max(scale, 1) + 2 of
// o * scale (every interpolation's taps do: antialiased bicubic's reach 2.5 * scale + 1 the
// farthest), clamped to the image; a region taller than max_rows is not asked for (a bound on the
// work of a tile that takes the per-pixel path). A hint: a row more or less changes no result,
// and every address is inside the image whatever the box holds.
template <int kC, typename scalar_t>
__device__ __forceinline__ void prefetch_tile(const scalar_t* base, const kernels::ImageView& v,
                                              const ResizedCropParams& p, const int64_t (&box)[4], bool flipped,
                                              int row0, int rows_out, int col0, int max_rows, int t, int nthreads) {
  if (v.height <= 0 || v.width <= 0) return;
  const float out_h = static_cast<float>(p.out_h), out_w = static_cast<float>(p.out_w);
  const float sy = static_cast<float>(box[2]) / out_h, sx = static_cast<float>(box[3]) / out_w;
  const float ry = 3.0f * fmaxf(sy, 1.0f) + 2.0f, rx = 3.0f * fmaxf(sx, 1.0f) + 2.0f;
  // the crop columns [c0, c1) that the tile's output columns read (mirrored under the sample's flip)
  const int64_t first = resized_crop_source_column(p, flipped, col0);
  const int64_t last = resized_crop_source_column(p, flipped, min(col0 + kTileX, static_cast<int>(p.out_w)) - 1);
  const float c0 = static_cast<float>(min(first, last)), c1 = static_cast<float>(max(first, last) + 1);
  const float top = static_cast<float>(box[0]), left = static_cast<float>(box[1]);
  // to an index of the image (the device's conversion saturates, and takes NaN to 0): any box gives
  // rows and columns of the image
  const auto inside = [](float f, int64_t n) { return static_cast<int>(min(max(static_cast<int64_t>(f), int64_t(0)), n - 1)); };
  const int ylo = inside(top + floorf(row0 * sy - ry), v.height);
  const int yhi = inside(top + ceilf((row0 + rows_out) * sy + ry), v.height);
  const int xlo = inside(left + floorf(c0 * sx - rx), v.width);
  const int xhi = inside(left + ceilf(c1 * sx + rx), v.width);
  if (yhi - ylo + 1 > max_rows) return;
  prefetch_region<kC>(base + v.offset, v, p.channels, ylo, yhi - ylo + 1, xlo, xhi, t, nthreads);
}

// The horizontal pass when every column's taps are consecutive pixels inside the image (the
// common case: antialiased or interior taps of a box inside the image, W contiguous): the taps are
// loads at immediate offsets from one address per channel, kT of them unrolled and predicated on
// the column's tap count, all in flight together. Same products, same order as the general loop.
template <int kT, int kChunk, bool kScaled, typename scalar_t, typename acc_t>
__device__ __forceinline__ void horizontal_consecutive(const scalar_t* __restrict__ cbase, int64_t stride_y,
                                                       const int64_t* coff, int64_t nc, int ylo, int nrows, int tx,
                                                       int ty, const int64_t* s_xfirst, const int* s_xn,
                                                       const acc_t (*s_xw)[kTileX], acc_t* s_h) {
  // thread (tx, ty) resamples column tx of region rows ty, ty + 8, ...: its weights stay in registers
  const int xn = s_xn[tx];
  acc_t w[kT];
  TORCHAUG_UNROLL
  for (int j = 0; j < kT; ++j) w[j] = j < xn ? s_xw[j][tx] : acc_t(0);
  // each channel's pointer to the column's first tap in the thread's next row, moved kTileY rows on
  // an iteration: one 64-bit add a channel a row, where each row's offset computed anew takes a 64-bit
  // multiply and adds for every row and channel (~3% of the kernel's instructions)
  const scalar_t* colp = cbase + static_cast<int64_t>(ylo + ty) * stride_y + (xn > 0 ? s_xfirst[tx] : 0);
  const scalar_t* pcs[kChunk];
  TORCHAUG_UNROLL
  for (int c = 0; c < kChunk; ++c) pcs[c] = c < nc ? colp + coff[c] : colp;
  const int64_t step = kTileY * stride_y;
  // two rows an iteration: twice the loads in flight before the first FFMA waits on them (the
  // kernel's main stall in Nsight Compute's profile), and ~5 fewer instructions a row
#pragma unroll 2
  for (int r = ty; r < nrows; r += kTileY) {
    TORCHAUG_UNROLL
    for (int c = 0; c < kChunk; ++c) {
      acc_t acc = 0;
      if (c < nc) {
        const scalar_t* pc = pcs[c];
        TORCHAUG_UNROLL
        for (int j = 0; j < kT; ++j) {
          if (j < xn) acc = add_tap<kScaled>(acc, w[j], pc[j]);
        }
        pcs[c] = pc + step;
      }
      s_h[(r * kChunk + c) * kTileX + tx] = finish_taps<kScaled>(acc);
    }
  }
}

// The horizontal pass in general (taps anywhere, any layout): item i = (region row i / 32,
// column i % 32), every tap's offset from the table.
template <int kChunk, bool kScaled, typename scalar_t, typename acc_t>
__device__ __forceinline__ void horizontal_general(const scalar_t* __restrict__ cbase, int64_t stride_y,
                                                   const int64_t* coff, int64_t nc, int ylo, int nrows, int tid,
                                                   const int (*s_xoff)[kTileX], const int* s_xn,
                                                   const acc_t (*s_xw)[kTileX], acc_t* s_h) {
  for (int i = tid; i < nrows * kTileX; i += kTileX * kTileY) {
    const int r = i / kTileX, col = i % kTileX;
    const scalar_t* rowp = cbase + static_cast<int64_t>(ylo + r) * stride_y;
    acc_t acc[kChunk];
    TORCHAUG_UNROLL
    for (int c = 0; c < kChunk; ++c) acc[c] = 0;
    const int xn = s_xn[col];
    for (int j = 0; j < xn; ++j) {
      const acc_t w = s_xw[j][col];
      const scalar_t* px = rowp + s_xoff[j][col];
      TORCHAUG_UNROLL
      for (int c = 0; c < kChunk; ++c) {
        if (c < nc) acc[c] = add_tap<kScaled>(acc[c], w, px[coff[c]]);
      }
    }
    TORCHAUG_UNROLL
    for (int c = 0; c < kChunk; ++c) s_h[(r * kChunk + c) * kTileX + col] = finish_taps<kScaled>(acc[c]);
  }
}

// The vertical pass's tap count for a tile whose rows have at most n taps: the next count it is
// compiled for (2, 3, 4, 5, 6, 8, kMaxTaps).
__device__ __forceinline__ int vertical_taps(int n) {
  return n <= 2 ? 2 : n <= 6 ? n : n <= 8 ? 8 : kMaxTaps;
}

// round_to_uint8 (half to even, saturated to [0, 255]) as a byte in one convert instead of two
// min / max, a round and a convert: the same byte for every float (NaN gives 0 too).
__device__ __forceinline__ uint32_t round_sat_u8(float v) {
  uint32_t r;
  asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(r) : "f"(v));
  return r;
}

// kC: the channel count when it is 3 (compile-time loops, no predication), 0 for any other count
// (chunks of kChannelChunk).
// kRowsPerThread: output rows per thread (the tile is 32 x 8 * kRowsPerThread outputs).
// uint8 images take scaled taps (above).
template <int kC, int kRowsPerThread, typename scalar_t, typename Batch>
__global__ void __launch_bounds__(kTileX* kTileY, 4)
    resized_crop_kernel(const scalar_t* __restrict__ in, Batch batch, ResizedCropParams p, int64_t B, int region_rows) {
  using acc_t = typename AccOf<scalar_t>::type;
  constexpr bool kScaled = std::is_same<scalar_t, uint8_t>::value;
  static_assert(!kScaled || std::is_same<acc_t, float>::value, "scaled taps accumulate in float");
  const acc_t weight_scale = kScaled ? acc_t(kTapWeightScale) : acc_t(1);
  constexpr int kTileRows = kTileY * kRowsPerThread;
  constexpr int kChunk = kC > 0 ? kC : kChannelChunk;
  // each column's taps: offset in the row (x * stride_x: a tile whose image rows exceed an int's
  // range takes the per-pixel path), weight, count
  __shared__ int s_xoff[kMaxTaps][kTileX];
  __shared__ acc_t s_xw[kMaxTaps][kTileX];
  __shared__ int s_xn[kTileX];
  __shared__ int64_t s_xfirst[kTileX];  // offset of each column's first tap
  // each tap of each tile row: first its input row (-1 outside the image, weight -0), then, once the
  // region is known, the offset of that row in s_h (outside the image: the zero row past the region)
  __shared__ RowTap<acc_t> s_ytap[kTileRows][kMaxTaps];
  __shared__ int s_yn[kTileRows];
  extern __shared__ __align__(16) unsigned char s_dynamic[];
  // [region row][channel][column], then one row of zeros (region row region_rows)
  acc_t* s_h = reinterpret_cast<acc_t*>(s_dynamic);
  __shared__ int s_ylo, s_yhi, s_fits, s_xmaxn, s_ymaxn, s_consecutive;
  // the sample's normalize constants for kOutF32Norm (float accumulators, a float32 output of at most
  // kMaxNormChannels channels), made by warp 3's first lanes while warps 0-2 make the tap tables
  __shared__ kernels::NormalizeConstants s_norm[kMaxNormChannels];
  constexpr bool kNormTile = std::is_same<acc_t, float>::value;
  const bool norm_tile = kNormTile && p.out_kind == kPixF32 && p.mean != nullptr && p.channels <= kMaxNormChannels;

  dependent_launch_begin();
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kTileX + tx;
  for (int i = tid; i < kChunk * kTileX; i += kTileX * kTileY) s_h[region_rows * kChunk * kTileX + i] = acc_t(0);
  // 32-bit indices (the launch checks B and the output size): fewer registers than int64, which
  // this kernel, at its 64-register bound, otherwise spills (b reloaded from local memory per row)
  const int out_h = static_cast<int>(p.out_h), out_w = static_cast<int>(p.out_w);
  const int ox = static_cast<int>(blockIdx.x) * kTileX + tx;
  const int row0 = static_cast<int>(blockIdx.y) * kTileRows;
  for (int b = blockIdx.z; b < B; b += gridDim.z) {
    const kernels::ImageView v = batch.view(b);
    // the sample's box and flip, asked for before the barrier below so that their latency overlaps it
    const int64_t* box_p = p.boxes + 4 * static_cast<int64_t>(b);
    const int64_t box[4] = {box_p[0], box_p[1], box_p[2], box_p[3]};
    const bool flipped = resized_crop_flipped(p, b);
    if (tid == 0) {
      s_ylo = INT_MAX;
      s_yhi = -1;
      s_fits = 1;
      s_ymaxn = 0;
    }
    __syncthreads();
    // 1. tap tables: warp 0 the 32 columns, warps 1 and 2 the tile's rows (one each per lane for
    // tiles up to 64 rows), so that the other warps wait at the barrier below for one axis
    // computation, not two; min / max / all reduced in the warp, one shared write per warp. Warps
    // 3.. meanwhile ask L2 for the tile's input (prefetch_tile), which the horizontal pass would
    // otherwise wait on DRAM for.
    if (ty == 0) {
      int n = 0;
      bool consecutive = v.stride_x == 1;  // taps x0, x0 + 1, ... all inside the image
      if (ox < out_w) {
        const auto ax = kernels::make_resample_axis<acc_t>(p.interpolation, p.antialias, box[3], p.out_w,
                                                           resized_crop_source_column(p, flipped, ox));
        if (ax.count > kMaxTaps || (v.width - 1) * v.stride_x > INT_MAX) {
          s_fits = 0;
        } else {
          n = static_cast<int>(ax.count);
          const int64_t x0 = box[1] + kernels::axis_index(ax, 0);
          for (int j = 0; j < n; ++j) {
            const int64_t x = box[1] + kernels::axis_index(ax, j);
            const bool valid = x >= 0 && x < v.width;
            consecutive = consecutive && valid && x == x0 + j;
            s_xoff[j][tx] = valid ? static_cast<int>(x * v.stride_x) : 0;
            s_xw[j][tx] = valid ? kernels::axis_weight(ax, j) * weight_scale : acc_t(0);
          }
          s_xfirst[tx] = x0 * v.stride_x;
        }
      }
      s_xn[tx] = n;
      const int maxn = warp_max(n);
      const bool all_consecutive = __all_sync(0xffffffffu, consecutive);
      if (tx == 0) {
        s_xmaxn = maxn;
        s_consecutive = all_consecutive;
      }
    } else if (ty <= 2) {
      int lo = INT_MAX, hi = -1, maxn = 0;
      for (int tr = tx + (ty - 1) * kTileX; tr < kTileRows; tr += 2 * kTileX) {
        const int oy = row0 + tr;
        int n = 0;
        if (oy < out_h) {
          const auto ay = kernels::make_resample_axis<acc_t>(p.interpolation, p.antialias, box[2], p.out_h, oy);
          if (ay.count > kMaxTaps) {
            s_fits = 0;
          } else {
            n = static_cast<int>(ay.count);
            for (int j = 0; j < n; ++j) {
              const int64_t y = box[0] + kernels::axis_index(ay, j);
              const bool valid = y >= 0 && y < v.height;
              s_ytap[tr][j] = {valid ? static_cast<int>(y) : -1, valid ? kernels::axis_weight(ay, j) : acc_t(-0.0)};
              if (valid) {
                lo = min(lo, static_cast<int>(y));
                hi = max(hi, static_cast<int>(y));
              }
            }
          }
        }
        s_yn[tr] = n;
        maxn = max(maxn, n);
      }
      lo = warp_min(lo);
      hi = warp_max(hi);
      maxn = warp_max(maxn);
      if (tx == 0 && hi >= 0) {
        atomicMin(&s_ylo, lo);
        atomicMax(&s_yhi, hi);
      }
      if (tx == 0) atomicMax(&s_ymaxn, maxn);
    } else {
      if (ty == 3 && norm_tile && tx < p.channels) {
        s_norm[tx] = kernels::normalize_constants(p.inv_max, p.mean[p.ms.at(b, tx)], p.std[p.ss.at(b, tx)]);
      }
      prefetch_tile<kC>(in, v, p, box, flipped, row0, min(out_h - row0, kTileRows), static_cast<int>(blockIdx.x) * kTileX,
                        2 * region_rows, tid - 3 * kTileX, kTileX * (kTileY - 3));
    }
    __syncthreads();
    const int ylo = s_ylo;
    const int nrows = s_yhi >= ylo ? s_yhi - ylo + 1 : 0;
    if (!s_fits || nrows > region_rows) {
      for (int r = 0; r < kRowsPerThread; ++r) {
        const int oy = row0 + ty + r * kTileY;
        if (ox < out_w && oy < out_h) resized_crop_output_px(in, batch, p, b, oy, ox);
      }
      __syncthreads();  // s_fits etc. are rewritten for the next sample
      continue;
    }
    // the taps' rows as offsets into s_h, read after the horizontal pass's barrier. A tap outside the
    // image (torchvision's zero padding: skipped before) reads the zero row with weight -0: it adds
    // (-0) * (+0) = -0, which leaves every sum as it is (x + -0 == x bitwise, for x = +-0 too), so
    // the vertical loop has no branch and the sums are bitwise those of skipping the tap. Every row's
    // list is padded with such taps up to the tile's tap count rounded up to the vertical pass's
    // (vertical_taps), so that the pass runs a compile-time number of taps for every row: entries
    // j < 8 (or kMaxTaps where ytaps is larger) of the tile's rows inside the output are visited.
    const int ytaps = vertical_taps(s_ymaxn);
    const int tap_bits = ytaps <= 8 ? 3 : 4;
    static_assert(kMaxTaps == 16, "the tap index takes 4 bits");
    for (int i = tid; i < (min(out_h - row0, kTileRows) << tap_bits); i += kTileX * kTileY) {
      const int tr = i >> tap_bits, j = i & ((1 << tap_bits) - 1);
      if (j < s_yn[tr]) {
        const int y = s_ytap[tr][j].row;
        s_ytap[tr][j].row = (y >= 0 ? y - ylo : region_rows) * kChunk * kTileX;
      } else if (j < ytaps) {
        s_ytap[tr][j] = {region_rows * kChunk * kTileX, acc_t(-0.0)};
      }
    }
    for (int64_t c0 = 0; c0 < p.channels; c0 += kChunk) {
      const int64_t nc = kC > 0 ? kC : kernels::min_of<int64_t>(kChannelChunk, p.channels - c0);
      // 2. horizontal pass over the region rows: item i = (region row i / 32, column i % 32)
      int64_t coff[kChunk];
      TORCHAUG_UNROLL
      for (int c = 0; c < kChunk; ++c) coff[c] = c * v.stride_c;
      const scalar_t* cbase = in + v.offset + c0 * v.stride_c;
      if (s_consecutive && s_xmaxn <= 3) {
        horizontal_consecutive<3, kChunk, kScaled>(cbase, v.stride_y, coff, nc, ylo, nrows, tx, ty, s_xfirst, s_xn, s_xw, s_h);
      } else if (s_consecutive && s_xmaxn <= 4) {
        horizontal_consecutive<4, kChunk, kScaled>(cbase, v.stride_y, coff, nc, ylo, nrows, tx, ty, s_xfirst, s_xn, s_xw, s_h);
      } else if (s_consecutive && s_xmaxn <= 5) {
        horizontal_consecutive<5, kChunk, kScaled>(cbase, v.stride_y, coff, nc, ylo, nrows, tx, ty, s_xfirst, s_xn, s_xw, s_h);
      } else if (s_consecutive && s_xmaxn <= 6) {
        horizontal_consecutive<6, kChunk, kScaled>(cbase, v.stride_y, coff, nc, ylo, nrows, tx, ty, s_xfirst, s_xn, s_xw, s_h);
      } else if (s_consecutive && s_xmaxn <= 8) {
        horizontal_consecutive<8, kChunk, kScaled>(cbase, v.stride_y, coff, nc, ylo, nrows, tx, ty, s_xfirst, s_xn, s_xw, s_h);
      } else {
        horizontal_general<kChunk, kScaled>(cbase, v.stride_y, coff, nc, ylo, nrows, tid, s_xoff, s_xn, s_xw, s_h);
      }
      __syncthreads();
      // 3. vertical pass and epilogue
      const auto vertical = [&](auto out_mode, auto taps_constant) {
        // kF32 / kF32Norm: float32 output from a float accumulator (the training case), scaled or
        // normalized: the store is written out here with the tile's normalization constants
        // (s_norm: std's reciprocal for rn_div_by) instead of resized_crop_store's per-pixel
        // lookups and output-type switch; the same operations in the same order, so the same
        // values. With uint8 images kF32Norm runs only where normalize_u8_in_range holds for every
        // channel of the chunk (vertical_at), so its quotients take no per-value range test.
        // kU8: uint8 in and out, no normalization (a crop before uint8 ops, auto-augmentation
        // say): resized_crop_store rounds, multiplies by inv_max == 1 and rounds again, which is
        // the one rounding PixelStore<uint8_t>::from does (here one saturating convert,
        // round_sat_u8); stored here without the output-type switch.
        // kT: taps a row, a compile-time count (the lists are padded to it with zero-row taps), so
        // the tap loop is unrolled: no loop counter, the taps' loads all in flight together.
        constexpr bool kNorm = decltype(out_mode)::value == kOutF32Norm;
        constexpr bool kF32 = decltype(out_mode)::value == kOutF32 || kNorm;
        constexpr bool kU8 = decltype(out_mode)::value == kOutU8;
        constexpr int kT = decltype(taps_constant)::value;
        if (ox >= out_w) return;
        kernels::NormalizeConstants nk[kChunk] = {};  // the chunk's, in registers for all of the thread's rows
        if constexpr (kNorm) {
          TORCHAUG_UNROLL
          for (int c = 0; c < kChunk; ++c) {
            if (c < nc) nk[c] = s_norm[c0 + c];
          }
        }
        // the thread's first output pixel (row row0 + ty; channel c0 for the written-out stores),
        // each row after it kTileY rows further
        const int64_t first = b * p.os.b + (row0 + ty) * p.os.y + ox * p.os.x;
        const int64_t row_step = kTileY * p.os.y;
        float* of = kF32 ? static_cast<float*>(p.out) + first + c0 * p.os.c : nullptr;
        uint8_t* ou = kU8 ? static_cast<uint8_t*>(p.out) + first + c0 * p.os.c : nullptr;
        int64_t oe = first;
        const int rows_left = min(out_h - row0, kTileRows);
        const acc_t* hcol = s_h + tx;
        for (int rr = 0; rr < kRowsPerThread; ++rr) {
          const int trow = ty + rr * kTileY;
          if (trow >= rows_left) break;
          acc_t acc[kChannelChunk];
          TORCHAUG_UNROLL
          for (int c = 0; c < kChannelChunk; ++c) acc[c] = 0;
          const RowTap<acc_t>* taps = s_ytap[trow];
          TORCHAUG_UNROLL
          for (int j = 0; j < kT; ++j) {
            const RowTap<acc_t> tap = taps[j];
            const acc_t* h = hcol + tap.row;
            TORCHAUG_UNROLL
            for (int c = 0; c < kChunk; ++c) acc[c] += tap.w * h[c * kTileX];
          }
          if constexpr (kF32) {
            TORCHAUG_UNROLL
            for (int c = 0; c < kChunk; ++c) {
              if (c >= nc) break;
              const float val = kernels::PixelStore<scalar_t>::quantize(acc[c]);
              if constexpr (!kNorm) {
                of[c * p.os.c] = val * p.inv_max;
              } else if constexpr (kScaled) {
                of[c * p.os.c] = kernels::normalize_px_by_unchecked(val, p.inv_max, nk[c].mean, nk[c].std, nk[c].rcp);
              } else {
                of[c * p.os.c] = kernels::normalize_px_by(val, p.inv_max, nk[c].mean, nk[c].std, nk[c].rcp);
              }
            }
            of += row_step;
          } else if constexpr (kU8) {
            TORCHAUG_UNROLL
            for (int c = 0; c < kChunk; ++c) {
              if (c >= nc) break;
              ou[c * p.os.c] = static_cast<uint8_t>(round_sat_u8(acc[c]));
            }
            ou += row_step;
          } else {
            resized_crop_store<scalar_t>(acc, c0, nc, p, b, oe);
            oe += row_step;
          }
        }
      };
      // the vertical pass at the tile's tap count (vertical_taps: the next count it is compiled for)
      const auto vertical_at = [&](auto out_mode) {
        switch (ytaps) {
          case 2: vertical(out_mode, std::integral_constant<int, 2>{}); break;
          case 3: vertical(out_mode, std::integral_constant<int, 3>{}); break;
          case 4: vertical(out_mode, std::integral_constant<int, 4>{}); break;
          case 5: vertical(out_mode, std::integral_constant<int, 5>{}); break;
          case 6: vertical(out_mode, std::integral_constant<int, 6>{}); break;
          case 8: vertical(out_mode, std::integral_constant<int, 8>{}); break;
          default: vertical(out_mode, std::integral_constant<int, kMaxTaps>{}); break;
        }
      };
      // whether the chunk's normalize constants keep every quotient of a uint8 value in
      // rn_div_by's range (normalize_u8_in_range; ImageNet's and any ordinary mean and std do)
      const auto u8_in_range = [&] {
        for (int64_t c = 0; c < nc; ++c) {
          if (!s_norm[c0 + c].u8_in_range) return false;
        }
        return true;
      };
      if constexpr (kNormTile) {
        if (p.out_kind == kPixF32 && p.mean == nullptr) {
          vertical_at(std::integral_constant<int, kOutF32>{});
        } else if (norm_tile && (!kScaled || u8_in_range())) {
          vertical_at(std::integral_constant<int, kOutF32Norm>{});
        } else if constexpr (std::is_same<scalar_t, uint8_t>::value) {
          if (p.out_kind == kPixU8 && p.mean == nullptr) {
            vertical_at(std::integral_constant<int, kOutU8>{});
          } else {
            vertical_at(std::integral_constant<int, kOutGeneric>{});
          }
        } else {
          vertical_at(std::integral_constant<int, kOutGeneric>{});
        }
      } else {
        vertical_at(std::integral_constant<int, kOutGeneric>{});
      }
      __syncthreads();  // s_h is rewritten by the next channel chunk / sample
    }
  }
}

// max_scale_y: an upper bound of crop height / output height when the caller knows one (crops
// inside the images), else 0. Taller tiles spread the per-tile work (tap tables, barriers) over
// more outputs but need about (rows + 4) * scale input rows in shared memory; the tallest tile
// whose region fits kMaxRegionBytes is used (56 rows: 224 = 4 x 56), or 64 rows where those leave
// fewer rows below the output (64, 128, 512: none). Tiles whose crops exceed the bound take the
// per-pixel path.
template <typename Batch>
void launch_resized_crop(const at::Tensor& src, const Batch& batch, const ResizedCropPlan& plan, int64_t B,
                         double max_scale_y) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const ResizedCropParams& p = plan.p;
  const int chunk = p.channels == 3 ? 3 : kChannelChunk;
  const int acc_bytes = src.scalar_type() == at::kDouble ? 8 : 4;
  const int row_bytes = kTileX * chunk * acc_bytes;
  const int max_rows = kMaxRegionBytes / row_bytes - 1;  // and the zero row
  const auto rows_needed = [&](int tile_rows) {
    return static_cast<int>(std::ceil((tile_rows + 4) * max_scale_y)) + 3;
  };
  int tile_rows = 16;
  if (max_scale_y > 0) {
    for (int t : {56, 32}) {
      if (rows_needed(t) <= max_rows) {
        tile_rows = t;
        break;
      }
    }
    // 64-row tiles where they leave fewer rows below the output than 56-row ones do (64, 128, 512 or
    // 1024 rows: none, against 48, 40, 48 and 40 rows of tiles computed for nothing). 32-row tiles
    // do more work per row (a 128-row output is slower in four of them than in three of 56 rows).
    const auto padded = [&](int t) { return (p.out_h + t - 1) / t * t; };
    if (tile_rows == 56 && rows_needed(64) <= max_rows && padded(64) < padded(56)) tile_rows = 64;
  }
  TORCHAUG_CHECK(B <= INT_MAX && p.out_h <= INT_MAX / 2 && p.out_w <= INT_MAX / 2,
                 "resized_crop: expected fewer than 2^31 images and an output size under 2^30, got ", B, " images of ",
                 p.out_h, "x", p.out_w);
  // the region: enough rows for the bound, at least 4 rows per output row of a 16-row tile
  const int region_rows = std::min(max_rows, std::max(max_scale_y > 0 ? rows_needed(tile_rows) : 0, 64));
  const size_t smem = static_cast<size_t>(region_rows + 1) * row_bytes;
  TORCHAUG_DISPATCH_IMAGE_TYPES(src.scalar_type(), "resized_crop_cuda", [&] {
    const auto launch = [&](auto kc, auto rows_per_thread) {
      constexpr int kC = decltype(kc)::value;
      constexpr int kR = decltype(rows_per_thread)::value;
      constexpr auto kernel = resized_crop_kernel<kC, kR, scalar_t, Batch>;
      opt_in_shared<kernel>(src.get_device(), kMaxRegionBytes);
      const dim3 grid(static_cast<unsigned>((p.out_w + kTileX - 1) / kTileX),
                      static_cast<unsigned>((p.out_h + kTileY * kR - 1) / (kTileY * kR)),
                      static_cast<unsigned>(std::min(B, kMaxGridZ)));
      launch_dependent(kernel, grid, dim3(kTileX, kTileY), smem, stream, src.get_device(), src.data_ptr<scalar_t>(), batch, p,
                       B, region_rows);
    };
    const auto by_rows = [&](auto kc) {
      if (tile_rows == 64) {
        launch(kc, std::integral_constant<int, 8>{});
      } else if (tile_rows == 56) {
        launch(kc, std::integral_constant<int, 7>{});
      } else if (tile_rows == 32) {
        launch(kc, std::integral_constant<int, 4>{});
      } else {
        launch(kc, std::integral_constant<int, 2>{});
      }
    };
    if (p.channels == 3) {
      by_rows(std::integral_constant<int, 3>{});
    } else {
      by_rows(std::integral_constant<int, 0>{});
    }
  });
}

at::Tensor resized_crop_cuda(const at::Tensor& images, const at::Tensor& boxes, c10::SymIntArrayRef out_size,
                             int64_t interpolation, bool antialias, const std::optional<at::Tensor>& flip,
                             const std::optional<at::Tensor>& mean, const std::optional<at::Tensor>& std,
                             std::optional<at::ScalarType> out_dtype, std::optional<at::MemoryFormat> memory_format) {
  const char* op = "resized_crop";
  check_images(op, images);
  c10::cuda::CUDAGuard guard(images.device());
  auto plan = plan_resized_crop(op, images, images.size(1), images.scalar_type(), image_memory_format(images), boxes,
                                out_size, interpolation, antialias, flip, mean, std, out_dtype, memory_format);
  const int64_t B = images.size(0);
  if (B == 0) return plan.out;
  const DenseBatch batch{strides4(images), images.size(2), images.size(3)};
  launch_resized_crop(images, batch, plan, B, static_cast<double>(images.size(2)) / static_cast<double>(plan.p.out_h));
  return plan.out;
}

at::Tensor resized_crop_ragged_cuda(const at::Tensor& data, const at::Tensor& offsets, const at::Tensor& sizes,
                                    int64_t channels, bool channels_last_in, const at::Tensor& boxes,
                                    c10::SymIntArrayRef out_size, int64_t interpolation, bool antialias,
                                    const std::optional<at::Tensor>& flip, const std::optional<at::Tensor>& mean,
                                    const std::optional<at::Tensor>& std, std::optional<at::ScalarType> out_dtype,
                                    std::optional<at::MemoryFormat> memory_format) {
  const char* op = "resized_crop_ragged";
  check_defined(op, "data", data);  // before the guard reads its device
  c10::cuda::CUDAGuard guard(data.device());
  // the tallest image bounds the crops inside the images (from the host metadata plan_ragged
  // checks), as the batch's height does for a dense batch: tiles as tall as that allows
  int64_t max_h = 0;
  auto [off, sz] = plan_ragged(op, data, offsets, sizes, channels, &max_h);
  const int64_t B = off.size(0);
  const at::Tensor ref = data.new_empty({B, 0});
  auto plan = plan_resized_crop(op, ref, channels, data.scalar_type(),
                                channels_last_in ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous, boxes,
                                out_size, interpolation, antialias, flip, mean, std, out_dtype, memory_format);
  if (B == 0) return plan.out;
  const at::Tensor src = data.contiguous();
  const RaggedBatch batch{off.data_ptr<int64_t>(), sz.data_ptr<int64_t>(), channels, channels_last_in};
  launch_resized_crop(src, batch, plan, B, static_cast<double>(max_h) / static_cast<double>(plan.p.out_h));
  return plan.out;
}

template <typename scalar_t>
__global__ void resized_crop_backward_kernel(const scalar_t* __restrict__ grad, scalar_t* grad_in,
                                             ResizedCropBackwardParams p, int64_t B) {
  using acc_t = typename AccOf<scalar_t>::type;
  const int64_t ox = static_cast<int64_t>(blockIdx.x) * kTileX + threadIdx.x;
  const int64_t oy = static_cast<int64_t>(blockIdx.y) * kTileY + threadIdx.y;
  if (ox >= p.out_w || oy >= p.out_h) return;
  for (int64_t b = blockIdx.z; b < B; b += gridDim.z) {
    resized_crop_backward_px(grad, p, b, oy, ox, [&](int64_t i, acc_t v) {
      gpuAtomicAdd(grad_in + i, static_cast<scalar_t>(v));
    });
  }
}

at::Tensor resized_crop_backward_cuda(const at::Tensor& grad, const at::Tensor& boxes, c10::SymIntArrayRef input_size,
                                      int64_t interpolation, bool antialias, const std::optional<at::Tensor>& flip,
                                      const std::optional<at::Tensor>& std, bool channels_last) {
  check_defined("_resized_crop_backward", "grad", grad);  // before the guard reads its device
  c10::cuda::CUDAGuard guard(grad.device());
  const auto plan = plan_resized_crop_backward(grad, boxes, input_size, interpolation, antialias, flip, std, channels_last);
  const at::Tensor& grad_in = plan.grad_in;
  const ResizedCropBackwardParams& p = plan.p;
  const int64_t B = plan.batch;
  if (B == 0) return grad_in;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad.scalar_type(), "resized_crop_backward_cuda", [&] {
    resized_crop_backward_kernel<scalar_t><<<pixel_grid(B, p.out_h, p.out_w), dim3(kTileX, kTileY), 0, stream>>>(
        grad.data_ptr<scalar_t>(), grad_in.data_ptr<scalar_t>(), p, B);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return grad_in;
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CUDA, m) {
  m.impl("resized_crop", &resized_crop_cuda);
  m.impl("resized_crop_ragged", &resized_crop_ragged_cuda);
  m.impl("_resized_crop_backward", &resized_crop_backward_cuda);
}

}  // namespace torchaug
