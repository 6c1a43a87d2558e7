// The torchaug operators from C++ (LibTorch). Link the library (CMake: find_package(torchaug) and
// target_link_libraries(app PRIVATE torchaug::torchaug)); loading it registers torch.ops.torchaug.*,
// and the functions below call them through PyTorch's dispatcher, so each call runs the CPU or CUDA
// kernel of its tensors' device. Every op's schema, and what it computes, is in the library's
// csrc/torchaug.cpp; an op without a typed function here is called by name with call():
//
//   #include <torchaug/torchaug.h>
//   at::Tensor out = torchaug::resized_crop(images, boxes, {224, 224});
//   at::Tensor bright = torchaug::call<at::Tensor(const at::Tensor&, const at::Tensor&)>(
//       "adjust_brightness", images, factor);
//
// Images are (B, C, H, W) uint8 or floating tensors; per-sample parameters are tensors with a leading
// batch dimension on the images' device. A bad argument throws c10::Error naming the op and the
// argument.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>
#include <utility>

namespace torchaug {

// The dispatcher's handle of torchaug::<name>; throws when the library is not loaded.
inline c10::OperatorHandle op(const std::string& name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(("torchaug::" + name).c_str(), "");
}

// torchaug::<name>(args...) with the C++ signature Signature (the schema's types: Tensor as
// const at::Tensor&, Tensor? as const std::optional<at::Tensor>&, SymInt[] as c10::SymIntArrayRef,
// int as int64_t, float as double).
template <typename Signature, typename... Args>
decltype(auto) call(const std::string& name, Args&&... args) {
  return op(name).typed<Signature>().call(std::forward<Args>(args)...);
}

// Crop boxes (B, 4) int64 [top, left, height, width] of each image resized to out_size
// (interpolation 0 nearest, 1 bilinear, 2 bicubic), with the optional per-sample horizontal flip
// (B,) bool and normalize ((B, C) float32 mean and std), cast and memory format in the same pass.
inline at::Tensor resized_crop(const at::Tensor& images, const at::Tensor& boxes, at::IntArrayRef out_size,
                               int64_t interpolation = 1, bool antialias = true,
                               const std::optional<at::Tensor>& flip = std::nullopt,
                               const std::optional<at::Tensor>& mean = std::nullopt,
                               const std::optional<at::Tensor>& std = std::nullopt,
                               std::optional<at::ScalarType> out_dtype = std::nullopt,
                               std::optional<at::MemoryFormat> memory_format = std::nullopt) {
  return call<at::Tensor(const at::Tensor&, const at::Tensor&, c10::SymIntArrayRef, int64_t, bool,
                         const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
                         const std::optional<at::Tensor>&, std::optional<at::ScalarType>,
                         std::optional<at::MemoryFormat>)>("resized_crop", images, boxes,
                                                           c10::fromIntArrayRefSlow(out_size), interpolation,
                                                           antialias, flip, mean, std, out_dtype, memory_format);
}

// Per-sample flips: horizontal (B,) bool, vertical (B,) bool.
inline at::Tensor flip(const at::Tensor& images, const at::Tensor& horizontal, const at::Tensor& vertical) {
  return call<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>("flip", images, horizontal, vertical);
}

// (images * (1/255 if uint8 else 1) - mean) / std with mean, std (B, C) float32, cast to out_dtype
// (float32 by default) in memory_format (the input's by default).
inline at::Tensor normalize(const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std,
                            std::optional<at::ScalarType> out_dtype = std::nullopt,
                            std::optional<at::MemoryFormat> memory_format = std::nullopt) {
  return call<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, std::optional<at::ScalarType>,
                         std::optional<at::MemoryFormat>)>("normalize", images, mean, std, out_dtype, memory_format);
}

// Inverse-mapped affine warp with a (B, 2, 3) matrix per sample (output pixel (x, y) samples input
// position matrices[b] @ (x, y, 1)); fill (B, C) float32, or zero padding without one.
inline at::Tensor warp_affine(const at::Tensor& images, const at::Tensor& matrices, at::IntArrayRef out_size,
                              int64_t interpolation = 1, const std::optional<at::Tensor>& fill = std::nullopt) {
  return call<at::Tensor(const at::Tensor&, const at::Tensor&, c10::SymIntArrayRef, int64_t,
                         const std::optional<at::Tensor>&)>("warp_affine", images, matrices,
                                                            c10::fromIntArrayRefSlow(out_size), interpolation, fill);
}

// Auto-augmentation programs: slot k of sample b applies op ids ops[b, k] (B, n) int64 with
// magnitudes[b, k] (B, n) float32 (csrc/kernels/augment.h: the ids and what a magnitude means).
inline at::Tensor augment(const at::Tensor& images, const at::Tensor& ops, const at::Tensor& magnitudes,
                          int64_t interpolation = 0, const std::optional<at::Tensor>& fill = std::nullopt) {
  return call<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t,
                         const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
                         const std::optional<at::Tensor>&, std::optional<at::ScalarType>,
                         std::optional<at::MemoryFormat>)>("augment", images, ops, magnitudes, interpolation, fill,
                                                           std::nullopt, std::nullopt, std::nullopt, std::nullopt);
}

}  // namespace torchaug
