// CPU kernels of the convert family (normalize).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../ops/convert.h"

namespace torchaug {
namespace {

// One channel's row of W values through normalize_px, unit strides: a loop the compiler vectorizes
// (the math is the shared formula's plain operations, none fused), compiled for AVX2 and FMA beside
// the baseline.
template <typename scalar_t, typename out_t>
TORCHAUG_CPU_CLONES void normalize_row(const scalar_t* __restrict src, out_t* __restrict dst, int64_t W,
                                       typename AccOf<scalar_t>::type inv_max, typename AccOf<scalar_t>::type mean,
                                       typename AccOf<scalar_t>::type sd) {
  using acc_t = typename AccOf<scalar_t>::type;
  for (int64_t x = 0; x < W; ++x)
    dst[x] = pixel_as<out_t>(kernels::normalize_px<acc_t>(static_cast<acc_t>(src[x]), inv_max, mean, sd));
}

// Rows (b, y) of the output, each channel's row in one pass with the output type fixed. A uint8
// image whose output is uint8 or 16-bit floating reads a table of the 256 results of each channel
// of the current sample (normalize_px of every value, stored as store_pixel stores it: the same
// bits as computing each pixel), built when the sample changes: those conversions do not vectorize.
// Otherwise each value is computed (normalize_row). The output's samples first .. first + B - 1
// from the input's samples 0 .. B - 1.
template <typename scalar_t, typename out_t>
void normalize_rows(const scalar_t* in, const NormalizeParams& p, int64_t B, int64_t first = 0) {
  using acc_t = typename AccOf<scalar_t>::type;
  constexpr bool kTable =
      std::is_same_v<scalar_t, uint8_t> && !std::is_same_v<out_t, float> && !std::is_same_v<out_t, double>;
  const int64_t C = p.channels, H = p.height, W = p.width;
  out_t* out = static_cast<out_t*>(p.out);
  const int64_t isx = p.is.x, osx = p.os.x;
  const bool unit = isx == 1 && osx == 1;
  const acc_t inv_max = static_cast<acc_t>(p.inv_max);
  at::parallel_for(0, B * H, std::max<int64_t>(1, 65536 / std::max<int64_t>(W * C, 1)), [&](int64_t begin, int64_t end) {
    std::vector<out_t> table(kTable ? C * 256 : 0);
    int64_t table_b = -1;
    for (int64_t r = begin; r < end; ++r) {
      const int64_t ib = r / H, b = first + ib, y = r % H;
      if constexpr (kTable) {
        if (b != table_b) {
          for (int64_t c = 0; c < C; ++c) {
            const acc_t mean = p.mean[p.ms.at(b, c)], sd = p.std[p.ss.at(b, c)];
            for (int v = 0; v < 256; ++v)
              table[c * 256 + v] = pixel_as<out_t>(kernels::normalize_px<acc_t>(static_cast<acc_t>(v), inv_max, mean, sd));
          }
          table_b = b;
        }
      }
      for (int64_t c = 0; c < C; ++c) {
        const scalar_t* __restrict src = in + ib * p.is.b + c * p.is.c + y * p.is.y;
        out_t* __restrict dst = out + b * p.os.b + c * p.os.c + y * p.os.y;
        if constexpr (kTable) {
          const out_t* __restrict t = table.data() + c * 256;
          for (int64_t x = 0; x < W; ++x) dst[x * osx] = t[src[x * isx]];
        } else {
          const acc_t mean = p.mean[p.ms.at(b, c)], sd = p.std[p.ss.at(b, c)];
          if (unit) {
            normalize_row<scalar_t, out_t>(src, dst, W, inv_max, mean, sd);
          } else {
            for (int64_t x = 0; x < W; ++x)
              dst[x * osx] = pixel_as<out_t>(kernels::normalize_px<acc_t>(static_cast<acc_t>(src[x * isx]), inv_max, mean, sd));
          }
        }
      }
    }
  });
}

at::Tensor normalize_cpu(const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std,
                         std::optional<at::ScalarType> out_dtype, std::optional<at::MemoryFormat> memory_format) {
  auto plan = plan_normalize(images, mean, std, out_dtype, memory_format);
  if (images.numel() == 0) return plan.out;
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "normalize_cpu", [&] {
    const scalar_t* in = images.data_ptr<scalar_t>();
    with_pixel_type(plan.p.out_kind, [&](auto o) { normalize_rows<scalar_t, decltype(o)>(in, plan.p, images.size(0)); });
  });
  return plan.out;
}

}  // namespace

void normalize_sample_cpu(const at::Tensor& in, const NormalizeParams& p, int64_t b) {
  NormalizeParams q = p;
  q.is = strides4(in);
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, in.scalar_type(), "normalize_cpu", [&] {
    const scalar_t* src = in.data_ptr<scalar_t>();
    with_pixel_type(q.out_kind, [&](auto o) { normalize_rows<scalar_t, decltype(o)>(src, q, 1, b); });
  });
}

TORCH_LIBRARY_IMPL(torchaug, CPU, m) { m.impl("normalize", &normalize_cpu); }

}  // namespace torchaug
