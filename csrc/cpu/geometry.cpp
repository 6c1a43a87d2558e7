// CPU kernels of the geometry family: the loops around the per-pixel drivers of csrc/ops/geometry.h.
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../ops/geometry.h"
#include "samples.h"
#include "warp_rows.h"

namespace torchaug {
namespace {

// A shuffle of the lanes of two vectors of GCC's vector extension, indices counting on into b
// (__builtin_shuffle takes them as an integer vector of the same shape: that of a comparison's result).
#if defined(__clang__)
#define TORCHAUG_SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define TORCHAUG_SHUFFLE(a, b, ...) __builtin_shuffle(a, b, decltype((a) < (a)){__VA_ARGS__})
#endif

// Calls fn(b, y) for every output row, in parallel.
template <typename Fn>
void for_each_row(int64_t batch, int64_t height, int64_t width, Fn fn) {
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(width, 1));
  at::parallel_for(0, batch * height, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(i / height, i % height);
  });
}

// dst[x] = src[w - 1 - x]. Bytes go 32 at a time through one byte shuffle (vpshufb and a lane swap
// in flip_rows' AVX2 clone, TORCHAUG_CPU_CLONES; the baseline x86-64 has no byte shuffle and gets a
// longer sequence), the rest 8 at a time through a byte swap; wider types vectorize.
template <typename T>
__attribute__((always_inline)) inline void reverse_row(const T* __restrict src, T* __restrict dst, int64_t w) {
  int64_t x = 0;
  if constexpr (sizeof(T) == 1) {
    typedef uint8_t bytes32 __attribute__((vector_size(32)));
    for (; x + 32 <= w; x += 32) {
      bytes32 v;
      std::memcpy(&v, src + w - x - 32, 32);
      v = TORCHAUG_SHUFFLE(v, v, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8,
                           7, 6, 5, 4, 3, 2, 1, 0);
      std::memcpy(dst + x, &v, 32);
    }
    for (; x + 8 <= w; x += 8) {
      uint64_t v;
      std::memcpy(&v, src + w - x - 8, 8);
      v = __builtin_bswap64(v);
      std::memcpy(dst + x, &v, 8);
    }
  }
  const T* __restrict last = src + w - 1;
  for (; x < w; ++x) dst[x] = last[-x];
}

// n rows of one plane, or of one channels_last image (a row: w elements of `step` values, 1 for a
// channel's row, C for a row of pixels), the source's first row at src and each next one
// src_step further (negative where the plane flips vertically), the output's dst_step apart:
// each row reversed where `reverse`, copied as it is otherwise.
template <typename T>
TORCHAUG_CPU_CLONES void flip_rows(const T* src, T* dst, int64_t n, int64_t w, int64_t step, int64_t src_step,
                                   int64_t dst_step, bool reverse) {
  for (int64_t k = 0; k < n; ++k, src += src_step, dst += dst_step) {
    if (!reverse) {
      std::memcpy(dst, src, w * step * sizeof(T));
    } else if (step == 1) {
      reverse_row(src, dst, w);
    } else {
      for (int64_t x = 0; x < w; ++x)
        for (int64_t ch = 0; ch < step; ++ch) dst[x * step + ch] = src[(w - 1 - x) * step + ch];
    }
  }
}

// The taps of every output coordinate along one axis of one sample: those of
// kernels::make_resample_axis (the per-pixel driver's), as absolute input indices, the ones outside
// the image dropped as the per-pixel sum skips them.
template <typename acc_t>
struct AxisTaps {
  std::vector<int64_t> start, count, index;
  std::vector<acc_t> weight;
};

template <typename acc_t, typename SourceOf>
AxisTaps<acc_t> axis_taps(const ResizedCropParams& p, int64_t crop, int64_t out, int64_t origin, int64_t limit,
                          SourceOf source_of) {
  AxisTaps<acc_t> t;
  t.start.resize(out);
  t.count.resize(out);
  for (int64_t o = 0; o < out; ++o) {
    const auto a = kernels::make_resample_axis<acc_t>(p.interpolation, p.antialias, crop, out, source_of(o));
    t.start[o] = static_cast<int64_t>(t.index.size());
    for (int64_t j = 0; j < a.count; ++j) {
      const int64_t q = origin + kernels::axis_index(a, j);
      if (q < 0 || q >= limit) continue;
      t.index.push_back(q);
      t.weight.push_back(kernels::axis_weight(a, j));
    }
    t.count[o] = static_cast<int64_t>(t.index.size()) - t.start[o];
  }
  return t;
}

// The horizontal taps of one sample as a dense (K x output columns) weight table over a window of
// K input columns starting at lo + first[ox] (duplicate taps of a clamped edge summed into one
// weight, columns outside the image left at weight 0), so that the taps loop has a fixed trip count
// and reads the rows converted to floats: [lo, hi] is the span of input columns read.
template <typename acc_t>
struct DenseTaps {
  int64_t K = 1, lo = 0, hi = -1;
  std::vector<int64_t> first;
  std::vector<acc_t> weight;  // weight[ox * K + k]
};

template <typename acc_t>
DenseTaps<acc_t> dense_taps(const AxisTaps<acc_t>& t) {
  DenseTaps<acc_t> d;
  const int64_t n = static_cast<int64_t>(t.start.size());
  std::vector<int64_t> start(n, 0);
  d.lo = std::numeric_limits<int64_t>::max();
  for (int64_t o = 0; o < n; ++o) {
    if (t.count[o] == 0) continue;
    const auto first = t.index.begin() + t.start[o], last = first + t.count[o];
    const int64_t a = *std::min_element(first, last), e = *std::max_element(first, last);
    start[o] = a;
    d.K = std::max(d.K, e - a + 1);
    d.lo = std::min(d.lo, a);
    d.hi = std::max(d.hi, e);
  }
  if (d.hi < 0) d.lo = 0;
  d.first.assign(n, 0);
  for (int64_t o = 0; o < n; ++o) {
    if (t.count[o] == 0) start[o] = d.lo;
    start[o] = std::min(start[o], std::max(d.hi - d.K + 1, d.lo));  // the window stays inside [lo, lo + span)
    d.first[o] = start[o] - d.lo;
  }
  d.weight.assign(n * d.K, acc_t(0));
  for (int64_t o = 0; o < n; ++o)
    for (int64_t k = t.start[o]; k < t.start[o] + t.count[o]; ++k) d.weight[o * d.K + (t.index[k] - start[o])] += t.weight[k];
  return d;
}

// Output row oy of sample b from its resampled values line (channels x W): resized_crop_store's
// epilogue (quantized to the input dtype, then scaled or normalized, then cast), a channel at a time.
template <typename scalar_t, typename out_t, typename acc_t>
TORCHAUG_CPU_CLONES void store_row(const acc_t* line, const ResizedCropParams& p, int64_t b, int64_t oy) {
  out_t* out = static_cast<out_t*>(p.out);
  const int64_t W = p.out_w;
  for (int64_t c = 0; c < p.channels; ++c) {
    const acc_t* src = line + c * W;
    out_t* dst = out + b * p.os.b + c * p.os.c + oy * p.os.y;
    const int64_t sx = p.os.x;
    const acc_t inv_max = static_cast<acc_t>(p.inv_max);
    if (p.mean != nullptr) {
      const acc_t mean = static_cast<acc_t>(p.mean[p.ms.at(b, c)]), sd = static_cast<acc_t>(p.std[p.ss.at(b, c)]);
      for (int64_t ox = 0; ox < W; ++ox)
        dst[ox * sx] = pixel_as<out_t>(kernels::normalize_px<acc_t>(kernels::PixelStore<scalar_t>::quantize(src[ox]), inv_max, mean, sd));
    } else {
      for (int64_t ox = 0; ox < W; ++ox) dst[ox * sx] = pixel_as<out_t>(kernels::PixelStore<scalar_t>::quantize(src[ox]) * inv_max);
    }
  }
}

// kN accumulators as one vector (GCC's vector extension): registers of the clone's width, where a
// loop over an array of lanes stayed scalar, with its values kept on the stack.
template <typename acc_t, int kN>
struct LaneVector {
  typedef acc_t type __attribute__((vector_size(kN * sizeof(acc_t))));
};

// Columns x .. x + 7 of eight rows of bytes as eight groups of eight floats, a column a group:
// out[i * 8 + j] = src[j][x + i]. An 8x8 byte transpose in three rounds of interleaves (punpcklbw,
// punpcklwd, punpckldq), each column then widened by interleaves with zeros and converted four at a
// time: 16 vector stores for 64 values, not one extract and store per value.
// (GCC's __builtin_convertvector from 8 bytes to 8 floats goes byte by byte: the widening is spelled
// out.)
__attribute__((always_inline)) inline void transpose_bytes_8x8(const uint8_t* const* src, int64_t x, float* out) {
  typedef uint8_t u8x16 __attribute__((vector_size(16)));
  typedef uint16_t u16x8 __attribute__((vector_size(16)));
  typedef uint32_t u32x4 __attribute__((vector_size(16)));
  typedef int32_t i32x4 __attribute__((vector_size(16)));
  typedef uint64_t u64x2 __attribute__((vector_size(16)));
  typedef float f32x4 __attribute__((vector_size(16)));
  u8x16 r[8];  // row j's 8 bytes in the low half
  for (int j = 0; j < 8; ++j) {
    uint64_t v;
    std::memcpy(&v, src[j] + x, 8);
    r[j] = (u8x16)u64x2{v, 0};
  }
  u16x8 t[4];  // t[k]: rows 2k and 2k + 1 interleaved byte by byte
  for (int k = 0; k < 4; ++k)
    t[k] = (u16x8)TORCHAUG_SHUFFLE(r[2 * k], r[2 * k + 1], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  u32x4 q[4];  // q[0], q[1]: rows 0-3 of columns 0-3, 4-7; q[2], q[3]: rows 4-7
  for (int k = 0; k < 2; ++k) {
    q[2 * k] = (u32x4)TORCHAUG_SHUFFLE(t[2 * k], t[2 * k + 1], 0, 8, 1, 9, 2, 10, 3, 11);
    q[2 * k + 1] = (u32x4)TORCHAUG_SHUFFLE(t[2 * k], t[2 * k + 1], 4, 12, 5, 13, 6, 14, 7, 15);
  }
  const u8x16 z8 = {};
  const u16x8 z16 = {};
  for (int k = 0; k < 2; ++k) {  // columns 4k .. 4k + 3, two to a vector
    const u8x16 cols[2] = {(u8x16)TORCHAUG_SHUFFLE(q[k], q[k + 2], 0, 4, 1, 5), (u8x16)TORCHAUG_SHUFFLE(q[k], q[k + 2], 2, 6, 3, 7)};
    for (int i = 0; i < 4; ++i) {
      const u8x16 v = cols[i / 2];
      const u16x8 w = (i % 2) ? (u16x8)TORCHAUG_SHUFFLE(v, z8, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31)
                              : (u16x8)TORCHAUG_SHUFFLE(v, z8, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const f32x4 lo = __builtin_convertvector((i32x4)TORCHAUG_SHUFFLE(w, z16, 0, 8, 1, 9, 2, 10, 3, 11), f32x4);
      const f32x4 hi = __builtin_convertvector((i32x4)TORCHAUG_SHUFFLE(w, z16, 4, 12, 5, 13, 6, 14, 7, 15), f32x4);
      std::memcpy(out + (4 * k + i) * 8, &lo, sizeof(lo));
      std::memcpy(out + (4 * k + i) * 8 + 4, &hi, sizeof(hi));
    }
  }
}

// Eight vectors of eight floats, in[i][j], as eight runs: dst[j * stride + i] = in[i][j]. The usual
// AVX 8x8 transpose (unpcklps / unpckhps, shufps, vperm2f128: 24 shuffles): eight vector stores,
// not 64 scalar ones.
__attribute__((always_inline)) inline void transpose_floats_8x8(const LaneVector<float, 8>::type* in, float* dst,
                                                                int64_t stride) {
  typedef LaneVector<float, 8>::type f32x8;
  f32x8 t[8], s[8];
  for (int k = 0; k < 4; ++k) {  // t[2k]: in[2k][0, 1, 4, 5] and in[2k + 1]'s interleaved; t[2k + 1]: [2, 3, 6, 7]
    t[2 * k] = TORCHAUG_SHUFFLE(in[2 * k], in[2 * k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[2 * k + 1] = TORCHAUG_SHUFFLE(in[2 * k], in[2 * k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int k = 0; k < 2; ++k) {  // s[4k + j]: element j (low half) and j + 4 (high half) of in[4k .. 4k + 3]
    s[4 * k] = TORCHAUG_SHUFFLE(t[4 * k], t[4 * k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    s[4 * k + 1] = TORCHAUG_SHUFFLE(t[4 * k], t[4 * k + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    s[4 * k + 2] = TORCHAUG_SHUFFLE(t[4 * k + 1], t[4 * k + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    s[4 * k + 3] = TORCHAUG_SHUFFLE(t[4 * k + 1], t[4 * k + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int j = 0; j < 4; ++j) {
    const f32x8 lo = TORCHAUG_SHUFFLE(s[j], s[4 + j], 0, 1, 2, 3, 8, 9, 10, 11);
    const f32x8 hi = TORCHAUG_SHUFFLE(s[j], s[4 + j], 4, 5, 6, 7, 12, 13, 14, 15);
    std::memcpy(dst + j * stride, &lo, sizeof(lo));
    std::memcpy(dst + (j + 4) * stride, &hi, sizeof(hi));
  }
}

// One sample of resized_crop on the CPU, separably: the horizontal taps of the input rows that the
// vertical taps read, into a float buffer (rows x channels x output columns), then the vertical taps
// of that buffer and the fused epilogue. The weights are the per-pixel driver's (the GPU's); the sum
// of products runs in another order, (sum_y wy * (sum_x wx * v)) instead of
// sum_y sum_x (wy * wx) * v, which costs taps_x + taps_y products per output pixel instead of
// taps_x * taps_y.
template <typename scalar_t, typename Batch>
TORCHAUG_CPU_CLONES void resized_crop_sample(const scalar_t* in, const Batch& batch, const ResizedCropParams& p, int64_t b) {
  using acc_t = typename AccOf<scalar_t>::type;
  const kernels::ImageView v = batch.view(b);
  const int64_t* box = p.boxes + 4 * b;
  const int64_t C = p.channels, W = p.out_w;
  const bool flipped = resized_crop_flipped(p, b);
  const auto tx = dense_taps(axis_taps<acc_t>(p, box[3], W, box[1], v.width,
                                              [&](int64_t ox) { return resized_crop_source_column(p, flipped, ox); }));
  const auto ty = axis_taps<acc_t>(p, box[2], p.out_h, box[0], v.height, [](int64_t oy) { return oy; });
  int64_t y0 = v.height, y1 = -1;
  for (int64_t y : ty.index) {
    y0 = std::min(y0, y);
    y1 = std::max(y1, y);
  }
  constexpr int kLanes = 8;
  const int64_t K = tx.K, span = std::max<int64_t>(tx.hi - tx.lo + 1, 0), n_rows = std::max<int64_t>(y1 - y0 + 1, 0);
  // kLanes rows of padding past the last: a group of lanes stores all of its sums (a fixed count,
  // so that they stay in registers), those of lanes past the last row into the padding
  // (uninitialized: every row, padding included, is written before the vertical taps read it)
  const std::unique_ptr<acc_t[]> rows(new acc_t[(n_rows + kLanes) * C * W]);
  // The horizontal taps of kLanes input rows of one channel at a time: their values interleaved
  // column by column (lanes[x * kLanes + j]: row j, column lo + x), so that each output column's
  // sums run side by side, a row a lane, each adding its taps in order from 0 as a loop over one
  // row would (the compiler vectorizes the lanes; a loop over one row is a chain of dependent adds).
  std::vector<acc_t> lanes((span + K) * kLanes, acc_t(0));
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t g = 0; g < n_rows; g += kLanes) {
      const int nr = static_cast<int>(std::min<int64_t>(kLanes, n_rows - g));
      const scalar_t* src[kLanes];
      for (int j = 0; j < kLanes; ++j)  // lanes past nr read the last row again: their sums go to the padding
        src[j] = in + v.offset + (y0 + g + std::min(j, nr - 1)) * v.stride_y + c * v.stride_c + tx.lo * v.stride_x;
      int64_t x = 0;
      if constexpr ((std::is_same_v<scalar_t, uint8_t> || std::is_same_v<scalar_t, float>) && kLanes == 8) {
        if (v.stride_x == 1) {
          // the next group's rows (this channel's next eight, or the next channel's first) asked of
          // the cache a line at a time, as this group reads the same columns: the image is usually
          // in no cache yet, and eight rows read a column at a time are more streams than the
          // hardware prefetcher follows
          const int64_t ng = g + kLanes < n_rows ? g + kLanes : 0, nc = g + kLanes < n_rows ? c : c + 1;
          const int ahead = nc < C ? static_cast<int>(std::min<int64_t>(kLanes, n_rows - ng)) : 0;
          const scalar_t* next = ahead > 0 ? in + v.offset + (y0 + ng) * v.stride_y + nc * v.stride_c + tx.lo : nullptr;
          constexpr int64_t kLine = 64 / sizeof(scalar_t);
          for (; x + 8 <= span; x += 8) {
            if (x % kLine == 0)
              for (int j = 0; j < ahead; ++j) __builtin_prefetch(next + j * v.stride_y + x);
            if constexpr (std::is_same_v<scalar_t, uint8_t>) {
              transpose_bytes_8x8(src, x, lanes.data() + x * kLanes);
            } else {  // eight floats of each row, transposed: lanes[(x + i) * 8 + j] = src[j][x + i]
              typename LaneVector<float, 8>::type r[8];
              for (int j = 0; j < 8; ++j) std::memcpy(&r[j], src[j] + x, sizeof(r[j]));
              transpose_floats_8x8(r, lanes.data() + x * kLanes, kLanes);
            }
          }
        }
      }
      for (; x < span; ++x)
        for (int j = 0; j < kLanes; ++j) lanes[x * kLanes + j] = static_cast<acc_t>(src[j][x * v.stride_x]);
      using lanes_t = typename LaneVector<acc_t, kLanes>::type;
      // output column ox's sums into a, row g + j's in lane j (summed in a local: a vector returned by
      // value would change the calling convention between clones, -Wpsabi)
      const auto column = [&](int64_t ox, lanes_t& a) {
        lanes_t sum = {};
        const acc_t* w = tx.weight.data() + ox * K;
        const acc_t* t = lanes.data() + tx.first[ox] * kLanes;
        for (int64_t k = 0; k < K; ++k) {
          lanes_t tk;
          std::memcpy(&tk, t + k * kLanes, sizeof(tk));
          sum += w[k] * tk;
        }
        a = sum;
      };
      acc_t* out = rows.get() + (g * C + c) * W;  // row g + j at out + j * C * W
      int64_t ox = 0;
      if constexpr (std::is_same_v<acc_t, float> && kLanes == 8) {
        for (; ox + 8 <= W; ox += 8) {  // eight columns' sums turned into eight rows' runs
          lanes_t a[8];
          for (int i = 0; i < 8; ++i) column(ox + i, a[i]);
          transpose_floats_8x8(a, out + ox, C * W);
        }
      }
      for (; ox < W; ++ox) {
        lanes_t a;
        column(ox, a);
        for (int j = 0; j < kLanes; ++j) out[j * C * W + ox] = a[j];
      }
    }
  }
  // The vertical taps: each value's sum kept in registers across the taps (in the taps' order),
  // eight values at a time, then stored once.
  std::vector<acc_t> line(C * W);
  for (int64_t oy = 0; oy < p.out_h; ++oy) {
    const int64_t k0 = ty.start[oy], k1 = k0 + ty.count[oy];
    using vec_t = typename LaneVector<acc_t, 8>::type;
    int64_t i = 0;
    for (; i + 8 <= C * W; i += 8) {
      vec_t a = {};
      for (int64_t k = k0; k < k1; ++k) {
        vec_t r;
        std::memcpy(&r, rows.get() + (ty.index[k] - y0) * C * W + i, sizeof(r));
        a += ty.weight[k] * r;
      }
      std::memcpy(line.data() + i, &a, sizeof(a));
    }
    for (; i < C * W; ++i) {
      acc_t a = 0;
      for (int64_t k = k0; k < k1; ++k) a += ty.weight[k] * rows[(ty.index[k] - y0) * C * W + i];
      line[i] = a;
    }
    with_pixel_type(p.out_kind, [&](auto o) { store_row<scalar_t, decltype(o)>(line.data(), p, b, oy); });
  }
}

template <typename Batch>
void resized_crop_loop(const at::Tensor& src, const Batch& batch, const ResizedCropPlan& plan, int64_t B) {
  const ResizedCropParams& p = plan.p;
  TORCHAUG_DISPATCH_IMAGE_TYPES(src.scalar_type(), "resized_crop_cpu", [&] {
    const scalar_t* in = src.data_ptr<scalar_t>();
    for_samples(B, [&](auto next) {
      for (int64_t b = next(); b >= 0; b = next()) resized_crop_sample(in, batch, p, b);
    });
  });
}

at::Tensor resized_crop_cpu(const at::Tensor& images, const at::Tensor& boxes, c10::SymIntArrayRef out_size,
                            int64_t interpolation, bool antialias, const std::optional<at::Tensor>& flip,
                            const std::optional<at::Tensor>& mean, const std::optional<at::Tensor>& std,
                            std::optional<at::ScalarType> out_dtype, std::optional<at::MemoryFormat> memory_format) {
  const char* op = "resized_crop";
  check_images(op, images);
  auto plan = plan_resized_crop(op, images, images.size(1), images.scalar_type(), image_memory_format(images), boxes,
                                out_size, interpolation, antialias, flip, mean, std, out_dtype, memory_format);
  const int64_t B = images.size(0);
  if (B == 0) return plan.out;
  const DenseBatch batch{strides4(images), images.size(2), images.size(3)};
  resized_crop_loop(images, batch, plan, B);
  return plan.out;
}

at::Tensor resized_crop_ragged_cpu(const at::Tensor& data, const at::Tensor& offsets, const at::Tensor& sizes,
                                   int64_t channels, bool channels_last_in, const at::Tensor& boxes,
                                   c10::SymIntArrayRef out_size, int64_t interpolation, bool antialias,
                                   const std::optional<at::Tensor>& flip, const std::optional<at::Tensor>& mean,
                                   const std::optional<at::Tensor>& std, std::optional<at::ScalarType> out_dtype,
                                   std::optional<at::MemoryFormat> memory_format) {
  const char* op = "resized_crop_ragged";
  auto [off, sz] = plan_ragged(op, data, offsets, sizes, channels);
  const int64_t B = off.size(0);
  const at::Tensor ref = data.new_empty({B, 0});
  auto plan = plan_resized_crop(op, ref, channels, data.scalar_type(),
                                channels_last_in ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous, boxes,
                                out_size, interpolation, antialias, flip, mean, std, out_dtype, memory_format);
  if (B == 0) return plan.out;
  const at::Tensor src = data.contiguous();
  const RaggedBatch batch{off.data_ptr<int64_t>(), sz.data_ptr<int64_t>(), channels, channels_last_in};
  resized_crop_loop(src, batch, plan, B);
  return plan.out;
}

at::Tensor resized_crop_backward_cpu(const at::Tensor& grad, const at::Tensor& boxes, c10::SymIntArrayRef input_size,
                                     int64_t interpolation, bool antialias, const std::optional<at::Tensor>& flip,
                                     const std::optional<at::Tensor>& std, bool channels_last) {
  const auto plan = plan_resized_crop_backward(grad, boxes, input_size, interpolation, antialias, flip, std, channels_last);
  const at::Tensor& grad_in = plan.grad_in;
  const ResizedCropBackwardParams& p = plan.p;
  const int64_t B = plan.batch;
  if (B == 0) return grad_in;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad.scalar_type(), "resized_crop_backward_cpu", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    const scalar_t* g = grad.data_ptr<scalar_t>();
    scalar_t* gi = grad_in.data_ptr<scalar_t>();
    // A sample at a time: the scatter of a sample never touches another sample's gradient.
    for_samples(B, [&](auto next) {
      for (int64_t b = next(); b >= 0; b = next())
        for (int64_t oy = 0; oy < p.out_h; ++oy)
          for (int64_t ox = 0; ox < p.out_w; ++ox)
            resized_crop_backward_px(g, p, b, oy, ox, [&](int64_t i, acc_t v) {
              gi[i] = static_cast<scalar_t>(static_cast<acc_t>(gi[i]) + v);
            });
    });
  });
  return grad_in;
}

at::Tensor warp_affine_cpu(const at::Tensor& images, const at::Tensor& matrices, c10::SymIntArrayRef out_size,
                           int64_t interpolation, const std::optional<at::Tensor>& fill) {
  const char* op = "warp_affine";
  check_warp_affine(op, images, matrices, interpolation, fill);
  auto [oh, ow] = check_out_size(op, out_size);
  const int64_t B = images.size(0);
  auto out = empty_output(op, {B, images.size(1), oh, ow}, images.options().memory_format(image_memory_format(images)));
  if (B == 0) return out;
  const auto m = acc_matrices(images, matrices);
  const at::Tensor f = fill ? fill->contiguous() : at::Tensor();
  const WarpAffineParams p = warp_affine_params(images, out, interpolation, f, static_cast<int>(m.size(1)));
  TORCHAUG_DISPATCH_IMAGE_TYPES(images.scalar_type(), "warp_affine_cpu", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    const scalar_t* in = images.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const acc_t* mp = m.data_ptr<acc_t>();
    for_each_row(B, oh, ow, [&](int64_t b, int64_t oy) {
      const float* fill_b = p.sample_fill(b);
      if (p.interpolation == kernels::kNearest && p.rows == 2) {
        warp_nearest_row<scalar_t>(in + b * p.is.b, o + b * p.os.b + oy * p.os.y, mp + 6 * b, fill_b, p, oy);
        return;
      }
      with_affine_taps(p.interpolation, [&](auto taps) {
        for (int64_t ox = 0; ox < ow; ++ox)
          warp_affine_output_px<decltype(taps)::value>(in, o, mp + p.matrix_size() * b, fill_b, p, b, oy, ox);
      });
    });
  });
  return out;
}

at::Tensor warp_grid_cpu(const at::Tensor& images, const at::Tensor& grid, int64_t interpolation,
                         const std::optional<at::Tensor>& fill) {
  WarpGridPlan plan = plan_warp_grid(images, grid, interpolation, fill);
  const WarpAffineParams& p = plan.p;
  const int64_t B = images.size(0), oh = p.out_h, ow = p.out_w;
  if (plan.out.numel() == 0) return plan.out;
  TORCHAUG_DISPATCH_IMAGE_TYPES(images.scalar_type(), "warp_grid_cpu", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    const scalar_t* in = images.data_ptr<scalar_t>();
    scalar_t* o = plan.out.data_ptr<scalar_t>();
    const acc_t* g = plan.grid.data_ptr<acc_t>();
    for_each_row(B, oh, ow, [&](int64_t b, int64_t oy) {
      const float* fill_b = p.sample_fill(b);
      with_affine_taps(p.interpolation, [&](auto taps) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          warp_grid_output_px<decltype(taps)::value>(in, o, g + b * plan.gb + oy * plan.gy + ox * plan.gx, plan.gk, fill_b, p,
                                                     b, oy, ox);
        }
      });
    });
  });
  return plan.out;
}

std::tuple<at::Tensor, at::Tensor> warp_affine_backward_cpu(const at::Tensor& grad, const at::Tensor& images,
                                                            const at::Tensor& matrices, int64_t interpolation,
                                                            const std::optional<at::Tensor>& fill,
                                                            std::array<bool, 2> output_mask) {
  WarpBackwardPlan plan = plan_warp_affine_backward(grad, images, matrices, interpolation, fill);
  const int64_t B = images.size(0);
  const at::Tensor& g = plan.g;
  at::Tensor& grad_images = plan.grad_images;
  at::Tensor& grad_m = plan.grad_m;
  const at::Tensor& m = plan.m;
  const WarpAffineParams& p = plan.p;
  if (B == 0) return {grad_images, grad_m.to(matrices.scalar_type())};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, images.scalar_type(), "warp_affine_backward_cpu", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    const scalar_t* gp = g.data_ptr<scalar_t>();
    const scalar_t* in = plan.in.data_ptr<scalar_t>();
    scalar_t* gi = grad_images.data_ptr<scalar_t>();
    acc_t* gm = grad_m.data_ptr<acc_t>();
    const acc_t* mp = m.data_ptr<acc_t>();
    const Strides4 gs = strides4(g);
    for_samples(B, [&](auto next) {
      for (int64_t b = next(); b >= 0; b = next())
        for (int64_t oy = 0; oy < p.out_h; ++oy)
          with_affine_taps(p.interpolation, [&](auto taps) {
            for (int64_t ox = 0; ox < p.out_w; ++ox)
              warp_affine_backward_px<decltype(taps)::value>(
                  gp, in, mp, p, gs, b, oy, ox, output_mask[0],
                  [&](int64_t i, acc_t v) { gi[i] = static_cast<scalar_t>(static_cast<acc_t>(gi[i]) + v); },
                  output_mask[1] ? gm + p.matrix_size() * b : nullptr);
          });
    });
  });
  return {output_mask[0] ? grad_images : at::Tensor(), output_mask[1] ? grad_m.to(matrices.scalar_type()) : at::Tensor()};
}

at::Tensor flip_cpu(const at::Tensor& images, const at::Tensor& horizontal, const at::Tensor& vertical) {
  const char* op = "flip";
  check_flip(op, images, horizontal, vertical);
  auto out = at::empty_like(images, images.options().memory_format(image_memory_format(images)));
  const int64_t B = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
  if (B == 0) return out;
  const auto h = horizontal.contiguous(), v = vertical.contiguous();
  const bool* hp = h.data_ptr<bool>();
  const bool* vp = v.data_ptr<bool>();
  const Strides4 is = strides4(images), os = strides4(out);
  TORCHAUG_DISPATCH_IMAGE_TYPES(images.scalar_type(), "flip_cpu", [&] {
    const scalar_t* in = images.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    // NCHW: a channel's row is contiguous; channels_last: a row's pixels, channels inside, are
    const bool unit_rows = is.x == 1 && os.x == 1;
    const bool pixel_rows = is.c == 1 && os.c == 1 && is.x == C && os.x == C;
    // the rows go plane by plane (NCHW: B * C planes; otherwise B), so that a thread reads and
    // writes one run of memory at a time; where rows follow each other in memory, the rows of a
    // sample that neither flip touches are copied as one block
    const int64_t planes = unit_rows ? C : 1;
    const int64_t row = unit_rows ? W : C * W;
    const bool runs = (unit_rows || pixel_rows) && is.y == row && os.y == row;
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(W, 1));
    at::parallel_for(0, B * planes * H, grain, [&](int64_t begin, int64_t end) {
      // a chunk is the rows y .. y + n - 1 of plane c of sample b, then whole planes from row 0
      // (the indices step plane by plane: a division a row would cost as much as the row)
      int64_t b = begin / (planes * H), c = begin / H % planes, y = begin % H;
      for (int64_t i = begin; i < end;) {
        const int64_t n = std::min(end - i, H - y);
        const scalar_t* src = in + b * is.b + c * is.c;
        scalar_t* dst = o + b * os.b + c * os.c + y * os.y;
        if (runs && !hp[b] && !vp[b]) {
          std::memcpy(dst, src + y * is.y, n * row * sizeof(scalar_t));
        } else if (unit_rows || pixel_rows) {
          flip_rows(src + kernels::flip_index(y, H, vp[b]) * is.y, dst, n, W, unit_rows ? 1 : C,
                    vp[b] ? -is.y : is.y, os.y, hp[b]);
        } else {
          for (int64_t oy = y; oy < y + n; ++oy) {
            const int64_t sy = kernels::flip_index(oy, H, vp[b]);
            for (int64_t x = 0; x < W; ++x) {
              const int64_t sx = kernels::flip_index(x, W, hp[b]);
              for (int64_t ch = 0; ch < C; ++ch)
                o[b * os.b + ch * os.c + oy * os.y + x * os.x] = in[b * is.b + ch * is.c + sy * is.y + sx * is.x];
            }
          }
        }
        i += n;
        y = 0;
        if (++c == planes) c = 0, ++b;
      }
    });
  });
  return out;
}

at::Tensor affine_matrices_cpu(const at::Tensor& angle, const at::Tensor& translate, const at::Tensor& scale,
                               const at::Tensor& shear, const at::Tensor& center, double snap_period,
                               at::OptionalIntArrayRef pixel_sizes) {
  auto plan = plan_affine_matrices(angle, translate, scale, shear, center, snap_period, pixel_sizes);
  for (int64_t b = 0; b < plan.B; ++b) affine_matrix_px(plan.p, b);
  return plan.out;
}

at::Tensor rrc_boxes_cpu(const RrcBoxPlan& plan) {
  at::parallel_for(0, plan.B, 256, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) rrc_box_px(plan.p, b, plan.p.rand + b * kernels::kRrcDraws);
  });
  return plan.boxes;
}

at::Tensor random_resized_crop_boxes_cpu(const std::optional<at::Tensor>& rand, const std::optional<at::Tensor>& sizes,
                                         int64_t height, int64_t width, double scale_min, double scale_max,
                                         double ratio_min, double ratio_max, int64_t batch,
                                         const std::optional<at::Tensor>& like, std::optional<at::Generator> generator) {
  return rrc_boxes_cpu(
      plan_rrc_boxes(rand, sizes, height, width, scale_min, scale_max, ratio_min, ratio_max, batch, like, generator));
}

std::tuple<at::Tensor, at::Tensor> random_resized_crop_boxes_flips_cpu(
    const std::optional<at::Tensor>& sizes, int64_t height, int64_t width, double scale_min, double scale_max,
    double ratio_min, double ratio_max, double p, int64_t batch, const std::optional<at::Tensor>& like,
    std::optional<at::Generator> generator) {
  check_flip_p(p);
  auto boxes = rrc_boxes_cpu(plan_rrc_boxes(std::nullopt, sizes, height, width, scale_min, scale_max, ratio_min, ratio_max,
                                            batch, like, generator, "_random_resized_crop_boxes_flips"));
  return {boxes, torch_flips(generator, boxes.size(0), p, boxes.device())};
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CPU, m) {
  m.impl("_random_resized_crop_boxes", &random_resized_crop_boxes_cpu);
  m.impl("_random_resized_crop_boxes_flips", &random_resized_crop_boxes_flips_cpu);
  m.impl("_affine_matrices", &affine_matrices_cpu);
  m.impl("resized_crop", &resized_crop_cpu);
  m.impl("resized_crop_ragged", &resized_crop_ragged_cpu);
  m.impl("_resized_crop_backward", &resized_crop_backward_cpu);
  m.impl("warp_affine", &warp_affine_cpu);
  m.impl("warp_grid", &warp_grid_cpu);
  m.impl("_warp_affine_backward", &warp_affine_backward_cpu);
  m.impl("flip", &flip_cpu);
}

}  // namespace torchaug
