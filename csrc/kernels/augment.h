// The op vocabulary of the auto-augmentation programs (torchaug::augment) and how one op of a
// sample is lowered from its magnitude to the parameters the per-pixel code reads. Shared by the
// CPU and CUDA backends and the GoogleTest suite.
//
// A program is ops (B, n) int64 and magnitudes (B, n) float32: slot k of sample b applies op
// ops[b, k] with magnitude magnitudes[b, k], with the meaning torchvision.transforms.v2's
// _AutoAugmentBase._apply_image_or_video_transform gives it:
//   ids 0..12 are the color ops of kernels/color.h (ColorOp), so that a program's statistics
//   (contrast mean, autocontrast min/max, equalize histograms) come from the color family's passes;
//     brightness, contrast, saturation ("Color"): factor 1 + m (0 when m < -1)
//     hue: shift m; gamma: gamma 1 + m (0 when m < -1; gain 1)
//     posterize: int(m) bits (clamped to [0, 8])
//     solarize: threshold m times the dtype's maximum (255 for uint8, 1 for floating)
//     solarize_add (DALI): shift m in uint8 units (m / 255 for floating), threshold 128 (128 / 255)
//     identity, grayscale, invert, autocontrast, equalize: m is ignored
//   sharpness: factor 1 + m (0 when m < -1)
//   shear_x / shear_y: shear m (the tangent) about the top-left corner (torchvision's
//     affine(shear=degrees(atan(m)), center=[0, 0]))
//   translate_x / translate_y: int(m) pixels
//   rotate: m degrees counter-clockwise about the centre (torchvision's rotate: multiples of 90
//     that it takes with torch.rot90 get exact matrices)
#pragma once

#include <math.h>

#include "color.h"
#include "common.h"
#include "geometry.h"

namespace torchaug {
namespace kernels {

enum AugOp : int {
  kAugSharpness = kColorNumOps,  // 13
  kAugShearX,
  kAugShearY,
  kAugTranslateX,
  kAugTranslateY,
  kAugRotate,
  kAugNumOps,
};

// What the per-pixel code does for a lowered op.
enum AugKind : int {
  kAugKindCopy = 0,
  kAugKindColor = 1,
  kAugKindSharpness = 2,
  kAugKindAffine = 3,
};

// One lowered (sample, slot): kind, the color op id, p0 / p1 / om as apply_color_op reads them
// (sharpness: p0 the factor, om = 1 - factor), m the pixel-space inverse matrix of affine ops.
constexpr int kAugStepWords = 11;
struct AugStep {
  int kind, op;
  double p0, p1, om;
  double m[6];
};

TORCHAUG_HOST_DEVICE inline bool aug_op_is_geometric(int op) { return op >= kAugShearX && op < kAugNumOps; }

// torchvision's _get_inverse_affine_matrix(center, angle, translate, scale=1, shear) for an output
// of the input's size, in pixel space (geometry.h).
TORCHAUG_HOST_DEVICE inline void aug_affine_matrix(double angle, double tx, double ty, double shear_x_deg,
                                                   double shear_y_deg, double cx, double cy, bool snap, double h,
                                                   double w, double* m) {
  affine_inverse_theta(angle, tx, ty, 1.0, shear_x_deg, shear_y_deg, cx, cy, snap, m);
  affine_theta_to_pixels(m, h, w, h, w);
}

// Lowers op `op` with magnitude `mag` for an image of height x width with channel values up to
// `bound` (255 for uint8, 1 for floating). Unknown ids are the identity (the host checks ids
// when it can read them).
TORCHAUG_HOST_DEVICE inline AugStep lower_aug(int op, double mag, int64_t height, int64_t width, double bound) {
  AugStep s;
  s.kind = kAugKindColor;
  s.op = op;
  s.p0 = 0.0;
  s.p1 = 1.0;
  s.om = 0.0;
  for (int i = 0; i < 6; ++i) s.m[i] = 0.0;
  const double h = static_cast<double>(height), w = static_cast<double>(width);
  const double rad_to_deg = 180.0 / 3.14159265358979323846;
  switch (op) {
    case kColorBrightness:
    case kColorContrast:
    case kColorSaturation:
    case kAugSharpness:
      // torchvision passes the factor 1.0 + m (a double); its blend computes 1 - factor = -m.
      // Factors below 0 (m < -1, which torchvision rejects) are 0.
      s.p0 = mag < -1.0 ? 0.0 : 1.0 + mag;
      s.om = mag < -1.0 ? 1.0 : -mag;
      if (op == kAugSharpness) s.kind = kAugKindSharpness;
      break;
    case kColorHue:
      s.p0 = mag;
      break;
    case kColorGamma:
      s.p0 = mag < -1.0 ? 0.0 : 1.0 + mag;
      s.p1 = 1.0;
      break;
    case kColorPosterize: {
      const double bits = trunc(mag);
      s.p0 = bits < 0.0 ? 0.0 : (bits > 8.0 ? 8.0 : bits);
      break;
    }
    case kColorSolarize:
      s.p0 = bound * mag;
      break;
    case kColorSolarizeAdd:
      s.p0 = mag * bound / 255.0;
      s.p1 = 128.0 * bound / 255.0;
      break;
    case kColorGrayscale:
    case kColorInvert:
    case kColorAutocontrast:
    case kColorEqualize:
      break;
    case kAugShearX:
    case kAugShearY: {
      // affine(angle=0, translate=[0, 0], scale=1, shear=[degrees(atan(m)), 0] or [0, ...],
      // center=[0, 0]): torchvision's centre offset is then (-w / 2, -h / 2)
      const double sh = atan(mag) * rad_to_deg;
      s.kind = kAugKindAffine;
      aug_affine_matrix(0.0, 0.0, 0.0, op == kAugShearX ? sh : 0.0, op == kAugShearY ? sh : 0.0, -w * 0.5, -h * 0.5,
                        false, h, w, s.m);
      break;
    }
    case kAugTranslateX:
    case kAugTranslateY: {
      const double t = trunc(mag);
      s.kind = kAugKindAffine;
      aug_affine_matrix(0.0, op == kAugTranslateX ? t : 0.0, op == kAugTranslateY ? t : 0.0, 0.0, 0.0, 0.0, 0.0, false,
                        h, w, s.m);
      break;
    }
    case kAugRotate: {
      // rotate(angle): angle % 360 (Python's modulo); 0 returns the image; 180, and 90 / 270 on a
      // square image, are torch.rot90
      double a = fmod(mag, 360.0);
      if (a < 0.0) a += 360.0;
      if (a == 0.0) {
        s.kind = kAugKindCopy;
        break;
      }
      const bool snap = a == 180.0 || ((a == 90.0 || a == 270.0) && height == width);
      s.kind = kAugKindAffine;
      aug_affine_matrix(-a, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, snap, h, w, s.m);
      break;
    }
    default:
      s.kind = kAugKindCopy;
      s.op = kColorIdentity;
      break;
  }
  if (s.kind == kAugKindColor && s.op == kColorIdentity) s.kind = kAugKindCopy;
  return s;
}

// ---- policy programs from uniform draws (torchaug::_policy_program) ------------------------------
// A policy's space: K ops with kernel op ids ids (K,), magnitude tables mags (K, bins) and signed
// flags (K,); AutoAugment's sub-policies: S rows of 2 (space index, probability, bin).
enum PolicyKind : int { kPolicyRand = 0, kPolicyTrivial = 1, kPolicyAuto = 2 };

struct PolicySpace {
  int64_t K, bins;
  const int64_t* ids;
  const float* mags;
  const bool* signed_;
  int64_t S;  // AutoAugment
  const int64_t* sub_idx;
  const float* sub_prob;
  const int64_t* sub_bins;
};

// The slots and uniform draws per sample of a policy: RandAugment num_ops slots of 2 draws (op,
// sign); TrivialAugmentWide 1 slot of 3 (op, bin, sign); AutoAugment 2 slots, 1 + 2 x 2 draws
// (sub-policy, then per op: applied, sign).
TORCHAUG_HOST_DEVICE inline int policy_slots(int kind, int num_ops) { return kind == kPolicyRand ? num_ops : (kind == kPolicyTrivial ? 1 : 2); }
TORCHAUG_HOST_DEVICE inline int policy_draws(int kind, int num_ops) { return kind == kPolicyRand ? 2 * num_ops : (kind == kPolicyTrivial ? 3 : 5); }

// floor(u * n) for a uniform u in [0, 1): an index uniform in [0, n).
TORCHAUG_HOST_DEVICE inline int64_t uniform_index(double u, int64_t n) {
  const int64_t i = static_cast<int64_t>(floor(u * static_cast<double>(n)));
  return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

// One sample's program from its draws u: torchvision's draws (an op uniform over the space, its
// sign with probability 1/2 where the op is signed; TrivialAugmentWide's bin uniform; AutoAugment's
// sub-policy uniform and each of its ops applied with its probability). choice: the space index
// (-1 where an AutoAugment op is not applied), op: its kernel id (0, the identity, where not
// applied), mag: the table's magnitude at the bin, negated by the sign.
TORCHAUG_HOST_DEVICE inline void policy_sample(int kind, int num_ops, int64_t magnitude, const double* u,
                                               const PolicySpace& sp, int64_t* choice, int64_t* op, float* mag) {
  const int n = policy_slots(kind, num_ops);
  const int64_t s = kind == kPolicyAuto ? uniform_index(u[0], sp.S) : 0;
  for (int k = 0; k < n; ++k) {
    int64_t c, bin;
    bool coin, apply = true;
    if (kind == kPolicyRand) {
      c = uniform_index(u[2 * k], sp.K);
      bin = magnitude;
      coin = u[2 * k + 1] <= 0.5;
    } else if (kind == kPolicyTrivial) {
      c = uniform_index(u[0], sp.K);
      bin = uniform_index(u[1], sp.bins);
      coin = u[2] <= 0.5;
    } else {
      c = sp.sub_idx[2 * s + k];
      bin = sp.sub_bins[2 * s + k];
      apply = u[1 + 2 * k] <= static_cast<double>(sp.sub_prob[2 * s + k]);
      coin = u[2 + 2 * k] <= 0.5;
    }
    const float m = sp.mags[c * sp.bins + bin];
    mag[k] = coin && sp.signed_[c] ? -m : m;
    op[k] = apply ? sp.ids[c] : 0;
    choice[k] = apply ? c : -1;
  }
}

// AugStep <-> kAugStepWords doubles (the step buffer of a program).
TORCHAUG_HOST_DEVICE inline void store_aug_step(const AugStep& s, double* w) {
  w[0] = s.kind;
  w[1] = s.op;
  w[2] = s.p0;
  w[3] = s.p1;
  w[4] = s.om;
  for (int i = 0; i < 6; ++i) w[5 + i] = s.m[i];
}

TORCHAUG_HOST_DEVICE inline AugStep load_aug_step(const double* w) {
  AugStep s;
  s.kind = static_cast<int>(w[0]);
  s.op = static_cast<int>(w[1]);
  s.p0 = w[2];
  s.p1 = w[3];
  s.om = w[4];
  for (int i = 0; i < 6; ++i) s.m[i] = w[5 + i];
  return s;
}

}  // namespace kernels
}  // namespace torchaug
