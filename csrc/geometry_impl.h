// Glue between the per-pixel math of csrc/kernels/geometry.h and the two backends: the plain
// parameter blocks the kernels receive, the per-sample views of dense and ragged batches, and the
// per-output-pixel drivers that both the CPU loops and the CUDA kernels call. Host-side preparation
// (checks, allocation) is here too, so that csrc/cpu/geometry.cpp and csrc/cuda/geometry.cu only
// differ in how they loop.
#pragma once

#include "kernels/convert.h"
#include "kernels/geometry.h"
#include "ops_common.h"

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

inline ResizedCropPlan plan_resized_crop(const char* op, const at::Tensor& ref, int64_t channels,
                                         at::ScalarType in_dtype, at::MemoryFormat default_format,
                                         const at::Tensor& boxes, c10::SymIntArrayRef out_size,
                                         int64_t interpolation, bool antialias,
                                         const std::optional<at::Tensor>& flip,
                                         const std::optional<at::Tensor>& mean,
                                         const std::optional<at::Tensor>& std,
                                         std::optional<at::ScalarType> out_dtype,
                                         std::optional<at::MemoryFormat> memory_format) {
  const int64_t B = ref.size(0);
  auto [oh, ow] = check_out_size(op, out_size);
  check_interpolation(op, interpolation, kernels::kBicubic);
  check_param(op, "boxes", boxes, ref, {B, 4}, "(B, 4)", {at::kLong});
  if (flip) check_param(op, "flip", *flip, ref, {B}, "(B,)", {at::kBool});
  TORCH_CHECK(mean.has_value() == std.has_value(), "torchaug::", op, ": mean and std must be given together");
  if (mean) check_mean_std(op, *mean, *std, ref, channels);
  const at::ScalarType odt = check_out_dtype(op, out_dtype, in_dtype);
  const bool in_float = at::isFloatingType(in_dtype);
  TORCH_CHECK(odt == in_dtype || at::isFloatingType(odt), "torchaug::", op, ": out_dtype must be the input dtype (",
              in_dtype, ") or floating, got ", odt);
  TORCH_CHECK(!mean || at::isFloatingType(odt), "torchaug::", op,
              ": normalizing (mean/std given) needs a floating out_dtype, got ", odt);
  const at::MemoryFormat fmt = check_memory_format(op, memory_format, default_format);
  if (boxes.device().is_cpu() && B > 0) {
    const auto bad = (boxes.narrow(1, 2, 2) <= 0).any(1);
    if (bad.any().item<bool>()) {
      const int64_t i = bad.nonzero()[0][0].item<int64_t>();
      const auto box = boxes[i];
      TORCH_CHECK(false, "torchaug::", op, ": boxes must have height > 0 and width > 0, got box ", i, " = [",
                  box[0].item<int64_t>(), ", ", box[1].item<int64_t>(), ", ", box[2].item<int64_t>(), ", ",
                  box[3].item<int64_t>(), "] (top, left, height, width)");
    }
  }

  ResizedCropPlan plan;
  plan.out = at::empty({B, channels, oh, ow}, ref.options().dtype(odt).memory_format(fmt));
  plan.boxes = boxes.contiguous();
  if (flip) plan.flip = flip->contiguous();
  if (mean) {  // used with their strides: a batch-broadcast (stride 0) mean/std is not copied
    plan.mean = *mean;
    plan.std = *std;
  }
  ResizedCropParams& p = plan.p;
  p.boxes = plan.boxes.data_ptr<int64_t>();
  p.flip = flip ? plan.flip.data_ptr<bool>() : nullptr;
  p.mean = mean ? plan.mean.data_ptr<float>() : nullptr;
  p.std = mean ? plan.std.data_ptr<float>() : nullptr;
  p.ms = mean ? strides2(plan.mean) : Strides2{0, 0};
  p.ss = mean ? strides2(plan.std) : Strides2{0, 0};
  p.out = plan.out.data_ptr();
  p.out_kind = pixel_kind(odt);
  p.os = strides4(plan.out);
  p.channels = channels;
  p.out_h = oh;
  p.out_w = ow;
  p.interpolation = interpolation;
  p.antialias = antialias && interpolation != kernels::kNearest;
  p.inv_max = (!in_float && at::isFloatingType(odt)) ? static_cast<float>(kernels::PixelRange<uint8_t>::inv_max) : 1.0f;
  return plan;
}

constexpr int kChannelChunk = 4;

// One output pixel (all channels) of resized_crop for sample b.
template <typename scalar_t, typename Batch>
C10_HOST_DEVICE inline void resized_crop_output_px(const scalar_t* in, const Batch& batch, const ResizedCropParams& p,
                                                   int64_t b, int64_t oy, int64_t ox) {
  using acc_t = typename AccOf<scalar_t>::type;
  const kernels::ImageView v = batch.view(b);
  const int64_t* box = p.boxes + 4 * b;
  const int64_t sx = (p.flip != nullptr && p.flip[b]) ? p.out_w - 1 - ox : ox;
  const auto ay = kernels::make_resample_axis<acc_t>(p.interpolation, p.antialias, box[2], p.out_h, oy);
  const auto ax = kernels::make_resample_axis<acc_t>(p.interpolation, p.antialias, box[3], p.out_w, sx);
  const int64_t obase = b * p.os.b + oy * p.os.y + ox * p.os.x;
  for (int64_t c0 = 0; c0 < p.channels; c0 += kChannelChunk) {
    const int64_t nc = kernels::min_of<int64_t>(kChannelChunk, p.channels - c0);
    acc_t acc[kChannelChunk];
    kernels::resized_crop_px<kChannelChunk>(in, v, c0, nc, ay, ax, box[0], box[1], acc);
TORCHAUG_UNROLL
    for (int c = 0; c < kChannelChunk; ++c) {
      if (c >= nc) break;
      // The resized value as the unfused op would store it in the input dtype ...
      acc_t val = static_cast<acc_t>(kernels::PixelStore<scalar_t>::from(acc[c]));
      // ... then the cast / normalize epilogue.
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
  const int64_t sx = (p.flip != nullptr && p.flip[b]) ? p.out_w - 1 - ox : ox;
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

// ---------------------------------------------------------------------------------------------
// warp_affine
// ---------------------------------------------------------------------------------------------

struct WarpAffineParams {
  Strides4 is, os;
  int64_t channels, in_h, in_w, out_h, out_w, interpolation;
  const float* fill;  // (B, C) or nullptr
};

template <typename scalar_t>
C10_HOST_DEVICE inline void warp_affine_output_px(const scalar_t* in, scalar_t* out,
                                                  const typename AccOf<scalar_t>::type* matrices,
                                                  const WarpAffineParams& p, int64_t b, int64_t oy, int64_t ox) {
  using acc_t = typename AccOf<scalar_t>::type;
  acc_t sx, sy;
  kernels::affine_source(matrices + 6 * b, ox, oy, &sx, &sy);
  const auto taps = kernels::affine_taps(sx, sy, p.in_h, p.in_w, p.interpolation);
  const kernels::ImageView v{b * p.is.b, p.in_h, p.in_w, p.is.c, p.is.y, p.is.x};
  const int64_t obase = b * p.os.b + oy * p.os.y + ox * p.os.x;
  for (int64_t c = 0; c < p.channels; ++c) {
    const acc_t s = kernels::affine_channel(in, v, c, taps);
    const acc_t fill = p.fill != nullptr ? static_cast<acc_t>(p.fill[b * p.channels + c]) : acc_t(0);
    const acc_t r = kernels::affine_blend(s, taps.mask, p.fill != nullptr, fill, p.interpolation);
    out[obase + c * p.os.c] = kernels::PixelStore<scalar_t>::from(r);
  }
}

// Backward of one output pixel: grad_images via add_img(index, value); returns the six partial
// derivatives of the loss with respect to matrices[b] in dm (added to).
template <typename scalar_t, typename AddImg>
C10_HOST_DEVICE inline void warp_affine_backward_px(const scalar_t* grad, const scalar_t* in,
                                                    const typename AccOf<scalar_t>::type* matrices,
                                                    const WarpAffineParams& p, Strides4 gs, int64_t b, int64_t oy,
                                                    int64_t ox, bool want_images, AddImg add_img,
                                                    typename AccOf<scalar_t>::type* dm) {
  using acc_t = typename AccOf<scalar_t>::type;
  acc_t sx, sy;
  kernels::affine_source(matrices + 6 * b, ox, oy, &sx, &sy);
  const auto t = kernels::affine_taps(sx, sy, p.in_h, p.in_w, p.interpolation);
  const bool has_fill = p.fill != nullptr;
  const bool bilinear = p.interpolation != kernels::kNearest;
  // derivatives of the four bilinear weights with respect to sx and sy
  acc_t dwx[4] = {0, 0, 0, 0}, dwy[4] = {0, 0, 0, 0};
  if (bilinear) {
    const acc_t fx0 = floor(sx), fy0 = floor(sy);
    const acc_t e = (fx0 + 1) - sx, s = (fy0 + 1) - sy, wx = sx - fx0, wy = sy - fy0;
    dwx[0] = -s; dwy[0] = -e;
    dwx[1] = s;  dwy[1] = -wx;
    dwx[2] = -wy; dwy[2] = e;
    dwx[3] = wy; dwy[3] = wx;
  }
  acc_t dmask_x = 0, dmask_y = 0;
  for (int k = 0; k < t.n; ++k) {
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
      for (int k = 0; k < t.n; ++k) {
        if (t.valid[k]) add_img(v.offset + c * v.stride_c + t.iy[k] * v.stride_y + t.ix[k] * v.stride_x, g * scale * t.w[k]);
      }
    }
    if (bilinear && dm != nullptr) {
      acc_t ds_x = 0, ds_y = 0, s = 0;
      for (int k = 0; k < t.n; ++k) {
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
    dm[0] += gsx * fx; dm[1] += gsx * fy; dm[2] += gsx;
    dm[3] += gsy * fx; dm[4] += gsy * fy; dm[5] += gsy;
  }
}

inline void check_warp_affine(const char* op, const at::Tensor& images, const at::Tensor& matrices,
                              int64_t interpolation, const std::optional<at::Tensor>& fill) {
  check_images(op, images);
  const int64_t B = images.size(0);
  check_param(op, "matrices", matrices, images, {B, 2, 3}, "(B, 2, 3)", {at::kFloat, at::kDouble});
  check_interpolation(op, interpolation, kernels::kBilinear);
  if (fill) check_param(op, "fill", *fill, images, {B, images.size(1)}, "(B, C)", {at::kFloat});
}

// Matrices in the accumulator dtype of the images, contiguous.
inline at::Tensor acc_matrices(const at::Tensor& images, const at::Tensor& matrices) {
  return matrices.to(images.scalar_type() == at::kDouble ? at::kDouble : at::kFloat).contiguous();
}

inline WarpAffineParams warp_affine_params(const at::Tensor& images, const at::Tensor& out,
                                           int64_t interpolation, const at::Tensor& fill) {
  WarpAffineParams p;
  p.is = strides4(images);
  p.os = strides4(out);
  p.channels = images.size(1);
  p.in_h = images.size(2);
  p.in_w = images.size(3);
  p.out_h = out.size(2);
  p.out_w = out.size(3);
  p.interpolation = interpolation;
  p.fill = fill.defined() ? fill.data_ptr<float>() : nullptr;
  return p;
}

// ---------------------------------------------------------------------------------------------
// RandomResizedCrop parameters
// ---------------------------------------------------------------------------------------------

struct RrcBoxParams {
  const double* rand;     // (B, kRrcDraws)
  const int64_t* sizes;   // (B, 2) or nullptr
  int64_t height, width;  // when sizes is nullptr
  double scale_min, scale_max, ratio_min, ratio_max;
  int64_t* boxes;  // (B, 4)
};

C10_HOST_DEVICE inline void rrc_box_px(const RrcBoxParams& p, int64_t b) {
  const double h = static_cast<double>(p.sizes ? p.sizes[2 * b] : p.height);
  const double w = static_cast<double>(p.sizes ? p.sizes[2 * b + 1] : p.width);
  kernels::random_resized_crop_box(p.rand + b * kernels::kRrcDraws, h, w, p.scale_min, p.scale_max, p.ratio_min,
                                   p.ratio_max, p.boxes + 4 * b);
}

struct RrcBoxPlan {
  at::Tensor boxes, rand, sizes;
  RrcBoxParams p;
};

inline RrcBoxPlan plan_rrc_boxes(const at::Tensor& rand, const std::optional<at::Tensor>& sizes, int64_t height,
                                 int64_t width, double scale_min, double scale_max, double ratio_min,
                                 double ratio_max) {
  const char* op = "_random_resized_crop_boxes";
  TORCH_CHECK(rand.dim() == 2 && rand.size(1) == kernels::kRrcDraws, "torchaug::", op, ": rand must have shape (B, ",
              kernels::kRrcDraws, "), got ", shape_str(rand.sizes()));
  TORCH_CHECK(rand.scalar_type() == at::kDouble, "torchaug::", op, ": rand must be float64, got ", rand.scalar_type());
  const int64_t B = rand.size(0);
  if (sizes) check_param(op, "sizes", *sizes, rand, {B, 2}, "(B, 2)", {at::kLong});
  TORCH_CHECK(sizes || (height > 0 && width > 0), "torchaug::", op, ": height and width must be positive, got ", height,
              " and ", width);
  TORCH_CHECK(0 < scale_min && scale_min <= scale_max, "torchaug::", op,
              ": scale must satisfy 0 < scale_min <= scale_max, got ", scale_min, ", ", scale_max);
  TORCH_CHECK(0 < ratio_min && ratio_min <= ratio_max, "torchaug::", op, ": ratio must satisfy 0 < ratio_min <= ratio_max, got ",
              ratio_min, ", ", ratio_max);
  RrcBoxPlan plan;
  plan.rand = rand.contiguous();
  if (sizes) plan.sizes = sizes->contiguous();
  plan.boxes = at::empty({B, 4}, rand.options().dtype(at::kLong));
  plan.p = {plan.rand.data_ptr<double>(), sizes ? plan.sizes.data_ptr<int64_t>() : nullptr, height, width,
            scale_min, scale_max, ratio_min, ratio_max, plan.boxes.data_ptr<int64_t>()};
  return plan;
}

// ---------------------------------------------------------------------------------------------
// flip
// ---------------------------------------------------------------------------------------------

inline void check_flip(const char* op, const at::Tensor& images, const at::Tensor& horizontal,
                       const at::Tensor& vertical) {
  check_images(op, images);
  const int64_t B = images.size(0);
  check_param(op, "horizontal", horizontal, images, {B}, "(B,)", {at::kBool});
  check_param(op, "vertical", vertical, images, {B}, "(B,)", {at::kBool});
}

}  // namespace torchaug

namespace torchaug {

// ---------------------------------------------------------------------------------------------
// ragged batches
// ---------------------------------------------------------------------------------------------

// Checks of resized_crop_ragged's batch description. offsets and sizes are host metadata (CPU
// int64), checked against data here; the returned pair is on data's device.
inline std::pair<at::Tensor, at::Tensor> plan_ragged(const char* op, const at::Tensor& data, const at::Tensor& offsets,
                                                     const at::Tensor& sizes, int64_t channels) {
  TORCH_CHECK(data.dim() == 1, "torchaug::", op, ": data must be a 1-D tensor (the images' elements back to back), got ",
              data.dim(), "-D with shape ", shape_str(data.sizes()));
  TORCH_CHECK(is_image_dtype(data.scalar_type()), "torchaug::", op,
              ": data must be uint8, float32, float64, float16 or bfloat16, got ", data.scalar_type());
  TORCH_CHECK(channels > 0, "torchaug::", op, ": channels must be positive, got ", channels);
  TORCH_CHECK(offsets.dim() == 1, "torchaug::", op, ": offsets must have shape (B,), got ", shape_str(offsets.sizes()));
  const int64_t B = offsets.size(0);
  TORCH_CHECK(sizes.dim() == 2 && sizes.size(0) == B && sizes.size(1) == 2, "torchaug::", op,
              ": sizes must have shape (B, 2) with B=", B, ", got ", shape_str(sizes.sizes()));
  TORCH_CHECK(offsets.scalar_type() == at::kLong && sizes.scalar_type() == at::kLong, "torchaug::", op,
              ": offsets and sizes must be int64, got ", offsets.scalar_type(), " and ", sizes.scalar_type());
  TORCH_CHECK(offsets.device().is_cpu() && sizes.device().is_cpu(), "torchaug::", op,
              ": offsets and sizes must be CPU tensors (host metadata of the ragged batch), got ", offsets.device(),
              " and ", sizes.device());
  auto off = offsets.contiguous();
  auto sz = sizes.contiguous();
  const int64_t* o = off.data_ptr<int64_t>();
  const int64_t* s = sz.data_ptr<int64_t>();
  for (int64_t b = 0; b < B; ++b) {
    TORCH_CHECK(s[2 * b] > 0 && s[2 * b + 1] > 0, "torchaug::", op, ": sizes[", b, "] must be positive, got (",
                s[2 * b], ", ", s[2 * b + 1], ")");
    TORCH_CHECK(o[b] >= 0 && o[b] + channels * s[2 * b] * s[2 * b + 1] <= data.numel(), "torchaug::", op,
                ": image ", b, " (offset ", o[b], ", ", channels, "x", s[2 * b], "x", s[2 * b + 1],
                ") lies outside data of ", data.numel(), " elements");
  }
  if (!data.device().is_cpu()) {
    off = off.pin_memory().to(data.device(), /*non_blocking=*/true);
    sz = sz.pin_memory().to(data.device(), /*non_blocking=*/true);
  }
  return {off, sz};
}

}  // namespace torchaug
