// Glue of the convert family (normalize) between csrc/kernels/convert.h and the two backends.
#pragma once

#include "../kernels/convert.h"
#include "common.h"

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

// op: the op named in error messages (augment plans its fused normalize here too).
NormalizePlan plan_normalize(const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std,
                                    std::optional<at::ScalarType> out_dtype,
                                    std::optional<at::MemoryFormat> memory_format, const char* op = "normalize");

// CPU: sample b of p's output from `in`, one (1, C, H, W) image of p's input dtype (the rows
// normalize writes, `in` read with its own strides instead of p.is).
void normalize_sample_cpu(const at::Tensor& in, const NormalizeParams& p, int64_t b);

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
