// Ops that map each sample's uniform draws to its random parameters (_erasing_boxes,
// _random_affine_params, _perspective_params): one mechanism on both backends. An op's plan checks
// its arguments, makes its outputs and its draws (rand, or drawn from the generator: resolve_draws in
// common.h) and a map, a trivially copyable functor whose map(b, row) writes sample b's parameters
// from its R draws `row` with the per-sample math of csrc/kernels; the backend runs the map a sample
// at a time (CPU: DrawMapCpu below; CUDA: DrawMapCuda, csrc/cuda/draws.cuh, a kernel that draws the
// rows itself where it can).
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include "../kernels/geometry.h"
#include "../kernels/noise.h"
#include "common.h"

namespace torchaug {

struct ErasingMap {
  double p, height, width, scale_min, scale_max, log_ratio_min, log_ratio_max;
  int64_t* boxes;  // (B, 4)
  C10_HOST_DEVICE void operator()(int64_t b, const double* u) const {
    kernels::erasing_box(u, p, height, width, scale_min, scale_max, log_ratio_min, log_ratio_max, boxes + 4 * b);
  }
};

struct AffineParamsMap {
  kernels::AffineSpace space;
  const int64_t* sizes;   // (B, 2) [H, W], or nullptr: every image height x width
  double height, width;
  double* out;            // (B, 6)
  C10_HOST_DEVICE void operator()(int64_t b, const double* u) const {
    const double h = sizes ? static_cast<double>(sizes[2 * b]) : height;
    const double w = sizes ? static_cast<double>(sizes[2 * b + 1]) : width;
    kernels::random_affine_sample(space, u, h, w, out + kernels::kAffineDraws * b);
  }
};

struct PerspectiveParamsMap {
  int64_t height, width;
  double distortion, p;
  float* coefficients;  // (B, 8)
  bool* applies;        // (B,)
  C10_HOST_DEVICE void operator()(int64_t b, const double* u) const {
    applies[b] = kernels::random_perspective_sample(u, height, width, distortion, p, coefficients + 8 * b);
  }
};

template <typename Map>
struct DrawMapPlan {
  Draws draws;
  int R;
  Map map;
  at::Tensor held;  // an input the map reads, where the plan made a contiguous copy of it
  at::Device device = at::kCPU;  // the outputs'
};

DrawMapPlan<ErasingMap> plan_erasing_boxes(const std::optional<at::Tensor>& rand, int64_t height, int64_t width, double p,
                                           double scale_min, double scale_max, double log_ratio_min,
                                           double log_ratio_max, int64_t batch, const std::optional<at::Tensor>& like,
                                           const std::optional<at::Generator>& generator, at::Tensor& boxes);
DrawMapPlan<AffineParamsMap> plan_random_affine_params(const std::optional<at::Tensor>& rand,
                                                       const std::optional<at::Tensor>& sizes, int64_t height,
                                                       int64_t width, at::ArrayRef<double> degrees,
                                                       std::optional<at::ArrayRef<double>> translate,
                                                       std::optional<at::ArrayRef<double>> scale,
                                                       std::optional<at::ArrayRef<double>> shear, int64_t batch,
                                                       const std::optional<at::Tensor>& like,
                                                       const std::optional<at::Generator>& generator, at::Tensor& out);
DrawMapPlan<PerspectiveParamsMap> plan_perspective_params(const std::optional<at::Tensor>& rand, int64_t height,
                                                          int64_t width, double distortion_scale, double p,
                                                          int64_t batch, const std::optional<at::Tensor>& like,
                                                          const std::optional<at::Generator>& generator,
                                                          at::Tensor& coefficients, at::Tensor& applies);

// The CPU's run of a map: the draws are always on the host there (resolve_draws).
struct DrawMapCpu {
  template <typename Map>
  static void run(const DrawMapPlan<Map>& plan) {
    const double* u = plan.draws.data();
    for (int64_t b = 0; b < plan.draws.B; ++b) plan.map(b, u + b * plan.R);
  }
};

// The three ops on a backend (Backend: DrawMapCpu or DrawMapCuda).
template <typename Backend>
void register_draw_map_ops(torch::Library& m) {
  using at::Tensor;
  using OptTensor = std::optional<Tensor>;
  m.impl("_erasing_boxes", [](const OptTensor& rand, int64_t height, int64_t width, double p, double scale_min,
                              double scale_max, double log_ratio_min, double log_ratio_max, int64_t batch,
                              const OptTensor& like, std::optional<at::Generator> generator) {
    Tensor boxes;
    const auto plan = plan_erasing_boxes(rand, height, width, p, scale_min, scale_max, log_ratio_min, log_ratio_max, batch,
                                         like, generator, boxes);
    Backend::run(plan);
    return boxes;
  });
  m.impl("_random_affine_params",
         [](const OptTensor& rand, const OptTensor& sizes, int64_t height, int64_t width, at::ArrayRef<double> degrees,
            std::optional<at::ArrayRef<double>> translate, std::optional<at::ArrayRef<double>> scale, std::optional<at::ArrayRef<double>> shear,
            int64_t batch, const OptTensor& like, std::optional<at::Generator> generator) {
           Tensor out;
           const auto plan = plan_random_affine_params(rand, sizes, height, width, degrees, translate, scale, shear, batch,
                                                       like, generator, out);
           Backend::run(plan);
           return out;
         });
  m.impl("_perspective_params", [](const OptTensor& rand, int64_t height, int64_t width, double distortion_scale, double p,
                                   int64_t batch, const OptTensor& like, std::optional<at::Generator> generator) {
    Tensor coefficients, applies;
    const auto plan = plan_perspective_params(rand, height, width, distortion_scale, p, batch, like, generator, coefficients,
                                              applies);
    Backend::run(plan);
    return std::make_tuple(coefficients, applies);
  });
}

}  // namespace torchaug
