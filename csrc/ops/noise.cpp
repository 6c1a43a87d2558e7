// Host-side checks and plans of the noise family (see csrc/ops/noise.h).
#include <ATen/ATen.h>

#include <cmath>

#include "noise.h"

namespace torchaug {

namespace {

NoisePlan make_plan(const char* op, const at::Tensor& images, int mode) {
  // the kernels index a plane's pixels in 32 bits
  TORCHAUG_CHECK(images.size(2) * images.size(3) < (int64_t(1) << 31), "torchaug::", op, ": images of ", images.size(2), "x",
                 images.size(3), " are too large (a plane of 2^31 pixels or more)");
  NoisePlan plan;
  NoiseParams& p = plan.p_;
  plan.out = at::empty(images.sizes(), images.options().memory_format(image_memory_format(images)));
  set_image_layout(p, images, plan.out);
  p.mode = mode;
  for (int i = 0; i < 4; ++i) {
    p.p[i] = nullptr;
    p.p_stride[i] = 0;
    p.p_default[i] = 0.0f;
  }
  p.seed = nullptr;
  p.seed_stride = 0;
  p.boxes = nullptr;
  p.boxes_stride = 0;
  p.values = nullptr;
  p.values_s = Strides2{0, 0};
  p.clip = false;
  p.per_channel = false;
  return plan;
}

void set_param(const char* op, const char* name, NoisePlan& plan, int i, const at::Tensor& t, const at::Tensor& images) {
  Strides2 s;
  plan.p[i] = sample_param(op, name, t, images, s);
  plan.p_.p[i] = plan.p[i].data_ptr<float>();
  plan.p_.p_stride[i] = s.b;
}

void set_seed(const char* op, NoisePlan& plan, const at::Tensor& seed, const at::Tensor& images) {
  const int64_t B = images.size(0);
  check_device(op, "seed", seed, images);
  TORCHAUG_CHECK(seed.dim() == 1 && (seed.size(0) == B || seed.size(0) == 1), "torchaug::", op,
                 ": seed must have shape (B,) or (1,) with B=", B, ", got ", shape_str(seed.sizes()));
  TORCHAUG_CHECK(seed.scalar_type() == at::kLong, "torchaug::", op, ": seed must have dtype torch.int64, got ",
                 seed.scalar_type());
  plan.seed = seed;
  plan.p_.seed = seed.data_ptr<int64_t>();
  plan.p_.seed_stride = seed.size(0) == 1 ? 0 : seed.stride(0);
}

at::Tensor run_plan(NoiseRunFn run, const at::Tensor& images, NoisePlan& plan) {
  if (images.numel() > 0) run(images, plan);
  return plan.out;
}

}  // namespace

at::Tensor gaussian_noise_op(NoiseRunFn run, const at::Tensor& images, const at::Tensor& mean,
                             const at::Tensor& sigma, const at::Tensor& seed, bool clip) {
  const char* op = "gaussian_noise";
  check_images(op, images);
  NoisePlan plan = make_plan(op, images, kernels::kNoiseGaussian);
  set_param(op, "mean", plan, 0, mean, images);
  set_param(op, "sigma", plan, 1, sigma, images);
  set_seed(op, plan, seed, images);
  plan.p_.clip = clip;
  return run_plan(run, images, plan);
}

at::Tensor salt_and_pepper_op(NoiseRunFn run, const at::Tensor& images, const at::Tensor& prob,
                              const at::Tensor& salt_vs_pepper, const at::Tensor& seed, bool per_channel,
                              const std::optional<at::Tensor>& salt_value,
                              const std::optional<at::Tensor>& pepper_value) {
  const char* op = "salt_and_pepper";
  check_images(op, images);
  NoisePlan plan = make_plan(op, images, kernels::kNoiseSaltPepper);
  set_param(op, "prob", plan, 0, prob, images);
  set_param(op, "salt_vs_pepper", plan, 1, salt_vs_pepper, images);
  plan.p_.p_default[2] = images.scalar_type() == at::kByte ? 255.0f : 1.0f;
  if (salt_value.has_value()) set_param(op, "salt_value", plan, 2, *salt_value, images);
  if (pepper_value.has_value()) set_param(op, "pepper_value", plan, 3, *pepper_value, images);
  set_seed(op, plan, seed, images);
  plan.p_.per_channel = per_channel;
  return run_plan(run, images, plan);
}

at::Tensor erase_op(NoiseRunFn run, const at::Tensor& images, const at::Tensor& boxes,
                    const std::optional<at::Tensor>& value, const std::optional<at::Tensor>& seed) {
  const char* op = "erase";
  check_images(op, images);
  const int64_t B = images.size(0), C = images.size(1);
  NoisePlan plan = make_plan(op, images, kernels::kNoiseErase);
  check_param(op, "boxes", boxes, images, {B, 4}, "(B, 4)", {at::kLong});
  plan.boxes = boxes.contiguous();  // the kernels read a box's 4 values at stride 1
  plan.p_.boxes = plan.boxes.data_ptr<int64_t>();
  plan.p_.boxes_stride = plan.boxes.stride(0);
  TORCHAUG_CHECK(!(value.has_value() && seed.has_value()), "torchaug::", op,
                 ": pass value (a fill) or seed (random fill), not both");
  if (value.has_value()) {
    const at::Tensor& v = *value;
    check_device(op, "value", v, images);
    const bool ok = v.dim() == 2 && (v.size(0) == B || v.size(0) == 1) && (v.size(1) == C || v.size(1) == 1);
    TORCHAUG_CHECK(ok, "torchaug::", op, ": value must have shape (B, C), (1, C), (B, 1) or (1, 1) with B=", B,
                   " and C=", C, ", got ", shape_str(v.sizes()));
    TORCHAUG_CHECK(v.scalar_type() != at::kBool && !at::isComplexType(v.scalar_type()), "torchaug::", op,
                   ": value must be a real number tensor, got ", v.scalar_type());
    check_values(op, "value", v, -kFiniteMax, kFiniteMax, "finite");
    plan.values = v.to(at::kFloat);
    plan.p_.values = plan.values.data_ptr<float>();
    plan.p_.values_s = Strides2{plan.values.size(0) == 1 ? 0 : plan.values.stride(0),
                                plan.values.size(1) == 1 ? 0 : plan.values.stride(1)};
  }
  if (seed.has_value()) set_seed(op, plan, *seed, images);
  return run_plan(run, images, plan);
}

}  // namespace torchaug
