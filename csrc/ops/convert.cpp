// Host-side checks and plan of normalize (csrc/ops/convert.h), shared by both backends.
#include <ATen/ATen.h>

#include "convert.h"

namespace torchaug {

NormalizePlan plan_normalize(const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std,
                                    std::optional<at::ScalarType> out_dtype,
                                    std::optional<at::MemoryFormat> memory_format, const char* op) {
  check_images(op, images);
  check_mean_std(op, mean, std, images, images.size(1));
  const at::ScalarType odt = check_out_dtype(op, out_dtype, at::kFloat);
  TORCHAUG_CHECK(at::isFloatingType(odt), "torchaug::", op, ": out_dtype must be float32, float64, float16 or bfloat16, got ", odt);
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

}  // namespace torchaug
