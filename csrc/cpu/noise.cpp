// CPU kernels of the noise family (csrc/noise_impl.h): image rows in parallel.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../noise_impl.h"

namespace torchaug {
namespace {

void noise_run_cpu(const at::Tensor& images, NoisePlan& plan) {
  const NoiseParams& P = plan.p_;
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "noise_cpu", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    constexpr bool kU8 = std::is_same_v<scalar_t, uint8_t>;
    const scalar_t* in = images.data_ptr<scalar_t>();
    scalar_t* out = plan.out.data_ptr<scalar_t>();
    const int64_t rows = P.batch * P.channels * P.height;
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t y = r % P.height, c = (r / P.height) % P.channels, b = r / (P.height * P.channels);
        const kernels::NoiseSample s = noise_sample(P, b);
        const scalar_t* src = in + b * P.is.b + c * P.is.c + y * P.is.y;
        scalar_t* dst = out + b * P.os.b + c * P.os.c + y * P.os.y;
        for (int64_t x = 0; x < P.width; ++x) {
          const acc_t v = static_cast<acc_t>(src[x * P.is.x]);
          dst[x * P.os.x] = static_cast<scalar_t>(noise_element<acc_t, kU8>(P, s, b, c, y, x, v));
        }
      }
    });
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CPU, m) { register_noise_ops<noise_run_cpu>(m); }

}  // namespace torchaug
