// CUDA kernels of the geometry family but resized_crop (csrc/cuda/resized_crop.cu): one launch per
// batch, the sample in blockIdx.z, 32x8-thread blocks. warp_affine and flip: a thread per output
// pixel (all channels) calling the same per-pixel driver as the CPU backend (csrc/ops/geometry.h);
// the RandomResizedCrop boxes and the affine matrices: a thread per sample.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/cuda/Atomic.cuh>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <climits>
#include <cmath>
#include <string>
#include <type_traits>

#include "../ops/geometry.h"
#include "draws.cuh"
#include "dependent_launch.cuh"
#include "tiles.cuh"

namespace torchaug {
namespace {


// Output pixel (ox, oy) of sample b of an input whose planes are dense rows (x stride 1, y stride
// the width) of fewer than 2^31 pixels: warp_affine_output_px's values, its taps indexed in 32-bit
// within a plane (kernels::affine_plane), which spares the 64-bit offset arithmetic of every tap.
template <int N, typename scalar_t>
__device__ inline void warp_affine_dense_px(const scalar_t* __restrict__ in, scalar_t* __restrict__ out,
                                            const typename AccOf<scalar_t>::type* m, const float* fill,
                                            const WarpAffineParams& p, int64_t b, int oy, int ox) {
  using acc_t = typename AccOf<scalar_t>::type;
  acc_t sx, sy;
  kernels::warp_source<acc_t, int>(m, p.rows, ox, oy, &sx, &sy);
  const auto taps = kernels::affine_taps<acc_t, N, int>(sx, sy, p.in_h, p.in_w);
  const scalar_t* sample = in + b * p.is.b;
  scalar_t* o = out + b * p.os.b + oy * p.os.y + ox * p.os.x;
  const int w = static_cast<int>(p.in_w);
  for (int64_t c = 0; c < p.channels; ++c) {
    const acc_t s = kernels::affine_plane(sample + c * p.is.c, w, taps);
    const acc_t fc = fill != nullptr ? static_cast<acc_t>(fill[c]) : acc_t(0);
    o[c * p.os.c] = kernels::PixelStore<scalar_t>::from(kernels::affine_blend(s, taps.mask, fill != nullptr, fc, p.interpolation));
  }
}

template <int N, typename scalar_t>
__global__ void warp_affine_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out,
                                   const typename AccOf<scalar_t>::type* __restrict__ matrices, WarpAffineParams p,
                                   int64_t B, bool dense) {
  const int64_t ox = static_cast<int64_t>(blockIdx.x) * kTileX + threadIdx.x;
  const int64_t oy = static_cast<int64_t>(blockIdx.y) * kTileY + threadIdx.y;
  if (ox >= p.out_w || oy >= p.out_h) return;
  for (int64_t b = blockIdx.z; b < B; b += gridDim.z) {
    const float* fill = p.sample_fill(b);
    if (dense) {
      warp_affine_dense_px<N>(in, out, matrices + p.matrix_size() * b, fill, p, b, static_cast<int>(oy), static_cast<int>(ox));
    } else {
      warp_affine_output_px<N>(in, out, matrices + p.matrix_size() * b, fill, p, b, oy, ox);
    }
  }
}

at::Tensor warp_affine_cuda(const at::Tensor& images, const at::Tensor& matrices, c10::SymIntArrayRef out_size,
                            int64_t interpolation, const std::optional<at::Tensor>& fill) {
  const char* op = "warp_affine";
  check_warp_affine(op, images, matrices, interpolation, fill);
  c10::cuda::CUDAGuard guard(images.device());
  auto [oh, ow] = check_out_size(op, out_size);
  const int64_t B = images.size(0);
  auto out = empty_output(op, {B, images.size(1), oh, ow}, images.options().memory_format(image_memory_format(images)));
  if (B == 0) return out;
  const auto m = acc_matrices(images, matrices);
  const at::Tensor f = fill ? fill->contiguous() : at::Tensor();
  const WarpAffineParams p = warp_affine_params(images, out, interpolation, f, static_cast<int>(m.size(1)));
  const bool dense = p.is.x == 1 && p.is.y == p.in_w && p.in_h * p.in_w < (int64_t(1) << 31) &&
                     oh < (int64_t(1) << 31) && ow < (int64_t(1) << 31);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  TORCHAUG_DISPATCH_IMAGE_TYPES(images.scalar_type(), "warp_affine_cuda", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    with_affine_taps(interpolation, [&](auto taps) {
      warp_affine_kernel<decltype(taps)::value, scalar_t><<<pixel_grid(B, oh, ow), dim3(kTileX, kTileY), 0, stream>>>(
          images.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), m.data_ptr<acc_t>(), p, B, dense);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
  return out;
}

template <int N, typename scalar_t>
__global__ void warp_grid_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out,
                                 const typename AccOf<scalar_t>::type* __restrict__ grid, WarpAffineParams p, int64_t gb,
                                 int64_t gy, int64_t gx, int64_t gk, int64_t B) {
  const int64_t ox = static_cast<int64_t>(blockIdx.x) * kTileX + threadIdx.x;
  const int64_t oy = static_cast<int64_t>(blockIdx.y) * kTileY + threadIdx.y;
  if (ox >= p.out_w || oy >= p.out_h) return;
  for (int64_t b = blockIdx.z; b < B; b += gridDim.z) {
    const float* fill = p.sample_fill(b);
    warp_grid_output_px<N>(in, out, grid + b * gb + oy * gy + ox * gx, gk, fill, p, b, oy, ox);
  }
}

at::Tensor warp_grid_cuda(const at::Tensor& images, const at::Tensor& grid, int64_t interpolation,
                          const std::optional<at::Tensor>& fill) {
  WarpGridPlan plan = plan_warp_grid(images, grid, interpolation, fill);
  if (plan.out.numel() == 0) return plan.out;
  c10::cuda::CUDAGuard guard(images.device());
  const WarpAffineParams& p = plan.p;
  const int64_t B = images.size(0);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  TORCHAUG_DISPATCH_IMAGE_TYPES(images.scalar_type(), "warp_grid_cuda", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    with_affine_taps(interpolation, [&](auto taps) {
      warp_grid_kernel<decltype(taps)::value, scalar_t><<<pixel_grid(B, p.out_h, p.out_w), dim3(kTileX, kTileY), 0, stream>>>(
          images.data_ptr<scalar_t>(), plan.out.data_ptr<scalar_t>(), plan.grid.data_ptr<acc_t>(), p, plan.gb, plan.gy,
          plan.gx, plan.gk, B);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
  return plan.out;
}

template <typename T>
__device__ inline T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

template <int N, typename scalar_t>
__global__ void warp_affine_backward_kernel(const scalar_t* __restrict__ grad, const scalar_t* __restrict__ in,
                                            const typename AccOf<scalar_t>::type* __restrict__ matrices,
                                            WarpAffineParams p, Strides4 gs, int64_t B, bool want_images,
                                            scalar_t* grad_in, typename AccOf<scalar_t>::type* grad_m) {
  using acc_t = typename AccOf<scalar_t>::type;
  const int64_t ox = static_cast<int64_t>(blockIdx.x) * kTileX + threadIdx.x;
  const int64_t oy = static_cast<int64_t>(blockIdx.y) * kTileY + threadIdx.y;
  const bool inside = ox < p.out_w && oy < p.out_h;
  for (int64_t b = blockIdx.z; b < B; b += gridDim.z) {
    acc_t dm[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    if (inside) {
      warp_affine_backward_px<N>(
          grad, in, matrices, p, gs, b, oy, ox, want_images,
          [&](int64_t i, acc_t v) { gpuAtomicAdd(grad_in + i, static_cast<scalar_t>(v)); },
          grad_m != nullptr ? dm : nullptr);
    }
    if (grad_m != nullptr) {
      // every thread of the block works on sample b: reduce per warp, one atomic per warp
#pragma unroll
      for (int k = 0; k < 9; ++k) {
        if (k >= p.matrix_size()) break;
        const acc_t s = warp_sum(dm[k]);
        if ((threadIdx.x & 31) == 0) gpuAtomicAdd(grad_m + p.matrix_size() * b + k, s);
      }
    }
  }
}

std::tuple<at::Tensor, at::Tensor> warp_affine_backward_cuda(const at::Tensor& grad, const at::Tensor& images,
                                                             const at::Tensor& matrices, int64_t interpolation,
                                                             const std::optional<at::Tensor>& fill,
                                                             std::array<bool, 2> output_mask) {
  check_defined("_warp_affine_backward", "images", images);  // before the guard reads its device
  c10::cuda::CUDAGuard guard(images.device());
  WarpBackwardPlan plan = plan_warp_affine_backward(grad, images, matrices, interpolation, fill);
  const int64_t B = images.size(0);
  const at::Tensor& g = plan.g;
  at::Tensor& grad_images = plan.grad_images;
  at::Tensor& grad_m = plan.grad_m;
  const at::Tensor& m = plan.m;
  if (B > 0) {
    const WarpAffineParams& p = plan.p;
    const auto stream = c10::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, images.scalar_type(), "warp_affine_backward_cuda", [&] {
      using acc_t = typename AccOf<scalar_t>::type;
      with_affine_taps(interpolation, [&](auto taps) {
        warp_affine_backward_kernel<decltype(taps)::value, scalar_t>
            <<<pixel_grid(B, p.out_h, p.out_w), dim3(kTileX, kTileY), 0, stream>>>(
                g.data_ptr<scalar_t>(), plan.in.data_ptr<scalar_t>(), m.data_ptr<acc_t>(), p, strides4(g), B,
                output_mask[0], grad_images.data_ptr<scalar_t>(), output_mask[1] ? grad_m.data_ptr<acc_t>() : nullptr);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
    });
  }
  return {output_mask[0] ? grad_images : at::Tensor(), output_mask[1] ? grad_m.to(matrices.scalar_type()) : at::Tensor()};
}

template <typename scalar_t>
__global__ void flip_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, const bool* __restrict__ hflip,
                            const bool* __restrict__ vflip, Strides4 is, Strides4 os, int64_t C, int64_t H, int64_t W,
                            int64_t B) {
  const int64_t x = static_cast<int64_t>(blockIdx.x) * kTileX + threadIdx.x;
  const int64_t y = static_cast<int64_t>(blockIdx.y) * kTileY + threadIdx.y;
  if (x >= W || y >= H) return;
  for (int64_t b = blockIdx.z; b < B; b += gridDim.z) {
    const int64_t sx = kernels::flip_index(x, W, hflip[b]);
    const int64_t sy = kernels::flip_index(y, H, vflip[b]);
    for (int64_t c = 0; c < C; ++c) out[b * os.b + c * os.c + y * os.y + x * os.x] = in[b * is.b + c * is.c + sy * is.y + sx * is.x];
  }
}

at::Tensor flip_cuda(const at::Tensor& images, const at::Tensor& horizontal, const at::Tensor& vertical) {
  const char* op = "flip";
  check_flip(op, images, horizontal, vertical);
  c10::cuda::CUDAGuard guard(images.device());
  auto out = at::empty_like(images, images.options().memory_format(image_memory_format(images)));
  const int64_t B = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
  if (B == 0) return out;
  const auto h = horizontal.contiguous(), v = vertical.contiguous();
  const auto stream = c10::cuda::getCurrentCUDAStream();
  TORCHAUG_DISPATCH_IMAGE_TYPES(images.scalar_type(), "flip_cuda", [&] {
    flip_kernel<scalar_t><<<pixel_grid(B, H, W), dim3(kTileX, kTileY), 0, stream>>>(
        images.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), h.data_ptr<bool>(), v.data_ptr<bool>(),
        strides4(images), strides4(out), C, H, W, B);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

__global__ void random_resized_crop_boxes_kernel(RrcBoxParams p, int64_t B) {
  if (p.rand != nullptr) {  // given: a thread a sample
    dependent_launch_begin();
    const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (b < B) rrc_box_px(p, b, p.rand + b * kernels::kRrcDraws);
    return;
  }
  // drawn here, as torch.rand would have drawn them (draws.cuh): the block's samples' rows first.
  // The draws, and the boxes of images whose size is an argument, read nothing the kernels before
  // this one write, so they run before the wait (dependent_launch.cuh), beside the kernel before's
  // last blocks; the sizes tensor is read and the boxes written after it.
  __shared__ double u[kDrawThreads];
  const int per_block = draw_rows_per_block(kernels::kRrcDraws);
  const int64_t b0 = static_cast<int64_t>(blockIdx.x) * per_block;
  const int rows = static_cast<int>(std::min<int64_t>(per_block, B - b0));
  kernel_draw_rows(p.draws, b0, rows, kernels::kRrcDraws, u);
  const bool mine = static_cast<int>(threadIdx.x) < rows;
  const double* own = u + threadIdx.x * kernels::kRrcDraws;
  const int64_t b = b0 + threadIdx.x;
  int64_t box[4];
  if (mine && p.sizes == nullptr) {
    kernels::random_resized_crop_box(own, static_cast<double>(p.height), static_cast<double>(p.width), p.scale_min,
                                     p.scale_max, p.ratio_min, p.ratio_max, box);
  }
  bool flip = false;
  if (mine && p.flips != nullptr) {  // the coin bernoulli_ would draw for sample b after the boxes' draws
    const auto so = kernel_draws_seed_offset(p.flip_draws);
    flip = kernels::torch_cuda_uniform_f32(std::get<0>(so), std::get<1>(so), p.flip_draws.stride, b) < p.flip_p;
  }
  dependent_launch_begin();
  if (!mine) return;
  if (p.flips != nullptr) p.flips[b] = flip;
  if (p.sizes != nullptr) {
    rrc_box_px(p, b, own);
    return;
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) p.boxes[4 * b + k] = box[k];
}

at::Tensor random_resized_crop_boxes_cuda(const std::optional<at::Tensor>& rand, const std::optional<at::Tensor>& sizes,
                                          int64_t height, int64_t width, double scale_min, double scale_max,
                                          double ratio_min, double ratio_max, int64_t batch,
                                          const std::optional<at::Tensor>& like, std::optional<at::Generator> generator) {
  auto plan = plan_rrc_boxes(rand, sizes, height, width, scale_min, scale_max, ratio_min, ratio_max, batch, like, generator);
  if (plan.B == 0) return plan.boxes;
  c10::cuda::CUDAGuard guard(plan.boxes.device());
  launch_dependent(random_resized_crop_boxes_kernel, draw_grid(plan.p.rand != nullptr, plan.B, kernels::kRrcDraws),
                   dim3(kDrawThreads), 0, c10::cuda::getCurrentCUDAStream(), plan.boxes.get_device(), plan.p, plan.B);
  return plan.boxes;
}

std::tuple<at::Tensor, at::Tensor> random_resized_crop_boxes_flips_cuda(
    const std::optional<at::Tensor>& sizes, int64_t height, int64_t width, double scale_min, double scale_max,
    double ratio_min, double ratio_max, double p, int64_t batch, const std::optional<at::Tensor>& like,
    std::optional<at::Generator> generator) {
  check_flip_p(p);
  auto plan = plan_rrc_boxes(std::nullopt, sizes, height, width, scale_min, scale_max, ratio_min, ratio_max, batch, like,
                             generator, "_random_resized_crop_boxes_flips");
  const at::Device device = plan.boxes.device();
  if (plan.B == 0) return {plan.boxes, at::empty({0}, plan.boxes.options().dtype(at::kBool))};
  c10::cuda::CUDAGuard guard(device);
  at::Tensor flips;
  if (plan.p.rand == nullptr) {  // the kernel draws the boxes' uniforms, and then the coins
    flips = at::empty({plan.B}, plan.boxes.options().dtype(at::kBool));
    plan.p.flips = flips.data_ptr<bool>();
    plan.p.flip_draws = reserve_kernel_draws(generator, plan.B, device, 4);
    plan.p.flip_p = static_cast<float>(p);  // torch's bernoulli compares the float uniform to float(p)
  }
  launch_dependent(random_resized_crop_boxes_kernel, draw_grid(plan.p.rand != nullptr, plan.B, kernels::kRrcDraws),
                   dim3(kDrawThreads), 0, c10::cuda::getCurrentCUDAStream(), device.index(), plan.p, plan.B);
  if (plan.p.rand != nullptr) flips = torch_flips(generator, plan.B, p, device);  // drawn where the boxes' were
  return {plan.boxes, flips};
}

__global__ void affine_matrices_kernel(AffineMatrixParams p, int64_t B) {
  const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < B) affine_matrix_px(p, b);
}

at::Tensor affine_matrices_cuda(const at::Tensor& angle, const at::Tensor& translate, const at::Tensor& scale,
                                const at::Tensor& shear, const at::Tensor& center, double snap_period,
                                at::OptionalIntArrayRef pixel_sizes) {
  auto plan = plan_affine_matrices(angle, translate, scale, shear, center, snap_period, pixel_sizes);
  if (plan.B == 0) return plan.out;
  c10::cuda::CUDAGuard guard(angle.device());
  constexpr int kThreads = 128;
  affine_matrices_kernel<<<static_cast<unsigned>((plan.B + kThreads - 1) / kThreads), kThreads, 0,
                           c10::cuda::getCurrentCUDAStream()>>>(plan.p, plan.B);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return plan.out;
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CUDA, m) {
  m.impl("_affine_matrices", &affine_matrices_cuda);
  m.impl("_random_resized_crop_boxes", &random_resized_crop_boxes_cuda);
  m.impl("_random_resized_crop_boxes_flips", &random_resized_crop_boxes_flips_cuda);
  m.impl("warp_affine", &warp_affine_cuda);
  m.impl("warp_grid", &warp_grid_cuda);
  m.impl("_warp_affine_backward", &warp_affine_backward_cuda);
  m.impl("flip", &flip_cuda);
}

}  // namespace torchaug
