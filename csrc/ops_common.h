// Host-side helpers shared by the CPU and CUDA backends: argument checks with the error messages of
// DESIGN.md §9, output allocation, and the dtype-erased pixel store used for fused casts.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <sstream>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/convert.h"

namespace torchaug {

inline std::string shape_str(at::IntArrayRef s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  if (s.size() == 1) os << ",";
  os << ")";
  return os.str();
}

inline bool is_image_dtype(at::ScalarType t) {
  return t == at::kByte || t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// images: (B, C, H, W), uint8 or floating, on `device`.
inline void check_images(const char* op, const at::Tensor& images, const char* name = "images") {
  TORCH_CHECK(images.dim() == 4, "torchaug::", op, ": ", name, " must be a 4-D (B, C, H, W) tensor, got ",
              images.dim(), "-D with shape ", shape_str(images.sizes()));
  TORCH_CHECK(is_image_dtype(images.scalar_type()), "torchaug::", op, ": ", name,
              " must be uint8, float32, float64, float16 or bfloat16, got ", images.scalar_type());
  if (images.size(0) > 0) {
    TORCH_CHECK(images.size(1) > 0 && images.size(2) > 0 && images.size(3) > 0, "torchaug::", op, ": ", name,
                " must have C, H, W > 0, got shape ", shape_str(images.sizes()));
  }
}

inline void check_device(const char* op, const char* name, const at::Tensor& t, const at::Tensor& images) {
  TORCH_CHECK(t.device() == images.device(), "torchaug::", op, ": ", name, " must be on the images' device ",
              images.device(), ", got ", t.device());
}

// A per-sample parameter: exact shape, one of the allowed dtypes, on the images' device.
inline void check_param(const char* op, const char* name, const at::Tensor& t, const at::Tensor& images,
                        std::vector<int64_t> shape, const char* shape_doc,
                        std::initializer_list<at::ScalarType> dtypes) {
  check_device(op, name, t, images);
  bool ok_shape = t.dim() == static_cast<int64_t>(shape.size());
  for (size_t i = 0; ok_shape && i < shape.size(); ++i) ok_shape = t.size(i) == shape[i];
  TORCH_CHECK(ok_shape, "torchaug::", op, ": ", name, " must have shape ", shape_doc, " with B=", images.size(0),
              ", got ", shape_str(t.sizes()));
  bool ok_dtype = false;
  std::ostringstream allowed;
  for (auto d : dtypes) {
    ok_dtype = ok_dtype || t.scalar_type() == d;
    allowed << (allowed.tellp() > 0 ? " or " : "") << d;
  }
  TORCH_CHECK(ok_dtype, "torchaug::", op, ": ", name, " must have dtype ", allowed.str(), ", got ", t.scalar_type());
}

inline std::pair<int64_t, int64_t> check_out_size(const char* op, c10::SymIntArrayRef out_size) {
  TORCH_CHECK(out_size.size() == 2, "torchaug::", op, ": out_size must be [height, width], got ", out_size.size(),
              " values");
  const int64_t oh = out_size[0].guard_int(__FILE__, __LINE__);
  const int64_t ow = out_size[1].guard_int(__FILE__, __LINE__);
  TORCH_CHECK(oh > 0 && ow > 0, "torchaug::", op, ": out_size must be positive, got [", oh, ", ", ow, "]");
  return {oh, ow};
}

inline void check_interpolation(const char* op, int64_t interpolation, int64_t max_code) {
  TORCH_CHECK(interpolation >= 0 && interpolation <= max_code, "torchaug::", op,
              ": interpolation must be ", max_code == 2 ? "0 (nearest), 1 (bilinear) or 2 (bicubic)" : "0 (nearest) or 1 (bilinear)",
              ", got ", interpolation);
}

// mean/std of normalize and of the fused epilogue: (B, C) float32, std without zeros.
inline void check_mean_std(const char* op, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& images,
                           int64_t channels) {
  const std::vector<int64_t> shape{images.size(0), channels};
  check_param(op, "mean", mean, images, shape, "(B, C)", {at::kFloat});
  check_param(op, "std", std, images, shape, "(B, C)", {at::kFloat});
  if (std.device().is_cpu() && std.numel() > 0) {
    TORCH_CHECK(!(std == 0).any().item<bool>(), "torchaug::", op, ": std must not contain zeros");
  }
}

inline at::ScalarType check_out_dtype(const char* op, std::optional<at::ScalarType> out_dtype,
                                      at::ScalarType fallback) {
  const at::ScalarType t = out_dtype.value_or(fallback);
  TORCH_CHECK(is_image_dtype(t), "torchaug::", op, ": out_dtype must be uint8, float32, float64, float16 or bfloat16, got ", t);
  return t;
}

inline at::MemoryFormat check_memory_format(const char* op, std::optional<at::MemoryFormat> fmt, at::MemoryFormat fallback) {
  const at::MemoryFormat f = fmt.value_or(fallback);
  TORCH_CHECK(f == at::MemoryFormat::Contiguous || f == at::MemoryFormat::ChannelsLast, "torchaug::", op,
              ": memory_format must be torch.contiguous_format or torch.channels_last, got ", f);
  return f;
}

// The memory format an output keeps: channels_last when the input is laid out so, else contiguous.
inline at::MemoryFormat image_memory_format(const at::Tensor& images) {
  return images.suggest_memory_format() == at::MemoryFormat::ChannelsLast ? at::MemoryFormat::ChannelsLast
                                                                          : at::MemoryFormat::Contiguous;
}

// Strides of a dense (B, C, H, W) tensor as plain numbers for the kernels.
struct Strides4 {
  int64_t b, c, y, x;
};
inline Strides4 strides4(const at::Tensor& t) { return {t.stride(0), t.stride(1), t.stride(2), t.stride(3)}; }

// Strides of a (B, C) parameter tensor (a batch-broadcast one has b == 0).
struct Strides2 {
  int64_t b, c;
  C10_HOST_DEVICE int64_t at(int64_t i, int64_t j) const { return i * b + j * c; }
};
inline Strides2 strides2(const at::Tensor& t) { return {t.stride(0), t.stride(1)}; }

inline kernels::ImageView dense_view(const Strides4& s, int64_t b, int64_t h, int64_t w) {
  return {b * s.b, h, w, s.c, s.y, s.x};
}

// dtype codes of the dtype-erased store
enum PixelKind : int { kPixU8 = 0, kPixF32 = 1, kPixF64 = 2, kPixF16 = 3, kPixBF16 = 4 };

inline int pixel_kind(at::ScalarType t) {
  switch (t) {
    case at::kByte: return kPixU8;
    case at::kFloat: return kPixF32;
    case at::kDouble: return kPixF64;
    case at::kHalf: return kPixF16;
    default: return kPixBF16;
  }
}

// Store v (already in the output's value range) into out[i] of dtype `kind`.
template <typename acc_t>
C10_HOST_DEVICE inline void store_pixel(void* out, int64_t i, int kind, acc_t v) {
  switch (kind) {
    case kPixU8: static_cast<uint8_t*>(out)[i] = kernels::PixelStore<uint8_t>::from(v); break;
    case kPixF32: static_cast<float*>(out)[i] = static_cast<float>(v); break;
    case kPixF64: static_cast<double*>(out)[i] = static_cast<double>(v); break;
    case kPixF16: static_cast<c10::Half*>(out)[i] = static_cast<c10::Half>(static_cast<float>(v)); break;
    default: static_cast<c10::BFloat16*>(out)[i] = static_cast<c10::BFloat16>(static_cast<float>(v)); break;
  }
}

// Accumulator type of a pixel type: double for double images, float otherwise.
template <typename T>
struct AccOf {
  using type = float;
};
template <>
struct AccOf<double> {
  using type = double;
};

}  // namespace torchaug
