// Per-pixel math of the color family, shared by the CPU and CUDA backends.
//
// Every pointwise color op is one case of apply_color_op: it maps the channel values of one pixel
// (v[0..C-1], C = 1 or 3, in the image's value range: [0, 255] for uint8, [0, 1] for floating) to
// new values, given two per-sample parameters and, for the ops that need image statistics
// (contrast, autocontrast, equalize), the statistics of the image as the op sees it. A color
// program is a sequence of such ops per sample (op ids and parameters are tensors); the standalone
// ops are programs of one op. Each op reproduces torchvision.transforms.v2.functional operation by
// operation, including where uint8 results are truncated and where float32 rounds.
#pragma once

#include "common.h"

#if !defined(__CUDA_ARCH__)
#include <string.h>
#endif

namespace torchaug {
namespace kernels {

// Op ids of a color program (the `ops` argument of color_program). Parameters p0, p1 per op.
enum ColorOp : int {
  kColorIdentity = 0,
  kColorBrightness = 1,    // p0 factor >= 0
  kColorContrast = 2,      // p0 factor >= 0; needs the mean of the grayscale image
  kColorSaturation = 3,    // p0 factor >= 0
  kColorHue = 4,           // p0 hue shift in [-0.5, 0.5]
  kColorGamma = 5,         // p0 gamma >= 0, p1 gain
  kColorGrayscale = 6,     // every channel := luma
  kColorInvert = 7,
  kColorPosterize = 8,     // p0 bits in [0, 8]
  kColorSolarize = 9,      // p0 threshold (the image's value range)
  kColorSolarizeAdd = 10,  // p0 shift, p1 threshold: v < threshold ? min(v + shift, max) : v
  kColorAutocontrast = 11, // needs per-channel min and max
  kColorEqualize = 12,     // needs per-channel 256-bin histograms
  kColorNumOps = 13,
};

// Ops whose output channel c depends on input channel c only (given the image statistics): a
// program of such ops on a uint8 image is a 256-entry table per channel.
TORCHAUG_HOST_DEVICE inline bool color_op_is_separable(int op) {
  return op != kColorSaturation && op != kColorHue && op != kColorGrayscale;
}

TORCHAUG_HOST_DEVICE inline bool color_op_needs_stats(int op) {
  return op == kColorContrast || op == kColorAutocontrast || op == kColorEqualize;
}

// Words of raw statistics per (sample, slot): a 3 x 256 histogram, or a few 64-bit accumulators.
constexpr int kColorRawWords = 3 * 256;
// Derived statistics per (sample, slot), as doubles (float64 images need them exact; for other
// images they hold the float32 values torchvision computes): contrast [mean], autocontrast
// [min[3], inv_scale[3]], equalize [valid[3]] (the LUTs live beside them, 3 x 256 bytes per slot).
constexpr int kColorStatFloats = 8;
constexpr int kColorMaxSlots = 16;

// ---- value-range constants ------------------------------------------------------------------
// kU8: uint8 image (values 0..255 held exactly in float), else floating image in [0, 1].
template <typename acc_t, bool kU8>
struct ColorRange {
  static TORCHAUG_HOST_DEVICE acc_t bound() { return kU8 ? acc_t(255) : acc_t(1); }
};

// float -> uint8 as torchvision's tensor ops store it: `.to(torch.uint8)` truncates toward zero
// (every caller clamps to [0, 255] first; trunc_small: no conversion unit on the device).
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t trunc_u8(acc_t v) {
  return trunc_small(v);
}

// torchvision's rgb -> luma: r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114); ATen's
// add with alpha is a fused multiply-add on CUDA and in its vectorised CPU loops.
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t luma(acc_t r, acc_t g, acc_t b) {
  return fma_of(b, acc_t(0.114), fma_of(g, acc_t(0.587), rn_mul(r, acc_t(0.2989))));
}

// The grayscale image that contrast and saturation blend with (floored for uint8 images).
template <typename acc_t, bool kU8>
TORCHAUG_HOST_DEVICE inline acc_t blend_gray(const acc_t* v, int C) {
  if (C == 1) return v[0];
  const acc_t l = luma(v[0], v[1], v[2]);
  return kU8 ? floor_small(l) : l;  // l >= 0 from bytes
}

// torchvision _blend(image1, image2, ratio): image1 * ratio + image2 * (1 - ratio), with the
// second product fused into the add, clamped to the value range, truncated for uint8. (1 - ratio) is
// computed in double and rounded once, as Python computes it before the tensor op sees it.
template <typename acc_t, bool kU8>
TORCHAUG_HOST_DEVICE inline acc_t blend_px(acc_t x, acc_t other, acc_t ratio, acc_t one_minus_ratio) {
  acc_t r = fma_of(other, one_minus_ratio, rn_mul(x, ratio));
  r = clamp_of(r, acc_t(0), ColorRange<acc_t, kU8>::bound());
  return kU8 ? trunc_u8(r) : r;
}

template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t one_minus(acc_t ratio) {
  return static_cast<acc_t>(1.0 - static_cast<double>(ratio));
}

// to_dtype(uint8 -> floating, scale=True): x * (1/255 in the computation's precision).
template <typename acc_t, bool kU8>
TORCHAUG_HOST_DEVICE inline acc_t to_unit(acc_t v) {
  return kU8 ? rn_mul(v, static_cast<acc_t>(1.0 / 255.0)) : v;
}
// to_dtype(floating -> uint8, scale=True): trunc(x * 255.999).
template <typename acc_t, bool kU8>
TORCHAUG_HOST_DEVICE inline acc_t from_unit(acc_t v) {
  return kU8 ? trunc_u8(rn_mul(v, static_cast<acc_t>(255.999))) : v;
}

// Python's x % 1.0 (torch.remainder) for the hue wheel.
// fmod(a, 1) computed exactly as a - trunc(a) (both exact in floating point), without the
// iterative fmod of the device math library.
template <typename acc_t>
TORCHAUG_HOST_DEVICE TORCHAUG_INLINE_ON_HOST inline acc_t fmod_one(acc_t a) {
  return rn_sub(a, trunc_exact(a));
}

template <typename acc_t>
TORCHAUG_HOST_DEVICE TORCHAUG_INLINE_ON_HOST inline acc_t remainder_one(acc_t a) {
  acc_t m = fmod_one(a);
  if (m < acc_t(0)) m = rn_add(m, acc_t(1));  // (-0 stays: torch.remainder's sign of a zero result)
  return m;
}

// adjust_hue on one pixel in [0, 1]: torchvision's _rgb_to_hsv, shift, _hsv_to_rgb, operation by
// operation (the masked sums included), so that float32 results agree bit for bit. torchvision
// makes this round trip in float32 whatever the image's dtype, so the math is float32 only. kBytes:
// the values are uint8 ones scaled to [0, 1].
template <bool kBytes>
TORCHAUG_HOST_DEVICE TORCHAUG_INLINE_ON_HOST inline void hue_shift_unit(float* rgb, float shift) {
  using acc_t = float;
  const acc_t r = rgb[0], g = rgb[1], b = rgb[2];
  const acc_t maxc = max_of(r, max_of(g, b));
  const acc_t minc = min_of(r, min_of(g, b));
  const bool eqc = maxc == minc;
  const acc_t cr = rn_sub(maxc, minc);
  const acc_t s = rn_div(cr, eqc ? acc_t(1) : maxc);
  const acc_t crd = eqc ? acc_t(1) : cr;
  // torchvision computes rc, gc, bc = (maxc - channel) / crd and sums three masked terms, of which
  // one is not zero: hr = bc - gc (r is the max), hg = (rc + 2) - bc (g is, r not), hb =
  // (gc + 4) - rc (b). Adding the two zeros changes nothing (x - x is +0), so the two quotients of
  // the pixel's term are all it needs: the same bits with two divisions instead of three.
  // (each choice a select of two values on one compare: if-converted and vectorized on the host)
  const bool is_r = maxc == r, g_is_max = maxc == g;  // g's term where g is the max and r is not
  const acc_t first = is_r ? b : (g_is_max ? r : g);    // the quotient added: bc, rc or gc
  const acc_t second = is_r ? g : (g_is_max ? b : r);   // the quotient subtracted: gc, bc or rc
  // both by crd: on the device one reciprocal and rn_div_by's two FMAs each give rn_div's bits
  // (for uint8 values both operands lie in its range, 0 or about 1/255 and above: no range test)
  acc_t q1, q2;
  if constexpr (kBytes) {
    const float rcp = rcp_for_div_in_range(crd);
    q1 = rn_div_by_in_range(rn_sub(maxc, first), crd, rcp);
    q2 = rn_div_by_in_range(rn_sub(maxc, second), crd, rcp);
  } else {
    const float rcp = rcp_for_div(crd);
    q1 = rn_div_by(rn_sub(maxc, first), crd, rcp);
    q2 = rn_div_by(rn_sub(maxc, second), crd, rcp);
  }
  const acc_t shifted = rn_add(q1, g_is_max ? acc_t(2) : acc_t(4));
  acc_t h = rn_sub(is_r ? q1 : shifted, q2);
  h = fmod_one(rn_add(rn_mul(h, static_cast<acc_t>(static_cast<float>(1.0 / 6.0))), acc_t(1)));
  h = remainder_one(rn_add(h, shift));
  // _hsv_to_rgb
  const acc_t v = maxc;
  const acc_t h6 = rn_mul(h, acc_t(6));
  const acc_t fi = floor_exact(h6);
  const acc_t f = rn_sub(h6, fi);
  // torchvision's i % 6 (h is in [0, 1]), kept as a float: selects on float compares, no conversion,
  // so that the host's pixel loop vectorizes
  const acc_t i = fi >= acc_t(6) ? acc_t(0) : fi;
  const acc_t sxf = rn_mul(s, f);
  const acc_t one_minus_s = rn_sub(acc_t(1), s);
  const acc_t q = clamp_of(rn_mul(rn_sub(acc_t(1), sxf), v), acc_t(0), acc_t(1));
  const acc_t t = clamp_of(rn_mul(rn_add(sxf, one_minus_s), v), acc_t(0), acc_t(1));
  const acc_t p = clamp_of(rn_mul(one_minus_s, v), acc_t(0), acc_t(1));
  // vpqt -> rgb by sector (torchvision's select table [[0,2,1,1,3,0],[3,0,0,2,1,1],[1,1,3,0,0,2]]),
  // as selects of two values each: no divergent branches on the device, and a loop the host
  // compiler if-converts and vectorizes
  acc_t r0 = p, r1 = p, r2 = p;  // sectors are exclusive: the order of the selects is free
  r0 = i == acc_t(4) ? t : r0;
  r0 = i == acc_t(1) ? q : r0;
  r0 = i == acc_t(5) ? v : r0;
  r0 = i == acc_t(0) ? v : r0;
  r1 = i == acc_t(3) ? q : r1;
  r1 = i == acc_t(0) ? t : r1;
  r1 = i == acc_t(2) ? v : r1;
  r1 = i == acc_t(1) ? v : r1;
  r2 = i == acc_t(5) ? q : r2;
  r2 = i == acc_t(2) ? t : r2;
  r2 = i == acc_t(4) ? v : r2;
  r2 = i == acc_t(3) ? v : r2;
  rgb[0] = r0;
  rgb[1] = r1;
  rgb[2] = r2;
}

#if defined(__CUDA_ARCH__)
// rn(a / b) for a in [0, 1] and b in [2^-8, 1]: the fast path of the device's IEEE division
// (div.rn.f32: an approximate reciprocal refined once, the quotient corrected once), without the
// range check (FCHK) and slow-path branch that guard it, which such operands never take. unit_rcp
// is the refined reciprocal, shared by the quotients of one divisor.
__device__ __forceinline__ float unit_rcp(float b) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  return __fmaf_rn(__fmaf_rn(-b, r, 1.0f), r, r);
}
__device__ __forceinline__ float unit_div(float a, float b, float r) {
  const float q = __fmul_rn(a, r);
  return __fmaf_rn(__fmaf_rn(-b, q, a), r, q);
}

// adjust_hue on the 4 pixels of the uint8 words w[0..2] (a word per channel), in place, for shifts
// in [-1, 1]: to_unit, hue_shift_unit<true> and from_unit pixel by pixel, the same bytes in fewer
// instructions, half the compares and selects (the device's ALU pipe, at half the float pipe's rate,
// bounds such a loop) and no branch (on an H200, 256x3x224x224: adjust_hue 0.060 ms against 0.098
// through apply_color_op). Each step is an identity on these operands:
// - a byte under 2^23's exponent (2^23 + x) is ordered as x: max and min of the three, and which
//   channel is the max, from these floats; the fused 2^23 + x times 1/255 less 2^23 / 255 (exact: a
//   power-of-two multiple) rounds once, to to_unit(x);
// - the quotients are unit_div's (their operands are in its range; a gray pixel divides by 1);
// - trunc of a non-negative value below 2^23 is an add of 2^23 rounded toward zero, floor one
//   rounded down (of 1.5 * 2^23 where the value may be negative, |value| <= 2^22): full-rate adds
//   instead of the conversion unit's FRND;
// - torchvision clamps q, t and p to [0, 1], which they never leave (s, f and v lie in [0, 1]), and
//   of q and t a sector uses one: q in odd sectors, t in even ones; from_unit's clamp likewise, and
//   from_unit(v) is the max byte;
// - the sector's (r, g, b) is (a, b, p) rotated by i / 2, where (a, b) is (v, t) in even sectors and
//   (q, v) in odd ones (sector 6, h = 1 exactly, is sector 0's: a rotation by 3): one byte permute
//   per pixel, and six to turn four pixels of three bytes into three words.
__device__ inline void hue_words(uint32_t* w, float shift) {
  constexpr float kInv255 = static_cast<float>(1.0 / 255.0);
  constexpr float kBias = kInv255 * kTwoPow23;
  constexpr float kSixth = static_cast<float>(1.0 / 6.0);
  constexpr float kByteScale = static_cast<float>(255.999);
  // the byte selector of a rotation by k (k = 0..3), 16 bits each: (a, b, p), (p, a, b), (b, p, a)
  constexpr unsigned long long kRotate = 0x0410004101040410ull;
  const auto byte_of = [&](float u) { return __float_as_uint(__fadd_rz(__fmul_rn(u, kByteScale), kTwoPow23)); };
  uint32_t px[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float rb = word_byte_biased(w[0], j), gb = word_byte_biased(w[1], j), bb = word_byte_biased(w[2], j);
    const float mb = fmaxf(fmaxf(rb, gb), bb), nb = fminf(fminf(rb, gb), bb);
    const bool eqc = mb == nb, is_r = mb == rb, g_is_max = mb == gb;
    // the channels the quotients take, chosen as bytes and then scaled
    const float first = __fmaf_rn(is_r ? bb : (g_is_max ? rb : gb), kInv255, -kBias);
    const float second = __fmaf_rn(is_r ? gb : (g_is_max ? bb : rb), kInv255, -kBias);
    const float maxc = __fmaf_rn(mb, kInv255, -kBias), minc = __fmaf_rn(nb, kInv255, -kBias);
    const float cr = __fsub_rn(maxc, minc);
    const float den = eqc ? 1.0f : maxc;
    const float s = unit_div(cr, den, unit_rcp(den));
    const float crd = eqc ? 1.0f : cr, rc = unit_rcp(crd);
    const float q1 = unit_div(__fsub_rn(maxc, first), crd, rc);
    const float q2 = unit_div(__fsub_rn(maxc, second), crd, rc);
    float h = __fsub_rn(is_r ? q1 : __fadd_rn(q1, g_is_max ? 2.0f : 4.0f), q2);
    h = __fadd_rn(__fmul_rn(h, kSixth), 1.0f);                                            // in [5/6, 11/6]
    h = __fsub_rn(h, __fsub_rn(__fadd_rz(h, kTwoPow23), kTwoPow23));                      // fmod_one
    h = __fadd_rn(h, shift);                                                               // in [-1, 2]
    h = __fsub_rn(h, __fsub_rn(__fadd_rd(h, kOneAndHalfTwoPow23), kOneAndHalfTwoPow23));  // remainder_one
    const float h6 = __fmul_rn(h, 6.0f);                                                   // in [0, 6]
    const float fl = __fadd_rd(h6, kTwoPow23);                                             // 2^23 + floor(h6)
    const float f = __fsub_rn(h6, __fsub_rn(fl, kTwoPow23));
    const uint32_t i = __float_as_uint(fl) & 7u;
    const float sxf = __fmul_rn(s, f), oms = __fsub_rn(1.0f, s);
    const bool odd = (i & 1u) != 0u;
    // from_unit(v) is the max byte itself (v * 255.999 / 255 lies in [M, M + 0.9991] for M = 0..255),
    // whose bits mb holds: 2^23 + M
    const uint32_t v8 = __float_as_uint(mb), p8 = byte_of(__fmul_rn(oms, maxc));
    const uint32_t x8 = byte_of(__fmul_rn(odd ? __fsub_rn(1.0f, sxf) : __fadd_rn(sxf, oms), maxc));
    const uint32_t ab = __byte_perm(odd ? x8 : v8, odd ? v8 : x8, 0x0040u);  // (a, b, a, a)
    px[j] = __byte_perm(ab, p8, static_cast<uint32_t>(kRotate >> ((i & 6u) << 3)));
  }
  const uint32_t lo01 = __byte_perm(px[0], px[1], 0x5140u), lo23 = __byte_perm(px[2], px[3], 0x5140u);
  const uint32_t hi01 = __byte_perm(px[0], px[1], 0x0062u), hi23 = __byte_perm(px[2], px[3], 0x0062u);
  w[0] = __byte_perm(lo01, lo23, 0x5410u);
  w[1] = __byte_perm(lo01, lo23, 0x7632u);
  w[2] = __byte_perm(hi01, hi23, 0x5410u);
}

// adjust_saturation on the 4 pixels of the uint8 words w[0..2], in place: apply_color_op's blend
// with the floored luma, each channel's byte taken from its sum's bits (one add rounded toward zero
// after the clamp, where trunc_u8 and the word's byte conversion each add and subtract 2^23; the
// clamp as fminf / fmaxf: NaN gives 0 either way) and inserted into its word by a byte permute.
__device__ inline void saturation_words(uint32_t* w, float p0, float om) {
  uint32_t out[3] = {w[0], w[1], w[2]};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float v[3];
#pragma unroll
    for (int c = 0; c < 3; ++c) v[c] = word_byte_to_float(w[c], j);
    const float gray = floor_small(luma(v[0], v[1], v[2]));
#pragma unroll
    for (int c = 0; c < 3; ++c) {
      const float r = fminf(fmaxf(__fmaf_rn(gray, om, __fmul_rn(v[c], p0)), 0.0f), 255.0f);
      // byte 0 of the sum's bits into byte j of the word: selectors 0x3214, 0x3240, 0x3410, 0x4210
      out[c] = __byte_perm(out[c], __float_as_uint(__fadd_rz(r, kTwoPow23)), (0x3210u & ~(0xfu << (4 * j))) | (4u << (4 * j)));
    }
  }
#pragma unroll
  for (int c = 0; c < 3; ++c) w[c] = out[c];
}
#endif

// x ** gamma as torch.pow with a scalar exponent computes it (its special cases included).
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t pow_scalar(acc_t x, acc_t e) {
  if (e == acc_t(1)) return x;
  if (e == acc_t(2)) return rn_mul(x, x);
  if (e == acc_t(3)) return rn_mul(rn_mul(x, x), x);
  if (e == acc_t(0.5)) return sqrt(x);
  return pow(x, e);
}

// Derived statistics of one (sample, slot), as the ops read them.
struct ColorStats {
  const double* f;      // kColorStatFloats values
  const uint8_t* lut;   // 3 x 256 (equalize)
};

// The equalize bin of a channel value (floating images go through torchvision's uint8 conversion;
// values outside [0, 1] saturate, NaN counts as 0: the value torch's NaN -> uint8 cast gives, and
// never an index outside the histogram).
template <typename acc_t, bool kU8>
TORCHAUG_HOST_DEVICE inline int equalize_bin(acc_t v) {
  return kU8 ? static_cast<int>(v) : static_cast<int>(from_unit<acc_t, true>(clamp_of(v == v ? v : acc_t(0), acc_t(0), acc_t(1))));
}

// Applies op to the C channel values v (C = 1 or 3). p0, p1: the op's parameters; om: 1 - p0 as the
// caller's Python computes it before the tensor op sees it (the blend of contrast and saturation
// uses it; one_minus(p0) when p0 is the factor itself, -m when the factor is 1 + m in double).
template <typename acc_t, bool kU8>
TORCHAUG_HOST_DEVICE TORCHAUG_INLINE_ON_HOST inline void apply_color_op(int op, acc_t* v, int C, acc_t p0, acc_t p1, acc_t om, ColorStats st) {
  const acc_t bound = ColorRange<acc_t, kU8>::bound();
  switch (op) {
    case kColorBrightness:
      for (int c = 0; c < C; ++c) {
        const acc_t r = clamp_of(rn_mul(v[c], p0), acc_t(0), bound);
        v[c] = kU8 ? trunc_u8(r) : r;
      }
      break;
    case kColorContrast: {
      const acc_t mean = static_cast<acc_t>(st.f[0]);
      for (int c = 0; c < C; ++c) v[c] = blend_px<acc_t, kU8>(v[c], mean, p0, om);
      break;
    }
    case kColorSaturation: {
      if (C != 3) break;
      const acc_t gray = blend_gray<acc_t, kU8>(v, C);
      for (int c = 0; c < 3; ++c) v[c] = blend_px<acc_t, kU8>(v[c], gray, p0, om);
      break;
    }
    case kColorHue: {
      if (C != 3) break;
      // torchvision converts every image to float32 for the HSV round trip (float64 ones too)
      float u[3] = {to_unit<float, kU8>(static_cast<float>(v[0])), to_unit<float, kU8>(static_cast<float>(v[1])),
                    to_unit<float, kU8>(static_cast<float>(v[2]))};
      hue_shift_unit<kU8>(u, static_cast<float>(p0));
      for (int c = 0; c < 3; ++c) v[c] = static_cast<acc_t>(from_unit<float, kU8>(u[c]));
      break;
    }
    case kColorGamma:
      for (int c = 0; c < C; ++c) {
        acc_t r = pow_scalar(to_unit<acc_t, kU8>(v[c]), p0);
        if (p1 != acc_t(1)) r = clamp_of(rn_mul(r, p1), acc_t(0), acc_t(1));
        v[c] = from_unit<acc_t, kU8>(r);
      }
      break;
    case kColorGrayscale: {
      if (C != 3) break;
      const acc_t l = luma(v[0], v[1], v[2]);
      const acc_t g = kU8 ? trunc_u8(l) : l;
      v[0] = v[1] = v[2] = g;
      break;
    }
    case kColorInvert:
      for (int c = 0; c < C; ++c) v[c] = rn_sub(bound, v[c]);
      break;
    case kColorPosterize: {
      const int bits = static_cast<int>(p0);
      if (kU8) {
        if (bits >= 8) break;
        const int mask = ((1 << bits) - 1) << (8 - bits);
        for (int c = 0; c < C; ++c) v[c] = static_cast<acc_t>(static_cast<int>(v[c]) & mask);
      } else {
        const acc_t levels = static_cast<acc_t>(1 << bits);
        for (int c = 0; c < C; ++c)
          v[c] = rn_mul(clamp_of(floor_exact(rn_mul(v[c], levels)), acc_t(0), levels - acc_t(1)), acc_t(1) / levels);
      }
      break;
    }
    case kColorSolarize:
      for (int c = 0; c < C; ++c) v[c] = v[c] >= p0 ? rn_sub(bound, v[c]) : v[c];
      break;
    case kColorSolarizeAdd: {
      // DALI's auto_aug solarize_add: the shift of a uint8 image is an integer (np.uint8(shift)).
      const acc_t shift = kU8 ? trunc_exact(p0) : p0;
      for (int c = 0; c < C; ++c) v[c] = v[c] < p1 ? clamp_of(rn_add(v[c], shift), acc_t(0), bound) : v[c];
      break;
    }
    case kColorAutocontrast:
      for (int c = 0; c < C; ++c) {
        const acc_t r = clamp_of(rn_div(rn_sub(v[c], static_cast<acc_t>(st.f[c])), static_cast<acc_t>(st.f[3 + c])),
                                 acc_t(0), bound);
        v[c] = kU8 ? trunc_u8(r) : r;
      }
      break;
    case kColorEqualize:
      for (int c = 0; c < C; ++c) {
        if (st.f[c] == 0.0) {  // step == 0: the image is returned as is (after the uint8 round trip)
          if (!kU8) v[c] = to_unit<acc_t, true>(static_cast<acc_t>(equalize_bin<acc_t, false>(v[c])));
          continue;
        }
        const int bin = equalize_bin<acc_t, kU8>(v[c]);
        const acc_t r = static_cast<acc_t>(st.lut[c * 256 + bin]);
        v[c] = kU8 ? r : to_unit<acc_t, true>(r);
      }
      break;
    default:
      break;
  }
}

// ---- statistics -----------------------------------------------------------------------------
// Order-preserving map of a double to an unsigned 64-bit integer (min/max with integer atomics).
TORCHAUG_HOST_DEVICE inline uint64_t ordered_bits(double d) {
#if defined(__CUDA_ARCH__)
  uint64_t u = static_cast<uint64_t>(__double_as_longlong(d));
#else
  uint64_t u;
  memcpy(&u, &d, sizeof(u));
#endif
  return (u >> 63) ? ~u : (u | (uint64_t(1) << 63));
}
TORCHAUG_HOST_DEVICE inline double from_ordered_bits(uint64_t u) {
  u = (u >> 63) ? (u & ~(uint64_t(1) << 63)) : ~u;
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  memcpy(&d, &u, sizeof(d));
  return d;
#endif
}

// Raw statistics of one (sample, slot) -> derived statistics.
//   contrast: raw64[0] = sum of the grayscale values (uint64 for uint8 images, double otherwise)
//   autocontrast: raw64[c] = ~ordered(min_c), raw64[3 + c] = ordered(max_c) (max-accumulated)
//   equalize: raw32[c * 256 + k] = histogram
// n: pixels per image. Sequential per channel; the CUDA finalize kernel runs it with a thread per
// channel.
// dbl: the image is float64 (statistics stay in double); otherwise they are rounded to float32.
TORCHAUG_HOST_DEVICE inline void contrast_derive(const uint64_t* raw64, bool u8, bool dbl, int64_t n, double* f) {
  double sum;
  if (u8) {
    sum = static_cast<double>(raw64[0]);
  } else {
#if defined(__CUDA_ARCH__)
    sum = __longlong_as_double(static_cast<long long>(raw64[0]));
#else
    memcpy(&sum, raw64, sizeof(sum));
#endif
  }
  const double mean = sum / static_cast<double>(n);
  f[0] = dbl ? mean : static_cast<double>(static_cast<float>(mean));
}

TORCHAUG_HOST_DEVICE inline void autocontrast_derive_channel(const uint64_t* raw64, int c, bool u8, bool dbl, double* f) {
  const double lo = from_ordered_bits(~raw64[c]);
  const double hi = from_ordered_bits(raw64[3 + c]);
  if (lo == hi) {
    f[c] = 0.0;
    f[3 + c] = 1.0;
  } else if (dbl) {
    f[c] = lo;
    f[3 + c] = rn_sub(hi, lo);
  } else {
    const float d = rn_sub(static_cast<float>(hi), static_cast<float>(lo));
    f[c] = lo;
    f[3 + c] = u8 ? rn_mul(d, static_cast<float>(1.0 / 255.0)) : d;
  }
}

// torchvision's (PIL's) equalization LUT of one channel: step = (n - count of the largest value)
// // 255; lut[0] = 0, lut[k] = min((cum[k - 1] + step // 2) // step, 255). valid = step != 0.
TORCHAUG_HOST_DEVICE inline void equalize_derive_channel(const uint32_t* hist, int64_t n, double* valid, uint8_t* lut) {
  int last = 0;
  for (int k = 0; k < 256; ++k)
    if (hist[k] != 0) last = k;
  const int64_t step = (n - static_cast<int64_t>(hist[last])) / 255;
  *valid = step != 0 ? 1.0 : 0.0;
  const int64_t s = step > 0 ? step : 1;
  int64_t cum = 0;
  lut[0] = 0;
  for (int k = 1; k < 256; ++k) {
    cum += hist[k - 1];
    const int64_t q = (cum + step / 2) / s;
    lut[k] = static_cast<uint8_t>(q > 255 ? 255 : q);
  }
}

// ---- ColorJitter's program --------------------------------------------------------------------
// torchvision's ColorJitter per sample from kJitterDraws uniforms u: the order of brightness,
// contrast, saturation and hue is the argsort of u[0..3] (ties by index: stable), the factor of
// adjustment i is lo[i] + span[i] * u[4 + i] (float64, then float32 as a program holds it). The
// program's slot k applies code[order[k]] (kColorIdentity for an adjustment not made) with p0 that
// factor and p1 = 0: ops (4,) and params (4, 2) of the sample.
constexpr int kJitterDraws = 8;
struct JitterSpace {
  double lo[4], span[4];
  int code[4];
};
TORCHAUG_HOST_DEVICE inline void jitter_sample(const JitterSpace& s, const double* u, int64_t* ops, float* params) {
  int order[4] = {0, 1, 2, 3};
  for (int i = 1; i < 4; ++i) {
    const int x = order[i];
    int j = i;
    for (; j > 0 && u[order[j - 1]] > u[x]; --j) order[j] = order[j - 1];
    order[j] = x;
  }
  for (int k = 0; k < 4; ++k) {
    const int i = order[k];
    ops[k] = s.code[i];
    params[2 * k] = static_cast<float>(s.lo[i] + rn_mul(s.span[i], u[4 + i]));  // torch.addcmul's product, then sum
    params[2 * k + 1] = 0.0f;
  }
}

}  // namespace kernels
}  // namespace torchaug
