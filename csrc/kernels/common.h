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

namespace torchaug {
namespace kernels {

// Interpolation codes shared by every geometric op (the `interpolation` argument of the schemas).
enum Interpolation : int64_t {
  kNearest = 0,
  kBilinear = 1,
  kBicubic = 2,
};

template <typename T>
TORCHAUG_HOST_DEVICE inline T min_of(T a, T b) { return a < b ? a : b; }
template <typename T>
TORCHAUG_HOST_DEVICE inline T max_of(T a, T b) { return a > b ? a : b; }
template <typename T>
TORCHAUG_HOST_DEVICE inline T clamp_of(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Round half to even (what torch.round does) and saturate to [0, 255]: how a float result is
// stored into a uint8 image. rint follows the current rounding mode, which is round-to-nearest-even
// on the host and always so on the device.
TORCHAUG_HOST_DEVICE inline float round_to_uint8(float v) {
  v = rintf(v);
  return clamp_of(v, 0.0f, 255.0f);
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
#if defined(__CUDA_ARCH__)
// rn_div_by's quotient without its range test, for callers that have established the range once
// (normalize_px_by_unchecked)
__device__ inline float rn_div_by_unchecked(float a, float b, float r) {
  const float q = __fmul_rn(a, r);
  return __fmaf_rn(__fmaf_rn(-q, b, a), r, q);
}
#endif
TORCHAUG_HOST_DEVICE inline float rn_div_by(float a, float b, float r) {
#if defined(__CUDA_ARCH__)
  const float m = fabsf(a);
  if (r != 0.0f && (m == 0.0f || (m >= 0x1p-60f && m <= 0x1p60f))) return rn_div_by_unchecked(a, b, r);
#else
  (void)r;
#endif
  return rn_div(a, b);
}

// The view of one image of a batch: base pointer offset (in elements) and element strides.
// Dense batches and ragged batches both reduce to this per sample.
struct ImageView {
  int64_t offset;
  int64_t height, width;
  int64_t stride_c, stride_y, stride_x;
};

}  // namespace kernels
}  // namespace torchaug
