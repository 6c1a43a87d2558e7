// Glue of the convert family (normalize) between csrc/kernels/convert.h and the two backends.
#pragma once

#include "kernels/convert.h"
#include "ops_common.h"

namespace torchaug {

struct NormalizeParams {
  Strides4 is, os;
  int64_t channels, height, width;
  const float* mean;  // (B, C), with strides ms (a batch-broadcast mean is not copied)
  const float* std;   // (B, C), with strides ss
  Strides2 ms, ss;
  void* out;
  int out_kind;
  float inv_max;
  // Both tensors dense in the same layout: element i of the input is element i of the output.
  bool flat;
  bool channels_last;
};

struct NormalizePlan {
  at::Tensor out, mean, std;
  NormalizeParams p;
};

inline NormalizePlan plan_normalize(const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std,
                                    std::optional<at::ScalarType> out_dtype,
                                    std::optional<at::MemoryFormat> memory_format) {
  const char* op = "normalize";
  check_images(op, images);
  check_mean_std(op, mean, std, images, images.size(1));
  const at::ScalarType odt = check_out_dtype(op, out_dtype, at::kFloat);
  TORCH_CHECK(at::isFloatingType(odt), "torchaug::", op, ": out_dtype must be float32, float64, float16 or bfloat16, got ", odt);
  const at::MemoryFormat in_fmt = image_memory_format(images);
  const at::MemoryFormat fmt = check_memory_format(op, memory_format, in_fmt);
  NormalizePlan plan;
  plan.out = at::empty(images.sizes(), images.options().dtype(odt).memory_format(fmt));
  plan.mean = mean;
  plan.std = std;
  NormalizeParams& p = plan.p;
  p.is = strides4(images);
  p.os = strides4(plan.out);
  p.channels = images.size(1);
  p.height = images.size(2);
  p.width = images.size(3);
  p.mean = plan.mean.data_ptr<float>();
  p.std = plan.std.data_ptr<float>();
  p.ms = strides2(mean);
  p.ss = strides2(std);
  p.out = plan.out.data_ptr();
  p.out_kind = pixel_kind(odt);
  p.inv_max = images.scalar_type() == at::kByte ? static_cast<float>(kernels::PixelRange<uint8_t>::inv_max) : 1.0f;
  p.flat = images.is_contiguous(fmt) && fmt == in_fmt;
  p.channels_last = fmt == at::MemoryFormat::ChannelsLast;
  return plan;
}

// Output element (b, c, y, x).
template <typename scalar_t>
C10_HOST_DEVICE inline void normalize_output_px(const scalar_t* in, const NormalizeParams& p, int64_t b, int64_t c,
                                                int64_t y, int64_t x) {
  using acc_t = typename AccOf<scalar_t>::type;
  const acc_t v = static_cast<acc_t>(in[b * p.is.b + c * p.is.c + y * p.is.y + x * p.is.x]);
  const acc_t r = kernels::normalize_px<acc_t>(v, static_cast<acc_t>(p.inv_max), static_cast<acc_t>(p.mean[p.ms.at(b, c)]),
                                               static_cast<acc_t>(p.std[p.ss.at(b, c)]));
  store_pixel(p.out, b * p.os.b + c * p.os.c + y * p.os.y + x * p.os.x, p.out_kind, r);
}

// Element i of a flat pass (p.flat): input and output share the layout.
template <typename scalar_t>
C10_HOST_DEVICE inline void normalize_flat_px(const scalar_t* in, const NormalizeParams& p, int64_t i) {
  using acc_t = typename AccOf<scalar_t>::type;
  const int64_t hw = p.height * p.width;
  const int64_t chw = p.channels * hw;
  const int64_t b = i / chw;
  const int64_t c = p.channels_last ? i % p.channels : (i / hw) % p.channels;
  const acc_t r = kernels::normalize_px<acc_t>(static_cast<acc_t>(in[i]), static_cast<acc_t>(p.inv_max),
                                               static_cast<acc_t>(p.mean[p.ms.at(b, c)]), static_cast<acc_t>(p.std[p.ss.at(b, c)]));
  store_pixel(p.out, i, p.out_kind, r);
}

}  // namespace torchaug
