// Host side of the detection family (see csrc/ops/detection.h): argument checks (the errors name the
// op and the argument), the score sort and the output allocation; the backends do the per-box work.
#include <ATen/ATen.h>

#include <cmath>

#include "detection.h"

namespace torchaug {

namespace {

bool is_box_dtype(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

void check_same_device(const char* op, const char* name, const at::Tensor& t, const char* ref_name,
                       const at::Tensor& ref) {
  TORCHAUG_CHECK(t.device() == ref.device(), "torchaug::", op, ": ", name, " must be on the device of ", ref_name,
                 " (", ref.device(), "), got ", t.device());
}

}  // namespace

at::Tensor nms_op(NmsKeepFn keep_fn, const at::Tensor& boxes, const at::Tensor& scores,
                  const std::optional<at::Tensor>& idxs, double iou_threshold) {
  const char* op = idxs.has_value() ? "batched_nms" : "nms";
  TORCHAUG_CHECK(boxes.dim() == 2 && boxes.size(1) == 4, "torchaug::", op,
                 ": boxes must have shape (N, 4) [x1, y1, x2, y2], got ", shape_str(boxes.sizes()));
  TORCHAUG_CHECK(is_box_dtype(boxes.scalar_type()), "torchaug::", op,
                 ": boxes must be float32, float64, float16 or bfloat16, got ", boxes.scalar_type());
  const int64_t n = boxes.size(0);
  TORCHAUG_CHECK(scores.dim() == 1 && scores.size(0) == n, "torchaug::", op, ": scores must have shape (N,) with N=",
                 n, ", got ", shape_str(scores.sizes()));
  TORCHAUG_CHECK(at::isFloatingType(scores.scalar_type()), "torchaug::", op, ": scores must be floating point, got ",
                 scores.scalar_type());
  check_same_device(op, "scores", scores, "boxes", boxes);
  TORCHAUG_CHECK(!std::isnan(iou_threshold), "torchaug::", op, ": iou_threshold must be a number, got nan");
  at::Tensor classes;
  if (idxs.has_value()) {
    const at::Tensor& c = *idxs;
    TORCHAUG_CHECK(c.dim() == 1 && c.size(0) == n, "torchaug::", op, ": idxs must have shape (N,) with N=", n,
                   ", got ", shape_str(c.sizes()));
    TORCHAUG_CHECK(at::isIntegralType(c.scalar_type(), /*includeBool=*/false), "torchaug::", op,
                   ": idxs must be an integer tensor of category indices, got ", c.scalar_type());
    check_same_device(op, "idxs", c, "boxes", boxes);
  }
  if (n == 0) return at::empty({0}, boxes.options().dtype(at::kLong));
  // the order torchvision's nms kernels use: scores.sort(0, descending=true)
  const at::Tensor order = std::get<1>(scores.sort(0, /*descending=*/true));
  at::Tensor keep = at::empty({n}, boxes.options().dtype(at::kBool));
  if (!idxs.has_value()) {
    keep_fn(boxes.index_select(0, order).contiguous(), classes, at::Tensor(), iou_threshold, keep);
    return order.masked_select(keep);
  }
  // batched: each category's boxes in a contiguous run (a stable sort by category keeps the score
  // order inside it), so that only pairs of one category are compared; the greedy decision inside a
  // category depends only on its own order, hence equals that of the score order with a category
  // check. The kept boxes come back in score order through their rank.
  const at::Tensor by_score = idxs->to(at::kLong).index_select(0, order);
  const auto [cls, rank] = by_score.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false);
  const at::Tensor class_end = at::searchsorted(cls, cls, /*out_int32=*/false, /*right=*/true) - 1;
  keep_fn(boxes.index_select(0, order.index_select(0, rank)).contiguous(), cls.contiguous(), class_end.contiguous(),
          iou_threshold, keep);
  at::Tensor keep_by_rank = at::zeros({n}, keep.options());
  keep_by_rank.index_put_({rank}, keep);
  return order.masked_select(keep_by_rank);
}

static void check_sampling_ratio(const char* op, int64_t sampling_ratio) {
  TORCHAUG_CHECK(sampling_ratio <= kernels::kMaxRoiSampling, "torchaug::", op, ": sampling_ratio must be <= ",
                 kernels::kMaxRoiSampling, " (or <= 0 for the adaptive grid), got ", sampling_ratio);
}

at::Tensor roi_align_op(RoiAlignFn run, const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                        int64_t pooled_h, int64_t pooled_w, int64_t sampling_ratio, bool aligned) {
  const char* op = "roi_align";
  TORCHAUG_CHECK(input.dim() == 4, "torchaug::", op, ": input must be a 4-D (B, C, H, W) tensor, got ", input.dim(),
                 "-D with shape ", shape_str(input.sizes()));
  TORCHAUG_CHECK(is_box_dtype(input.scalar_type()), "torchaug::", op,
                 ": input must be float32, float64, float16 or bfloat16, got ", input.scalar_type());
  TORCHAUG_CHECK(rois.dim() == 2 && rois.size(1) == 5, "torchaug::", op,
                 ": rois must have shape (K, 5) [batch_index, x1, y1, x2, y2], got ", shape_str(rois.sizes()));
  TORCHAUG_CHECK(rois.scalar_type() == input.scalar_type(), "torchaug::", op, ": rois must have the input's dtype ",
                 input.scalar_type(), ", got ", rois.scalar_type());
  check_same_device(op, "rois", rois, "input", input);
  TORCHAUG_CHECK(pooled_h > 0 && pooled_w > 0, "torchaug::", op, ": output_size must be positive, got [", pooled_h,
                 ", ", pooled_w, "]");
  TORCHAUG_CHECK(std::isfinite(spatial_scale) && spatial_scale > 0, "torchaug::", op,
                 ": spatial_scale must be a positive number, got ", spatial_scale);
  check_sampling_ratio(op, sampling_ratio);
  const int64_t K = rois.size(0), B = input.size(0), C = input.size(1), H = input.size(2), W = input.size(3);
  at::Tensor out = empty_output(op, {K, C, pooled_h, pooled_w}, input.options().memory_format(at::MemoryFormat::Contiguous));
  if (out.numel() == 0) return out;
  if (input.numel() == 0) return out.zero_();
  const RoiAlignArgs a{spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned, B, C, H, W};
  run(input.contiguous(), rois.contiguous(), a, out);
  return out;
}

at::Tensor roi_align_backward_op(RoiAlignBackwardFn run, const at::Tensor& grad, const at::Tensor& rois,
                                 double spatial_scale, int64_t pooled_h, int64_t pooled_w, int64_t batch,
                                 int64_t channels, int64_t height, int64_t width, int64_t sampling_ratio,
                                 bool aligned) {
  const char* op = "_roi_align_backward";
  const int64_t K = rois.dim() == 2 ? rois.size(0) : -1;
  TORCHAUG_CHECK(rois.dim() == 2 && rois.size(1) == 5, "torchaug::", op, ": rois must have shape (K, 5), got ",
                 shape_str(rois.sizes()));
  TORCHAUG_CHECK(grad.dim() == 4 && grad.size(0) == K && grad.size(1) == channels && grad.size(2) == pooled_h &&
                     grad.size(3) == pooled_w,
                 "torchaug::", op, ": grad must have shape (K, C, ph, pw) = (", K, ", ", channels, ", ", pooled_h,
                 ", ", pooled_w, "), got ", shape_str(grad.sizes()));
  TORCHAUG_CHECK(rois.scalar_type() == grad.scalar_type(), "torchaug::", op, ": rois must have grad's dtype ",
                 grad.scalar_type(), ", got ", rois.scalar_type());
  TORCHAUG_CHECK(is_box_dtype(grad.scalar_type()), "torchaug::", op,
                 ": grad must be float32, float64, float16 or bfloat16, got ", grad.scalar_type());
  check_same_device(op, "rois", rois, "grad", grad);
  TORCHAUG_CHECK(batch >= 0 && channels >= 0 && height >= 0 && width >= 0, "torchaug::", op,
                 ": the input size must be non-negative");
  check_sampling_ratio(op, sampling_ratio);
  TORCHAUG_CHECK(pooled_h > 0 && pooled_w > 0, "torchaug::", op, ": output_size must be positive, got [", pooled_h,
                 ", ", pooled_w, "]");
  const at::ScalarType acc = grad.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  at::Tensor gi = empty_output(op, {batch, channels, height, width}, grad.options().dtype(acc)).zero_();
  if (grad.numel() > 0 && gi.numel() > 0) {
    const RoiAlignArgs a{spatial_scale, pooled_h, pooled_w, sampling_ratio, aligned, batch, channels, height, width};
    run(grad.contiguous(), rois.contiguous(), a, gi);
  }
  return gi.scalar_type() == grad.scalar_type() ? gi : gi.to(grad.scalar_type());
}

}  // namespace torchaug
