// Glue of the detection family (nms, batched_nms, roi_align) between csrc/kernels/detection.h and
// the two backends. The host side (ops/detection.cpp) checks arguments, sorts by score and
// allocates; a backend only fills the keep flags of the sorted boxes, or the RoI Align output /
// input gradient.
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include <optional>

#include "../kernels/detection.h"
#include "common.h"

namespace torchaug {

// boxes (N, 4) contiguous, sorted by decreasing score, or for batched_nms by category and then by
// decreasing score (each category a contiguous run); classes (N,) int64 contiguous in the same
// order, or undefined (one category); class_end (N,) int64: the index of the last box of each
// box's category (undefined with classes); keep (N,) bool to fill with the greedy NMS decision.
using NmsKeepFn = void (*)(const at::Tensor& boxes, const at::Tensor& classes, const at::Tensor& class_end,
                           double iou_threshold, at::Tensor& keep);

struct RoiAlignArgs {
  double spatial_scale;
  int64_t pooled_h, pooled_w, sampling_ratio;
  bool aligned;
  int64_t batch, channels, height, width;
};

// The sampling grid of RoI k (rois (K, 5) row-major) for these arguments.
template <typename acc_t, typename T>
C10_HOST_DEVICE inline kernels::RoiGrid<acc_t> roi_grid(const T* rois, int64_t k, const RoiAlignArgs& a) {
  return kernels::roi_align_grid<acc_t>(rois + 5 * k, static_cast<acc_t>(a.spatial_scale), a.pooled_h, a.pooled_w,
                                        a.sampling_ratio, a.aligned);
}

// input (B, C, H, W) contiguous, rois (K, 5) contiguous of the input's dtype; out (K, C, ph, pw).
using RoiAlignFn = void (*)(const at::Tensor& input, const at::Tensor& rois, const RoiAlignArgs& a, at::Tensor& out);
// grad (K, C, ph, pw) contiguous; grad_input (B, C, H, W) zeros in the accumulation dtype (float32
// for half / bfloat16 inputs), to which the backend adds.
using RoiAlignBackwardFn = void (*)(const at::Tensor& grad, const at::Tensor& rois, const RoiAlignArgs& a,
                                    at::Tensor& grad_input);

at::Tensor nms_op(NmsKeepFn keep, const at::Tensor& boxes, const at::Tensor& scores,
                  const std::optional<at::Tensor>& idxs, double iou_threshold);
at::Tensor roi_align_op(RoiAlignFn run, const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                        int64_t pooled_h, int64_t pooled_w, int64_t sampling_ratio, bool aligned);
at::Tensor roi_align_backward_op(RoiAlignBackwardFn run, const at::Tensor& grad, const at::Tensor& rois,
                                 double spatial_scale, int64_t pooled_h, int64_t pooled_w, int64_t batch,
                                 int64_t channels, int64_t height, int64_t width, int64_t sampling_ratio, bool aligned);

template <NmsKeepFn keep, RoiAlignFn forward, RoiAlignBackwardFn backward>
void register_detection_ops(torch::Library& m) {
  using at::Tensor;
  m.impl("nms", [](const Tensor& boxes, const Tensor& scores, double iou_threshold) {
    return nms_op(keep, boxes, scores, std::nullopt, iou_threshold);
  });
  m.impl("batched_nms", [](const Tensor& boxes, const Tensor& scores, const Tensor& idxs, double iou_threshold) {
    return nms_op(keep, boxes, scores, idxs, iou_threshold);
  });
  m.impl("roi_align", [](const Tensor& input, const Tensor& rois, double spatial_scale, c10::SymInt pooled_h,
                         c10::SymInt pooled_w, int64_t sampling_ratio, bool aligned) {
    return roi_align_op(forward, input, rois, spatial_scale, pooled_h.expect_int(), pooled_w.expect_int(),
                        sampling_ratio, aligned);
  });
  m.impl("_roi_align_backward",
         [](const Tensor& grad, const Tensor& rois, double spatial_scale, c10::SymInt pooled_h, c10::SymInt pooled_w,
            c10::SymInt batch, c10::SymInt channels, c10::SymInt height, c10::SymInt width, int64_t sampling_ratio,
            bool aligned) {
           return roi_align_backward_op(backward, grad, rois, spatial_scale, pooled_h.expect_int(),
                                        pooled_w.expect_int(), batch.expect_int(), channels.expect_int(),
                                        height.expect_int(), width.expect_int(), sampling_ratio, aligned);
         });
}

}  // namespace torchaug
