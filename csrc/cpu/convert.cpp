// CPU kernels of the convert family (normalize).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "../ops/convert.h"

namespace torchaug {
namespace {

// Rows (b, y) of the output, each channel's row in one pass with the output type fixed. uint8 input:
// a table of the 256 results of each channel of the current sample (normalize_px of every value,
// stored as store_pixel stores it: the same bits as computing each pixel), built when the sample
// changes, so that a pixel costs a table read. Floating input: normalize_px per value, a loop the
// compiler vectorizes over unit-stride rows.
template <typename scalar_t, typename out_t>
void normalize_rows(const scalar_t* in, const NormalizeParams& p, int64_t B) {
  using acc_t = typename AccOf<scalar_t>::type;
  constexpr bool kTable = std::is_same_v<scalar_t, uint8_t>;
  const int64_t C = p.channels, H = p.height, W = p.width;
  out_t* out = static_cast<out_t*>(p.out);
  const int64_t isx = p.is.x, osx = p.os.x;
  const bool unit = isx == 1 && osx == 1;
  const acc_t inv_max = static_cast<acc_t>(p.inv_max);
  at::parallel_for(0, B * H, std::max<int64_t>(1, 65536 / std::max<int64_t>(W * C, 1)), [&](int64_t begin, int64_t end) {
    std::vector<out_t> table(kTable ? C * 256 : 0);
    int64_t table_b = -1;
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / H, y = r % H;
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
        const scalar_t* __restrict src = in + b * p.is.b + c * p.is.c + y * p.is.y;
        out_t* __restrict dst = out + b * p.os.b + c * p.os.c + y * p.os.y;
        if constexpr (kTable) {
          const out_t* __restrict t = table.data() + c * 256;
          if (unit) {
            for (int64_t x = 0; x < W; ++x) dst[x] = t[src[x]];
          } else {
            for (int64_t x = 0; x < W; ++x) dst[x * osx] = t[src[x * isx]];
          }
        } else {
          const acc_t mean = p.mean[p.ms.at(b, c)], sd = p.std[p.ss.at(b, c)];
          const auto px = [&](scalar_t v) {
            return pixel_as<out_t>(kernels::normalize_px<acc_t>(static_cast<acc_t>(v), inv_max, mean, sd));
          };
          if (unit) {
            for (int64_t x = 0; x < W; ++x) dst[x] = px(src[x]);
          } else {
            for (int64_t x = 0; x < W; ++x) dst[x * osx] = px(src[x * isx]);
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

TORCH_LIBRARY_IMPL(torchaug, CPU, m) { m.impl("normalize", &normalize_cpu); }

}  // namespace torchaug
