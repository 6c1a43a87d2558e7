// Host-side checks and plans of the color family (see csrc/ops/color.h), shared by both backends.
#include <ATen/ATen.h>

#include <cmath>

#include "color.h"

namespace torchaug {


namespace {
// The per-sample parameters of a single color op: their names and the range of the first
// (torchvision's checks of the same functions).
struct SingleOpParams {
  const char* p0 = nullptr;
  const char* p1 = nullptr;
  double lo = -kFiniteMax, hi = kFiniteMax;
  const char* range_doc = "finite";
};

SingleOpParams single_op_params(int const_op) {
  using namespace kernels;
  switch (const_op) {
    case kColorBrightness:
    case kColorContrast:
    case kColorSaturation: return {"factor", nullptr, 0.0, kFiniteMax, "finite and >= 0"};
    case kColorHue: return {"factor", nullptr, -0.5, 0.5, "in [-0.5, 0.5]"};
    case kColorGamma: return {"gamma", "gain", 0.0, kFiniteMax, "finite and >= 0"};
    case kColorPosterize: return {"bits", nullptr, 0.0, 8.0, "in [0, 8]"};
    case kColorSolarize: return {"threshold", nullptr};
    case kColorSolarizeAdd: return {"shift", "threshold"};
    default: return {};
  }
}
}  // namespace

ColorPlan plan_color(const char* op, const at::Tensor& images, const at::Tensor& ops, int const_op,
                     const at::Tensor& p0, const at::Tensor& p1, float p0_default, float p1_default,
                     int64_t out_channels) {
  check_images(op, images);
  const int64_t B = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
  TORCHAUG_CHECK(C == 1 || C == 3, "torchaug::", op, ": images must have 1 or 3 channels, got ", C);
  if (out_channels < 0) out_channels = C;
  TORCHAUG_CHECK(out_channels == C || out_channels == 1, "torchaug::", op, ": num_output_channels must be 1 or ", C,
                 ", got ", out_channels);

  ColorPlan plan;
  ColorParams& p = plan.p;
  p.p0_default = p0_default;
  p.p1_default = p1_default;
  p.p0 = p.p1 = nullptr;
  p.p0_s = p.p1_s = p.ops_s = Strides2{0, 0};
  p.ops = nullptr;
  p.const_op = const_op;
  if (ops.defined()) {
    // a program: ops (B, n) int64, p0/p1 the two columns of params (B, n, 2)
    const int64_t n = ops.dim() == 2 ? ops.size(1) : -1;
    check_device(op, "ops", ops, images);
    TORCHAUG_CHECK(ops.dim() == 2 && ops.size(0) == B && n >= 1 && n <= kernels::kColorMaxSlots, "torchaug::", op,
                   ": ops must have shape (B, n) with B=", B, " and 1 <= n <= ", int(kernels::kColorMaxSlots), ", got ",
                   shape_str(ops.sizes()));
    TORCHAUG_CHECK(ops.scalar_type() == at::kLong, "torchaug::", op, ": ops must have dtype torch.int64, got ",
                   ops.scalar_type());
    check_ids(op, "ops", ops, kernels::kColorNumOps, "op ids");
    check_param(op, "params", p0, images, {B, n, 2}, "(B, n, 2)", {at::kFloat});
    check_values(op, "params", p0, -kFiniteMax, kFiniteMax, "finite");
    plan.ops = ops;
    plan.p0 = p0;
    p.n = static_cast<int>(n);
    p.ops = plan.ops.data_ptr<int64_t>();
    p.ops_s = strides2(plan.ops);
    p.p0 = plan.p0.data_ptr<float>();
    p.p1 = p.p0 + plan.p0.stride(2);
    p.p0_s = p.p1_s = Strides2{plan.p0.stride(0), plan.p0.stride(1)};
  } else {
    p.n = 1;
    const SingleOpParams sp = single_op_params(const_op);
    if (sp.p0 != nullptr) {
      plan.p0 = sample_param(op, sp.p0, p0, images, p.p0_s);
      check_values(op, sp.p0, p0, sp.lo, sp.hi, sp.range_doc);
      p.p0 = plan.p0.data_ptr<float>();
    }
    if (sp.p1 != nullptr) {
      plan.p1 = sample_param(op, sp.p1, p1, images, p.p1_s);
      p.p1 = plan.p1.data_ptr<float>();
    }
  }

  const at::MemoryFormat fmt = image_memory_format(images);
  plan.out = empty_output(op, {B, out_channels, H, W}, images.options().memory_format(fmt));
  set_image_layout(p, images, plan.out);
  p.out_channels = out_channels;
  p.is_u8 = images.scalar_type() == at::kByte;
  p.is_f64 = images.scalar_type() == at::kDouble;
  p.dense = images.stride(2) == W * images.stride(3) && plan.out.stride(2) == W * plan.out.stride(3);

  p.may_need_stats = ops.defined() || kernels::color_op_needs_stats(const_op);
  p.raw = nullptr;
  p.stats = nullptr;
  p.luts = nullptr;
  return plan;
}

void color_stats_buffers(ColorPlan& plan, const at::Tensor& images) {
  ColorParams& p = plan.p;
  if (!p.may_need_stats || p.batch == 0) return;
  const auto opts = images.options();
  plan.raw = at::zeros({p.batch, p.n, kernels::kColorRawWords}, opts.dtype(at::kInt));
  plan.stats = at::empty({p.batch, p.n, kernels::kColorStatFloats}, opts.dtype(at::kDouble));
  plan.luts = at::empty({p.batch, p.n, 3 * 256}, opts.dtype(at::kByte));
  p.raw = reinterpret_cast<uint32_t*>(plan.raw.data_ptr<int32_t>());
  p.stats = plan.stats.data_ptr<double>();
  p.luts = plan.luts.data_ptr<uint8_t>();
}

at::Tensor color_single_op(const char* name, ColorRunFn run, const at::Tensor& images, int op, const at::Tensor& p0,
                           const at::Tensor& p1, float p0_default, float p1_default, int64_t out_channels) {
  ColorPlan plan = plan_color(name, images, at::Tensor(), op, p0, p1, p0_default, p1_default, out_channels);
  if (images.numel() > 0) run(images, plan);
  return plan.out;
}

at::Tensor color_program_op(ColorRunFn run, const at::Tensor& images, const at::Tensor& ops, const at::Tensor& params) {
  check_defined("color_program", "ops", ops);
  check_defined("color_program", "params", params);
  ColorPlan plan = plan_color("color_program", images, ops, kernels::kColorIdentity, params, at::Tensor(), 0.0f, 1.0f, -1);
  if (images.numel() > 0) run(images, plan);
  return plan.out;
}

std::tuple<at::Tensor, at::Tensor> color_jitter_program_op(ColorJitterFn fn, const std::optional<at::Tensor>& rand,
                                                           at::ArrayRef<double> lo, at::ArrayRef<double> span,
                                                           at::IntArrayRef codes, int64_t batch,
                                                           const std::optional<at::Tensor>& like,
                                                           const std::optional<at::Generator>& generator) {
  const char* op = "_color_jitter_program";
  TORCHAUG_CHECK(rand || like, "torchaug::", op, ": without rand, like (a tensor on the batch's device) must be given");
  const at::Tensor& on = rand ? *rand : *like;
  const c10::OptionalDeviceGuard guard(on.device());
  TORCHAUG_CHECK(lo.size() == 4 && span.size() == 4 && codes.size() == 4, "torchaug::", op,
                 ": lo, span and codes must have 4 values each (brightness, contrast, saturation, hue), got ", lo.size(),
                 ", ", span.size(), " and ", codes.size());
  kernels::JitterSpace space;
  for (int i = 0; i < 4; ++i) {
    TORCHAUG_CHECK(codes[i] >= 0 && codes[i] < kernels::kColorNumOps, "torchaug::", op, ": codes must be color op ids in [0, ",
                   int(kernels::kColorNumOps), "), got ", codes[i], " at index ", i);
    TORCHAUG_CHECK(std::isfinite(lo[i]) && std::isfinite(span[i]) && span[i] >= 0.0, "torchaug::", op,
                   ": lo must be finite and span finite and >= 0, got lo ", lo[i], " and span ", span[i], " at index ", i);
    space.lo[i] = lo[i];
    space.span[i] = span[i];
    space.code[i] = static_cast<int>(codes[i]);
  }
  const Draws draws = resolve_draws(op, rand, generator, batch, kernels::kJitterDraws, on.device());  // checks rand
  if (rand) check_values(op, "rand", draws.u, 0.0, 1.0, "uniform draws in [0, 1]");
  const auto opts = on.options();
  at::Tensor ops = empty_output(op, {draws.B, 4}, opts.dtype(at::kLong));
  at::Tensor params = empty_output(op, {draws.B, 4, 2}, opts.dtype(at::kFloat));
  if (draws.B > 0) fn(draws, draws.B, space, ops.data_ptr<int64_t>(), params.data_ptr<float>());
  return {ops, params};
}

}  // namespace torchaug
