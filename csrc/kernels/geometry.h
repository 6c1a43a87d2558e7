// Per-pixel math of the geometry family (resized_crop, warp_affine, flip), shared by the CPU and
// CUDA backends. The conventions are PyTorch's / torchvision v2's so that the same parameters give
// the same pixels:
//  - resize: torch.nn.functional.interpolate with align_corners=False (nearest: legacy "nearest";
//    antialias: the _upsample_*_aa kernels, triangle filter / Keys cubic with a=-0.5);
//  - affine: torch.nn.functional.grid_sample(align_corners=False, padding_mode="zeros") plus the
//    fill blending of torchvision.transforms.v2.functional._apply_grid_transform.
#pragma once

#include <type_traits>

#include "common.h"

namespace torchaug {
namespace kernels {

// ----------------------------------------------------------------------------------------------
// Resampling along one axis
// ----------------------------------------------------------------------------------------------

enum AxisKind : int {
  kAxisNearest = 0,
  kAxisLinear = 1,
  kAxisCubic = 2,
  kAxisAALinear = 3,
  kAxisAACubic = 4,
};

// Taps of one output coordinate along one axis of a crop of `size` input pixels.
template <typename acc_t>
struct ResampleAxis {
  int64_t first;  // first tap, crop-relative, before clamping
  int64_t count;  // number of taps
  int64_t size;   // crop extent along this axis
  int kind;
  acc_t t;       // linear: weight of the second tap; cubic: fractional position
  acc_t center;  // antialias: filter centre (in input pixels)
  acc_t invscale;
  acc_t total;   // antialias: sum of the unnormalised weights
  acc_t rtotal;  // antialias: rcp_for_div(total), for rn_div_by (each weight is raw / total)
};

TORCHAUG_HOST_DEVICE inline int64_t nearest_source_index(int64_t dst, int64_t in, int64_t out) {
  // aten/src/ATen/native/UpSample.h: nearest_idx (legacy "nearest", float scale)
  if (out == in) return dst;
  if (out == 2 * in) return dst >> 1;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  return min_of(static_cast<int64_t>(floorf(static_cast<float>(dst) * scale)), in - 1);
}

TORCHAUG_HOST_DEVICE inline int64_t nearest_exact_source_index(int64_t dst, int64_t in, int64_t out) {
  // aten/src/ATen/native/UpSample.h: nearest_neighbor_exact_compute_source_index ("nearest-exact":
  // the pixel whose centre is nearest, (dst + 0.5) * scale in double, floored as a float)
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  return min_of(static_cast<int64_t>(floorf(static_cast<float>((static_cast<double>(dst) + 0.5) * scale))), in - 1);
}

template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t aa_linear_filter(acc_t x) {
  if (x < 0) x = -x;
  return x < 1 ? acc_t(1) - x : acc_t(0);
}

// The axis math below rounds every product before it is added (rn_mul, rn_add: never contracted
// into an FMA), as the host computes it (-ffp-contract=off): the same taps and weights on the CPU
// and in every CUDA kernel that inlines it, whatever the code around it lets nvcc fuse (an FMA here
// or there moves a weight by an ulp, and an output byte by one).
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t aa_cubic_filter(acc_t x) {
  // Keys cubic with a = -0.5, as PIL and torch's antialiased bicubic:
  // ((a + 2) x - (a + 3)) x x + 1 for |x| < 1, (((x - 5) x + 8) x - 4) a for |x| < 2
  const acc_t a = acc_t(-0.5);
  if (x < 0) x = -x;
  if (x < 1) return rn_add(rn_mul(rn_mul(rn_sub(rn_mul(a + 2, x), a + 3), x), x), acc_t(1));
  if (x < 2) return rn_mul(rn_sub(rn_mul(rn_add(rn_mul(x - 5, x), acc_t(8)), x), acc_t(4)), a);
  return 0;
}

// torch's upsample_bicubic2d weights: ((A + 2) x - (A + 3)) x x + 1 ...
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t cubic_convolution1(acc_t x, acc_t A) {
  return rn_add(rn_mul(rn_mul(rn_sub(rn_mul(A + 2, x), A + 3), x), x), acc_t(1));
}

// ... and ((A x - 5 A) x + 8 A) x - 4 A
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t cubic_convolution2(acc_t x, acc_t A) {
  return rn_sub(rn_mul(rn_add(rn_mul(rn_sub(rn_mul(A, x), rn_mul(acc_t(5), A)), x), rn_mul(acc_t(8), A)), x),
                rn_mul(acc_t(4), A));
}

template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t axis_aa_raw_weight(const ResampleAxis<acc_t>& a, int64_t j) {
  const acc_t x = rn_mul(static_cast<acc_t>(j + a.first) - a.center + acc_t(0.5), a.invscale);
  return a.kind == kAxisAALinear ? aa_linear_filter(x) : aa_cubic_filter(x);
}

// The largest crop box edge and offset the resize ops take (2^20 pixels, 16x the largest JPEG's
// side): an antialiased tap loop spans a whole box edge, so this bounds the work of one output pixel.
constexpr int64_t kMaxBoxExtent = int64_t(1) << 20;

// Taps of output coordinate `dst` when `in` input pixels are resized to `out`.
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline ResampleAxis<acc_t> make_resample_axis(int64_t interpolation, bool antialias,
                                                                   int64_t in, int64_t out, int64_t dst) {
  ResampleAxis<acc_t> a;
  a.size = in;
  a.t = 0;
  a.center = 0;
  a.invscale = 1;
  a.total = 1;
  a.rtotal = 0;
  if (is_nearest(interpolation)) {
    a.kind = kAxisNearest;
    a.first = interpolation == kNearest ? nearest_source_index(dst, in, out) : nearest_exact_source_index(dst, in, out);
    a.count = 1;
    return a;
  }
  const acc_t scale = static_cast<acc_t>(in) / static_cast<acc_t>(out);
  if (antialias) {
    const bool cubic = interpolation == kBicubic;
    const acc_t half_width = cubic ? acc_t(2) : acc_t(1);
    const acc_t support = scale >= acc_t(1) ? rn_mul(half_width, scale) : half_width;
    a.kind = cubic ? kAxisAACubic : kAxisAALinear;
    a.center = rn_mul(scale, static_cast<acc_t>(dst) + acc_t(0.5));
    a.invscale = scale >= acc_t(1) ? acc_t(1) / scale : acc_t(1);
    a.first = max_of(static_cast<int64_t>(a.center - support + acc_t(0.5)), int64_t(0));
    // at most the taps of a kMaxBoxExtent box (a box beyond the bound on a GPU, where the op does
    // not read the boxes, costs no more than the largest valid one)
    a.count = min_of(min_of(static_cast<int64_t>(a.center + support + acc_t(0.5)), in) - a.first,
                     int64_t(4) * kMaxBoxExtent + 8);
    acc_t total = 0;
    for (int64_t j = 0; j < a.count; ++j) total += axis_aa_raw_weight(a, j);
    a.total = total != acc_t(0) ? total : acc_t(1);
    a.rtotal = rcp_for_div(a.total);
    return a;
  }
  acc_t src = rn_mul(scale, static_cast<acc_t>(dst) + acc_t(0.5)) - acc_t(0.5);
  if (interpolation == kBilinear) {
    if (src < 0) src = 0;
    a.kind = kAxisLinear;
    a.first = min_of(static_cast<int64_t>(floor(src)), in - 1);
    a.t = clamp_of(src - static_cast<acc_t>(a.first), acc_t(0), acc_t(1));
    a.count = 2;
    return a;
  }
  // bicubic, A = -0.75 (torch.nn.functional.interpolate(mode="bicubic"))
  a.kind = kAxisCubic;
  const int64_t i = min_of(static_cast<int64_t>(floor(src)), in - 1);
  a.t = clamp_of(src - static_cast<acc_t>(i), acc_t(0), acc_t(1));
  a.first = i - 1;
  a.count = 4;
  return a;
}

// Crop-relative input index of tap j (clamped to the crop as interpolate clamps to its input).
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline int64_t axis_index(const ResampleAxis<acc_t>& a, int64_t j) {
  return clamp_of(a.first + j, int64_t(0), a.size - 1);
}

template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t axis_weight(const ResampleAxis<acc_t>& a, int64_t j) {
  switch (a.kind) {
    case kAxisNearest:
      return acc_t(1);
    case kAxisLinear:
      return j == 0 ? acc_t(1) - a.t : a.t;
    case kAxisCubic: {
      const acc_t A = acc_t(-0.75);
      switch (j) {
        case 0: return cubic_convolution2(a.t + acc_t(1), A);
        case 1: return cubic_convolution1(a.t, A);
        case 2: return cubic_convolution1(acc_t(1) - a.t, A);
        default: return cubic_convolution2(acc_t(2) - a.t, A);
      }
    }
    default:
      return rn_div_by(axis_aa_raw_weight(a, j), a.total, a.rtotal);  // raw / total, correctly rounded
  }
}

// One output pixel of resized_crop: crop box (top, left, crop_h, crop_w) of the image, resized to
// (out_h, out_w). Input pixels outside the image read as 0 (torchvision's crop pads with zeros).
// Accumulates channels [c0, c0 + nc), nc <= kChunk, into acc[0 .. nc).
template <int kChunk, typename scalar_t, typename acc_t>
TORCHAUG_HOST_DEVICE inline void resized_crop_px(const scalar_t* img, const ImageView& v, int64_t c0, int64_t nc,
                                                 const ResampleAxis<acc_t>& ay, const ResampleAxis<acc_t>& ax,
                                                 int64_t top, int64_t left, acc_t* acc) {
TORCHAUG_UNROLL
  for (int c = 0; c < kChunk; ++c) acc[c] = 0;
  for (int64_t jy = 0; jy < ay.count; ++jy) {
    const int64_t y = top + axis_index(ay, jy);
    if (y < 0 || y >= v.height) continue;
    const acc_t wy = axis_weight(ay, jy);
    const scalar_t* row = img + v.offset + y * v.stride_y + c0 * v.stride_c;
    for (int64_t jx = 0; jx < ax.count; ++jx) {
      const int64_t x = left + axis_index(ax, jx);
      if (x < 0 || x >= v.width) continue;
      const acc_t w = wy * axis_weight(ax, jx);
      const scalar_t* p = row + x * v.stride_x;
TORCHAUG_UNROLL
      for (int c = 0; c < kChunk; ++c) {
        if (c < nc) acc[c] += w * static_cast<acc_t>(p[c * v.stride_c]);
      }
    }
  }
}

// ----------------------------------------------------------------------------------------------
// Affine sampling
// ----------------------------------------------------------------------------------------------

// Input position of output pixel (x, y) under the inverse map m (2x3, row-major, pixel-centre
// coordinates: pixel i has its centre at i). idx_t: the integer type the coordinates convert from,
// int64_t unless the caller names another (an integer converts to the same value from any type; the
// CPU's row loops name int32_t, whose conversion the compiler vectorizes).
template <typename acc_t, typename idx_t = int64_t>
TORCHAUG_HOST_DEVICE inline void affine_source(const acc_t* m, std::common_type_t<idx_t> x, std::common_type_t<idx_t> y,
                                               acc_t* sx, acc_t* sy) {
  // each step rounded, never contracted: the same position in every kernel that inlines this, and
  // on the host (an FMA here or there moves a bilinear weight by an ulp)
  const acc_t fx = static_cast<acc_t>(x), fy = static_cast<acc_t>(y);
  *sx = rn_add(rn_add(rn_mul(m[0], fx), rn_mul(m[1], fy)), m[2]);
  *sy = rn_add(rn_add(rn_mul(m[3], fx), rn_mul(m[4], fy)), m[5]);
}

// The same under a projective inverse map m (3x3, row-major): (m0 x + m1 y + m2, m3 x + m4 y + m5)
// divided by m6 x + m7 y + m8, each step rounded as affine_source's.
template <typename acc_t, typename idx_t = int64_t>
TORCHAUG_HOST_DEVICE inline void projective_source(const acc_t* m, std::common_type_t<idx_t> x, std::common_type_t<idx_t> y,
                                                   acc_t* sx, acc_t* sy) {
  const acc_t fx = static_cast<acc_t>(x), fy = static_cast<acc_t>(y);
  const acc_t w = rn_add(rn_add(rn_mul(m[6], fx), rn_mul(m[7], fy)), m[8]);
  *sx = rn_div(rn_add(rn_add(rn_mul(m[0], fx), rn_mul(m[1], fy)), m[2]), w);
  *sy = rn_div(rn_add(rn_add(rn_mul(m[3], fx), rn_mul(m[4], fy)), m[5]), w);
}

// The input position of output pixel (x, y) under an inverse map of `rows` rows: 2 affine, 3 projective.
template <typename acc_t, typename idx_t = int64_t>
TORCHAUG_HOST_DEVICE inline void warp_source(const acc_t* m, int rows, std::common_type_t<idx_t> x,
                                             std::common_type_t<idx_t> y, acc_t* sx, acc_t* sy) {
  if (rows == 3) projective_source<acc_t, idx_t>(m, x, y, sx, sy);
  else affine_source<acc_t, idx_t>(m, x, y, sx, sy);
}

// The input pixel position of grid_sample's normalized coordinate g along an axis of `size` pixels
// (align_corners=False): ((g + 1) * size - 1) / 2, each step rounded (the CPU grid_sample's
// (g + 1) * (size / 2) - 0.5, to the bit).
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t grid_unnormalize(acc_t g, int64_t size) {
  return rn_mul(rn_sub(rn_mul(rn_add(g, acc_t(1)), static_cast<acc_t>(size)), acc_t(1)), acc_t(0.5));
}

// The N taps of grid_sample at (sx, sy): N = 1 (nearest) or 4 (bilinear: nw, ne, sw, se). Tap k
// has offset (ix[k], iy[k]) and weight w[k]; taps outside the image get valid[k] = false (and
// offset 0). mask = sum of the weights of the valid taps. N is a compile-time constant, so that
// the taps live in registers (a runtime count put them in local memory: 128-byte stack frames).
// Positions are tested in floating point before any integer conversion: a position far outside
// the image (or NaN) is simply not valid.
template <typename acc_t, int N, typename idx_t = int64_t>
struct AffineTaps {
  idx_t ix[N], iy[N];
  acc_t w[N];
  bool valid[N];
  acc_t mask;
};

// idx_t: int (images of fewer than 2^31 pixels, cheaper on the device) or int64_t.
template <typename acc_t, int N, typename idx_t = int64_t>
TORCHAUG_HOST_DEVICE inline AffineTaps<acc_t, N, idx_t> affine_taps(acc_t sx, acc_t sy, int64_t height, int64_t width) {
  static_assert(N == 1 || N == 4, "affine_taps: N is 1 (nearest) or 4 (bilinear)");
  AffineTaps<acc_t, N, idx_t> t;
  const acc_t fw = static_cast<acc_t>(width), fh = static_cast<acc_t>(height);
  if constexpr (N == 1) {
    const acc_t rx = rint(sx), ry = rint(sy);
    t.valid[0] = rx >= acc_t(0) && rx < fw && ry >= acc_t(0) && ry < fh;
    t.ix[0] = t.valid[0] ? static_cast<idx_t>(rx) : 0;
    t.iy[0] = t.valid[0] ? static_cast<idx_t>(ry) : 0;
    t.w[0] = 1;
    t.mask = t.valid[0] ? acc_t(1) : acc_t(0);
  } else {
    // grid_sampler_2d bilinear
    const acc_t fx0 = floor_exact(sx), fy0 = floor_exact(sy);
    const acc_t e = (fx0 + 1) - sx, wv = (fy0 + 1) - sy;  // distances to the east / south neighbours
    const acc_t wx = sx - fx0, wy = sy - fy0;
    const bool vx0 = fx0 >= acc_t(0) && fx0 < fw, vx1 = fx0 >= acc_t(-1) && fx0 < fw - acc_t(1);
    const bool vy0 = fy0 >= acc_t(0) && fy0 < fh, vy1 = fy0 >= acc_t(-1) && fy0 < fh - acc_t(1);
    const idx_t x0 = (vx0 || vx1) ? static_cast<idx_t>(fx0) : 0;
    const idx_t y0 = (vy0 || vy1) ? static_cast<idx_t>(fy0) : 0;
    t.ix[0] = x0;     t.iy[0] = y0;     t.w[0] = e * wv;  t.valid[0] = vx0 && vy0;
    t.ix[1] = x0 + 1; t.iy[1] = y0;     t.w[1] = wx * wv; t.valid[1] = vx1 && vy0;
    t.ix[2] = x0;     t.iy[2] = y0 + 1; t.w[2] = e * wy;  t.valid[2] = vx0 && vy1;
    t.ix[3] = x0 + 1; t.iy[3] = y0 + 1; t.w[3] = wx * wy; t.valid[3] = vx1 && vy1;
    t.mask = 0;
    TORCHAUG_UNROLL
    for (int k = 0; k < 4; ++k) {
      if (t.valid[k]) t.mask = rn_add(t.mask, t.w[k]);
    }
  }
  return t;
}

// Blend of torchvision's _apply_grid_transform: zero padding when there is no fill; with a fill,
// nearest takes the fill where the tap is outside, bilinear gives mask * (s - fill) + fill.
template <typename acc_t>
TORCHAUG_HOST_DEVICE inline acc_t affine_blend(acc_t s, acc_t mask, bool has_fill, acc_t fill, int64_t interpolation) {
  if (!has_fill) return s;
  if (interpolation == kNearest) return mask < acc_t(0.5) ? fill : s;
  return (s - fill) * mask + fill;
}

template <typename scalar_t, typename acc_t, int N>
TORCHAUG_HOST_DEVICE inline acc_t affine_channel(const scalar_t* img, const ImageView& v, int64_t c,
                                                 const AffineTaps<acc_t, N>& t) {
  acc_t s = 0;
  TORCHAUG_UNROLL
  for (int k = 0; k < N; ++k) {
    if (t.valid[k]) s += t.w[k] * static_cast<acc_t>(img[v.offset + c * v.stride_c + t.iy[k] * v.stride_y + t.ix[k] * v.stride_x]);
  }
  return s;
}

// affine_channel over a dense plane of `width` pixels a row (int taps): the same sum.
template <typename scalar_t, typename acc_t, int N>
TORCHAUG_HOST_DEVICE inline acc_t affine_plane(const scalar_t* plane, int width, const AffineTaps<acc_t, N, int>& t) {
  acc_t s = 0;
  TORCHAUG_UNROLL
  for (int k = 0; k < N; ++k) {
    if (t.valid[k]) s += t.w[k] * static_cast<acc_t>(plane[t.iy[k] * width + t.ix[k]]);
  }
  return s;
}

// ----------------------------------------------------------------------------------------------
// Affine matrices
// ----------------------------------------------------------------------------------------------

// torchvision's _get_inverse_affine_matrix(center, angle, translate, scale, shear): the inverse map
// (2x3, row-major) in coordinates centred on the image, angle and shear in degrees, (cx, cy) the
// centre's offset from the image centre; torch's float64 steps one by one, each rounded and never
// contracted, so that the host and the device give the same matrix. snap: a rotation by a multiple
// of 90 degrees gets exact 0 / +-1 entries (torchvision rotates those with torch.rot90).
TORCHAUG_HOST_DEVICE inline void affine_inverse_theta(double angle, double tx, double ty, double scale, double shear_x,
                                                      double shear_y, double cx, double cy, bool snap, double* m) {
  const double deg = 3.14159265358979323846 / 180.0;
  const double rot = rn_mul(angle, deg), sx = rn_mul(shear_x, deg), sy = rn_mul(shear_y, deg);
  const double cr = cos(rn_sub(rot, sy)), sr = sin(rn_sub(rot, sy)), csy = cos(sy), t = tan(sx);
  double a = rn_div(cr, csy);
  double b = rn_sub(rn_div(rn_mul(-cr, t), csy), sin(rot));
  double c = rn_div(sr, csy);
  double d = rn_add(rn_div(rn_mul(-sr, t), csy), cos(rot));
  if (snap) {
    a = rint(a);
    b = rint(b);
    c = rint(c);
    d = rint(d);
  }
  m[0] = rn_div(d, scale);
  m[1] = rn_div(-b, scale);
  m[3] = rn_div(-c, scale);
  m[4] = rn_div(a, scale);
  const double ux = rn_sub(-cx, tx), uy = rn_sub(-cy, ty);
  m[2] = rn_add(rn_add(rn_mul(m[0], ux), rn_mul(m[1], uy)), cx);
  m[5] = rn_add(rn_add(rn_mul(m[3], ux), rn_mul(m[4], uy)), cy);
}

// Whether a rotation by `angle` degrees gets affine_inverse_theta's exact entries: a multiple of
// period (torchvision takes 180 degrees, and 90 where the image is square or expanded, with
// torch.rot90); period 0: never.
TORCHAUG_HOST_DEVICE inline bool is_snapped(double angle, double period) {
  return period > 0.0 && fmod(angle, period) == 0.0;
}

// The centred theta as warp_affine's pixel-index map (pixel i at i) from an out_h x out_w output to
// an h x w input: torchvision samples theta @ (x - (ow - 1) / 2, y - (oh - 1) / 2, 1) +
// ((w - 1) / 2, (h - 1) / 2).
TORCHAUG_HOST_DEVICE inline void affine_theta_to_pixels(double* m, double h, double w, double out_h, double out_w) {
  const double ox = rn_mul(rn_sub(out_w, 1.0), 0.5), oy = rn_mul(rn_sub(out_h, 1.0), 0.5);
  m[2] = rn_add(rn_sub(rn_sub(m[2], rn_mul(m[0], ox)), rn_mul(m[1], oy)), rn_mul(rn_sub(w, 1.0), 0.5));
  m[5] = rn_add(rn_sub(rn_sub(m[5], rn_mul(m[3], ox)), rn_mul(m[4], oy)), rn_mul(rn_sub(h, 1.0), 0.5));
}

// ----------------------------------------------------------------------------------------------
// RandomResizedCrop parameters
// ----------------------------------------------------------------------------------------------

constexpr int kRrcAttempts = 10;
constexpr int kRrcDraws = 2 * kRrcAttempts + 2;

// torchvision's RandomResizedCrop.get_params for one image of height x width, with its uniform
// [0, 1) draws given in u: u[0..9] the area fractions, u[10..19] the aspect ratios (uniform in log space) of
// the 10 attempts, u[20] and u[21] the top and left offsets. The first attempt that fits wins; else the
// central crop with the aspect ratio clamped to [ratio_min, ratio_max]. box = top, left, h, w.
TORCHAUG_HOST_DEVICE inline void random_resized_crop_box(const double* u, double height, double width,
                                                         double scale_min, double scale_max, double ratio_min,
                                                         double ratio_max, int64_t* box) {
  const double area = height * width;
  const double log_min = log(ratio_min), log_max = log(ratio_max);
  for (int k = 0; k < kRrcAttempts; ++k) {
    const double target = area * (scale_min + (scale_max - scale_min) * u[k]);
    const double aspect = exp(log_min + (log_max - log_min) * u[kRrcAttempts + k]);
    const double w = rint(sqrt(target * aspect));
    const double h = rint(sqrt(target / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      box[0] = static_cast<int64_t>(floor(u[2 * kRrcAttempts] * (height - h + 1)));
      box[1] = static_cast<int64_t>(floor(u[2 * kRrcAttempts + 1] * (width - w + 1)));
      box[2] = static_cast<int64_t>(h);
      box[3] = static_cast<int64_t>(w);
      return;
    }
  }
  const double in_ratio = width / height;
  double w = width, h = height;
  if (in_ratio < ratio_min) {
    h = rint(w / ratio_min);
  } else if (in_ratio > ratio_max) {
    w = rint(h * ratio_max);
  }
  box[0] = static_cast<int64_t>(floor((height - h) / 2));
  box[1] = static_cast<int64_t>(floor((width - w) / 2));
  box[2] = static_cast<int64_t>(h);
  box[3] = static_cast<int64_t>(w);
}

// ----------------------------------------------------------------------------------------------
// RandomAffine and RandomPerspective parameters
// ----------------------------------------------------------------------------------------------

// lo + (hi - lo) * u rounded step by step (torch's uniform_(lo, hi) of a draw u).
TORCHAUG_HOST_DEVICE inline double uniform_between(double lo, double hi, double u) {
  return rn_add(lo, rn_mul(rn_sub(hi, lo), u));
}

// RandomAffine's ranges: [lo, hi] of the angle, scale and shears (degrees), and the largest
// translation as fractions of the width and height (0: none). No scale: [1, 1]; no shear: [0, 0].
constexpr int kAffineDraws = 6;
struct AffineSpace {
  double angle[2], translate[2], scale[2], shear_x[2], shear_y[2];
};

// torchvision's RandomAffine.get_params for one image of height x width from its draws u
// (kAffineDraws: angle, tx, ty, scale, shear x, shear y): out = [angle, tx, ty, scale, shear x,
// shear y], the translations round(uniform(-t W, t W)) (half to even, as Python's round).
TORCHAUG_HOST_DEVICE inline void random_affine_sample(const AffineSpace& s, const double* u, double height, double width,
                                                      double* out) {
  const double dx = rn_mul(s.translate[0], width), dy = rn_mul(s.translate[1], height);
  out[0] = uniform_between(s.angle[0], s.angle[1], u[0]);
  out[1] = rint(uniform_between(-dx, dx, u[1]));
  out[2] = rint(uniform_between(-dy, dy, u[2]));
  out[3] = uniform_between(s.scale[0], s.scale[1], u[3]);
  out[4] = uniform_between(s.shear_x[0], s.shear_x[1], u[4]);
  out[5] = uniform_between(s.shear_y[0], s.shear_y[1], u[5]);
}

// An integer in [lo, lo + n) from a uniform draw u: lo + floor(u n) (a draw outside [0, 1), NaN
// included, clamps to the range).
TORCHAUG_HOST_DEVICE inline int64_t uniform_integer(int64_t lo, int64_t n, double u) {
  const double f = floor(rn_mul(u, static_cast<double>(n)));
  return lo + (f >= 1.0 ? (f < static_cast<double>(n) ? static_cast<int64_t>(f) : n - 1) : 0);
}

// The homography coefficients (a, b, c, d, e, f, g, h) that map the output's corners `start` onto
// the input's `end` (x0, y0, ..., x3, y3): torchvision's _get_perspective_coeffs, the 8x8 system
// solved in float64 by Gaussian elimination with partial pivoting (torchvision's least squares gives
// the same solution of the square system, to float64 rounding), then rounded to float32. A
// singular system (corners on a line: images 1 pixel wide or high) gives the identity.
TORCHAUG_HOST_DEVICE inline void perspective_coefficients(const double* start, const double* end, float* coeffs) {
  double a[8][9];
  for (int i = 0; i < 4; ++i) {
    const double x1 = end[2 * i], y1 = end[2 * i + 1], x2 = start[2 * i], y2 = start[2 * i + 1];
    const double rx[9] = {x1, y1, 1.0, 0.0, 0.0, 0.0, -rn_mul(x2, x1), -rn_mul(x2, y1), x2};
    const double ry[9] = {0.0, 0.0, 0.0, x1, y1, 1.0, -rn_mul(y2, x1), -rn_mul(y2, y1), y2};
    for (int j = 0; j < 9; ++j) {
      a[2 * i][j] = rx[j];
      a[2 * i + 1][j] = ry[j];
    }
  }
  for (int k = 0; k < 8; ++k) {
    int pivot = k;
    for (int i = k + 1; i < 8; ++i) {
      if (fabs(a[i][k]) > fabs(a[pivot][k])) pivot = i;
    }
    if (!(fabs(a[pivot][k]) > 0.0)) {
      const float identity[8] = {1.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f};
      for (int j = 0; j < 8; ++j) coeffs[j] = identity[j];
      return;
    }
    if (pivot != k) {
      for (int j = k; j < 9; ++j) {
        const double t = a[k][j];
        a[k][j] = a[pivot][j];
        a[pivot][j] = t;
      }
    }
    for (int i = k + 1; i < 8; ++i) {
      const double f = rn_div(a[i][k], a[k][k]);
      for (int j = k; j < 9; ++j) a[i][j] = rn_sub(a[i][j], rn_mul(f, a[k][j]));
    }
  }
  double x[8];
  for (int k = 7; k >= 0; --k) {
    double r = a[k][8];
    for (int j = k + 1; j < 8; ++j) r = rn_sub(r, rn_mul(a[k][j], x[j]));
    x[k] = rn_div(r, a[k][k]);
  }
  for (int j = 0; j < 8; ++j) coeffs[j] = static_cast<float>(x[j]);
}

// torchvision's RandomPerspective.get_params for one height x width image from its draws u
// (kPerspectiveDraws): u[0] < p applies it; u[1 .. 8] the x and y of the top-left, top-right,
// bottom-right and bottom-left corners, integers in torchvision's ranges (within
// distortion_scale * half the size of their edge), in its order. coeffs: the homography of those
// corners (perspective_coefficients). Returns whether it applies.
constexpr int kPerspectiveDraws = 9;
TORCHAUG_HOST_DEVICE inline bool random_perspective_sample(const double* u, int64_t height, int64_t width, double distortion,
                                                           double p, float* coeffs) {
  const int64_t bh = static_cast<int64_t>(distortion * static_cast<double>(height / 2)) + 1;
  const int64_t bw = static_cast<int64_t>(distortion * static_cast<double>(width / 2)) + 1;
  const int64_t lo[8] = {0, 0, width - bw, 0, width - bw, height - bh, 0, height - bh};
  const int64_t n[8] = {bw, bh, bw, bh, bw, bh, bw, bh};
  const double w1 = static_cast<double>(width - 1), h1 = static_cast<double>(height - 1);
  const double start[8] = {0.0, 0.0, w1, 0.0, w1, h1, 0.0, h1};
  double end[8];
  for (int k = 0; k < 8; ++k) end[k] = static_cast<double>(uniform_integer(lo[k], n[k], u[1 + k]));
  perspective_coefficients(start, end, coeffs);
  return u[0] < p;
}

// ----------------------------------------------------------------------------------------------
// Flip
// ----------------------------------------------------------------------------------------------

TORCHAUG_HOST_DEVICE inline int64_t flip_index(int64_t i, int64_t size, bool flip) {
  return flip ? size - 1 - i : i;
}

}  // namespace kernels
}  // namespace torchaug
