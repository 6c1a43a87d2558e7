// Host side of torchaug::augment (csrc/ops/augment.h): checks, buffers, and the pass sequence,
// shared by both backends.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>

#include "augment.h"

namespace torchaug {

namespace {

// The statistics pass of slot k reads a one-slot color program: column k of ops, and the slot's
// own statistics buffers.
ColorParams slot_color_params(const at::Tensor& in, const at::Tensor& ops, int64_t k, at::Tensor& raw,
                              at::Tensor& stats, at::Tensor& luts) {
  ColorParams p;
  set_image_layout(p, in, in);  // the statistics pass writes no image
  p.out_channels = p.channels;
  p.dense = in.stride(2) == p.width * in.stride(3);
  p.n = 1;
  p.ops = ops.data_ptr<int64_t>() + k * ops.stride(1);
  p.ops_s = Strides2{ops.stride(0), ops.stride(1)};
  p.const_op = kernels::kColorIdentity;
  p.p0 = p.p1 = nullptr;
  p.p0_s = p.p1_s = Strides2{0, 0};
  p.p0_default = 0.0f;
  p.p1_default = 1.0f;
  p.raw = reinterpret_cast<uint32_t*>(raw[k].data_ptr<int32_t>());
  p.stats = stats[k].data_ptr<double>();
  p.luts = luts[k].data_ptr<uint8_t>();
  p.may_need_stats = true;
  p.is_u8 = in.scalar_type() == at::kByte;
  p.is_f64 = in.scalar_type() == at::kDouble;
  return p;
}

}  // namespace

// torchaug::normalize through the dispatcher: the unfused epilogue of augment's normalize.
static at::Tensor normalize_call(const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std,
                          std::optional<at::ScalarType> out_dtype, std::optional<at::MemoryFormat> memory_format) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("torchaug::normalize", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                               std::optional<at::ScalarType>, std::optional<at::MemoryFormat>)>();
  return op.call(images, mean, std, out_dtype, memory_format);
}

at::Tensor augment_slot_passes(const AugmentBackend& be, const at::Tensor& images, const at::Tensor& ops,
                               const at::Tensor& magnitudes, int64_t interpolation, const at::Tensor& f,
                               const at::Tensor& out) {
  const int64_t B = images.size(0), H = images.size(2), W = images.size(3), n = ops.size(1);
  const auto opts = images.options();
  const at::Tensor steps = at::empty({B, n, kernels::kAugStepWords}, opts.dtype(at::kDouble));
  const double bound = images.scalar_type() == at::kByte ? 255.0 : 1.0;
  be.lower(ops, magnitudes, steps, H, W, bound);
  at::Tensor raw = at::zeros({n, B, kernels::kColorRawWords}, opts.dtype(at::kInt));
  at::Tensor stats = at::empty({n, B, kernels::kColorStatFloats}, opts.dtype(at::kDouble));
  at::Tensor luts = at::empty({n, B, 3 * 256}, opts.dtype(at::kByte));
  at::Tensor tmp = n > 1 ? at::empty_like(out) : at::Tensor();

  at::Tensor cur = images;
  for (int64_t k = 0; k < n; ++k) {
    // the last slot writes `out`; slots alternate between out and tmp before it
    const at::Tensor& dst = ((n - 1 - k) % 2 == 0) ? out : tmp;
    ColorParams cp = slot_color_params(cur, ops, k, raw, stats, luts);
    be.stats(cur, cp);
    AugmentParams p;
    set_image_layout(p, cur, dst);
    p.n = n;
    p.steps = steps.data_ptr<double>();
    p.warp = warp_affine_params(cur, dst, interpolation, f);
    p.stats = cp.stats;
    p.luts = cp.luts;
    be.slot(cur, dst, p, k);
    cur = dst;
  }
  return out;
}

at::Tensor augment_op(const AugmentBackend& be, const at::Tensor& images, const at::Tensor& ops,
                      const at::Tensor& magnitudes, int64_t interpolation, const std::optional<at::Tensor>& fill,
                      const std::optional<at::Tensor>& mean, const std::optional<at::Tensor>& std,
                      std::optional<at::ScalarType> out_dtype, std::optional<at::MemoryFormat> memory_format) {
  const char* op = "augment";
  check_images(op, images);
  const int64_t B = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
  TORCHAUG_CHECK(C == 1 || C == 3, "torchaug::", op, ": images must have 1 or 3 channels, got ", C);
  check_device(op, "ops", ops, images);
  TORCHAUG_CHECK(ops.dim() == 2 && ops.size(0) == B, "torchaug::", op, ": ops must have shape (B, n) with B=", B,
                 ", got ", shape_str(ops.sizes()));
  TORCHAUG_CHECK(ops.scalar_type() == at::kLong, "torchaug::", op, ": ops must have dtype torch.int64, got ",
                 ops.scalar_type());
  const int64_t n = ops.size(1);
  check_param(op, "magnitudes", magnitudes, images, {B, n}, "(B, n) like ops", {at::kFloat});
  check_values(op, "magnitudes", magnitudes, -kFiniteMax, kFiniteMax, "finite");
  check_interpolation(op, interpolation, kernels::kBilinear);
  if (fill) check_param(op, "fill", *fill, images, {B, C}, "(B, C)", {at::kFloat});
  check_ids(op, "ops", ops, kernels::kAugNumOps, "op ids");
  const bool norm = mean.has_value() || std.has_value();
  TORCHAUG_CHECK(mean.has_value() == std.has_value(), "torchaug::", op,
                 ": mean and std come together (the fused normalize), got ", mean ? "mean without std" : "std without mean");
  TORCHAUG_CHECK(norm || (!out_dtype && !memory_format), "torchaug::", op,
                 ": out_dtype and memory_format belong to the fused normalize; pass mean and std with them");
  // the fused normalize: the plan checks mean, std, out_dtype and memory_format and makes its output
  std::optional<NormalizePlan> np;
  if (norm) np = plan_normalize(images, *mean, *std, out_dtype, memory_format, op);
  const auto like_images = [&] { return at::empty({B, C, H, W}, images.options().memory_format(image_memory_format(images))); };
  at::Tensor out;  // the program's result (the images' dtype), unless the resident path normalizes
  if (!norm) {
    out = like_images();
    if (images.numel() == 0) return out;
    if (n == 0) return out.copy_(images);
  } else if (images.numel() == 0) {
    return np->out;
  }
  const at::Tensor f = fill ? fill->contiguous() : at::Tensor();
  if (n > 0 && be.resident != nullptr && be.resident(images, out, ops, magnitudes, interpolation, f, norm ? &np->p : nullptr))
    return norm ? np->out : out;
  if (norm) {
    const at::Tensor u = n == 0 ? images : augment_slot_passes(be, images, ops, magnitudes, interpolation, f, like_images());
    return normalize_call(u, *mean, *std, out_dtype, memory_format);
  }
  return augment_slot_passes(be, images, ops, magnitudes, interpolation, f, out);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> policy_program_op(
    const AugmentBackend& be, const std::optional<at::Tensor>& rand, const at::Tensor& ids, const at::Tensor& mags,
    const at::Tensor& signed_, int64_t kind, int64_t num_ops, int64_t magnitude, const std::optional<at::Tensor>& sub_idx,
    const std::optional<at::Tensor>& sub_prob, const std::optional<at::Tensor>& sub_bins, int64_t batch,
    const std::optional<at::Generator>& generator) {
  const char* op = "_policy_program";
  check_defined(op, "ids", ids);
  check_defined(op, "mags", mags);
  check_defined(op, "signed", signed_);
  const at::Tensor& on = rand ? *rand : ids;  // the op's device
  const c10::OptionalDeviceGuard guard(on.device());
  TORCHAUG_CHECK(kind >= 0 && kind <= 2, "torchaug::", op, ": kind must be 0 (RandAugment), 1 (TrivialAugmentWide) or 2 (AutoAugment), got ", kind);
  TORCHAUG_CHECK(num_ops >= 0 && num_ops <= 0x7fffffff, "torchaug::", op, ": num_ops must be a non-negative integer, got ", num_ops);
  const int nk = static_cast<int>(kind), nops = static_cast<int>(num_ops);
  const int64_t R = kernels::policy_draws(nk, nops), n = kernels::policy_slots(nk, nops);
  Draws draws;
  if (rand) draws = resolve_draws(op, rand, generator, -1, R, on.device());  // checks rand; drawn after every check
  const int64_t B = rand ? draws.B : batch, K = ids.numel();
  TORCHAUG_CHECK(ids.dim() == 1 && K > 0 && ids.scalar_type() == at::kLong, "torchaug::", op,
                 ": ids must be a non-empty (K,) int64 tensor, got ", ids.scalar_type(), " of shape ", shape_str(ids.sizes()));
  TORCHAUG_CHECK(mags.dim() == 2 && mags.size(0) == K && mags.size(1) > 0 && mags.scalar_type() == at::kFloat, "torchaug::", op,
                 ": mags must be a (K, bins) float32 tensor with K=", K, ", got ", mags.scalar_type(), " of shape ",
                 shape_str(mags.sizes()));
  check_values(op, "mags", mags, -kFiniteMax, kFiniteMax, "finite");
  TORCHAUG_CHECK(signed_.dim() == 1 && signed_.numel() == K && signed_.scalar_type() == at::kBool, "torchaug::", op,
                 ": signed must be a (K,) bool tensor with K=", K, ", got ", signed_.scalar_type(), " of shape ",
                 shape_str(signed_.sizes()));
  TORCHAUG_CHECK(kind != 0 || (magnitude >= 0 && magnitude < mags.size(1)), "torchaug::", op, ": magnitude must be a bin in [0, ",
                 mags.size(1), "), got ", magnitude);
  for (const at::Tensor* t : {&ids, &mags, &signed_}) check_device(op, "the space tables", *t, on);
  at::Tensor si, sp, sb;
  kernels::PolicySpace space{K, mags.size(1), nullptr, nullptr, nullptr, 0, nullptr, nullptr, nullptr};
  if (kind == 2) {
    TORCHAUG_CHECK(sub_idx && sub_prob && sub_bins, "torchaug::", op, ": AutoAugment (kind 2) needs sub_idx, sub_prob and sub_bins");
    si = sub_idx->contiguous();
    sp = sub_prob->contiguous();
    sb = sub_bins->contiguous();
    const int64_t S = si.size(0);
    TORCHAUG_CHECK(si.dim() == 2 && si.size(1) == 2 && S > 0 && si.scalar_type() == at::kLong && sp.sizes() == si.sizes() &&
                       sp.scalar_type() == at::kFloat && sb.sizes() == si.sizes() && sb.scalar_type() == at::kLong,
                   "torchaug::", op, ": sub_idx, sub_prob and sub_bins must be (S, 2) int64, float32 and int64 tensors, got ",
                   shape_str(si.sizes()), ", ", shape_str(sp.sizes()), ", ", shape_str(sb.sizes()));
    for (const at::Tensor* t : {&si, &sp, &sb}) check_device(op, "the sub-policy tables", *t, on);
    if (!on.is_cuda()) {  // the device reads them unchecked; the host can check them here
      check_ids(op, "sub_idx", si, K, "space indices");
      check_ids(op, "sub_bins", sb, mags.size(1), "bins");
    }
    space.S = S;
    space.sub_idx = si.data_ptr<int64_t>();
    space.sub_prob = sp.data_ptr<float>();
    space.sub_bins = sb.data_ptr<int64_t>();
  }
  const at::Tensor ic = ids.contiguous(), mc = mags.contiguous(), sc = signed_.contiguous();
  space.ids = ic.data_ptr<int64_t>();
  space.mags = mc.data_ptr<float>();
  space.signed_ = sc.data_ptr<bool>();
  if (!rand) draws = resolve_draws(op, rand, generator, batch, R, on.device());
  const auto opts = on.options();
  at::Tensor choice = empty_output(op, {B, n}, opts.dtype(at::kLong));
  at::Tensor ops = empty_output(op, {B, n}, opts.dtype(at::kLong));
  at::Tensor out_mags = empty_output(op, {B, n}, opts.dtype(at::kFloat));
  if (B > 0 && n > 0)
    be.policy(draws, B, nk, nops, magnitude, space, choice.data_ptr<int64_t>(), ops.data_ptr<int64_t>(),
              out_mags.data_ptr<float>());
  return {choice, ops, out_mags};
}

}  // namespace torchaug
