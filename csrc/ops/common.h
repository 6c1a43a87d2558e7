// Host-side helpers shared by the CPU and CUDA backends: argument checks whose errors name the op,
// the argument, what was expected and what came, output allocation, and the dtype-erased pixel store
// used for fused casts.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Dispatch_v2.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdio>
#include <string>
#include <vector>

#include "../kernels/common.h"
#include "../kernels/convert.h"

namespace torchaug {

// Error messages are assembled here with std::string and std::to_string, never with an iostream
// inserting numbers: on the GPU machine (g++ 13, torch 2.11 wheel) the extension segfaulted inside
// ostream::operator<<(long) -> a codecvt facet once CUDA was initialised, which looks like two
// copies of libstdc++'s locale machinery in one process (root cause not pinned down). TORCH_CHECK
// with a single preformatted std::string never formats a number in this library.
inline void append_to(std::string& s, const char* v) { s += v; }
inline void append_to(std::string& s, const std::string& v) { s += v; }
inline void append_to(std::string& s, char v) { s += v; }
inline void append_to(std::string& s, int v) { s += std::to_string(v); }
inline void append_to(std::string& s, long v) { s += std::to_string(v); }
inline void append_to(std::string& s, long long v) { s += std::to_string(v); }
inline void append_to(std::string& s, unsigned long v) { s += std::to_string(v); }
inline void append_to(std::string& s, double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  s += buf;
}
inline void append_to(std::string& s, at::ScalarType t) { s += c10::toString(t); }
inline void append_to(std::string& s, const at::Device& d) { s += d.str(); }
inline void append_to(std::string& s, at::MemoryFormat f) {
  switch (f) {
    case at::MemoryFormat::Contiguous: s += "torch.contiguous_format"; break;
    case at::MemoryFormat::ChannelsLast: s += "torch.channels_last"; break;
    case at::MemoryFormat::ChannelsLast3d: s += "torch.channels_last_3d"; break;
    default: s += "torch.preserve_format"; break;
  }
}

template <typename... Args>
std::string cat(const Args&... args) {
  std::string s;
  (append_to(s, args), ...);
  return s;
}

// TORCH_CHECK with the message built by cat(): evaluated only when the check fails.
#define TORCHAUG_CHECK(cond, ...) TORCH_CHECK(cond, ::torchaug::cat(__VA_ARGS__))

// The image dtypes of the ops (uint8 and the floating types) for AT_DISPATCH.
#define TORCHAUG_DISPATCH_IMAGE_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_FLOATING_TYPES_AND3(at::kHalf, at::kBFloat16, at::kByte, TYPE, NAME, __VA_ARGS__)

std::string shape_str(at::IntArrayRef s);

inline bool is_image_dtype(at::ScalarType t) {
  return t == at::kByte || t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// t is a tensor, not None (an undefined tensor from Python's None or C++'s at::Tensor()).
void check_defined(const char* op, const char* name, const at::Tensor& t);

// The largest finite double: check_values' bounds for "finite".
constexpr double kFiniteMax = 1.7976931348623157e308;

// The row-major flat index of the first value v of a CPU tensor t (any dtype but complex, any
// strides) for which bad(v as double, index) holds, -1 if none. One pass over the values where they
// lie, no tensor made: an op's parameter checks cost nanoseconds a value instead of the several
// allocating ATen ops (each microseconds) a comparison chain takes, which dominated a small CPU call.
template <typename Pred>
int64_t first_value_where(const at::Tensor& t, Pred bad) {
  const int64_t n = t.numel(), d = t.dim();
  int64_t found = -1;
  if (n == 0) return found;
  const at::IntArrayRef size = t.sizes(), stride = t.strides();
  AT_DISPATCH_V2(t.scalar_type(), "first_value_where", AT_WRAP([&] {
    const scalar_t* p = t.const_data_ptr<scalar_t>();
    std::vector<int64_t> idx(static_cast<size_t>(d), 0);
    int64_t off = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (bad(static_cast<double>(p[off]), i)) {
        found = i;
        return;
      }
      for (int64_t k = d - 1; k >= 0; --k) {  // the next index, last dimension fastest
        off += stride[k];
        if (++idx[k] < size[k]) break;
        off -= size[k] * stride[k];
        idx[k] = 0;
      }
    }
  }), AT_EXPAND(AT_ALL_TYPES), AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES), at::kHalf, at::kBFloat16, at::kBool);
  return found;
}

// Every value of a real tensor in [lo, hi] and not NaN, read only when t lives on the CPU: on a GPU
// the read would synchronise, so there kernels stay memory-safe for any value and the result of a
// non-finite or out-of-range parameter is unspecified (README: Errors).
void check_values(const char* op, const char* name, const at::Tensor& t, double lo, double hi, const char* range_doc);

// at::empty of an op's output, whose failure (a size the allocator refuses) names the op, the shape
// and the bytes asked for.
at::Tensor empty_output(const char* op, at::IntArrayRef sizes, const at::TensorOptions& options);

// images: (B, C, H, W), uint8 or floating, on `device`.
void check_images(const char* op, const at::Tensor& images, const char* name = "images");

void check_device(const char* op, const char* name, const at::Tensor& t, const at::Tensor& images);

// A per-sample parameter: exact shape, one of the allowed dtypes, on the images' device.
void check_param(const char* op, const char* name, const at::Tensor& t, const at::Tensor& images,
                        std::vector<int64_t> shape, const char* shape_doc,
                        std::initializer_list<at::ScalarType> dtypes);

std::pair<int64_t, int64_t> check_out_size(const char* op, c10::SymIntArrayRef out_size);

struct Strides2;
// A per-sample scalar parameter: (B,) or (1,), any real dtype (returned as float32), on the images'
// device; s receives its strides as a (B, 1) table (b == 0 when broadcast).
at::Tensor sample_param(const char* op, const char* name, const at::Tensor& t, const at::Tensor& images, Strides2& s);

void check_interpolation(const char* op, int64_t interpolation, int64_t max_code);

// Every value of an index tensor (op ids, table indices) in [0, n), read only when it lives on the
// CPU (on a GPU the read would synchronise: the Python layer checks program ids there when asked);
// the error names the first value outside, as "<name> must hold <what> in [0, n), got v at flat index i".
void check_ids(const char* op, const char* name, const at::Tensor& t, int64_t n, const char* what);

// mean/std of normalize and of the fused epilogue: (B, C) float32, std without zeros.
void check_mean_std(const char* op, const at::Tensor& mean, const at::Tensor& std, const at::Tensor& images,
                           int64_t channels);

at::ScalarType check_out_dtype(const char* op, std::optional<at::ScalarType> out_dtype,
                                      at::ScalarType fallback);

at::MemoryFormat check_memory_format(const char* op, std::optional<at::MemoryFormat> fmt, at::MemoryFormat fallback);

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

// The batch geometry of an op's parameter block (any struct with batch, channels, height, width
// and the input / output strides is, os) from its (B, C, H, W) input and output.
template <typename Params>
void set_image_layout(Params& p, const at::Tensor& images, const at::Tensor& out) {
  p.batch = images.size(0);
  p.channels = images.size(1);
  p.height = images.size(2);
  p.width = images.size(3);
  p.is = strides4(images);
  p.os = strides4(out);
}

// Strides of a (B, C) parameter tensor (a batch-broadcast one has b == 0).
struct Strides2 {
  int64_t b, c;
  C10_HOST_DEVICE int64_t at(int64_t i, int64_t j) const { return i * b + j * c; }
};
inline Strides2 strides2(const at::Tensor& t) { return {t.stride(0), t.stride(1)}; }


// A CPU pixel loop compiled twice, for x86-64-v3 (AVX2 and FMA: 8 floats a vector, fmaf one
// instruction instead of a library call) and for the baseline, the one the CPU supports chosen when
// the library loads (function multiversioning). Both give the same results: every operation in them
// is correctly rounded, and -ffp-contract=off (setup.py, CMakeLists.txt) keeps the compiler from
// fusing a product and a sum that the shared math keeps apart.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define TORCHAUG_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TORCHAUG_CPU_CLONES
#endif

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

// v (already in the output's value range) as a pixel of type out_t: uint8 rounds half to even and
// saturates, floating types convert (half and bfloat16 through float).
template <typename out_t, typename acc_t>
C10_HOST_DEVICE inline out_t pixel_as(acc_t v) {
  if constexpr (std::is_same_v<out_t, uint8_t>) {
    return kernels::PixelStore<uint8_t>::from(v);
  } else if constexpr (std::is_same_v<out_t, float> || std::is_same_v<out_t, double>) {
    return static_cast<out_t>(v);
  } else {
    return static_cast<out_t>(static_cast<float>(v));
  }
}

// fn(out_t{}) with the pixel type of dtype code `kind`: the output type dispatched once, outside a loop.
template <typename Fn>
inline void with_pixel_type(int kind, Fn&& fn) {
  switch (kind) {
    case kPixU8: fn(uint8_t{}); break;
    case kPixF32: fn(float{}); break;
    case kPixF64: fn(double{}); break;
    case kPixF16: fn(c10::Half{}); break;
    default: fn(c10::BFloat16{}); break;
  }
}

// Store v (already in the output's value range) into out[i] of dtype `kind`.
template <typename acc_t>
C10_HOST_DEVICE inline void store_pixel(void* out, int64_t i, int kind, acc_t v) {
  switch (kind) {
    case kPixU8: static_cast<uint8_t*>(out)[i] = pixel_as<uint8_t>(v); break;
    case kPixF32: static_cast<float*>(out)[i] = pixel_as<float>(v); break;
    case kPixF64: static_cast<double*>(out)[i] = pixel_as<double>(v); break;
    case kPixF16: static_cast<c10::Half*>(out)[i] = pixel_as<c10::Half>(v); break;
    default: static_cast<c10::BFloat16*>(out)[i] = pixel_as<c10::BFloat16>(v); break;
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

// ---- uniform draws ------------------------------------------------------------------------------
// An op that maps uniform draws to parameters (_random_resized_crop_boxes, _policy_program) takes
// them as rand (B, R) float64, or, with rand None, draws them itself: the numbers
// torch.rand((B, R), dtype=torch.float64, generator=generator) gives on the generator's device (the
// default generator of the op's device without one), copied to the op's device, with the generator
// left where that call leaves it. On CUDA, with the generator on the op's device, the op's own
// kernel draws them (csrc/cuda/draws.cuh): one torch.rand call (its host time and its kernel) fewer.

// What a kernel needs to draw them: the generator's at::PhiloxCudaState for the call, as bytes (this
// header is compiled without CUDA; csrc/cuda/draws.cuh reads them back), and torch's thread layout.
struct KernelDraws {
  alignas(8) unsigned char philox[48] = {};
  int64_t stride = 0;  // torch's threads for the call: 256 x its grid
};

struct Draws {
  at::Tensor u;         // (B, R) contiguous float64 on the op's device; undefined where the kernel draws them
  KernelDraws kernel;   // the kernel's draws (u undefined)
  int64_t B = 0;        // the samples
  const double* data() const { return u.defined() ? u.data_ptr<double>() : nullptr; }
};

// The most draws per sample a kernel makes itself (a block's rows share one buffer of kDrawThreads
// draws: csrc/cuda/draws.cuh); more are drawn by the op's at::rand.
constexpr int64_t kMaxKernelDraws = 64;

// rand checked ((B, R) float64; the caller checks its device), or the draws of `batch` samples on
// `device` made as above. `generator` only without rand.
Draws resolve_draws(const char* op, const std::optional<at::Tensor>& rand, const std::optional<at::Generator>& generator,
                    int64_t batch, int64_t R, const at::Device& device);

// The CUDA library's reservation of n draws from the generator (csrc/cuda/draws.cu), set when that
// library is loaded: the generator's offset advanced as torch.rand of n float64 values advances it.
using KernelDrawsHook = KernelDraws (*)(const std::optional<at::Generator>& generator, int64_t n, const at::Device& device);
KernelDrawsHook& cuda_kernel_draws();

}  // namespace torchaug
