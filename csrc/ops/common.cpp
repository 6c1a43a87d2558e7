// Host-side helpers of every op (csrc/ops/common.h): argument checks, shapes in messages, and the
// uniform draws of the ops that map draws to parameters.
#include <ATen/ATen.h>

#include <limits>

#include "common.h"

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
  TORCHAUG_CHECK(B >= 0, "torchaug::", op, ": batch must be the number of samples to draw for (a non-negative integer), got ", B);
  TORCHAUG_CHECK(R == 0 || B <= std::numeric_limits<int64_t>::max() / R, "torchaug::", op, ": cannot draw ", R,
                 " numbers for each of ", B, " samples (more than an int64 counts)");
  const at::Device where = generator ? generator->device() : device;
  const int64_t n = B * R;
  if (device.is_cuda() && where == device && R <= kMaxKernelDraws && n <= INT32_MAX && cuda_kernel_draws() != nullptr) {
    if (n > 0) d.kernel = cuda_kernel_draws()(generator, n, device);  // torch.rand of 0 values leaves the generator alone
    return d;
  }
  try {
    d.u = at::rand({B, R}, generator, at::TensorOptions().dtype(at::kDouble).device(where));
  } catch (const c10::Error& e) {
    TORCHAUG_CHECK(false, "torchaug::", op, ": cannot draw ", R, " numbers for each of ", B, " samples: ",
                   e.what_without_backtrace());
  }
  if (where != device) d.u = d.u.to(device, /*non_blocking=*/true);
  return d;
}

void check_defined(const char* op, const char* name, const at::Tensor& t) {
  TORCHAUG_CHECK(t.defined(), "torchaug::", op, ": ", name, " must be a tensor, got None");
}

namespace {
// The flat index of t's first value outside [lo, hi] (NaN included), -1 if none; *value gets it.
int64_t first_outside(const at::Tensor& t, double lo, double hi, double* value) {
  return first_value_where(t, [&](double v, int64_t) {
    if (v >= lo && v <= hi) return false;  // NaN fails both
    *value = v;
    return true;
  });
}
}  // namespace

void check_values(const char* op, const char* name, const at::Tensor& t, double lo, double hi, const char* range_doc) {
  if (!t.device().is_cpu() || !(at::isFloatingType(t.scalar_type()) || at::isIntegralType(t.scalar_type(), false))) return;
  double value = 0;
  const int64_t i = first_outside(t, lo, hi, &value);
  TORCHAUG_CHECK(i < 0, "torchaug::", op, ": ", name, " must be ", range_doc, ", got ", value, " at flat index ", i);
}

void check_ids(const char* op, const char* name, const at::Tensor& t, int64_t n, const char* what) {
  if (!t.device().is_cpu()) return;
  double value = 0;
  // [0, n) of integer ids is [0, n - 1]; a fraction below n fails too (the callers pass int64 tensors)
  const int64_t i = first_outside(t, 0, static_cast<double>(n - 1), &value);
  TORCHAUG_CHECK(i < 0, "torchaug::", op, ": ", name, " must hold ", what, " in [0, ", n, "), got ", value, " at flat index ", i);
}

at::Tensor empty_output(const char* op, at::IntArrayRef sizes, const at::TensorOptions& options) {
  try {
    return at::empty(sizes, options);
  } catch (const c10::Error& e) {
    double n = 1;
    for (int64_t s : sizes) n *= static_cast<double>(s);
    const double gib = n * static_cast<double>(c10::elementSize(c10::typeMetaToScalarType(options.dtype()))) /
                       (1024.0 * 1024.0 * 1024.0);
    TORCHAUG_CHECK(false, "torchaug::", op, ": cannot allocate the output of shape ", shape_str(sizes), " (", gib, " GiB) on ",
                   options.device(), ": ", e.what_without_backtrace());
  }
  return at::Tensor();
}

void check_images(const char* op, const at::Tensor& images, const char* name) {
  check_defined(op, name, images);
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
  check_defined(op, name, t);
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
  check_values(op, name, t, -kFiniteMax, kFiniteMax, "finite");
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

void check_interpolation(const char* op, int64_t interpolation, int64_t max_code) {
  TORCHAUG_CHECK(interpolation >= 0 && interpolation <= max_code, "torchaug::", op,
              ": interpolation must be ",
              max_code == 3 ? "0 (nearest), 1 (bilinear), 2 (bicubic) or 3 (nearest-exact)"
                            : (max_code == 2 ? "0 (nearest), 1 (bilinear) or 2 (bicubic)" : "0 (nearest) or 1 (bilinear)"),
              ", got ", interpolation);
}

void check_mean_std(const char* op, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& images,
                           int64_t channels) {
  const std::vector<int64_t> shape{images.size(0), channels};
  check_param(op, "mean", mean, images, shape, "(B, C)", {at::kFloat});
  check_param(op, "std", std, images, shape, "(B, C)", {at::kFloat});
  if (std.device().is_cpu()) {
    TORCHAUG_CHECK(first_value_where(std, [](double v, int64_t) { return v == 0; }) < 0, "torchaug::", op,
                   ": std must not contain zeros");
  }
  check_values(op, "mean", mean, -kFiniteMax, kFiniteMax, "finite");
  check_values(op, "std", std, -kFiniteMax, kFiniteMax, "finite and non-zero");
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

}  // namespace torchaug
