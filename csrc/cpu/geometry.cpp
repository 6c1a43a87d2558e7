// CPU kernels of the geometry family: the loops around the per-pixel drivers of csrc/ops/geometry.h.
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <limits>
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
#if defined(__clang__)
      v = __builtin_shufflevector(v, v, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11,
                                  10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
#else
      v = __builtin_shuffle(v, bytes32{31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10,
                                       9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
#endif
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
  const auto tx = dense_taps(axis_taps<acc_t>(p, box[3], W, box[1], v.width,
                                              [&](int64_t ox) { return resized_crop_source_column(p, b, ox); }));
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
  std::vector<acc_t> rows((n_rows + kLanes) * C * W);
  // The horizontal taps of kLanes input rows of one channel at a time: their values interleaved
  // column by column (lanes[x * kLanes + j]: row j, column lo + x), so that each output column's
  // sums run side by side, a row a lane, each adding its taps in order from 0 as a loop over one
  // row would (the compiler vectorizes the lanes; a loop over one row is a chain of dependent adds).
  std::vector<acc_t> lanes((span + K) * kLanes, acc_t(0));
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t g = 0; g < n_rows; g += kLanes) {
      const int nr = static_cast<int>(std::min<int64_t>(kLanes, n_rows - g));
      for (int j = 0; j < nr; ++j) {  // lanes past nr keep stale values: their sums go to the padding
        const scalar_t* src = in + v.offset + (y0 + g + j) * v.stride_y + c * v.stride_c + tx.lo * v.stride_x;
        for (int64_t x = 0; x < span; ++x) lanes[x * kLanes + j] = static_cast<acc_t>(src[x * v.stride_x]);
      }
      for (int64_t ox = 0; ox < W; ++ox) {
        using lanes_t = typename LaneVector<acc_t, kLanes>::type;
        lanes_t a = {};
        const acc_t* w = tx.weight.data() + ox * K;
        const acc_t* t = lanes.data() + tx.first[ox] * kLanes;
        for (int64_t k = 0; k < K; ++k) {
          lanes_t tk;
          std::memcpy(&tk, t + k * kLanes, sizeof(tk));
          a += w[k] * tk;
        }
        for (int j = 0; j < kLanes; ++j) rows[((g + j) * C + c) * W + ox] = a[j];
      }
    }
  }
  std::vector<acc_t> line(C * W);
  for (int64_t oy = 0; oy < p.out_h; ++oy) {
    std::fill(line.begin(), line.end(), acc_t(0));
    for (int64_t k = ty.start[oy]; k < ty.start[oy] + ty.count[oy]; ++k) {
      const acc_t w = ty.weight[k];
      const acc_t* src = rows.data() + (ty.index[k] - y0) * C * W;
      for (int64_t i = 0; i < C * W; ++i) line[i] += w * src[i];
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
  const WarpAffineParams p = warp_affine_params(images, out, interpolation, f);
  TORCHAUG_DISPATCH_IMAGE_TYPES(images.scalar_type(), "warp_affine_cpu", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    const scalar_t* in = images.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const acc_t* mp = m.data_ptr<acc_t>();
    for_each_row(B, oh, ow, [&](int64_t b, int64_t oy) {
      const float* fill_b = p.fill ? p.fill + b * p.channels : nullptr;
      if (p.interpolation == kernels::kNearest) {
        warp_nearest_row<scalar_t>(in + b * p.is.b, o + b * p.os.b + oy * p.os.y, mp + 6 * b, fill_b, p, oy);
        return;
      }
      with_affine_taps(p.interpolation, [&](auto taps) {
        for (int64_t ox = 0; ox < ow; ++ox)
          warp_affine_output_px<decltype(taps)::value>(in, o, mp + 6 * b, fill_b, p, b, oy, ox);
      });
    });
  });
  return out;
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
                  output_mask[1] ? gm + 6 * b : nullptr);
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

at::Tensor random_resized_crop_boxes_cpu(const std::optional<at::Tensor>& rand, const std::optional<at::Tensor>& sizes,
                                         int64_t height, int64_t width, double scale_min, double scale_max,
                                         double ratio_min, double ratio_max, int64_t batch,
                                         const std::optional<at::Tensor>& like, std::optional<at::Generator> generator) {
  auto plan = plan_rrc_boxes(rand, sizes, height, width, scale_min, scale_max, ratio_min, ratio_max, batch, like, generator);
  at::parallel_for(0, plan.B, 256, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) rrc_box_px(plan.p, b, plan.p.rand + b * kernels::kRrcDraws);
  });
  return plan.boxes;
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CPU, m) {
  m.impl("_random_resized_crop_boxes", &random_resized_crop_boxes_cpu);
  m.impl("resized_crop", &resized_crop_cpu);
  m.impl("resized_crop_ragged", &resized_crop_ragged_cpu);
  m.impl("_resized_crop_backward", &resized_crop_backward_cpu);
  m.impl("warp_affine", &warp_affine_cpu);
  m.impl("_warp_affine_backward", &warp_affine_backward_cpu);
  m.impl("flip", &flip_cpu);
}

}  // namespace torchaug
