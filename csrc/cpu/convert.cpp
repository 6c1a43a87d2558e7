// CPU kernels of the convert family (normalize).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../ops/convert.h"

namespace torchaug {
namespace {

at::Tensor normalize_cpu(const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std,
                         std::optional<at::ScalarType> out_dtype, std::optional<at::MemoryFormat> memory_format) {
  auto plan = plan_normalize(images, mean, std, out_dtype, memory_format);
  if (images.numel() == 0) return plan.out;
  const NormalizeParams& p = plan.p;
  const int64_t B = images.size(0);
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "normalize_cpu", [&] {
    const scalar_t* in = images.data_ptr<scalar_t>();
    if (p.flat) {
      at::parallel_for(0, images.numel(), 32768, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) normalize_flat_px(in, p, i);
      });
      return;
    }
    at::parallel_for(0, B * p.height, std::max<int64_t>(1, 16384 / p.width), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t b = r / p.height, y = r % p.height;
        for (int64_t x = 0; x < p.width; ++x)
          for (int64_t c = 0; c < p.channels; ++c) normalize_output_px(in, p, b, c, y, x);
      }
    });
  });
  return plan.out;
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CPU, m) { m.impl("normalize", &normalize_cpu); }

}  // namespace torchaug
