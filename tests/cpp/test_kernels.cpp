// The shared per-pixel math of csrc/kernels/, on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include <torchaug/kernels/augment.h>
#include <torchaug/kernels/convert.h>
#include <torchaug/kernels/geometry.h>

using namespace torchaug::kernels;

TEST(Kernels, RoundToUint8IsHalfToEvenAndSaturates) {
  EXPECT_EQ(round_to_uint8(0.5f), 0.0f);
  EXPECT_EQ(round_to_uint8(1.5f), 2.0f);
  EXPECT_EQ(round_to_uint8(2.5f), 2.0f);
  EXPECT_EQ(round_to_uint8(-3.0f), 0.0f);
  EXPECT_EQ(round_to_uint8(300.0f), 255.0f);
  // the value the byte holds: NaN is 0 (round_to_byte's byte) and a negative value +0, not -0
  EXPECT_EQ(round_to_uint8(std::nanf("")), 0.0f);
  EXPECT_FALSE(std::signbit(round_to_uint8(-0.3f)));
  EXPECT_FALSE(std::signbit(round_to_uint8(-0.0f)));
  EXPECT_EQ(PixelStore<uint8_t>::from(254.7f), 255);
}

// The host's rounding helpers (adds of 2^23 and selects, no conversion or library call) against
// truncf / floorf, bit for bit, over floats of every exponent and sign (every 61st bit pattern,
// NaNs and infinities included).
TEST(Kernels, HostRoundingHelpersAreTruncAndFloor) {
  const auto same = [](float a, float b) {
    uint32_t x, y;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    return x == y || (a != a && b != b);
  };
  int64_t bad = 0;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 61) {
    const uint32_t w = static_cast<uint32_t>(u);
    float v;
    std::memcpy(&v, &w, 4);
    bad += !same(trunc_exact(v), std::trunc(v));
    bad += !same(floor_exact(v), std::floor(v));
    if (v >= 0.0f && v < 8388608.0f) {
      bad += !same(floor_small(v), std::floor(v));
      bad += !same(trunc_small(v), std::trunc(v));
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(trunc_small(std::nanf("")), 0.0f);  // as the device's conversion
  EXPECT_TRUE(std::isnan(floor_small(std::nanf(""))));
  EXPECT_TRUE(std::signbit(trunc_exact(-0.25f)) && std::signbit(floor_exact(-0.0f)));
}

TEST(Kernels, NearestSourceIndexFollowsPyTorch) {
  EXPECT_EQ(nearest_source_index(5, 10, 10), 5);   // same size: identity
  EXPECT_EQ(nearest_source_index(7, 10, 20), 3);   // exact 2x upscale: dst >> 1
  EXPECT_EQ(nearest_source_index(2, 10, 3), 6);    // floor(2 * 10/3)
  EXPECT_EQ(nearest_source_index(2, 3, 3), 2);
}

TEST(Kernels, NearestExactSourceIndexTakesThePixelWhoseCentreIsNearest) {
  EXPECT_EQ(nearest_exact_source_index(5, 10, 10), 5);  // same size: identity
  EXPECT_EQ(nearest_exact_source_index(0, 10, 3), 1);   // floor(0.5 * 10/3), where "nearest" takes 0
  EXPECT_EQ(nearest_exact_source_index(2, 10, 3), 8);   // floor(2.5 * 10/3)
  EXPECT_EQ(nearest_exact_source_index(7, 10, 20), 3);  // floor(7.5 / 2)
  EXPECT_EQ(nearest_exact_source_index(2, 3, 1), 2);    // clamped to the last pixel
}

class AxisTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(AxisTest, WeightsSumToOneAndTapsStayInside) {
  const auto [mode, antialias] = GetParam();
  for (int64_t in : {1, 2, 7, 31, 100}) {
    for (int64_t out : {1, 3, 7, 50, 224}) {
      for (int64_t dst = 0; dst < out; ++dst) {
        const auto a = make_resample_axis<double>(mode, antialias, in, out, dst);
        ASSERT_GE(a.count, 1);
        double sum = 0;
        for (int64_t j = 0; j < a.count; ++j) {
          const int64_t i = axis_index(a, j);
          ASSERT_GE(i, 0);
          ASSERT_LT(i, in);
          sum += axis_weight(a, j);
        }
        EXPECT_NEAR(sum, 1.0, 1e-9) << "in=" << in << " out=" << out << " dst=" << dst;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllModes, AxisTest,
                         ::testing::Values(std::make_tuple(0, false), std::make_tuple(1, false), std::make_tuple(1, true),
                                           std::make_tuple(2, false), std::make_tuple(2, true)));

TEST(Kernels, SameSizeResampleIsIdentity) {
  for (int mode : {0, 1, 2}) {
    for (bool aa : {false, true}) {
      for (int64_t dst = 0; dst < 9; ++dst) {
        const auto a = make_resample_axis<float>(mode, aa, 9, 9, dst);
        float at_dst = 0, elsewhere = 0;
        for (int64_t j = 0; j < a.count; ++j) (axis_index(a, j) == dst ? at_dst : elsewhere) += axis_weight(a, j);
        EXPECT_FLOAT_EQ(at_dst, 1.0f) << mode << aa << dst;
        EXPECT_FLOAT_EQ(elsewhere, 0.0f);
      }
    }
  }
}

TEST(Kernels, BilinearDownscaleByTwoAveragesPairs) {
  // 4 -> 2 without antialias: source 0.5 and 2.5 -> taps (0, 1) and (2, 3), weights 1/2
  const auto a = make_resample_axis<float>(kBilinear, false, 4, 2, 1);
  EXPECT_EQ(axis_index(a, 0), 2);
  EXPECT_EQ(axis_index(a, 1), 3);
  EXPECT_FLOAT_EQ(axis_weight(a, 0), 0.5f);
  // with antialias: triangle of half-width 2 centred at 3.0 over pixel centres 1.5, 2.5, 3.5
  // (pixel 4 is outside): raw weights 0.25, 0.75, 0.75, normalised by their sum 1.75
  const auto b = make_resample_axis<float>(kBilinear, true, 4, 2, 1);
  EXPECT_EQ(b.first, 1);
  EXPECT_EQ(b.count, 3);
  EXPECT_FLOAT_EQ(axis_weight(b, 0), 0.25f / 1.75f);
  EXPECT_FLOAT_EQ(axis_weight(b, 2), 0.75f / 1.75f);
}

TEST(Kernels, AffineTapsAndBlend) {
  // bilinear at (1.25, 2.5): four taps, weights sum to 1 inside the image
  const auto t = affine_taps<float, 4>(1.25f, 2.5f, 5, 5);
  static_assert(sizeof(t.w) / sizeof(t.w[0]) == 4, "bilinear: four taps");
  EXPECT_FLOAT_EQ(t.w[0] + t.w[1] + t.w[2] + t.w[3], 1.0f);
  EXPECT_FLOAT_EQ(t.w[0], 0.75f * 0.5f);
  EXPECT_FLOAT_EQ(t.mask, 1.0f);
  // half outside on the left: mask is the weight of the inside taps (the east ones, at x = 0)
  const auto u = affine_taps<float, 4>(-0.5f, 1.0f, 5, 5);
  EXPECT_FLOAT_EQ(u.mask, 0.5f);
  EXPECT_FALSE(u.valid[0]);
  EXPECT_TRUE(u.valid[1]);
  EXPECT_EQ(u.ix[1], 0);
  // far outside or not a number: no tap is valid, none is converted from the float
  for (const float far : {1e30f, -1e30f, NAN}) {
    const auto f = affine_taps<float, 4>(far, 1.0f, 5, 5);
    EXPECT_EQ(f.valid[0] || f.valid[1] || f.valid[2] || f.valid[3], false);
    EXPECT_FALSE((affine_taps<float, 1>(1.0f, far, 5, 5).valid[0]));
  }
  // torchvision's blend: mask * (s - fill) + fill
  EXPECT_FLOAT_EQ(affine_blend(10.0f, 0.5f, true, 100.0f, kBilinear), 55.0f);
  EXPECT_FLOAT_EQ(affine_blend(10.0f, 0.5f, false, 100.0f, kBilinear), 10.0f);
  EXPECT_FLOAT_EQ(affine_blend(10.0f, 0.4f, true, 100.0f, kNearest), 100.0f);
  // nearest rounds half to even, like grid_sample; -0.5 rounds to 0 (inside), 4.5 to 4
  const auto n = affine_taps<float, 1>(2.5f, 1.5f, 5, 5);
  static_assert(sizeof(n.w) / sizeof(n.w[0]) == 1, "nearest: one tap");
  EXPECT_EQ(n.ix[0], 2);
  EXPECT_EQ(n.iy[0], 2);
  EXPECT_TRUE((affine_taps<float, 1>(-0.5f, 4.5f, 5, 5).valid[0]));
  EXPECT_FALSE((affine_taps<float, 1>(-0.51f, 0.0f, 5, 5).valid[0]));
}

TEST(Kernels, NormalizeMatchesTorchvisionOrder) {
  const float v = 200.0f;
  const float expected = (v * (1.0f / 255.0f) - 0.485f) / 0.229f;
  EXPECT_EQ(normalize_px(v, static_cast<float>(PixelRange<uint8_t>::inv_max), 0.485f, 0.229f), expected);
  EXPECT_EQ(flip_index(0, 10, true), 9);
  EXPECT_EQ(flip_index(3, 10, false), 3);
}

TEST(Kernels, PolicySampleFromDraws) {
  // a space of 3 ops: identity (unsigned), gamma and shear_x (signed); 2 bins each
  const int64_t ids[3] = {kColorIdentity, kColorGamma, kAugShearX};
  const float mags[6] = {0.0f, 0.0f, 0.1f, 0.2f, 0.3f, 0.4f};
  const bool sgn[3] = {false, true, true};
  const int64_t sub_idx[2] = {1, 2}, sub_bins[2] = {0, 1};
  const float sub_prob[2] = {1.0f, 0.0f};
  const PolicySpace sp{3, 2, ids, mags, sgn, 1, sub_idx, sub_prob, sub_bins};
  int64_t choice[2], op[2];
  float m[2];
  // RandAugment(2, bin 1): op of u 0.0 -> index 0, u 0.99 -> index 2; signs 0.2 <= 0.5, 0.7 > 0.5
  const double ra[4] = {0.0, 0.2, 0.99, 0.7};
  EXPECT_EQ(policy_draws(kPolicyRand, 2), 4);
  policy_sample(kPolicyRand, 2, 1, ra, sp, choice, op, m);
  EXPECT_EQ(choice[0], 0);
  EXPECT_EQ(op[0], kColorIdentity);
  EXPECT_EQ(m[0], 0.0f);  // unsigned op: not negated
  EXPECT_EQ(choice[1], 2);
  EXPECT_EQ(op[1], kAugShearX);
  EXPECT_EQ(m[1], 0.4f);
  // TrivialAugmentWide: op 0.5 -> 1, bin 0.5 -> 1, sign 0.5 <= 0.5 (negated)
  const double ta[3] = {0.5, 0.5, 0.5};
  policy_sample(kPolicyTrivial, 1, 0, ta, sp, choice, op, m);
  EXPECT_EQ(choice[0], 1);
  EXPECT_EQ(op[0], kColorGamma);
  EXPECT_EQ(m[0], -0.2f);
  // AutoAugment: sub-policy 0; its first op applied (0.3 <= 1.0) and negated, the second not
  // applied (0.9 > 0.0): the identity, choice -1
  const double aa[5] = {0.5, 0.3, 0.1, 0.9, 0.9};
  EXPECT_EQ(policy_slots(kPolicyAuto, 0), 2);
  policy_sample(kPolicyAuto, 0, 0, aa, sp, choice, op, m);
  EXPECT_EQ(choice[0], 1);
  EXPECT_EQ(op[0], kColorGamma);
  EXPECT_EQ(m[0], -0.1f);
  EXPECT_EQ(choice[1], -1);
  EXPECT_EQ(op[1], kColorIdentity);
  EXPECT_EQ(m[1], 0.4f);
  // the largest draw below 1, and 1 itself, stay in range
  EXPECT_EQ(uniform_index(std::nextafter(1.0, 0.0), 14), 13);
  EXPECT_EQ(uniform_index(1.0, 14), 13);
  EXPECT_EQ(uniform_index(0.0, 14), 0);
}
