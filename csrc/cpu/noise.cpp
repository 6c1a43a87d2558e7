// CPU kernels of the noise family (csrc/ops/noise.h): image planes in parallel.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../ops/noise.h"

namespace torchaug {
namespace {

void noise_run_cpu(const at::Tensor& images, NoisePlan& plan) {
  const NoiseParams& P = plan.p_;
  const int64_t planes = noise_planes(P), units = noise_plane_units(P);
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "noise_cpu", [&] {
    const scalar_t* in = images.data_ptr<scalar_t>();
    scalar_t* out = plan.out.data_ptr<scalar_t>();
    at::parallel_for(0, P.batch * planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const int64_t b = plane / planes, c = plane % planes;
        const kernels::NoiseSample s = noise_sample(P, b);
        for (int64_t u = 0; u < units; ++u) noise_unit(in, out, P, s, b, c, u, units);
      }
    });
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CPU, m) { register_noise_ops<noise_run_cpu>(m); }

}  // namespace torchaug
