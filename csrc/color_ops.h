// The public pointwise color ops, each a one-slot program of the color mechanism; registered for a
// backend by passing its run function (csrc/cpu/color.cpp, csrc/cuda/color.cu).
#pragma once

#include <torch/library.h>

#include "color_impl.h"

namespace torchaug {

template <ColorRunFn run>
void register_color_ops(torch::Library& m) {
  using at::Tensor;
  using namespace kernels;
  m.impl("adjust_brightness", [](const Tensor& images, const Tensor& factor) {
    return color_single_op("adjust_brightness", run, images, kColorBrightness, factor, Tensor(), 1.0f, 1.0f);
  });
  m.impl("adjust_contrast", [](const Tensor& images, const Tensor& factor) {
    return color_single_op("adjust_contrast", run, images, kColorContrast, factor, Tensor(), 1.0f, 1.0f);
  });
  m.impl("adjust_saturation", [](const Tensor& images, const Tensor& factor) {
    return color_single_op("adjust_saturation", run, images, kColorSaturation, factor, Tensor(), 1.0f, 1.0f);
  });
  m.impl("adjust_hue", [](const Tensor& images, const Tensor& factor) {
    return color_single_op("adjust_hue", run, images, kColorHue, factor, Tensor(), 0.0f, 1.0f);
  });
  m.impl("adjust_gamma", [](const Tensor& images, const Tensor& gamma, const Tensor& gain) {
    return color_single_op("adjust_gamma", run, images, kColorGamma, gamma, gain, 1.0f, 1.0f);
  });
  m.impl("rgb_to_grayscale", [](const Tensor& images, int64_t num_output_channels) {
    return color_single_op("rgb_to_grayscale", run, images, kColorGrayscale, Tensor(), Tensor(), 0.0f, 1.0f,
                           num_output_channels);
  });
  m.impl("invert", [](const Tensor& images) {
    return color_single_op("invert", run, images, kColorInvert, Tensor(), Tensor(), 0.0f, 1.0f);
  });
  m.impl("posterize", [](const Tensor& images, const Tensor& bits) {
    return color_single_op("posterize", run, images, kColorPosterize, bits, Tensor(), 8.0f, 1.0f);
  });
  m.impl("solarize", [](const Tensor& images, const Tensor& threshold) {
    return color_single_op("solarize", run, images, kColorSolarize, threshold, Tensor(), 0.0f, 1.0f);
  });
  m.impl("solarize_add", [](const Tensor& images, const Tensor& shift, const Tensor& threshold) {
    return color_single_op("solarize_add", run, images, kColorSolarizeAdd, shift, threshold, 0.0f, 128.0f);
  });
  m.impl("autocontrast", [](const Tensor& images) {
    return color_single_op("autocontrast", run, images, kColorAutocontrast, Tensor(), Tensor(), 0.0f, 1.0f);
  });
  m.impl("equalize", [](const Tensor& images) {
    return color_single_op("equalize", run, images, kColorEqualize, Tensor(), Tensor(), 0.0f, 1.0f);
  });
  m.impl("color_program", [](const Tensor& images, const Tensor& ops, const Tensor& params) {
    return color_program_op(run, images, ops, params);
  });
}

}  // namespace torchaug
