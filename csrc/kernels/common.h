// Shared definitions for the per-pixel math of every family. Plain C style: no ATen types, raw
// scalars, int64 indexing. Included by the CPU (.cpp) and CUDA (.cu) backends and by the host-side
// GoogleTest suite.
#pragma once

#include <stdint.h>
#include <math.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define TORCHAUG_HOST_DEVICE __host__ __device__
#else
#define TORCHAUG_HOST_DEVICE
#endif

// Loop unrolling hint for the device compiler (host compilers warn on the bare pragma).
#if defined(__CUDACC__) || defined(__HIPCC__)
#define TORCHAUG_UNROLL _Pragma("unroll")
#else
#define TORCHAUG_UNROLL
#endif

// Inlined into the host's pixel loops whatever its size, so that those loops vectorize (a call per
// pixel stops the vectorizer); the device compiler decides for itself.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define TORCHAUG_INLINE_ON_HOST
#else
#define TORCHAUG_INLINE_ON_HOST __attribute__((always_inline))
#endif

namespace torchaug {
namespace kernels {

// Interpolation codes shared by every geometric op (the `interpolation` argument of the schemas).
enum Interpolation : int64_t {
  kNearest = 0,
  kBilinear = 1,
  kBicubic = 2,
  kNearestExact = 3,  // the resize ops only (torchvision's NEAREST_EXACT)
};

TORCHAUG_HOST_DEVICE inline bool is_nearest(int64_t interpolation) {
  return interpolation == kNearest || interpolation == kNearestExact;
}

template <typename T>
TORCHAUG_HOST_DEVICE inline T min_of(T a, T b) { return a < b ? a : b; }
template <typename T>
TORCHAUG_HOST_DEVICE inline T max_of(T a, T b) { return a > b ? a : b; }
template <typename T>
TORCHAUG_HOST_DEVICE inline T clamp_of(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }

// v saturated to a byte's range [0, 255], NaN to 0 (the device's fmaxf; selects on the host): the
// first step of storing a float into a uint8 image (round_to_uint8, round_to_byte)
TORCHAUG_HOST_DEVICE inline float saturate_to_byte_range(float v) {
#if defined(__CUDA_ARCH__)
  return fminf(fmaxf(v, 0.0f), 255.0f);
#else
  v = v > 0.0f ? v : 0.0f;
  return v < 255.0f ? v : 255.0f;
#endif
}

// Round half to even (what torch.round does) and saturate to [0, 255]: the value a uint8 image
// stores for a float result (round_to_byte's byte, as a float): saturated first, so that NaN gives 0
// and a zero is +0, as the byte read back is. On the device two min / max and the round (three
// instructions; a round then a clamp that keeps NaN takes four); on the host (whose baseline x86-64
// has no rounding instruction, so that rintf is a library call) rounded by adding and subtracting
// 2^23, which rounds half to even in the default rounding mode.
TORCHAUG_HOST_DEVICE inline float round_to_uint8(float v) {
#if defined(__CUDA_ARCH__)
  return rintf(saturate_to_byte_range(v));
#else
  return (saturate_to_byte_range(v) + 8388608.0f) - 8388608.0f;  // + and - 2^23
#endif
}

// ---- exact conversions without the device's conversion unit --------------------------------
// float -> int and rounding to an integer (F2I, FRND) go through sm_90's conversion unit, whose
// rate is 16 results a clock per SM against 128 for an FADD (the CUDA programming guide's table).
// Adding 2^23 to a float in [0, 2^23) leaves its integer part in the low mantissa bits, the add's
// rounding mode choosing which integer (toward zero: trunc; down: floor; to nearest even: rint),
// and 1.5 * 2^23 does the same for |v| <= 2^22. So each helper below is one to three full-rate
// instructions with the same result as the cast or call it replaces, over the range it states; on
// the host they are float adds and selects that the compiler vectorizes. Measured on the H100 (the
// RandAugment chain), they pay where they replace an F2I or FRND of a uint8 value's epilogue
// (saturation -3 us a batch, sharpness -1.5). They are not used for a nearest tap's rint and index, nor for
// the int -> float of the sharpness window's bytes or of pixel coordinates: the same tricks there
// made the resident kernel 2-8 us slower. word_byte_to_float, the one int -> float here, is the
// resident kernel's normalize store's, moved here for color_words; it was not measured apart.
constexpr float kTwoPow23 = 8388608.0f;              // 2^23: the floats of [2^23, 2^24) are its integers
constexpr float kOneAndHalfTwoPow23 = 12582912.0f;  // 1.5 * 2^23

#if defined(__CUDA_ARCH__)
// 2^23 + byte k of w, k = 0 the low byte: one byte permute puts the byte under 2^23's exponent
// (word_byte_to_float subtracts 2^23; kernels::hue_words folds it into its scaling instead)
__device__ inline float word_byte_biased(uint32_t w, int k) {
  return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7540u | static_cast<uint32_t>(k)));
}
#endif

// float(byte k of w), k = 0 the low byte: word_byte_biased less 2^23 on the device (two full-rate
// instructions, where a shift and an int -> float are one of each)
TORCHAUG_HOST_DEVICE inline float word_byte_to_float(uint32_t w, int k) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(word_byte_biased(w, k), kTwoPow23);
#else
  return static_cast<float>((w >> (8 * k)) & 0xffu);
#endif
}

// float(v) for |v| < 2^22: v added to 1.5 * 2^23's bits (an integer add that can fold into the one
// computing v), then 1.5 * 2^23 subtracted
TORCHAUG_HOST_DEVICE inline float small_int_to_float(int v) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(__int_as_float(0x4B400000 + v), kOneAndHalfTwoPow23);
#else
  return static_cast<float>(v);
#endif
}

// static_cast<uint8_t>(v) as a 32-bit word, for 0 <= v < 256
TORCHAUG_HOST_DEVICE inline uint32_t trunc_to_byte(float v) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(__fadd_rz(v, kTwoPow23)) & 0xffu;
#else
  return static_cast<uint32_t>(static_cast<uint8_t>(v));
#endif
}

// float(int(v)) (truncation) for 0 <= v < 2^23; NaN gives 0, as the device's cast does. On the
// host, as floor_small after NaN and negatives are selected to 0 (the device's fmaxf).
TORCHAUG_HOST_DEVICE TORCHAUG_INLINE_ON_HOST inline float trunc_small(float v) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(__fadd_rz(fmaxf(v, 0.0f), kTwoPow23), kTwoPow23);
#else
  const float c = v > 0.0f ? v : 0.0f;
  const float r = (c + kTwoPow23) - kTwoPow23;  // c rounded to the nearest integer
  return r > c ? r - 1.0f : r;
#endif
}
TORCHAUG_HOST_DEVICE inline double trunc_small(double v) { return v == v ? static_cast<double>(static_cast<int>(v)) : 0.0; }

// floor(v) for 0 <= v < 2^23 (NaN stays NaN). On the host, v rounded to the nearest integer by
// adding 2^23 (the floats of [2^23, 2^24) are the integers), minus 1 where that rounded up: float
// adds and selects, no conversion or library call, so that the pixel loops using it vectorize.
TORCHAUG_HOST_DEVICE TORCHAUG_INLINE_ON_HOST inline float floor_small(float v) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(__fadd_rd(v, kTwoPow23), kTwoPow23);
#else
  const float r = (v + kTwoPow23) - kTwoPow23;
  return r > v ? r - 1.0f : r;
#endif
}
TORCHAUG_HOST_DEVICE inline double floor_small(double v) { return floor(v); }

// rint(v) (half to even) for |v| <= 2^22, except that a zero result is +0
TORCHAUG_HOST_DEVICE inline float rint_small(float v) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(__fadd_rn(v, kOneAndHalfTwoPow23), kOneAndHalfTwoPow23);
#else
  return (v + kOneAndHalfTwoPow23) - kOneAndHalfTwoPow23;  // no library call: loops vectorize
#endif
}
TORCHAUG_HOST_DEVICE inline double rint_small(double v) { return rint(v); }

// trunc(v) and floor(v) for every float (|v| >= 2^23 is an integer already; the sign of a zero,
// infinities and NaN kept). The host's baseline x86-64 has no rounding instruction, so that truncf
// and floorf are library calls there; instead, v rounded to an integer by adding and subtracting
// 2^23 (with v's sign), stepped toward zero where that rounded away from it: float adds, sign copies
// and selects, which the pixel loops using them vectorize. On the device, the rounding instructions.
TORCHAUG_HOST_DEVICE TORCHAUG_INLINE_ON_HOST inline float trunc_exact(float v) {
#if defined(__CUDA_ARCH__)
  return truncf(v);
#else
  const float s = copysignf(kTwoPow23, v);
  const float r = (v + s) - s;  // v rounded to the nearest integer while |v| < 2^23
  const float t = fabsf(r) > fabsf(v) ? r - copysignf(1.0f, v) : r;
  return fabsf(v) < kTwoPow23 ? copysignf(t, v) : v;  // false for NaN and infinities
#endif
}
TORCHAUG_HOST_DEVICE inline double trunc_exact(double v) { return trunc(v); }
TORCHAUG_HOST_DEVICE TORCHAUG_INLINE_ON_HOST inline float floor_exact(float v) {
#if defined(__CUDA_ARCH__)
  return floorf(v);
#else
  const float t = trunc_exact(v);
  return t > v ? t - 1.0f : t;
#endif
}
TORCHAUG_HOST_DEVICE inline double floor_exact(double v) { return floor(v); }

// round_to_uint8(v) as the byte it stores (PixelStore<uint8_t>::from): clamped first, so that the
// add rounds a value of [0, 255]: the same byte for every v (NaN gives 0, as the device's cast does)
TORCHAUG_HOST_DEVICE inline uint8_t round_to_byte(float v) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint8_t>(__float_as_uint(__fadd_rn(saturate_to_byte_range(v), kTwoPow23)) & 0xffu);
#else
  return static_cast<uint8_t>(static_cast<int>(saturate_to_byte_range(v) + kTwoPow23) - (1 << 23));
#endif
}

// Arithmetic rounded after every operation, never contracted into an FMA, where results must match
// a reference that rounds each step (torchvision's normalize: x * (1/255), - mean, / std, each a
// separate tensor op). Host compilers do not contract without -ffp-contract=fast and FMA flags.
#if defined(__CUDA_ARCH__)
TORCHAUG_HOST_DEVICE inline float rn_mul(float a, float b) { return __fmul_rn(a, b); }
TORCHAUG_HOST_DEVICE inline float rn_sub(float a, float b) { return __fsub_rn(a, b); }
TORCHAUG_HOST_DEVICE inline float rn_div(float a, float b) { return __fdiv_rn(a, b); }
TORCHAUG_HOST_DEVICE inline double rn_mul(double a, double b) { return __dmul_rn(a, b); }
TORCHAUG_HOST_DEVICE inline double rn_sub(double a, double b) { return __dsub_rn(a, b); }
TORCHAUG_HOST_DEVICE inline double rn_div(double a, double b) { return __ddiv_rn(a, b); }
#else
template <typename T>
inline T rn_mul(T a, T b) { return a * b; }
template <typename T>
inline T rn_sub(T a, T b) { return a - b; }
template <typename T>
inline T rn_div(T a, T b) { return a / b; }
#endif

// a + b rounded, never fused with a neighbouring product (see rn_mul in common.h).
#if defined(__CUDA_ARCH__)
TORCHAUG_HOST_DEVICE inline float rn_add(float a, float b) { return __fadd_rn(a, b); }
TORCHAUG_HOST_DEVICE inline double rn_add(double a, double b) { return __dadd_rn(a, b); }
TORCHAUG_HOST_DEVICE inline float fma_of(float a, float b, float c) { return fmaf(a, b, c); }
TORCHAUG_HOST_DEVICE inline double fma_of(double a, double b, double c) { return fma(a, b, c); }
#else
template <typename T>
inline T rn_add(T a, T b) { return a + b; }
inline float fma_of(float a, float b, float c) { return fmaf(a, b, c); }
inline double fma_of(double a, double b, double c) { return fma(a, b, c); }
#endif

// Division by a divisor used many times (a normalize's std across a tile): rcp_for_div(b) once,
// then rn_div_by(a, b, r) per value gives exactly rn_div(a, b). On the device, with r = 1/b rounded,
// q = a * r and q + (a - q * b) * r (two FMAs, the remainder exact) is the correctly rounded
// quotient while nothing under- or overflows (the correction step of CUDA's own division, there with
// a refined approximate reciprocal): 3 instructions instead of __fdiv_rn's reciprocal refinement,
// range check and slow-path call. Outside 2^-60 <= |b| <= 2^60 (r = 0) or 2^-60 <= |a| <= 2^60
// (a != 0) it falls back to rn_div. On the host it is rn_div.
TORCHAUG_HOST_DEVICE inline float rcp_for_div(float b) {
#if defined(__CUDA_ARCH__)
  const float m = fabsf(b);
  return m >= 0x1p-60f && m <= 0x1p60f ? __frcp_rn(b) : 0.0f;
#else
  return b;  // unused on the host
#endif
}
// rcp_for_div and rn_div_by for operands the caller has established to lie in the range (the
// quotients of uint8 values scaled to [0, 1]: 0 or within an ulp of 1/255 and above; a normalize
// whose range normalize_u8_in_range checked once): no range test.
TORCHAUG_HOST_DEVICE inline float rcp_for_div_in_range(float b) {
#if defined(__CUDA_ARCH__)
  return __frcp_rn(b);
#else
  return b;  // unused on the host
#endif
}
TORCHAUG_HOST_DEVICE inline float rn_div_by_in_range(float a, float b, float r) {
#if defined(__CUDA_ARCH__)
  const float q = __fmul_rn(a, r);
  return __fmaf_rn(__fmaf_rn(-q, b, a), r, q);
#else
  (void)r;
  return rn_div(a, b);
#endif
}
TORCHAUG_HOST_DEVICE inline float rn_div_by(float a, float b, float r) {
#if defined(__CUDA_ARCH__)
  const float m = fabsf(a);
  if (r != 0.0f && (m == 0.0f || (m >= 0x1p-60f && m <= 0x1p60f))) return rn_div_by_in_range(a, b, r);
#else
  (void)r;
#endif
  return rn_div(a, b);
}
// double: the division itself (no reciprocal shortcut is exact for it here)
TORCHAUG_HOST_DEVICE inline double rcp_for_div(double b) { return b; }
TORCHAUG_HOST_DEVICE inline double rn_div_by(double a, double b, double) { return rn_div(a, b); }

// The view of one image of a batch: base pointer offset (in elements) and element strides.
// Dense batches and ragged batches both reduce to this per sample.
struct ImageView {
  int64_t offset;
  int64_t height, width;
  int64_t stride_c, stride_y, stride_x;
};

}  // namespace kernels
}  // namespace torchaug
