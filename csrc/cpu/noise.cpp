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
  const bool dense = noise_dense(P);
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "noise_cpu", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    constexpr bool kU8 = std::is_same_v<scalar_t, uint8_t>;
    const scalar_t* in = images.data_ptr<scalar_t>();
    scalar_t* out = plan.out.data_ptr<scalar_t>();
    const int64_t n = P.height * P.width;
    at::parallel_for(0, P.batch * P.channels, 1, [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const int64_t b = plane / P.channels, c = plane % P.channels;
        const kernels::NoiseSample s = noise_sample(P, b);
        for (int64_t p = 0; p < n; ++p) {
          const acc_t v = static_cast<acc_t>(in[noise_in_offset(P, dense, b, c, p)]);
          out[noise_out_offset(P, dense, b, c, p)] = static_cast<scalar_t>(noise_element<acc_t, kU8>(P, s, b, c, p, v));
        }
      }
    });
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CPU, m) { register_noise_ops<noise_run_cpu>(m); }

}  // namespace torchaug
