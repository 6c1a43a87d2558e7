// Glue of the filter family (adjust_sharpness, gaussian_blur, laplacian) between
// csrc/kernels/filter.h and the two backends: one stencil mechanism. The host builds each sample's
// window of weights (a (1 or B, ky, kx) tensor on the images' device, made with tensor ops, no host
// synchronisation; gaussian_blur's separable window as its two 1-D windows, (1 or B, ky + kx)); the
// backend applies it around every pixel with reflect-101 borders and the op's epilogue
// (kernels::FilterMode).
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include "../kernels/filter.h"
#include "common.h"

namespace torchaug {

struct FilterParams {
  int64_t batch, channels, height, width;
  Strides4 is, os;
  int ky, kx;                // window rows and columns (odd)
  bool separable;            // weights: the ky row weights then the kx column weights (kernels::row_sum, column_sum)
  const void* weights;       // acc_t (double for float64 images, else float), ky * kx (separable: ky + kx) per sample
  int64_t weights_stride;    // elements between samples' windows (0: one window for all)
  const float* param;        // (B,) factor / scale; nullptr: 1
  int64_t param_stride;
  int mode;                  // kernels::FilterMode
};

struct FilterPlan {
  at::Tensor out, weights, param;
  FilterParams p;
};

using FilterRunFn = void (*)(const at::Tensor& images, FilterPlan& plan);

at::Tensor adjust_sharpness_op(FilterRunFn run, const at::Tensor& images, const at::Tensor& factor);
at::Tensor gaussian_blur_op(FilterRunFn run, const at::Tensor& images, at::IntArrayRef kernel_size,
                            const at::Tensor& sigma);
at::Tensor laplacian_op(FilterRunFn run, const at::Tensor& images, at::IntArrayRef window_size,
                        at::IntArrayRef smoothing_size, const at::Tensor& scale, bool normalized_kernel);

template <FilterRunFn run>
void register_filter_ops(torch::Library& m) {
  using at::Tensor;
  m.impl("adjust_sharpness",
         [](const Tensor& images, const Tensor& factor) { return adjust_sharpness_op(run, images, factor); });
  m.impl("gaussian_blur", [](const Tensor& images, at::IntArrayRef kernel_size, const Tensor& sigma) {
    return gaussian_blur_op(run, images, kernel_size, sigma);
  });
  m.impl("laplacian", [](const Tensor& images, at::IntArrayRef window_size, at::IntArrayRef smoothing_size,
                         const Tensor& scale, bool normalized_kernel) {
    return laplacian_op(run, images, window_size, smoothing_size, scale, normalized_kernel);
  });
}

// The value a backend reads for pixel (y, x) of plane (b, c).
C10_HOST_DEVICE inline int64_t filter_in_offset(const FilterParams& P, int64_t b, int64_t c, int64_t y, int64_t x) {
  return b * P.is.b + c * P.is.c + y * P.is.y + x * P.is.x;
}
C10_HOST_DEVICE inline int64_t filter_out_offset(const FilterParams& P, int64_t b, int64_t c, int64_t y, int64_t x) {
  return b * P.os.b + c * P.os.c + y * P.os.y + x * P.os.x;
}

}  // namespace torchaug
