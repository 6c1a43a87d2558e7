// Host side of torchaug::augment (csrc/augment_impl.h): checks, buffers, and the pass sequence,
// shared by both backends.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include "augment_impl.h"

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
  check_interpolation(op, interpolation, kernels::kBilinear);
  if (fill) check_param(op, "fill", *fill, images, {B, C}, "(B, C)", {at::kFloat});
  check_op_ids(op, ops, kernels::kAugNumOps);
  const bool norm = mean.has_value() || std.has_value();
  TORCHAUG_CHECK(mean.has_value() == std.has_value(), "torchaug::", op,
                 ": mean and std come together (the fused normalize), got ", mean ? "mean without std" : "std without mean");
  TORCHAUG_CHECK(norm || (!out_dtype && !memory_format), "torchaug::", op,
                 ": out_dtype and memory_format belong to the fused normalize; pass mean and std with them");
  if (norm) {
    // the plan checks mean, std, out_dtype and memory_format and makes the output
    NormalizePlan np = plan_normalize(images, *mean, *std, out_dtype, memory_format, op);
    if (images.numel() == 0) return np.out;
    const at::Tensor f = fill ? fill->contiguous() : at::Tensor();
    if (ops.size(1) > 0 && be.resident != nullptr && be.resident(images, at::Tensor(), ops, magnitudes, interpolation, f, &np.p))
      return np.out;
    const at::Tensor u = augment_op(be, images, ops, magnitudes, interpolation, fill, std::nullopt, std::nullopt,
                                    std::nullopt, std::nullopt);
    return normalize_call(u, *mean, *std, out_dtype, memory_format);
  }
  const at::MemoryFormat fmt = image_memory_format(images);
  at::Tensor out = at::empty({B, C, H, W}, images.options().memory_format(fmt));
  if (B == 0 || images.numel() == 0) return out;
  if (n == 0) return out.copy_(images);

  const at::Tensor f = fill ? fill->contiguous() : at::Tensor();
  if (be.resident != nullptr && be.resident(images, out, ops, magnitudes, interpolation, f, nullptr)) return out;

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

}  // namespace torchaug
