// Shared math of the detection family (nms, batched_nms, roi_align), used by the CPU loops, the
// CUDA kernels and the host-side GoogleTest suite. The formulas and their order of operations are
// torchvision.ops' (csrc/ops/*/nms_kernel, roi_align_kernel), so that results agree bit for bit
// in float32 and float64.
#pragma once

#include "common.h"

namespace torchaug {
namespace kernels {

// Whether box b overlaps box a by more than `threshold` IoU. Boxes are [x1, y1, x2, y2]. The
// intersection's sides are computed in the box type and the areas in acc_t (float for float and
// half, double for double), as torchvision's devIoU; a degenerate pair (zero union) gives NaN or
// a non-positive ratio and never suppresses.
template <typename acc_t, typename T>
TORCHAUG_HOST_DEVICE inline bool nms_overlaps(const T* a, const T* b, acc_t threshold) {
  // max / min of the values widened to acc_t equal those of the box type; the differences are
  // rounded back to the box type (a no-op for float and double) as torchvision's T arithmetic does
  const acc_t ax1 = static_cast<acc_t>(a[0]), ay1 = static_cast<acc_t>(a[1]), ax2 = static_cast<acc_t>(a[2]),
              ay2 = static_cast<acc_t>(a[3]);
  const acc_t bx1 = static_cast<acc_t>(b[0]), by1 = static_cast<acc_t>(b[1]), bx2 = static_cast<acc_t>(b[2]),
              by2 = static_cast<acc_t>(b[3]);
  const acc_t w = static_cast<acc_t>(static_cast<T>(min_of(ax2, bx2) - max_of(ax1, bx1)));
  const acc_t h = static_cast<acc_t>(static_cast<T>(min_of(ay2, by2) - max_of(ay1, by1)));
  const acc_t inter = max_of(w, static_cast<acc_t>(0)) * max_of(h, static_cast<acc_t>(0));
  const acc_t sa = (ax2 - ax1) * (ay2 - ay1);
  const acc_t sb = (bx2 - bx1) * (by2 - by1);
  return inter / (sa + sb - inter) > threshold;
}

// The sampling grid of one RoI of roi_align: rois row [batch_index, x1, y1, x2, y2] in input
// coordinates scaled by spatial_scale, shifted by -0.5 when aligned; unaligned RoIs are at least
// 1x1. grid_h x grid_w samples per output bin (sampling_ratio, or ceil(roi size / pooled size)).
template <typename acc_t>
struct RoiGrid {
  int64_t batch;
  acc_t start_y, start_x, bin_h, bin_w;
  int64_t grid_h, grid_w;
  acc_t count;
};

// The most sampling points per bin side: the op refuses a larger sampling_ratio, and the adaptive
// grid (ceil(bin size), torchvision's) stops there, so a huge or non-finite RoI costs at most
// kMaxRoiSampling^2 samples a bin (a bin of over 1024 feature-map pixels a side is averaged from
// 1024 x 1024 points instead of one per pixel).
constexpr int64_t kMaxRoiSampling = 1024;

template <typename acc_t>
TORCHAUG_HOST_DEVICE inline int64_t adaptive_roi_grid(acc_t bin) {
  const acc_t n = ceil(bin);
  return n > acc_t(0) ? (n < acc_t(kMaxRoiSampling) ? static_cast<int64_t>(n) : kMaxRoiSampling) : 0;  // NaN: 0
}

template <typename acc_t, typename T>
TORCHAUG_HOST_DEVICE inline RoiGrid<acc_t> roi_align_grid(const T* roi, acc_t spatial_scale, int64_t pooled_h,
                                                          int64_t pooled_w, int64_t sampling_ratio, bool aligned) {
  RoiGrid<acc_t> g;
  g.batch = static_cast<int64_t>(static_cast<acc_t>(roi[0]));
  const acc_t offset = aligned ? static_cast<acc_t>(0.5) : static_cast<acc_t>(0);
  g.start_x = static_cast<acc_t>(roi[1]) * spatial_scale - offset;
  g.start_y = static_cast<acc_t>(roi[2]) * spatial_scale - offset;
  const acc_t end_x = static_cast<acc_t>(roi[3]) * spatial_scale - offset;
  const acc_t end_y = static_cast<acc_t>(roi[4]) * spatial_scale - offset;
  acc_t roi_w = end_x - g.start_x, roi_h = end_y - g.start_y;
  if (!aligned) {
    roi_w = max_of(roi_w, static_cast<acc_t>(1));
    roi_h = max_of(roi_h, static_cast<acc_t>(1));
  }
  g.bin_h = roi_h / static_cast<acc_t>(pooled_h);
  g.bin_w = roi_w / static_cast<acc_t>(pooled_w);
  g.grid_h = sampling_ratio > 0 ? sampling_ratio : adaptive_roi_grid(roi_h / static_cast<acc_t>(pooled_h));
  g.grid_w = sampling_ratio > 0 ? sampling_ratio : adaptive_roi_grid(roi_w / static_cast<acc_t>(pooled_w));
  g.count = static_cast<acc_t>(max_of<int64_t>(g.grid_h * g.grid_w, 1));
  return g;
}

// Sample position (iy, ix) of bin (ph, pw).
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t roi_sample_y(const RoiGrid<acc_t>& g, int64_t ph, int64_t iy) {
  return g.start_y + static_cast<acc_t>(ph) * g.bin_h +
         (static_cast<acc_t>(iy) + static_cast<acc_t>(0.5)) * g.bin_h / static_cast<acc_t>(g.grid_h);
}
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t roi_sample_x(const RoiGrid<acc_t>& g, int64_t pw, int64_t ix) {
  return g.start_x + static_cast<acc_t>(pw) * g.bin_w +
         (static_cast<acc_t>(ix) + static_cast<acc_t>(0.5)) * g.bin_w / static_cast<acc_t>(g.grid_w);
}

// torchvision's bilinear_interpolate of roi_align: the four neighbours of (y, x) and their
// weights; a sample more than one pixel outside the image contributes nothing (valid == false).
template <typename acc_t>
struct RoiTap {
  bool valid;
  int64_t y0, y1, x0, x1;
  acc_t w00, w01, w10, w11;
};

template <typename acc_t>
TORCHAUG_HOST_DEVICE inline RoiTap<acc_t> roi_bilinear_tap(acc_t y, acc_t x, int64_t height, int64_t width) {
  RoiTap<acc_t> t;
  if (y < static_cast<acc_t>(-1) || y > static_cast<acc_t>(height) || x < static_cast<acc_t>(-1) ||
      x > static_cast<acc_t>(width)) {
    t.valid = false;
    t.y0 = t.y1 = t.x0 = t.x1 = 0;
    t.w00 = t.w01 = t.w10 = t.w11 = static_cast<acc_t>(0);
    return t;
  }
  t.valid = true;
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  t.y0 = static_cast<int64_t>(y);
  t.x0 = static_cast<int64_t>(x);
  if (t.y0 >= height - 1) {
    t.y1 = t.y0 = height - 1;
    y = static_cast<acc_t>(t.y0);
  } else {
    t.y1 = t.y0 + 1;
  }
  if (t.x0 >= width - 1) {
    t.x1 = t.x0 = width - 1;
    x = static_cast<acc_t>(t.x0);
  } else {
    t.x1 = t.x0 + 1;
  }
  const acc_t ly = y - static_cast<acc_t>(t.y0), lx = x - static_cast<acc_t>(t.x0);
  const acc_t hy = static_cast<acc_t>(1) - ly, hx = static_cast<acc_t>(1) - lx;
  t.w00 = hy * hx;
  t.w01 = hy * lx;
  t.w10 = ly * hx;
  t.w11 = ly * lx;
  return t;
}

// One output element of roi_align: the mean of the bin's bilinear samples of `plane` (one channel
// of one image, row-major height x width).
template <typename acc_t, typename T>
TORCHAUG_HOST_DEVICE inline acc_t roi_align_px(const T* plane, int64_t height, int64_t width,
                                               const RoiGrid<acc_t>& g, int64_t ph, int64_t pw) {
  acc_t sum = 0;
  for (int64_t iy = 0; iy < g.grid_h; ++iy) {
    const acc_t y = roi_sample_y(g, ph, iy);
    for (int64_t ix = 0; ix < g.grid_w; ++ix) {
      const RoiTap<acc_t> t = roi_bilinear_tap(y, roi_sample_x(g, pw, ix), height, width);
      if (!t.valid) continue;
      sum += t.w00 * static_cast<acc_t>(plane[t.y0 * width + t.x0]) + t.w01 * static_cast<acc_t>(plane[t.y0 * width + t.x1]) +
             t.w10 * static_cast<acc_t>(plane[t.y1 * width + t.x0]) + t.w11 * static_cast<acc_t>(plane[t.y1 * width + t.x1]);
    }
  }
  return sum / g.count;
}

// The backward of one output element: add(index, value) receives grad * weight / count for each
// tap (index into the row-major plane), as torchvision's roi_align backward scatters it.
template <typename acc_t, typename AddFn>
TORCHAUG_HOST_DEVICE inline void roi_align_backward_px(acc_t grad, int64_t height, int64_t width,
                                                       const RoiGrid<acc_t>& g, int64_t ph, int64_t pw, AddFn add) {
  for (int64_t iy = 0; iy < g.grid_h; ++iy) {
    const acc_t y = roi_sample_y(g, ph, iy);
    for (int64_t ix = 0; ix < g.grid_w; ++ix) {
      const RoiTap<acc_t> t = roi_bilinear_tap(y, roi_sample_x(g, pw, ix), height, width);
      if (!t.valid) continue;
      add(t.y0 * width + t.x0, grad * t.w00 / g.count);
      add(t.y0 * width + t.x1, grad * t.w01 / g.count);
      add(t.y1 * width + t.x0, grad * t.w10 / g.count);
      add(t.y1 * width + t.x1, grad * t.w11 / g.count);
    }
  }
}

}  // namespace kernels
}  // namespace torchaug
