// CPU kernels of the detection family (csrc/ops/detection.h): greedy NMS over the score-sorted boxes,
// RoI Align forward over (RoI, channel) planes and backward over channels (each thread owns its
// channel planes of the input gradient, so no two threads add to one element).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <vector>

#include "../ops/detection.h"

namespace torchaug {
namespace {

void nms_keep_cpu(const at::Tensor& boxes, const at::Tensor& classes, const at::Tensor& class_end,
                  double iou_threshold, at::Tensor& keep) {
  const int64_t n = boxes.size(0);
  const int64_t* cls = classes.defined() ? classes.data_ptr<int64_t>() : nullptr;
  const int64_t* end = class_end.defined() ? class_end.data_ptr<int64_t>() : nullptr;
  bool* kp = keep.data_ptr<bool>();
  std::vector<uint8_t> suppressed(n, 0);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, boxes.scalar_type(), "nms_cpu", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    const scalar_t* b = boxes.data_ptr<scalar_t>();
    const acc_t thr = static_cast<acc_t>(iou_threshold);
    for (int64_t i = 0; i < n; ++i) {
      kp[i] = !suppressed[i];
      if (suppressed[i]) continue;
      const int64_t last = end ? end[i] : n - 1;  // the category's run ends there
      for (int64_t j = i + 1; j <= last; ++j) {
        if (suppressed[j] || (cls && cls[j] != cls[i])) continue;
        if (kernels::nms_overlaps<acc_t>(b + 4 * i, b + 4 * j, thr)) suppressed[j] = 1;
      }
    }
  });
}

void roi_align_cpu(const at::Tensor& input, const at::Tensor& rois, const RoiAlignArgs& a, at::Tensor& out) {
  const int64_t K = rois.size(0), C = a.channels, plane = a.height * a.width, bin = a.pooled_h * a.pooled_w;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "roi_align_cpu", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    const scalar_t* in = input.data_ptr<scalar_t>();
    const scalar_t* r = rois.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, K * C, 1, [&](int64_t begin, int64_t end) {
      for (int64_t kc = begin; kc < end; ++kc) {
        const int64_t k = kc / C, c = kc % C;
        const kernels::RoiGrid<acc_t> g = roi_grid<acc_t>(r, k, a);
        scalar_t* dst = o + kc * bin;
        if (g.batch < 0 || g.batch >= a.batch) {  // zeros (the Python wrapper reports such RoIs)
          for (int64_t i = 0; i < bin; ++i) dst[i] = static_cast<scalar_t>(0);
          continue;
        }
        const scalar_t* src = in + (g.batch * C + c) * plane;
        for (int64_t ph = 0; ph < a.pooled_h; ++ph)
          for (int64_t pw = 0; pw < a.pooled_w; ++pw)
            dst[ph * a.pooled_w + pw] = static_cast<scalar_t>(kernels::roi_align_px(src, a.height, a.width, g, ph, pw));
      }
    });
  });
}

void roi_align_backward_cpu(const at::Tensor& grad, const at::Tensor& rois, const RoiAlignArgs& a,
                            at::Tensor& grad_input) {
  const int64_t K = rois.size(0), C = a.channels, plane = a.height * a.width, bin = a.pooled_h * a.pooled_w;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad.scalar_type(), "roi_align_backward_cpu", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    const scalar_t* gr = grad.data_ptr<scalar_t>();
    const scalar_t* r = rois.data_ptr<scalar_t>();
    acc_t* gi = grad_input.data_ptr<acc_t>();
    at::parallel_for(0, C, 1, [&](int64_t begin, int64_t end) {
      for (int64_t k = 0; k < K; ++k) {
        const kernels::RoiGrid<acc_t> g = roi_grid<acc_t>(r, k, a);
        if (g.batch < 0 || g.batch >= a.batch) continue;
        for (int64_t c = begin; c < end; ++c) {
          acc_t* dst = gi + (g.batch * C + c) * plane;
          const scalar_t* src = gr + (k * C + c) * bin;
          for (int64_t ph = 0; ph < a.pooled_h; ++ph)
            for (int64_t pw = 0; pw < a.pooled_w; ++pw)
              kernels::roi_align_backward_px<acc_t>(static_cast<acc_t>(src[ph * a.pooled_w + pw]), a.height, a.width,
                                                    g, ph, pw, [&](int64_t i, acc_t v) { dst[i] += v; });
        }
      }
    });
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CPU, m) {
  register_detection_ops<nms_keep_cpu, roi_align_cpu, roi_align_backward_cpu>(m);
}

}  // namespace torchaug
