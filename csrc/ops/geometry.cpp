// Host-side checks and plans of the geometry family (csrc/ops/geometry.h), shared by both backends.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "geometry.h"

namespace torchaug {

void check_box_values(const char* op, const at::Tensor& boxes) {
  if (!boxes.device().is_cpu()) return;
  const int64_t lim = kernels::kMaxBoxExtent;  // boxes is (B, 4): columns 2 and 3 are the sizes
  const int64_t v = first_value_where(boxes, [lim](double x, int64_t k) {
    return k % 4 >= 2 ? !(x > 0 && x <= lim) : !(x >= -lim && x <= lim);
  });
  if (v < 0) return;
  const int64_t i = v / 4;
  const auto box = boxes[i];
  TORCHAUG_CHECK(false, "torchaug::", op, ": boxes must have 0 < height, width <= ", lim, " and |top|, |left| <= ", lim,
                 ", got box ", i, " = [", box[0].item<int64_t>(), ", ", box[1].item<int64_t>(), ", ",
                 box[2].item<int64_t>(), ", ", box[3].item<int64_t>(), "] (top, left, height, width)");
}

ResizedCropPlan plan_resized_crop(const char* op, const at::Tensor& ref, int64_t channels,
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
  check_interpolation(op, interpolation, kernels::kNearestExact);
  check_param(op, "boxes", boxes, ref, {B, 4}, "(B, 4)", {at::kLong});
  if (flip) check_param(op, "flip", *flip, ref, {B}, "(B,)", {at::kBool});
  TORCHAUG_CHECK(mean.has_value() == std.has_value(), "torchaug::", op, ": mean and std must be given together");
  if (mean) check_mean_std(op, *mean, *std, ref, channels);
  const at::ScalarType odt = check_out_dtype(op, out_dtype, in_dtype);
  const bool in_float = at::isFloatingType(in_dtype);
  TORCHAUG_CHECK(odt == in_dtype || at::isFloatingType(odt), "torchaug::", op, ": out_dtype must be the input dtype (",
              in_dtype, ") or floating, got ", odt);
  TORCHAUG_CHECK(!mean || at::isFloatingType(odt), "torchaug::", op,
              ": normalizing (mean/std given) needs a floating out_dtype, got ", odt);
  const at::MemoryFormat fmt = check_memory_format(op, memory_format, default_format);
  check_box_values(op, boxes);

  ResizedCropPlan plan;
  plan.out = empty_output(op, {B, channels, oh, ow}, ref.options().dtype(odt).memory_format(fmt));
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
  p.antialias = antialias && !kernels::is_nearest(interpolation);
  p.inv_max = (!in_float && at::isFloatingType(odt)) ? static_cast<float>(kernels::PixelRange<uint8_t>::inv_max) : 1.0f;
  return plan;
}

namespace {

// A warp's sampling arguments (warp_affine, warp_grid): nearest or bilinear, and the optional
// fill, finite float32 (B, C) values on the images' device.
void check_warp_sampling(const char* op, const at::Tensor& images, int64_t interpolation,
                         const std::optional<at::Tensor>& fill) {
  check_interpolation(op, interpolation, kernels::kBilinear);
  if (fill) {
    check_param(op, "fill", *fill, images, {images.size(0), images.size(1)}, "(B, C)", {at::kFloat});
    check_values(op, "fill", *fill, -kFiniteMax, kFiniteMax, "finite");
  }
}

}  // namespace

void check_warp_affine(const char* op, const at::Tensor& images, const at::Tensor& matrices,
                       int64_t interpolation, const std::optional<at::Tensor>& fill) {
  check_images(op, images);
  const int64_t B = images.size(0);
  check_defined(op, "matrices", matrices);
  const int64_t rows = matrices.dim() == 3 && matrices.size(1) == 3 ? 3 : 2;
  check_param(op, "matrices", matrices, images, {B, rows, 3}, "(B, 2, 3) or (B, 3, 3)", {at::kFloat, at::kDouble});
  check_values(op, "matrices", matrices, -kFiniteMax, kFiniteMax, "finite");
  check_warp_sampling(op, images, interpolation, fill);
}

WarpGridPlan plan_warp_grid(const at::Tensor& images, const at::Tensor& grid, int64_t interpolation,
                            const std::optional<at::Tensor>& fill) {
  const char* op = "warp_grid";
  check_images(op, images);
  const int64_t B = images.size(0), C = images.size(1);
  check_defined(op, "grid", grid);
  check_device(op, "grid", grid, images);
  const bool ok = grid.dim() == 4 && (grid.size(0) == B || grid.size(0) == 1) && grid.size(3) == 2;
  TORCHAUG_CHECK(ok, "torchaug::", op, ": grid must have shape (B, H_out, W_out, 2) or (1, H_out, W_out, 2) with B=", B,
                 ", got ", shape_str(grid.sizes()));
  TORCHAUG_CHECK(grid.scalar_type() == at::kFloat || grid.scalar_type() == at::kDouble, "torchaug::", op,
                 ": grid must be float32 or float64, got ", grid.scalar_type());
  check_values(op, "grid", grid, -kFiniteMax, kFiniteMax, "finite");
  check_warp_sampling(op, images, interpolation, fill);
  WarpGridPlan plan;
  plan.grid = acc_matrices(images, grid);
  plan.out = empty_output(op, {B, C, grid.size(1), grid.size(2)}, images.options().memory_format(image_memory_format(images)));
  if (fill) plan.fill = fill->contiguous();
  plan.p = warp_affine_params(images, plan.out, interpolation, plan.fill);
  plan.gb = grid.size(0) == 1 ? 0 : plan.grid.stride(0);
  plan.gy = plan.grid.stride(1);
  plan.gx = plan.grid.stride(2);
  plan.gk = plan.grid.stride(3);
  return plan;
}

at::Tensor acc_matrices(const at::Tensor& images, const at::Tensor& matrices) {
  return matrices.to(images.scalar_type() == at::kDouble ? at::kDouble : at::kFloat).contiguous();
}

WarpBackwardPlan plan_warp_affine_backward(const at::Tensor& grad, const at::Tensor& images, const at::Tensor& matrices,
                                           int64_t interpolation, const std::optional<at::Tensor>& fill) {
  const char* op = "_warp_affine_backward";
  check_warp_affine(op, images, matrices, interpolation, fill);
  TORCHAUG_CHECK(at::isFloatingType(images.scalar_type()), "torchaug::", op, ": images must be floating, got ",
                 images.scalar_type());
  check_defined(op, "grad", grad);
  check_device(op, "grad", grad, images);
  TORCHAUG_CHECK(at::isFloatingType(grad.scalar_type()), "torchaug::", op, ": grad must be floating, got ", grad.scalar_type());
  TORCHAUG_CHECK(grad.dim() == 4 && grad.size(0) == images.size(0) && grad.size(1) == images.size(1) && grad.size(2) > 0 &&
                     grad.size(3) > 0,
                 "torchaug::", op, ": grad must have shape (B, C, H_out, W_out) with B=", images.size(0),
                 ", C=", images.size(1), ", got ", shape_str(grad.sizes()));
  WarpBackwardPlan plan;
  plan.in = images.contiguous(image_memory_format(images));
  plan.m = acc_matrices(images, matrices);
  if (fill) plan.fill = fill->contiguous();
  plan.g = grad.to(images.scalar_type());
  plan.grad_images = at::zeros_like(plan.in);
  plan.grad_m = at::zeros(matrices.sizes(), plan.m.options());
  plan.p = warp_affine_params(plan.in, plan.g, interpolation, plan.fill, static_cast<int>(matrices.size(1)));
  return plan;
}

WarpAffineParams warp_affine_params(const at::Tensor& images, const at::Tensor& out,
                                           int64_t interpolation, const at::Tensor& fill, int rows) {
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
  p.rows = rows;
  return p;
}

AffineMatrixPlan plan_affine_matrices(const at::Tensor& angle, const at::Tensor& translate, const at::Tensor& scale,
                                      const at::Tensor& shear, const at::Tensor& center,
                                      double snap_period, at::OptionalIntArrayRef pixel_sizes) {
  const char* op = "_affine_matrices";
  check_defined(op, "angle", angle);
  TORCHAUG_CHECK(angle.dim() == 1, "torchaug::", op, ": angle must have shape (B,) or (1,), got ", shape_str(angle.sizes()));
  // B: the longest of the parameters' batch dimensions; the others have it or 1
  int64_t B = angle.size(0);
  check_defined(op, "translate", translate);
  check_defined(op, "scale", scale);
  check_defined(op, "shear", shear);
  check_defined(op, "center", center);
  for (const at::Tensor* t : {&translate, &scale, &shear, &center}) {
    if (t->dim() >= 1 && t->size(0) != 1) B = t->size(0);
  }
  auto same_device = [&](const char* name, const at::Tensor& t) {
    TORCHAUG_CHECK(t.device() == angle.device(), "torchaug::", op, ": ", name, " must be on angle's device ",
                   angle.device(), ", got ", t.device());
  };
  auto rows = [&](const char* name, const at::Tensor& t, int64_t k) {
    same_device(name, t);
    const bool ok = t.dim() == (k == 1 ? 1 : 2) && (t.size(0) == B || t.size(0) == 1) && (k == 1 || t.size(1) == k);
    TORCHAUG_CHECK(ok, "torchaug::", op, ": ", name, " must have shape ", k == 1 ? "(B,) or (1,)" : "(B, 2) or (1, 2)",
                   " with B=", B, ", got ", shape_str(t.sizes()));
    TORCHAUG_CHECK(t.scalar_type() == at::kDouble, "torchaug::", op, ": ", name, " must be float64, got ", t.scalar_type());
    return t.size(0) == 1 ? int64_t(0) : t.stride(0);
  };
  AffineMatrixPlan plan;
  AffineMatrixParams& p = plan.p;
  p.angle_s = rows("angle", angle, 1);
  p.translate_s = rows("translate", translate, 2);
  p.scale_s = rows("scale", scale, 1);
  p.shear_s = rows("shear", shear, 2);
  p.center_s = rows("center", center, 2);
  p.translate_c = translate.stride(1);
  p.shear_c = shear.stride(1);
  p.center_c = center.stride(1);
  TORCHAUG_CHECK(snap_period >= 0.0 && std::isfinite(snap_period), "torchaug::", op,
                 ": snap_period must be a finite number >= 0 (degrees), got ", snap_period);
  p.snap_period = snap_period;
  p.pixels = pixel_sizes.has_value();
  p.h = p.w = p.out_h = p.out_w = 0.0;
  if (p.pixels) {
    const auto sz = *pixel_sizes;
    TORCHAUG_CHECK(sz.size() == 4, "torchaug::", op, ": pixel_sizes must be [H, W, OH, OW], got ", sz.size(), " values");
    for (const int64_t v : sz) {
      TORCHAUG_CHECK(v >= 0, "torchaug::", op, ": pixel_sizes must be non-negative, got ", shape_str(sz));
    }
    p.h = static_cast<double>(sz[0]);
    p.w = static_cast<double>(sz[1]);
    p.out_h = static_cast<double>(sz[2]);
    p.out_w = static_cast<double>(sz[3]);
  }
  p.angle = angle.data_ptr<double>();
  p.translate = translate.data_ptr<double>();
  p.scale = scale.data_ptr<double>();
  p.shear = shear.data_ptr<double>();
  p.center = center.data_ptr<double>();
  plan.out = at::empty({B, 2, 3}, angle.options());
  p.out = plan.out.data_ptr<double>();
  plan.B = B;
  return plan;
}

RrcBoxPlan plan_rrc_boxes(const std::optional<at::Tensor>& rand, const std::optional<at::Tensor>& sizes, int64_t height,
                          int64_t width, double scale_min, double scale_max, double ratio_min, double ratio_max,
                          int64_t batch, const std::optional<at::Tensor>& like,
                          const std::optional<at::Generator>& generator, const char* op) {
  TORCHAUG_CHECK(rand || sizes || like, "torchaug::", op,
                 ": without rand and sizes, like (a tensor on the batch's device) must be given");
  const at::Tensor& on = rand ? *rand : (sizes ? *sizes : *like);
  if (!rand && sizes) {
    TORCHAUG_CHECK(sizes->dim() == 2, "torchaug::", op, ": sizes must have shape (B, 2), got ", shape_str(sizes->sizes()));
    TORCHAUG_CHECK(batch < 0 || batch == sizes->size(0), "torchaug::", op, ": batch must be sizes.size(0) (", sizes->size(0),
                   ") or -1, got ", batch);
    batch = sizes->size(0);
  }
  TORCHAUG_CHECK(sizes || (height > 0 && width > 0), "torchaug::", op, ": height and width must be positive, got ", height,
              " and ", width);
  TORCHAUG_CHECK(0 <= scale_min && scale_min <= scale_max, "torchaug::", op,
              ": scale must satisfy 0 <= scale_min <= scale_max, got ", scale_min, ", ", scale_max);
  TORCHAUG_CHECK(0 < ratio_min && ratio_min <= ratio_max, "torchaug::", op, ": ratio must satisfy 0 < ratio_min <= ratio_max, got ",
              ratio_min, ", ", ratio_max);
  Draws draws;
  if (rand) draws = resolve_draws(op, rand, generator, -1, kernels::kRrcDraws, on.device());  // checks rand
  if (sizes) check_param(op, "sizes", *sizes, on, {rand ? draws.B : batch, 2}, "(B, 2)", {at::kLong});
  if (!rand) draws = resolve_draws(op, rand, generator, batch, kernels::kRrcDraws, on.device());  // after every check
  const int64_t B = draws.B;
  RrcBoxPlan plan;
  plan.B = B;
  plan.rand = draws.u;
  if (sizes) plan.sizes = sizes->contiguous();
  plan.boxes = at::empty({B, 4}, on.options().dtype(at::kLong));
  plan.p = {draws.data(), draws.kernel, sizes ? plan.sizes.data_ptr<int64_t>() : nullptr, height, width,
            scale_min, scale_max, ratio_min, ratio_max, plan.boxes.data_ptr<int64_t>()};
  return plan;
}

void check_flip_p(double p) {
  TORCHAUG_CHECK(p >= 0.0 && p <= 1.0, "torchaug::_random_resized_crop_boxes_flips: p must be a probability in [0, 1], got ", p);
}

at::Tensor torch_flips(const std::optional<at::Generator>& generator, int64_t B, double p, const at::Device& device) {
  const at::Device where = generator ? generator->device() : device;
  auto flips = at::empty({B}, at::TensorOptions().dtype(at::kBool).device(where));
  flips.bernoulli_(p, generator);
  return where == device ? flips : flips.to(device, /*non_blocking=*/true);
}

void check_flip(const char* op, const at::Tensor& images, const at::Tensor& horizontal,
                       const at::Tensor& vertical) {
  check_images(op, images);
  const int64_t B = images.size(0);
  check_param(op, "horizontal", horizontal, images, {B}, "(B,)", {at::kBool});
  check_param(op, "vertical", vertical, images, {B}, "(B,)", {at::kBool});
}

std::pair<at::Tensor, at::Tensor> plan_ragged(const char* op, const at::Tensor& data, const at::Tensor& offsets,
                                                     const at::Tensor& sizes, int64_t channels, int64_t* max_height) {
  check_defined(op, "data", data);
  check_defined(op, "offsets", offsets);
  check_defined(op, "sizes", sizes);
  TORCHAUG_CHECK(data.dim() == 1, "torchaug::", op, ": data must be a 1-D tensor (the images' elements back to back), got ",
              data.dim(), "-D with shape ", shape_str(data.sizes()));
  TORCHAUG_CHECK(is_image_dtype(data.scalar_type()), "torchaug::", op,
              ": data must be uint8, float32, float64, float16 or bfloat16, got ", data.scalar_type());
  TORCHAUG_CHECK(channels > 0, "torchaug::", op, ": channels must be positive, got ", channels);
  TORCHAUG_CHECK(offsets.dim() == 1, "torchaug::", op, ": offsets must have shape (B,), got ", shape_str(offsets.sizes()));
  const int64_t B = offsets.size(0);
  TORCHAUG_CHECK(sizes.dim() == 2 && sizes.size(0) == B && sizes.size(1) == 2, "torchaug::", op,
              ": offsets (B,) and sizes (B, 2) must describe the same B images, got offsets of shape ",
              shape_str(offsets.sizes()), " and sizes of shape ", shape_str(sizes.sizes()));
  TORCHAUG_CHECK(offsets.scalar_type() == at::kLong && sizes.scalar_type() == at::kLong, "torchaug::", op,
              ": offsets and sizes must be int64, got ", offsets.scalar_type(), " and ", sizes.scalar_type());
  TORCHAUG_CHECK(offsets.device().is_cpu() && sizes.device().is_cpu(), "torchaug::", op,
              ": offsets and sizes must be CPU tensors (host metadata of the ragged batch), got ", offsets.device(),
              " and ", sizes.device());
  auto off = offsets.contiguous();
  auto sz = sizes.contiguous();
  const int64_t* o = off.data_ptr<int64_t>();
  const int64_t* s = sz.data_ptr<int64_t>();
  int64_t tallest = 0;
  for (int64_t b = 0; b < B; ++b) {
    tallest = std::max(tallest, s[2 * b]);
    TORCHAUG_CHECK(s[2 * b] > 0 && s[2 * b + 1] > 0, "torchaug::", op, ": sizes[", b, "] must be positive, got (",
                s[2 * b], ", ", s[2 * b + 1], ")");
    // overflow-checked: sizes and offsets are user numbers up to 2^63
    int64_t plane = 0, elems = 0, end = 0;
    const bool fits = !__builtin_mul_overflow(s[2 * b], s[2 * b + 1], &plane) &&
                      !__builtin_mul_overflow(plane, channels, &elems) && !__builtin_add_overflow(o[b], elems, &end);
    TORCHAUG_CHECK(fits && o[b] >= 0 && end <= data.numel(), "torchaug::", op,
                ": image ", b, " (offset ", o[b], ", ", channels, "x", s[2 * b], "x", s[2 * b + 1],
                ") lies outside data of ", data.numel(), " elements");
  }
  if (max_height != nullptr) *max_height = tallest;
  if (!data.device().is_cpu()) {
    off = off.pin_memory().to(data.device(), /*non_blocking=*/true);
    sz = sz.pin_memory().to(data.device(), /*non_blocking=*/true);
  }
  return {off, sz};
}

}  // namespace torchaug
