// Host-side checks and plans of every op, compiled once by the C++ compiler and shared by the CPU
// and CUDA backends (the headers declare them; no host helper is defined inline in a header that
// nvcc also compiles).
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>

#include "convert_impl.h"
#include "geometry_impl.h"
#include "ops_common.h"

namespace torchaug {

std::string shape_str(at::IntArrayRef s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  if (s.size() == 1) out += ",";
  return out + ")";
}

KernelDrawsHook& cuda_kernel_draws() {
  static KernelDrawsHook hook = nullptr;
  return hook;
}

Draws resolve_draws(const char* op, const std::optional<at::Tensor>& rand, const std::optional<at::Generator>& generator,
                    int64_t batch, int64_t R, const at::Device& device) {
  Draws d;
  if (rand) {
    TORCHAUG_CHECK(!generator.has_value(), "torchaug::", op,
                   ": generator draws rand when rand is None; pass one or the other, got both");
    TORCHAUG_CHECK(rand->dim() == 2 && rand->size(1) == R && rand->scalar_type() == at::kDouble, "torchaug::", op,
                   ": rand must be a (B, ", R, ") float64 tensor of uniform draws, got ", rand->scalar_type(), " of shape ",
                   shape_str(rand->sizes()));
    d.u = rand->contiguous();
    d.B = d.u.size(0);
    return d;
  }
  const int64_t B = d.B = batch;
  TORCHAUG_CHECK(B >= 0, "torchaug::", op, ": without rand the batch size must be given (a non-negative integer), got ", B);
  const at::Device where = generator ? generator->device() : device;
  const int64_t n = B * R;
  if (device.is_cuda() && where == device && R <= kMaxKernelDraws && n <= INT32_MAX && cuda_kernel_draws() != nullptr) {
    if (n > 0) d.kernel = cuda_kernel_draws()(generator, n, device);  // torch.rand of 0 values leaves the generator alone
    return d;
  }
  d.u = at::rand({B, R}, generator, at::TensorOptions().dtype(at::kDouble).device(where));
  if (where != device) d.u = d.u.to(device, /*non_blocking=*/true);
  return d;
}

void check_images(const char* op, const at::Tensor& images, const char* name) {
  TORCHAUG_CHECK(images.dim() == 4, "torchaug::", op, ": ", name, " must be a 4-D (B, C, H, W) tensor, got ",
              images.dim(), "-D with shape ", shape_str(images.sizes()));
  TORCHAUG_CHECK(is_image_dtype(images.scalar_type()), "torchaug::", op, ": ", name,
              " must be uint8, float32, float64, float16 or bfloat16, got ", images.scalar_type());
  if (images.size(0) > 0) {
    TORCHAUG_CHECK(images.size(1) > 0 && images.size(2) > 0 && images.size(3) > 0, "torchaug::", op, ": ", name,
                " must have C, H, W > 0, got shape ", shape_str(images.sizes()));
  }
}

void check_device(const char* op, const char* name, const at::Tensor& t, const at::Tensor& images) {
  TORCHAUG_CHECK(t.device() == images.device(), "torchaug::", op, ": ", name, " must be on the images' device ",
              images.device(), ", got ", t.device());
}

void check_param(const char* op, const char* name, const at::Tensor& t, const at::Tensor& images,
                        std::vector<int64_t> shape, const char* shape_doc,
                        std::initializer_list<at::ScalarType> dtypes) {
  check_device(op, name, t, images);
  bool ok_shape = t.dim() == static_cast<int64_t>(shape.size());
  for (size_t i = 0; ok_shape && i < shape.size(); ++i) ok_shape = t.size(i) == shape[i];
  TORCHAUG_CHECK(ok_shape, "torchaug::", op, ": ", name, " must have shape ", shape_doc, " with B=", images.size(0),
              ", got ", shape_str(t.sizes()));
  bool ok_dtype = false;
  std::string allowed;
  for (auto d : dtypes) {
    ok_dtype = ok_dtype || t.scalar_type() == d;
    allowed += cat(allowed.empty() ? "" : " or ", d);
  }
  TORCHAUG_CHECK(ok_dtype, "torchaug::", op, ": ", name, " must have dtype ", allowed, ", got ", t.scalar_type());
}

// A per-sample parameter: (B,) or (1,), real dtype (converted to float32), on the images' device.
// Returns it viewed as (B, 1) or (1 -> broadcast) strides.
at::Tensor sample_param(const char* op, const char* name, const at::Tensor& t, const at::Tensor& images,
                       Strides2& s) {
  const int64_t B = images.size(0);
  check_device(op, name, t, images);
  TORCHAUG_CHECK(t.dim() == 1 && (t.size(0) == B || t.size(0) == 1), "torchaug::", op, ": ", name,
                 " must have shape (B,) or (1,) with B=", B, ", got ", shape_str(t.sizes()));
  TORCHAUG_CHECK(t.scalar_type() != at::kBool && !at::isComplexType(t.scalar_type()), "torchaug::", op, ": ", name,
                 " must be a real number tensor, got ", t.scalar_type());
  at::Tensor f = t.scalar_type() == at::kFloat ? t : t.to(at::kFloat);
  s = {f.size(0) == 1 ? 0 : f.stride(0), 0};
  return f;
}

std::pair<int64_t, int64_t> check_out_size(const char* op, c10::SymIntArrayRef out_size) {
  TORCHAUG_CHECK(out_size.size() == 2, "torchaug::", op, ": out_size must be [height, width], got ", out_size.size(),
              " values");
  const int64_t oh = out_size[0].guard_int(__FILE__, __LINE__);
  const int64_t ow = out_size[1].guard_int(__FILE__, __LINE__);
  TORCHAUG_CHECK(oh > 0 && ow > 0, "torchaug::", op, ": out_size must be positive, got [", oh, ", ", ow, "]");
  return {oh, ow};
}

void check_op_ids(const char* op, const at::Tensor& ops, int num_ops) {
  if (!ops.device().is_cpu() || ops.numel() == 0) return;
  const bool bad = ((ops < 0) | (ops >= num_ops)).any().item<bool>();
  TORCHAUG_CHECK(!bad, "torchaug::", op, ": ops must hold op ids in [0, ", num_ops, "), got ", ops.min().item<int64_t>(),
                 "..", ops.max().item<int64_t>());
}

void check_interpolation(const char* op, int64_t interpolation, int64_t max_code) {
  TORCHAUG_CHECK(interpolation >= 0 && interpolation <= max_code, "torchaug::", op,
              ": interpolation must be ", max_code == 2 ? "0 (nearest), 1 (bilinear) or 2 (bicubic)" : "0 (nearest) or 1 (bilinear)",
              ", got ", interpolation);
}

void check_mean_std(const char* op, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& images,
                           int64_t channels) {
  const std::vector<int64_t> shape{images.size(0), channels};
  check_param(op, "mean", mean, images, shape, "(B, C)", {at::kFloat});
  check_param(op, "std", std, images, shape, "(B, C)", {at::kFloat});
  if (std.device().is_cpu() && std.numel() > 0) {
    TORCHAUG_CHECK(!(std == 0).any().item<bool>(), "torchaug::", op, ": std must not contain zeros");
  }
}

at::ScalarType check_out_dtype(const char* op, std::optional<at::ScalarType> out_dtype,
                                      at::ScalarType fallback) {
  const at::ScalarType t = out_dtype.value_or(fallback);
  TORCHAUG_CHECK(is_image_dtype(t), "torchaug::", op, ": out_dtype must be uint8, float32, float64, float16 or bfloat16, got ", t);
  return t;
}

at::MemoryFormat check_memory_format(const char* op, std::optional<at::MemoryFormat> fmt, at::MemoryFormat fallback) {
  const at::MemoryFormat f = fmt.value_or(fallback);
  TORCHAUG_CHECK(f == at::MemoryFormat::Contiguous || f == at::MemoryFormat::ChannelsLast, "torchaug::", op,
              ": memory_format must be torch.contiguous_format or torch.channels_last, got ", f);
  return f;
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
  check_interpolation(op, interpolation, kernels::kBicubic);
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
  if (boxes.device().is_cpu() && B > 0) {
    const auto bad = (boxes.narrow(1, 2, 2) <= 0).any(1);
    if (bad.any().item<bool>()) {
      const int64_t i = bad.nonzero()[0][0].item<int64_t>();
      const auto box = boxes[i];
      TORCHAUG_CHECK(false, "torchaug::", op, ": boxes must have height > 0 and width > 0, got box ", i, " = [",
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

void check_warp_affine(const char* op, const at::Tensor& images, const at::Tensor& matrices,
                              int64_t interpolation, const std::optional<at::Tensor>& fill) {
  check_images(op, images);
  const int64_t B = images.size(0);
  check_param(op, "matrices", matrices, images, {B, 2, 3}, "(B, 2, 3)", {at::kFloat, at::kDouble});
  check_interpolation(op, interpolation, kernels::kBilinear);
  if (fill) check_param(op, "fill", *fill, images, {B, images.size(1)}, "(B, C)", {at::kFloat});
}

at::Tensor acc_matrices(const at::Tensor& images, const at::Tensor& matrices) {
  return matrices.to(images.scalar_type() == at::kDouble ? at::kDouble : at::kFloat).contiguous();
}

WarpAffineParams warp_affine_params(const at::Tensor& images, const at::Tensor& out,
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

RrcBoxPlan plan_rrc_boxes(const std::optional<at::Tensor>& rand, const std::optional<at::Tensor>& sizes, int64_t height,
                          int64_t width, double scale_min, double scale_max, double ratio_min, double ratio_max,
                          int64_t batch, const std::optional<at::Tensor>& like,
                          const std::optional<at::Generator>& generator) {
  const char* op = "_random_resized_crop_boxes";
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
  TORCHAUG_CHECK(0 < scale_min && scale_min <= scale_max, "torchaug::", op,
              ": scale must satisfy 0 < scale_min <= scale_max, got ", scale_min, ", ", scale_max);
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

void check_flip(const char* op, const at::Tensor& images, const at::Tensor& horizontal,
                       const at::Tensor& vertical) {
  check_images(op, images);
  const int64_t B = images.size(0);
  check_param(op, "horizontal", horizontal, images, {B}, "(B,)", {at::kBool});
  check_param(op, "vertical", vertical, images, {B}, "(B,)", {at::kBool});
}

std::pair<at::Tensor, at::Tensor> plan_ragged(const char* op, const at::Tensor& data, const at::Tensor& offsets,
                                                     const at::Tensor& sizes, int64_t channels, int64_t* max_height) {
  TORCHAUG_CHECK(data.dim() == 1, "torchaug::", op, ": data must be a 1-D tensor (the images' elements back to back), got ",
              data.dim(), "-D with shape ", shape_str(data.sizes()));
  TORCHAUG_CHECK(is_image_dtype(data.scalar_type()), "torchaug::", op,
              ": data must be uint8, float32, float64, float16 or bfloat16, got ", data.scalar_type());
  TORCHAUG_CHECK(channels > 0, "torchaug::", op, ": channels must be positive, got ", channels);
  TORCHAUG_CHECK(offsets.dim() == 1, "torchaug::", op, ": offsets must have shape (B,), got ", shape_str(offsets.sizes()));
  const int64_t B = offsets.size(0);
  TORCHAUG_CHECK(sizes.dim() == 2 && sizes.size(0) == B && sizes.size(1) == 2, "torchaug::", op,
              ": sizes must have shape (B, 2) with B=", B, ", got ", shape_str(sizes.sizes()));
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
    TORCHAUG_CHECK(o[b] >= 0 && o[b] + channels * s[2 * b] * s[2 * b + 1] <= data.numel(), "torchaug::", op,
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

NormalizePlan plan_normalize(const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std,
                                    std::optional<at::ScalarType> out_dtype,
                                    std::optional<at::MemoryFormat> memory_format, const char* op) {
  check_images(op, images);
  check_mean_std(op, mean, std, images, images.size(1));
  const at::ScalarType odt = check_out_dtype(op, out_dtype, at::kFloat);
  TORCHAUG_CHECK(at::isFloatingType(odt), "torchaug::", op, ": out_dtype must be float32, float64, float16 or bfloat16, got ", odt);
  const at::MemoryFormat in_fmt = image_memory_format(images);
  const at::MemoryFormat fmt = check_memory_format(op, memory_format, in_fmt);
  NormalizePlan plan;
  plan.out = at::empty(images.sizes(), images.options().dtype(odt).memory_format(fmt));
  plan.mean = mean;
  plan.std = std;
  NormalizeParams& p = plan.p;
  p.is = strides4(images);
  p.os = strides4(plan.out);
  p.channels = images.size(1);
  p.height = images.size(2);
  p.width = images.size(3);
  p.mean = plan.mean.data_ptr<float>();
  p.std = plan.std.data_ptr<float>();
  p.ms = strides2(mean);
  p.ss = strides2(std);
  p.out = plan.out.data_ptr();
  p.out_kind = pixel_kind(odt);
  p.inv_max = images.scalar_type() == at::kByte ? static_cast<float>(kernels::PixelRange<uint8_t>::inv_max) : 1.0f;
  p.flat = images.is_contiguous(fmt) && fmt == in_fmt;
  p.channels_last = fmt == at::MemoryFormat::ChannelsLast;
  return plan;
}

}  // namespace torchaug
