// Host side of the ops that map each sample's uniform draws to its parameters (csrc/ops/params.h):
// argument checks, outputs and draws; the per-sample math is in csrc/kernels (erasing_box,
// random_affine_sample, random_perspective_sample).
#include <cmath>

#include "params.h"

namespace torchaug {
namespace {

// The tensor whose device takes the op's outputs and draws: rand, else like.
const at::Tensor& draws_on(const char* op, const std::optional<at::Tensor>& rand, const std::optional<at::Tensor>& like) {
  TORCHAUG_CHECK(rand || like, "torchaug::", op, ": without rand, like (a tensor on the batch's device) must be given");
  return rand ? *rand : *like;
}

// rand's uniforms in [0, 1] (checked where rand is on the CPU: check_values).
void check_rand(const char* op, const Draws& d) {
  if (d.u.defined()) check_values(op, "rand", d.u, 0.0, 1.0, "uniform draws in [0, 1]");
}

// A range argument: [min, max] pairs of finite values, min <= max; 2 values, or 4 where `four`.
void check_ranges(const char* op, const char* name, at::ArrayRef<double> v, bool four = false) {
  TORCHAUG_CHECK(v.size() == 2 || (four && v.size() == 4), "torchaug::", op, ": ", name, " must have 2", four ? " or 4" : "",
                 " values ([min, max] pairs), got ", v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    TORCHAUG_CHECK(std::isfinite(v[i]), "torchaug::", op, ": ", name, " must be finite, got ", v[i], " at index ", i);
  }
  for (size_t i = 0; i + 1 < v.size(); i += 2) {
    TORCHAUG_CHECK(v[i] <= v[i + 1], "torchaug::", op, ": ", name, " must be [min, max] pairs with min <= max, got ", v[i],
                   " and ", v[i + 1]);
  }
}

}  // namespace

DrawMapPlan<ErasingMap> plan_erasing_boxes(const std::optional<at::Tensor>& rand, int64_t height, int64_t width, double p,
                                           double scale_min, double scale_max, double log_ratio_min,
                                           double log_ratio_max, int64_t batch, const std::optional<at::Tensor>& like,
                                           const std::optional<at::Generator>& generator, at::Tensor& boxes) {
  const char* op = "_erasing_boxes";
  const at::Tensor& on = draws_on(op, rand, like);
  TORCHAUG_CHECK(height > 0 && width > 0, "torchaug::", op, ": height and width must be positive, got ", height, " and ",
                 width);
  TORCHAUG_CHECK(p >= 0.0 && p <= 1.0, "torchaug::", op, ": p must be a probability in [0, 1], got ", p);
  TORCHAUG_CHECK(0 <= scale_min && scale_min <= scale_max && std::isfinite(scale_max), "torchaug::", op,
                 ": scale must satisfy 0 <= scale_min <= scale_max (finite), got ", scale_min, ", ", scale_max);
  TORCHAUG_CHECK(std::isfinite(log_ratio_min) && std::isfinite(log_ratio_max) && log_ratio_min <= log_ratio_max, "torchaug::",
                 op, ": log_ratio must be finite with log_ratio_min <= log_ratio_max, got ", log_ratio_min, ", ",
                 log_ratio_max);
  DrawMapPlan<ErasingMap> plan{resolve_draws(op, rand, generator, batch, kernels::kErasingDraws, on.device()),
                               kernels::kErasingDraws, {}, {}, on.device()};
  check_rand(op, plan.draws);
  boxes = empty_output(op, {plan.draws.B, 4}, on.options().dtype(at::kLong));
  plan.map = {p, static_cast<double>(height), static_cast<double>(width), scale_min, scale_max, log_ratio_min, log_ratio_max,
              boxes.data_ptr<int64_t>()};
  return plan;
}

DrawMapPlan<AffineParamsMap> plan_random_affine_params(const std::optional<at::Tensor>& rand,
                                                       const std::optional<at::Tensor>& sizes, int64_t height,
                                                       int64_t width, at::ArrayRef<double> degrees,
                                                       std::optional<at::ArrayRef<double>> translate,
                                                       std::optional<at::ArrayRef<double>> scale,
                                                       std::optional<at::ArrayRef<double>> shear, int64_t batch,
                                                       const std::optional<at::Tensor>& like,
                                                       const std::optional<at::Generator>& generator, at::Tensor& out) {
  const char* op = "_random_affine_params";
  const at::Tensor& on = rand ? *rand : (sizes ? *sizes : draws_on(op, rand, like));
  kernels::AffineSpace s{};
  check_ranges(op, "degrees", degrees);
  s.angle[0] = degrees[0];
  s.angle[1] = degrees[1];
  if (translate.has_value()) {
    const auto t = *translate;
    TORCHAUG_CHECK(t.size() == 2, "torchaug::", op, ": translate must be 2 fractions (of the width and the height), got ",
                   t.size(), " values");
    TORCHAUG_CHECK(t[0] >= 0.0 && t[0] <= 1.0 && t[1] >= 0.0 && t[1] <= 1.0, "torchaug::", op,
                   ": translate must be 2 fractions in [0, 1] (of the width and the height), got ", t[0], " and ", t[1]);
    s.translate[0] = t[0];
    s.translate[1] = t[1];
  }
  s.scale[0] = s.scale[1] = 1.0;
  if (scale.has_value()) {
    const auto v = *scale;
    check_ranges(op, "scale", v);
    TORCHAUG_CHECK(v[0] > 0.0, "torchaug::", op, ": scale must be positive, got ", v[0]);
    s.scale[0] = v[0];
    s.scale[1] = v[1];
  }
  if (shear.has_value()) {
    const auto v = *shear;
    check_ranges(op, "shear", v, /*four=*/true);
    s.shear_x[0] = v[0];
    s.shear_x[1] = v[1];
    if (v.size() == 4) {
      s.shear_y[0] = v[2];
      s.shear_y[1] = v[3];
    }
  }
  if (sizes) {
    check_param(op, "sizes", *sizes, on, {rand ? rand->size(0) : sizes->size(0), 2}, "(B, 2)", {at::kLong});
    TORCHAUG_CHECK(rand || batch < 0 || batch == sizes->size(0), "torchaug::", op, ": batch must be sizes.size(0) (",
                   sizes->size(0), ") or -1, got ", batch);
    if (!rand) batch = sizes->size(0);
  } else {
    TORCHAUG_CHECK(height > 0 && width > 0, "torchaug::", op, ": height and width must be positive, got ", height, " and ",
                   width);
  }
  DrawMapPlan<AffineParamsMap> plan{resolve_draws(op, rand, generator, batch, kernels::kAffineDraws, on.device()),
                                    kernels::kAffineDraws, {}, {}, on.device()};
  check_rand(op, plan.draws);
  TORCHAUG_CHECK(!sizes || sizes->size(0) == plan.draws.B, "torchaug::", op, ": sizes must have shape (B, 2) with B=",
                 plan.draws.B, " (rand's rows), got ", shape_str(sizes->sizes()));
  out = empty_output(op, {plan.draws.B, kernels::kAffineDraws}, on.options().dtype(at::kDouble));
  if (sizes) plan.held = sizes->contiguous();
  plan.map = {s, sizes ? plan.held.data_ptr<int64_t>() : nullptr, static_cast<double>(height), static_cast<double>(width),
              out.data_ptr<double>()};
  return plan;
}

DrawMapPlan<PerspectiveParamsMap> plan_perspective_params(const std::optional<at::Tensor>& rand, int64_t height,
                                                          int64_t width, double distortion_scale, double p,
                                                          int64_t batch, const std::optional<at::Tensor>& like,
                                                          const std::optional<at::Generator>& generator,
                                                          at::Tensor& coefficients, at::Tensor& applies) {
  const char* op = "_perspective_params";
  const at::Tensor& on = draws_on(op, rand, like);
  TORCHAUG_CHECK(height > 0 && width > 0, "torchaug::", op, ": height and width must be positive, got ", height, " and ",
                 width);
  TORCHAUG_CHECK(distortion_scale >= 0.0 && distortion_scale <= 1.0, "torchaug::", op,
                 ": distortion_scale must be in [0, 1], got ", distortion_scale);
  TORCHAUG_CHECK(p >= 0.0 && p <= 1.0, "torchaug::", op, ": p must be a probability in [0, 1], got ", p);
  DrawMapPlan<PerspectiveParamsMap> plan{resolve_draws(op, rand, generator, batch, kernels::kPerspectiveDraws, on.device()),
                                         kernels::kPerspectiveDraws, {}, {}, on.device()};
  check_rand(op, plan.draws);
  coefficients = empty_output(op, {plan.draws.B, 8}, on.options().dtype(at::kFloat));
  applies = empty_output(op, {plan.draws.B}, on.options().dtype(at::kBool));
  plan.map = {height, width, distortion_scale, p, coefficients.data_ptr<float>(), applies.data_ptr<bool>()};
  return plan;
}

}  // namespace torchaug
