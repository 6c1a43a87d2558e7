// Host-side checks and window weights of the filter family (see csrc/ops/filter.h).
#include <ATen/ATen.h>

#include <cmath>
#include <vector>

#include "filter.h"

namespace torchaug {

namespace {

// The dtype the windows are applied in: double for float64 images, float32 otherwise.
at::ScalarType acc_dtype(const at::Tensor& images) {
  return images.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

// The dtype torchvision builds its kernels in: the image's for floating images, float32 for uint8.
at::ScalarType kernel_dtype(const at::Tensor& images) {
  return images.scalar_type() == at::kByte ? at::kFloat : images.scalar_type();
}

// A window known on the host (values in double) as a (1, ky, kx) tensor on the images' device,
// rounded to `rounding` first. A CUDA copy goes through pinned memory without blocking the host.
at::Tensor host_window(const at::Tensor& images, const std::vector<double>& w, int ky, int kx,
                       at::ScalarType rounding) {
  at::Tensor t = at::empty({1, ky, kx}, at::TensorOptions().dtype(at::kDouble));
  std::copy(w.begin(), w.end(), t.data_ptr<double>());
  t = t.to(rounding).to(acc_dtype(images));
  if (images.device().is_cpu()) return t;
  return t.pin_memory().to(images.device(), /*non_blocking=*/true);
}

void check_filter_images(const char* op, const at::Tensor& images, bool any_channels) {
  check_images(op, images);
  const int64_t C = images.size(1);
  TORCHAUG_CHECK(any_channels || C == 1 || C == 3, "torchaug::", op, ": images must have 1 or 3 channels, got ", C);
}

// weights: (1 or B, ky, kx), or with separable (1 or B, ky + kx), the row weights first.
FilterPlan make_plan(const at::Tensor& images, int mode, const at::Tensor& weights, const at::Tensor& param,
                     int ky, int kx, bool separable) {
  FilterPlan plan;
  FilterParams& p = plan.p;
  plan.out = at::empty(images.sizes(), images.options().memory_format(image_memory_format(images)));
  plan.weights = weights.contiguous();
  plan.param = param;
  set_image_layout(p, images, plan.out);
  p.ky = ky;
  p.kx = kx;
  p.separable = separable;
  p.weights = plan.weights.data_ptr();
  p.weights_stride = plan.weights.size(0) == 1 ? 0 : plan.weights.stride(0);
  p.param = param.defined() ? param.data_ptr<float>() : nullptr;
  p.param_stride = param.defined() && param.size(0) > 1 ? param.stride(0) : 0;
  p.mode = mode;
  return plan;
}

// A window side: odd, in [1, kFilterMaxWindow] (min_size for derivative windows), and its half
// below the image side it runs along (reflect-101 padding mirrors once).
void check_window_side(const char* op, const char* name, int64_t k, int64_t min_size, int64_t side,
                       const char* side_name) {
  TORCHAUG_CHECK(k % 2 == 1 && k >= min_size && k <= kernels::kFilterMaxWindow, "torchaug::", op, ": ", name,
                 " must hold odd sizes in [", min_size, ", ", int(kernels::kFilterMaxWindow), "], got ", k);
  TORCHAUG_CHECK(side == 0 || k / 2 < side, "torchaug::", op, ": ", name, " ", k,
                 " needs images with ", side_name, " > ", k / 2, " (reflect padding), got ", side);
}

at::Tensor run_plan(FilterRunFn run, const at::Tensor& images, FilterPlan& plan) {
  if (images.numel() > 0) run(images, plan);
  return plan.out;
}

}  // namespace

at::Tensor adjust_sharpness_op(FilterRunFn run, const at::Tensor& images, const at::Tensor& factor) {
  const char* op = "adjust_sharpness";
  check_filter_images(op, images, false);
  Strides2 s;
  at::Tensor f = sample_param(op, "factor", factor, images, s);
  const double a = 1.0 / 13.0, b = 5.0 / 13.0;
  at::Tensor w = host_window(images, {a, a, a, a, b, a, a, a, a}, 3, 3, kernel_dtype(images));
  FilterPlan plan = make_plan(images, kernels::kFilterSharpness, w, f, 3, 3, false);
  return run_plan(run, images, plan);
}

at::Tensor gaussian_blur_op(FilterRunFn run, const at::Tensor& images, at::IntArrayRef kernel_size,
                            const at::Tensor& sigma) {
  const char* op = "gaussian_blur";
  check_filter_images(op, images, true);
  const int64_t B = images.size(0);
  TORCHAUG_CHECK(kernel_size.size() == 2, "torchaug::", op, ": kernel_size must be [width, height], got ",
                 kernel_size.size(), " values");
  check_window_side(op, "kernel_size", kernel_size[0], 1, images.size(3), "width");
  check_window_side(op, "kernel_size", kernel_size[1], 1, images.size(2), "height");
  check_device(op, "sigma", sigma, images);
  const bool shape_ok = (sigma.dim() == 1 && (sigma.size(0) == B || sigma.size(0) == 1)) ||
                        (sigma.dim() == 2 && (sigma.size(0) == B || sigma.size(0) == 1) && sigma.size(1) == 2);
  TORCHAUG_CHECK(shape_ok, "torchaug::", op, ": sigma must have shape (B, 2), (1, 2), (B,) or (1,) with B=", B,
                 ", got ", shape_str(sigma.sizes()));
  TORCHAUG_CHECK(at::isFloatingType(sigma.scalar_type()) || at::isIntegralType(sigma.scalar_type(), false),
                 "torchaug::", op, ": sigma must be a real number tensor, got ", sigma.scalar_type());
  check_values(op, "sigma", sigma, 4.9406564584124654e-324, kFiniteMax, "finite and > 0");
  // torchvision's _get_gaussian_kernel1d per sample and axis, in its dtype:
  //   x = linspace(-lim, lim, k); softmax(-(x / sigma)^2); kernel2d = k_y[:, None] * k_x[None, :],
  // kept as its two 1-D windows and applied as two 1-D convolutions (kernels::row_sum, column_sum):
  // the sums of torchvision's 2-D convolution up to float rounding (uint8 within 1 LSB)
  const at::ScalarType kd = kernel_dtype(images);
  at::Tensor sg = (sigma.dim() == 1 ? sigma.unsqueeze(1).expand({sigma.size(0), 2}) : sigma).to(kd);
  auto kernel1d = [&](int64_t k, const at::Tensor& s) {
    const double lim = static_cast<double>(k - 1) / (2.0 * std::sqrt(2.0));
    at::Tensor x = at::linspace(-lim, lim, k, images.options().dtype(kd)).view({1, -1});
    return at::softmax(x.div(s.view({-1, 1})).pow(2).neg(), 1);
  };
  at::Tensor kx = kernel1d(kernel_size[0], sg.select(1, 0));
  at::Tensor ky = kernel1d(kernel_size[1], sg.select(1, 1));
  at::Tensor w = at::cat({ky, kx}, 1).to(acc_dtype(images));  // a row per sigma row
  FilterPlan plan = make_plan(images, kernels::kFilterConv, w, at::Tensor(), static_cast<int>(kernel_size[1]),
                              static_cast<int>(kernel_size[0]), true);
  return run_plan(run, images, plan);
}

at::Tensor laplacian_op(FilterRunFn run, const at::Tensor& images, at::IntArrayRef window_size,
                        at::IntArrayRef smoothing_size, const at::Tensor& scale, bool normalized_kernel) {
  const char* op = "laplacian";
  check_filter_images(op, images, true);
  TORCHAUG_CHECK(window_size.size() == 2, "torchaug::", op, ": window_size must be [height, width], got ",
                 window_size.size(), " values");
  TORCHAUG_CHECK(smoothing_size.size() == 2, "torchaug::", op, ": smoothing_size must be [height, width], got ",
                 smoothing_size.size(), " values");
  const int64_t dy = window_size[0], dx = window_size[1], sy = smoothing_size[0], sx = smoothing_size[1];
  check_window_side(op, "window_size", dy, 3, images.size(2), "height");
  check_window_side(op, "window_size", dx, 3, images.size(3), "width");
  check_window_side(op, "smoothing_size", sy, 1, images.size(2), "height");
  check_window_side(op, "smoothing_size", sx, 1, images.size(3), "width");
  Strides2 s;
  at::Tensor f = sample_param(op, "scale", scale, images, s);
  const int wy = static_cast<int>(std::max(dy, sy)), wx = static_cast<int>(std::max(dx, sx));
  std::vector<double> w(static_cast<size_t>(wy * wx));
  kernels::laplacian_weights(static_cast<int>(dy), static_cast<int>(dx), static_cast<int>(sy), static_cast<int>(sx),
                             normalized_kernel, wy, wx, w.data());
  FilterPlan plan = make_plan(images, kernels::kFilterScaled, host_window(images, w, wy, wx, at::kDouble), f, wy, wx, false);
  return run_plan(run, images, plan);
}

}  // namespace torchaug
