// CPU kernels of the filter family (csrc/ops/filter.h): image planes in parallel, every pixel's
// window read with reflect-101 borders; a separable window as a plane of row sums, then the column
// sums of those.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <vector>
#include <torch/library.h>

#include "../ops/filter.h"

namespace torchaug {
namespace {

template <typename T>
void filter_plane(const T* in, T* out, const FilterParams& P, int64_t b, int64_t c) {
  using acc_t = typename AccOf<T>::type;
  constexpr bool kU8 = std::is_same_v<T, uint8_t>;
  const acc_t* w = static_cast<const acc_t*>(P.weights) + b * P.weights_stride;
  const acc_t param = P.param ? static_cast<acc_t>(P.param[b * P.param_stride]) : acc_t(1);
  const int ry = P.ky / 2, rx = P.kx / 2;
  const int64_t H = P.height, W = P.width;
  // reflected column indices of every window column, once per plane
  std::vector<int64_t> cols(static_cast<size_t>(W * P.kx));
  for (int64_t x = 0; x < W; ++x)
    for (int j = 0; j < P.kx; ++j) cols[x * P.kx + j] = kernels::reflect101(x + j - rx, W) * P.is.x;
  const T* plane = in + b * P.is.b + c * P.is.c;
  std::vector<acc_t> sums;  // separable: the row sums of every pixel, H x W
  if (P.separable) {
    sums.resize(static_cast<size_t>(H * W));
    for (int64_t y = 0; y < H; ++y) {
      const T* row = plane + y * P.is.y;
      for (int64_t x = 0; x < W; ++x) {
        const int64_t* cx = &cols[x * P.kx];
        sums[y * W + x] = kernels::row_sum<acc_t>(w + P.ky, P.kx, [&](int j) { return static_cast<acc_t>(row[cx[j]]); });
      }
    }
  }
  std::vector<int64_t> rows(static_cast<size_t>(P.ky));
  for (int64_t y = 0; y < H; ++y) {
    for (int i = 0; i < P.ky; ++i) rows[i] = kernels::reflect101(y + i - ry, H);
    for (int64_t x = 0; x < W; ++x) {
      const int64_t* cx = &cols[x * P.kx];
      const acc_t s = P.separable
          ? kernels::column_sum<acc_t>(w, P.ky, [&](int i) { return sums[rows[i] * W + x]; })
          : kernels::window_sum<acc_t>(w, P.ky, P.kx, [&](int i, int j) {
              return static_cast<acc_t>(plane[rows[i] * P.is.y + cx[j]]);
            });
      const acc_t v = static_cast<acc_t>(plane[y * P.is.y + x * P.is.x]);
      const bool interior = y > 0 && x > 0 && y < H - 1 && x < W - 1;
      out[filter_out_offset(P, b, c, y, x)] =
          static_cast<T>(kernels::filter_epilogue<acc_t, kU8>(P.mode, v, s, param, interior));
    }
  }
}

void filter_run_cpu(const at::Tensor& images, FilterPlan& plan) {
  const FilterParams& P = plan.p;
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, images.scalar_type(), "filter_cpu", [&] {
    const scalar_t* in = images.data_ptr<scalar_t>();
    scalar_t* out = plan.out.data_ptr<scalar_t>();
    at::parallel_for(0, P.batch * P.channels, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) filter_plane<scalar_t>(in, out, P, i / P.channels, i % P.channels);
    });
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CPU, m) { register_filter_ops<filter_run_cpu>(m); }

}  // namespace torchaug
