// Glue between the per-pixel math of csrc/kernels/geometry.h and the two backends: the plain
// parameter blocks the kernels receive, the per-sample views of dense and ragged batches, and the
// per-output-pixel drivers that both the CPU loops and the CUDA kernels call. Host-side preparation
// (checks, allocation) is here too, so that csrc/cpu/geometry.cpp and csrc/cuda/geometry.cu only
// differ in how they loop.
#pragma once

#include "../kernels/convert.h"
#include "../kernels/geometry.h"
#include "common.h"

namespace torchaug {

// ---------------------------------------------------------------------------------------------
// Batches
// ---------------------------------------------------------------------------------------------

struct DenseBatch {
  Strides4 s;
  int64_t height, width;
  C10_HOST_DEVICE kernels::ImageView view(int64_t b) const { return {b * s.b, height, width, s.c, s.y, s.x}; }
};

struct RaggedBatch {
  const int64_t* offsets;  // (B,)
  const int64_t* sizes;    // (B, 2): H, W
  int64_t channels;
  bool hwc;
  C10_HOST_DEVICE kernels::ImageView view(int64_t b) const {
    const int64_t h = sizes[2 * b], w = sizes[2 * b + 1];
    if (hwc) return {offsets[b], h, w, 1, w * channels, channels};
    return {offsets[b], h, w, h * w, w, 1};
  }
};

// ---------------------------------------------------------------------------------------------
// resized_crop
// ---------------------------------------------------------------------------------------------

struct ResizedCropParams {
  const int64_t* boxes;  // (B, 4) top, left, height, width
  const bool* flip;      // (B,) or nullptr
  const float* mean;     // (B, C) or nullptr; element (b, c) at b * ms.b + c * ms.c
  const float* std;      // (B, C) or nullptr; element (b, c) at b * ss.b + c * ss.c
  Strides2 ms, ss;
  void* out;
  int out_kind;
  Strides4 os;
  int64_t channels, out_h, out_w, interpolation;
  bool antialias;
  float inv_max;  // 1/255 when a uint8 input is converted to a floating output, else 1
};

// Host side: checks and output allocation, identical for both backends. `ref` carries the device
// and the batch size.
struct ResizedCropPlan {
  at::Tensor out, boxes, flip, mean, std;
  ResizedCropParams p;
};

ResizedCropPlan plan_resized_crop(const char* op, const at::Tensor& ref, int64_t channels,
                                         at::ScalarType in_dtype, at::MemoryFormat default_format,
                                         const at::Tensor& boxes, c10::SymIntArrayRef out_size,
                                         int64_t interpolation, bool antialias,
                                         const std::optional<at::Tensor>& flip,
                                         const std::optional<at::Tensor>& mean,
                                         const std::optional<at::Tensor>& std,
                                         std::optional<at::ScalarType> out_dtype,
                                         std::optional<at::MemoryFormat> memory_format);

constexpr int kChannelChunk = 4;

// The epilogue of one output pixel: acc holds channels [c0, c0 + nc) of the resized value; each is
// stored as the unfused op would store it in the input dtype, then cast / normalized.
template <typename scalar_t, typename acc_t>
C10_HOST_DEVICE inline void resized_crop_store(const acc_t* acc, int64_t c0, int64_t nc, const ResizedCropParams& p,
                                               int64_t b, int64_t obase) {
  TORCHAUG_UNROLL
  for (int c = 0; c < kChannelChunk; ++c) {
    if (c >= nc) break;
    acc_t val = kernels::PixelStore<scalar_t>::quantize(acc[c]);
    if (p.mean != nullptr) {
      const int64_t ch = c0 + c;
      val = kernels::normalize_px<acc_t>(val, static_cast<acc_t>(p.inv_max), static_cast<acc_t>(p.mean[p.ms.at(b, ch)]),
                                         static_cast<acc_t>(p.std[p.ss.at(b, ch)]));
    } else {
      val = val * static_cast<acc_t>(p.inv_max);
    }
    store_pixel(p.out, obase + (c0 + c) * p.os.c, p.out_kind, val);
  }
}

// Whether sample b is flipped horizontally (the fused flip; Params: the forward's or the backward's).
template <typename Params>
C10_HOST_DEVICE inline bool resized_crop_flipped(const Params& p, int64_t b) {
  return p.flip != nullptr && p.flip[b];
}

// The crop column that output column ox reads: mirrored when the sample is flipped.
template <typename Params>
C10_HOST_DEVICE inline int64_t resized_crop_source_column(const Params& p, bool flipped, int64_t ox) {
  return flipped ? p.out_w - 1 - ox : ox;
}

// One output pixel (all channels) of resized_crop for sample b.
template <typename scalar_t, typename Batch>
C10_HOST_DEVICE inline void resized_crop_output_px(const scalar_t* in, const Batch& batch, const ResizedCropParams& p,
                                                   int64_t b, int64_t oy, int64_t ox) {
  using acc_t = typename AccOf<scalar_t>::type;
  const kernels::ImageView v = batch.view(b);
  const int64_t* box = p.boxes + 4 * b;
  const auto ay = kernels::make_resample_axis<acc_t>(p.interpolation, p.antialias, box[2], p.out_h, oy);
  const auto ax = kernels::make_resample_axis<acc_t>(p.interpolation, p.antialias, box[3], p.out_w,
                                                     resized_crop_source_column(p, resized_crop_flipped(p, b), ox));
  const int64_t obase = b * p.os.b + oy * p.os.y + ox * p.os.x;
  for (int64_t c0 = 0; c0 < p.channels; c0 += kChannelChunk) {
    const int64_t nc = kernels::min_of<int64_t>(kChannelChunk, p.channels - c0);
    acc_t acc[kChannelChunk];
    kernels::resized_crop_px<kChannelChunk>(in, v, c0, nc, ay, ax, box[0], box[1], acc);
    resized_crop_store<scalar_t>(acc, c0, nc, p, b, obase);
  }
}

// Backward of resized_crop with respect to a dense float image batch: scatters grad_out * weight
// (divided by std when normalized) into grad_in. `add` performs grad_in[i] += v (atomic on CUDA).
struct ResizedCropBackwardParams {
  const int64_t* boxes;
  const bool* flip;
  const float* std;
  Strides2 ss;
  Strides4 gs;  // grad_out strides
  Strides4 is;  // grad_in strides
  int64_t channels, in_h, in_w, out_h, out_w, interpolation;
  bool antialias;
};

template <typename scalar_t, typename Add>
C10_HOST_DEVICE inline void resized_crop_backward_px(const scalar_t* grad, const ResizedCropBackwardParams& p,
                                                     int64_t b, int64_t oy, int64_t ox, Add add) {
  using acc_t = typename AccOf<scalar_t>::type;
  const int64_t* box = p.boxes + 4 * b;
  const int64_t sx = resized_crop_source_column(p, resized_crop_flipped(p, b), ox);
  const auto ay = kernels::make_resample_axis<acc_t>(p.interpolation, p.antialias, box[2], p.out_h, oy);
  const auto ax = kernels::make_resample_axis<acc_t>(p.interpolation, p.antialias, box[3], p.out_w, sx);
  for (int64_t jy = 0; jy < ay.count; ++jy) {
    const int64_t y = box[0] + kernels::axis_index(ay, jy);
    if (y < 0 || y >= p.in_h) continue;
    const acc_t wy = kernels::axis_weight(ay, jy);
    for (int64_t jx = 0; jx < ax.count; ++jx) {
      const int64_t x = box[1] + kernels::axis_index(ax, jx);
      if (x < 0 || x >= p.in_w) continue;
      const acc_t w = wy * kernels::axis_weight(ax, jx);
      for (int64_t c = 0; c < p.channels; ++c) {
        acc_t g = static_cast<acc_t>(grad[b * p.gs.b + c * p.gs.c + oy * p.gs.y + ox * p.gs.x]);
        if (p.std != nullptr) g = g / static_cast<acc_t>(p.std[p.ss.at(b, c)]);
        add(b * p.is.b + c * p.is.c + y * p.is.y + x * p.is.x, w * g);
      }
    }
  }
}

// The backward's host side, the same for both backends: grad_in (zeros, in the memory format the
// forward's input had) and the parameter block, whose pointers stay valid while the plan lives.
struct ResizedCropBackwardPlan {
  at::Tensor grad_in, boxes, flip, std;
  ResizedCropBackwardParams p{};
  int64_t batch = 0;
};

// Crop boxes (B, 4) int64 [top, left, height, width]: height and width > 0 and every edge within
// kMaxBoxExtent of the image's origin. Read only when the boxes live on the CPU (on a GPU the read
// would synchronise); the kernels bound their work for any box (kernels::kMaxBoxExtent).
void check_box_values(const char* op, const at::Tensor& boxes);

inline ResizedCropBackwardPlan plan_resized_crop_backward(const at::Tensor& grad, const at::Tensor& boxes,
                                                          c10::SymIntArrayRef input_size, int64_t interpolation,
                                                          bool antialias, const std::optional<at::Tensor>& flip,
                                                          const std::optional<at::Tensor>& std, bool channels_last) {
  const char* op = "_resized_crop_backward";
  TORCHAUG_CHECK(input_size.size() == 4, "torchaug::", op, ": input_size must be (B, C, H, W), got ", input_size.size(),
                 " values");
  std::vector<int64_t> isz;
  for (const auto& s : input_size) isz.push_back(s.guard_int(__FILE__, __LINE__));
  TORCHAUG_CHECK(isz[0] >= 0 && isz[1] > 0 && isz[2] > 0 && isz[3] > 0, "torchaug::", op,
                 ": input_size must have B >= 0 and C, H, W > 0, got ", shape_str(isz));
  check_defined(op, "grad", grad);
  TORCHAUG_CHECK(grad.dim() == 4 && grad.size(0) == isz[0] && grad.size(1) == isz[1] && grad.size(2) > 0 &&
                     grad.size(3) > 0,
                 "torchaug::", op, ": grad must have shape (B, C, H_out, W_out) with B=", isz[0], ", C=", isz[1],
                 ", got ", shape_str(grad.sizes()));
  TORCHAUG_CHECK(at::isFloatingType(grad.scalar_type()), "torchaug::", op, ": grad must be floating, got ",
                 grad.scalar_type());
  check_interpolation(op, interpolation, kernels::kNearestExact);
  check_param(op, "boxes", boxes, grad, {isz[0], 4}, "(B, 4)", {at::kLong});
  check_box_values(op, boxes);
  if (flip) check_param(op, "flip", *flip, grad, {isz[0]}, "(B,)", {at::kBool});
  if (std) check_param(op, "std", *std, grad, {isz[0], isz[1]}, "(B, C)", {at::kFloat});
  ResizedCropBackwardPlan plan;
  // at::zeros ignores a memory format in its options: empty (which honours it), then zero_
  plan.grad_in = at::empty(isz, grad.options().memory_format(channels_last ? at::MemoryFormat::ChannelsLast
                                                                           : at::MemoryFormat::Contiguous))
                     .zero_();
  plan.batch = isz[0];
  if (plan.batch == 0) return plan;
  plan.boxes = boxes.contiguous();
  if (flip) plan.flip = flip->contiguous();
  if (std) plan.std = *std;
  const at::Tensor& sd = plan.std;
  plan.p = ResizedCropBackwardParams{plan.boxes.data_ptr<int64_t>(),
                                     plan.flip.defined() ? plan.flip.data_ptr<bool>() : nullptr,
                                     sd.defined() ? sd.data_ptr<float>() : nullptr,
                                     sd.defined() ? strides2(sd) : Strides2{0, 0},
                                     strides4(grad), strides4(plan.grad_in),
                                     isz[1], isz[2], isz[3], grad.size(2), grad.size(3), interpolation,
                                     antialias && !kernels::is_nearest(interpolation)};
  return plan;
}

// ---------------------------------------------------------------------------------------------
// warp_affine
// ---------------------------------------------------------------------------------------------

struct WarpAffineParams {
  Strides4 is, os;
  int64_t channels, in_h, in_w, out_h, out_w, interpolation;
  const float* fill;  // (B, C) or nullptr
  int rows;           // of the inverse maps: 2 affine (2x3), 3 projective (3x3, kernels::warp_source)
  C10_HOST_DEVICE int64_t matrix_size() const { return 3 * rows; }
  // sample b's fill values (channels of them), or nullptr: zero padding
  C10_HOST_DEVICE const float* sample_fill(int64_t b) const { return fill ? fill + b * channels : nullptr; }
};

// Calls f(std::integral_constant<int, N>) with the tap count of an interpolation (nearest: 1,
// bilinear: 4).
template <typename F>
C10_HOST_DEVICE inline void with_affine_taps(int64_t interpolation, F&& f) {
  if (interpolation == kernels::kNearest) f(std::integral_constant<int, 1>());
  else f(std::integral_constant<int, 4>());
}

// The channel values of sample b at input position (sx, sy) (pixel centres at integers), passed to
// f(c, value): grid_sample's N taps, the fill blended in (fill: the sample's C values, or nullptr:
// zero padding) as torchvision's _apply_grid_transform does. N: the tap count of p.interpolation
// (with_affine_taps); kC: the channel count at compile time (a caller that keeps the values in
// registers), or 0 for p.channels.
template <int N, int kC, typename scalar_t, typename F>
C10_HOST_DEVICE TORCHAUG_INLINE_ON_HOST inline void warp_sample_px(const scalar_t* in, typename AccOf<scalar_t>::type sx,
                                                             typename AccOf<scalar_t>::type sy, const float* fill,
                                                             const WarpAffineParams& p, int64_t b, F&& f) {
  using acc_t = typename AccOf<scalar_t>::type;
  const auto taps = kernels::affine_taps<acc_t, N>(sx, sy, p.in_h, p.in_w);
  const kernels::ImageView v{b * p.is.b, p.in_h, p.in_w, p.is.c, p.is.y, p.is.x};
  const int64_t nc = kC > 0 ? kC : p.channels;
  TORCHAUG_UNROLL
  for (int64_t c = 0; c < nc; ++c) {
    const acc_t s = kernels::affine_channel(in, v, c, taps);
    const acc_t fc = fill != nullptr ? static_cast<acc_t>(fill[c]) : acc_t(0);
    f(c, kernels::affine_blend(s, taps.mask, fill != nullptr, fc, p.interpolation));
  }
}

// The channel values of output pixel (ox, oy) of sample b, whose inverse matrix is m (p.rows x 3),
// passed to f(c, value); fill: the sample's C fill values or nullptr (zero padding). N, kC: as
// warp_sample_px.
template <int N, int kC, typename scalar_t, typename F>
C10_HOST_DEVICE TORCHAUG_INLINE_ON_HOST inline void warp_affine_px(const scalar_t* in, const typename AccOf<scalar_t>::type* m, const float* fill,
                                           const WarpAffineParams& p, int64_t b, int64_t oy, int64_t ox, F&& f) {
  using acc_t = typename AccOf<scalar_t>::type;
  acc_t sx, sy;
  kernels::warp_source(m, p.rows, ox, oy, &sx, &sy);
  warp_sample_px<N, kC>(in, sx, sy, fill, p, b, f);
}

// Output pixel (ox, oy) of sample b (warp_affine_px), stored.
template <int N, typename scalar_t>
C10_HOST_DEVICE inline void warp_affine_output_px(const scalar_t* in, scalar_t* out,
                                                  const typename AccOf<scalar_t>::type* m, const float* fill,
                                                  const WarpAffineParams& p, int64_t b, int64_t oy, int64_t ox) {
  using acc_t = typename AccOf<scalar_t>::type;
  const int64_t obase = b * p.os.b + oy * p.os.y + ox * p.os.x;
  warp_affine_px<N, 0>(in, m, fill, p, b, oy, ox,
                       [&](int64_t c, acc_t r) { out[obase + c * p.os.c] = kernels::PixelStore<scalar_t>::from(r); });
}

// warp_grid: output pixel (ox, oy) of sample b sampled where its grid entry g (grid_sample's
// normalized x, then y at g[gk]) points, stored.
template <int N, typename scalar_t>
C10_HOST_DEVICE inline void warp_grid_output_px(const scalar_t* in, scalar_t* out, const typename AccOf<scalar_t>::type* g,
                                                int64_t gk, const float* fill, const WarpAffineParams& p, int64_t b,
                                                int64_t oy, int64_t ox) {
  using acc_t = typename AccOf<scalar_t>::type;
  const int64_t obase = b * p.os.b + oy * p.os.y + ox * p.os.x;
  warp_sample_px<N, 0>(in, kernels::grid_unnormalize(g[0], p.in_w), kernels::grid_unnormalize(g[gk], p.in_h), fill, p, b,
                  [&](int64_t c, acc_t r) { out[obase + c * p.os.c] = kernels::PixelStore<scalar_t>::from(r); });
}

// The checked operands of warp_grid: the grid in the images' accumulator dtype, its strides (b 0
// where one grid serves the batch), the fill made dense.
struct WarpGridPlan {
  at::Tensor out, grid, fill;
  WarpAffineParams p;
  int64_t gb, gy, gx, gk;
};
WarpGridPlan plan_warp_grid(const at::Tensor& images, const at::Tensor& grid, int64_t interpolation,
                            const std::optional<at::Tensor>& fill);

// Backward of one output pixel (N: as warp_affine_output_px): grad_images via add_img(index, value); returns the
// p.matrix_size() partial derivatives of the loss with respect to matrices[b] in dm (added to).
template <int N, typename scalar_t, typename AddImg>
C10_HOST_DEVICE inline void warp_affine_backward_px(const scalar_t* grad, const scalar_t* in,
                                                    const typename AccOf<scalar_t>::type* matrices,
                                                    const WarpAffineParams& p, Strides4 gs, int64_t b, int64_t oy,
                                                    int64_t ox, bool want_images, AddImg add_img,
                                                    typename AccOf<scalar_t>::type* dm) {
  using acc_t = typename AccOf<scalar_t>::type;
  acc_t sx, sy;
  const acc_t* m = matrices + p.matrix_size() * b;
  kernels::warp_source(m, p.rows, ox, oy, &sx, &sy);
  const auto t = kernels::affine_taps<acc_t, N>(sx, sy, p.in_h, p.in_w);
  const bool has_fill = p.fill != nullptr;
  constexpr bool bilinear = N == 4;
  // derivatives of the four bilinear weights with respect to sx and sy
  acc_t dwx[4] = {0, 0, 0, 0}, dwy[4] = {0, 0, 0, 0};
  if (bilinear) {
    const acc_t fx0 = kernels::floor_exact(sx), fy0 = kernels::floor_exact(sy);
    const acc_t e = (fx0 + 1) - sx, s = (fy0 + 1) - sy, wx = sx - fx0, wy = sy - fy0;
    dwx[0] = -s; dwy[0] = -e;
    dwx[1] = s;  dwy[1] = -wx;
    dwx[2] = -wy; dwy[2] = e;
    dwx[3] = wy; dwy[3] = wx;
  }
  acc_t dmask_x = 0, dmask_y = 0;
  for (int k = 0; k < N; ++k) {
    if (t.valid[k]) {
      dmask_x += dwx[k];
      dmask_y += dwy[k];
    }
  }
  const kernels::ImageView v{b * p.is.b, p.in_h, p.in_w, p.is.c, p.is.y, p.is.x};
  acc_t gsx = 0, gsy = 0;
  for (int64_t c = 0; c < p.channels; ++c) {
    const acc_t g = static_cast<acc_t>(grad[b * gs.b + c * gs.c + oy * gs.y + ox * gs.x]);
    // d out / d tap value
    acc_t scale = 1;
    if (has_fill) scale = bilinear ? t.mask : (t.mask < acc_t(0.5) ? acc_t(0) : acc_t(1));
    if (want_images) {
      for (int k = 0; k < N; ++k) {
        if (t.valid[k]) add_img(v.offset + c * v.stride_c + t.iy[k] * v.stride_y + t.ix[k] * v.stride_x, g * scale * t.w[k]);
      }
    }
    if (bilinear && dm != nullptr) {
      acc_t ds_x = 0, ds_y = 0, s = 0;
      for (int k = 0; k < N; ++k) {
        if (!t.valid[k]) continue;
        const acc_t val = static_cast<acc_t>(in[v.offset + c * v.stride_c + t.iy[k] * v.stride_y + t.ix[k] * v.stride_x]);
        ds_x += dwx[k] * val;
        ds_y += dwy[k] * val;
        s += t.w[k] * val;
      }
      if (has_fill) {
        const acc_t fill = static_cast<acc_t>(p.fill[b * p.channels + c]);
        // out = mask * (s - fill) + fill
        gsx += g * (dmask_x * (s - fill) + t.mask * ds_x);
        gsy += g * (dmask_y * (s - fill) + t.mask * ds_y);
      } else {
        gsx += g * ds_x;
        gsy += g * ds_y;
      }
    }
  }
  if (dm != nullptr) {
    const acc_t fx = static_cast<acc_t>(ox), fy = static_cast<acc_t>(oy);
    if (p.rows == 3) {
      // sx = u / w, sy = v / w: through u and v (scaled by 1 / w) and through w
      const acc_t w = m[6] * fx + m[7] * fy + m[8];
      gsx /= w;
      gsy /= w;
      const acc_t gw = -(gsx * sx + gsy * sy);
      dm[6] += gw * fx; dm[7] += gw * fy; dm[8] += gw;
    }
    dm[0] += gsx * fx; dm[1] += gsx * fy; dm[2] += gsx;
    dm[3] += gsy * fx; dm[4] += gsy * fy; dm[5] += gsy;
  }
}

void check_warp_affine(const char* op, const at::Tensor& images, const at::Tensor& matrices,
                              int64_t interpolation, const std::optional<at::Tensor>& fill);

// Matrices (or warp_grid's grid) in the accumulator dtype of the images, contiguous.
at::Tensor acc_matrices(const at::Tensor& images, const at::Tensor& matrices);

// The checked operands of _warp_affine_backward, shared by both backends. The kernels index the
// input and its gradient with the same strides, so the input is made dense (in its own memory
// format) and grad_images allocated like it: a strided, transposed or stride-0 input would
// otherwise scatter its gradient outside grad_images.
struct WarpBackwardPlan {
  at::Tensor in, g, m, fill, grad_images, grad_m;
  WarpAffineParams p;
};
WarpBackwardPlan plan_warp_affine_backward(const at::Tensor& grad, const at::Tensor& images, const at::Tensor& matrices,
                                           int64_t interpolation, const std::optional<at::Tensor>& fill);

// rows: of the inverse maps (2 affine, 3 projective)
WarpAffineParams warp_affine_params(const at::Tensor& images, const at::Tensor& out,
                                           int64_t interpolation, const at::Tensor& fill, int rows = 2);

// ---------------------------------------------------------------------------------------------
// affine matrices
// ---------------------------------------------------------------------------------------------

struct AffineMatrixParams {
  const double *angle, *translate, *scale, *shear, *center;  // rows of (B,) or (B, 2)
  int64_t angle_s, translate_s, scale_s, shear_s, center_s;  // their row strides (0: one row for all)
  int64_t translate_c, shear_c, center_c;                    // their column strides
  double snap_period;                                        // degrees; 0: no snapping
  bool pixels;                                               // pixel_sizes given
  double h, w, out_h, out_w;
  double* out;                                               // (B, 2, 3)
};

C10_HOST_DEVICE inline void affine_matrix_px(const AffineMatrixParams& p, int64_t b) {
  double* m = p.out + 6 * b;
  kernels::affine_inverse_theta(p.angle[b * p.angle_s], p.translate[b * p.translate_s],
                                p.translate[b * p.translate_s + p.translate_c], p.scale[b * p.scale_s],
                                p.shear[b * p.shear_s], p.shear[b * p.shear_s + p.shear_c], p.center[b * p.center_s],
                                p.center[b * p.center_s + p.center_c],
                                kernels::is_snapped(p.angle[b * p.angle_s], p.snap_period), m);
  if (p.pixels) kernels::affine_theta_to_pixels(m, p.h, p.w, p.out_h, p.out_w);
}

struct AffineMatrixPlan {
  at::Tensor out;
  AffineMatrixParams p;
  int64_t B;
};

AffineMatrixPlan plan_affine_matrices(const at::Tensor& angle, const at::Tensor& translate, const at::Tensor& scale,
                                      const at::Tensor& shear, const at::Tensor& center,
                                      double snap_period,
                                      at::OptionalIntArrayRef pixel_sizes);

// ---------------------------------------------------------------------------------------------
// RandomResizedCrop parameters
// ---------------------------------------------------------------------------------------------

struct RrcBoxParams {
  const double* rand;     // (B, kRrcDraws), or nullptr: the kernel draws them (draws)
  KernelDraws draws;
  const int64_t* sizes;   // (B, 2) or nullptr
  int64_t height, width;  // when sizes is nullptr
  double scale_min, scale_max, ratio_min, ratio_max;
  int64_t* boxes;  // (B, 4)
  // A horizontal flip's coins drawn by the same CUDA kernel (_random_resized_crop_boxes_flips): flips
  // (B,) or nullptr, from the draws of a bernoulli_(flip_p) of B bools made after the boxes' draws.
  bool* flips = nullptr;
  KernelDraws flip_draws = {};
  float flip_p = 0.f;
};

// Sample b's box from its draws u (kRrcDraws).
C10_HOST_DEVICE inline void rrc_box_px(const RrcBoxParams& p, int64_t b, const double* u) {
  const double h = static_cast<double>(p.sizes ? p.sizes[2 * b] : p.height);
  const double w = static_cast<double>(p.sizes ? p.sizes[2 * b + 1] : p.width);
  kernels::random_resized_crop_box(u, h, w, p.scale_min, p.scale_max, p.ratio_min, p.ratio_max, p.boxes + 4 * b);
}

struct RrcBoxPlan {
  at::Tensor boxes, rand, sizes;
  RrcBoxParams p;
  int64_t B;
};

// rand (B, kRrcDraws) float64, or None: drawn from generator (resolve_draws) for B = sizes.size(0),
// or `batch` when sizes is None too (like then gives the device).
// op: the op named in errors (_random_resized_crop_boxes or _random_resized_crop_boxes_flips).
RrcBoxPlan plan_rrc_boxes(const std::optional<at::Tensor>& rand, const std::optional<at::Tensor>& sizes, int64_t height,
                          int64_t width, double scale_min, double scale_max, double ratio_min, double ratio_max,
                          int64_t batch, const std::optional<at::Tensor>& like,
                          const std::optional<at::Generator>& generator, const char* op = "_random_resized_crop_boxes");

// _random_resized_crop_boxes_flips' check of p, made before anything is drawn.
void check_flip_p(double p);

// The coins torch.empty(B, dtype=torch.bool).bernoulli_(p, generator) gives on the generator's
// device (`device` without one), copied to `device`: the flips where the kernel does not draw them.
at::Tensor torch_flips(const std::optional<at::Generator>& generator, int64_t B, double p, const at::Device& device);

// ---------------------------------------------------------------------------------------------
// flip
// ---------------------------------------------------------------------------------------------

void check_flip(const char* op, const at::Tensor& images, const at::Tensor& horizontal,
                       const at::Tensor& vertical);

}  // namespace torchaug

namespace torchaug {

// ---------------------------------------------------------------------------------------------
// ragged batches
// ---------------------------------------------------------------------------------------------

// Checks of resized_crop_ragged's batch description. offsets and sizes are host metadata (CPU
// int64), checked against data here; the returned pair is on data's device. max_height, when given,
// receives the tallest image's height (0 for an empty batch), read in the same pass.
std::pair<at::Tensor, at::Tensor> plan_ragged(const char* op, const at::Tensor& data, const at::Tensor& offsets,
                                                     const at::Tensor& sizes, int64_t channels,
                                                     int64_t* max_height = nullptr);

}  // namespace torchaug
