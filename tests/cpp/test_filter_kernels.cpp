// The shared math of the filter and noise families (csrc/kernels/filter.h, random.h, noise.h) on
// the host, and the filter / noise ops through the dispatcher.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <torchaug/kernels/filter.h>
#include <torchaug/kernels/noise.h>
#include <torchaug/kernels/random.h>

using namespace torchaug::kernels;

// Known-answer vectors of Philox4x32-10 from Random123's kat_vectors (counter, key -> output).
TEST(FilterKernels, PhiloxMatchesRandom123KnownAnswers) {
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0u, 0u, 0u, 0u}, {0u, 0u}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (const Kat& k : kats) {
    const Philox4 r = philox4x32(k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3], k.key[0], k.key[1]);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(r.v[i], k.out[i]) << i;
  }
}

TEST(FilterKernels, StandardNormalMoments) {
  // both values of each pair: mean 0, variance 1, uncorrelated with each other
  double s[2] = {0, 0}, s2[2] = {0, 0}, cross = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const Philox4 r = random_words(12345, kStreamGaussian, i);
    float z[2];
    standard_normal_pair(r.v[0], r.v[1], z);
    for (int k = 0; k < 2; ++k) {
      s[k] += z[k];
      s2[k] += double(z[k]) * z[k];
    }
    cross += double(z[0]) * z[1];
  }
  for (int k = 0; k < 2; ++k) {
    EXPECT_NEAR(s[k] / n, 0.0, 0.01) << k;
    EXPECT_NEAR(s2[k] / n, 1.0, 0.01) << k;
  }
  EXPECT_NEAR(cross / n, 0.0, 0.01);
}

TEST(FilterKernels, Reflect101) {
  EXPECT_EQ(reflect101(-1, 5), 1);
  EXPECT_EQ(reflect101(-2, 5), 2);
  EXPECT_EQ(reflect101(5, 5), 3);
  EXPECT_EQ(reflect101(6, 5), 2);
  EXPECT_EQ(reflect101(3, 5), 3);
  EXPECT_EQ(reflect101(-1, 1), 0);
}

TEST(FilterKernels, LaplacianWindowsAreDalis) {
  double d3[3], d5[5], s5[5];
  laplacian_derivative_window(3, d3);
  laplacian_derivative_window(5, d5);
  laplacian_smoothing_window(5, s5);
  EXPECT_EQ(std::vector<double>(d3, d3 + 3), (std::vector<double>{1, -2, 1}));
  EXPECT_EQ(std::vector<double>(d5, d5 + 5), (std::vector<double>{1, 0, -2, 0, 1}));
  EXPECT_EQ(std::vector<double>(s5, s5 + 5), (std::vector<double>{1, 4, 6, 4, 1}));
  // window 3, smoothing 3: [[1,-2,1],[2,-4,2],[1,-2,1]] + its transpose
  double w[9];
  laplacian_weights(3, 3, 3, 3, false, 3, 3, w);
  EXPECT_EQ(std::vector<double>(w, w + 9), (std::vector<double>{2, 0, 2, 0, -8, 0, 2, 0, 2}));
  // smoothing 1: the plain 5-point stencil, normalized by 2^(4 - 4) = 1
  laplacian_weights(3, 3, 1, 1, true, 3, 3, w);
  EXPECT_EQ(std::vector<double>(w, w + 9), (std::vector<double>{0, 1, 0, 1, -4, 1, 0, 1, 0}));
}

TEST(FilterKernels, SharpnessEpilogue) {
  // uint8: x + (1 - f) * (round(blur) - x), clamped, truncated; border pixels kept
  EXPECT_EQ((filter_epilogue<float, true>(kFilterSharpness, 100.f, 110.4f, 2.0f, true)), 90.f);
  EXPECT_EQ((filter_epilogue<float, true>(kFilterSharpness, 100.f, 110.4f, 2.0f, false)), 100.f);
  EXPECT_EQ((filter_epilogue<float, true>(kFilterSharpness, 10.f, 200.f, 0.0f, true)), 200.f);
  EXPECT_EQ((filter_epilogue<float, true>(kFilterSharpness, 250.f, 10.f, 3.0f, true)), 255.f);
  EXPECT_EQ((filter_epilogue<float, true>(kFilterScaled, 0.f, -3.f, 2.0f, true)), 0.f);
  EXPECT_EQ((filter_epilogue<float, true>(kFilterConv, 0.f, 2.5f, 1.0f, true)), 2.f);  // half to even
}

namespace {
// sharpness_blend of window_sum, pixel by pixel (the slot passes' and the CPU's uint8 path): the
// byte of pixel (1, 1 + j) of a 3-row patch of 6 columns
uint32_t sharpness_pixel(const uint8_t (*patch)[6], int j, float om, bool interior) {
  float w9[9];
  sharpness_weights(w9);
  const float s = window_sum<float>(w9, 3, 3, [&](int r, int q) { return static_cast<float>(patch[r][j + q]); });
  return static_cast<uint32_t>(sharpness_blend<float, true>(static_cast<float>(patch[1][j + 1]), s, om, interior));
}

// xorshift64: the tests' own reproducible stream
struct XorShift {
  uint64_t state;
  uint64_t operator()() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
};

uint32_t row_word(const uint8_t* row) {
  return row[0] | (uint32_t(row[1]) << 8) | (uint32_t(row[2]) << 16) | (uint32_t(row[3]) << 24);
}
}  // namespace

TEST(FilterKernels, SharpnessBlurIsTheRoundedWindowSum) {
  // rint(window_sum) == (2s + 13) / 26 with s = the 9 bytes + 4 * centre, over random windows
  // (full range, and values near a few levels, whose sums sit near every s) and every s / 13 that
  // lies closest to a half integer (s = 13k + 6 and 13k + 7, windows of one value and the centre)
  float w9[9];
  sharpness_weights(w9);
  XorShift next{0x9e3779b97f4a7c15ull};
  int checked = 0;
  for (int i = 0; i < 2000000; ++i) {
    uint8_t v[9];
    const uint64_t r = next();
    const int level = static_cast<int>(r % 256);
    for (int k = 0; k < 9; ++k) {
      const uint64_t q = next();
      v[k] = i % 2 ? static_cast<uint8_t>(q) : static_cast<uint8_t>(std::min(255, std::max(0, level + static_cast<int>(q % 5) - 2)));
    }
    uint32_t s = 4u * v[4];
    for (int k = 0; k < 9; ++k) s += v[k];
    const float f = window_sum<float>(w9, 3, 3, [&](int rr, int qq) { return static_cast<float>(v[rr * 3 + qq]); });
    ASSERT_EQ(sharpness_blur_u8(s), static_cast<uint32_t>(std::rint(f))) << "s = " << s;
    ++checked;
  }
  for (int a = 0; a < 256; ++a) {
    for (int c = 0; c < 256; ++c) {  // 8 pixels of a, centre c: s = 8a + 5c
      uint8_t v[9] = {uint8_t(a), uint8_t(a), uint8_t(a), uint8_t(a), uint8_t(c), uint8_t(a), uint8_t(a), uint8_t(a), uint8_t(a)};
      const uint32_t s = 8u * a + 5u * c;
      const float f = window_sum<float>(w9, 3, 3, [&](int rr, int qq) { return static_cast<float>(v[rr * 3 + qq]); });
      ASSERT_EQ(sharpness_blur_u8(s), static_cast<uint32_t>(std::rint(f))) << a << " " << c;
    }
  }
  EXPECT_EQ(checked, 2000000);
  EXPECT_EQ(sharpness_blur_u8(6), 0u);   // 6 / 13 = 0.46
  EXPECT_EQ(sharpness_blur_u8(7), 1u);   // 0.54
  EXPECT_EQ(sharpness_blur_u8(13 * 255), 255u);
}

TEST(FilterKernels, SharpnessWordEqualsPixels) {
  // sharpness_word's 4 bytes == sharpness_blend of window_sum per pixel, over random patches and
  // factors (clamped below 0 and above 255 for factors above 1), with the border bytes kept
  XorShift next{0x2545f4914f6cdd1dull};
  const float factors[] = {0.0f, 0.1f, 0.5f, 0.99f, 1.0f, 1.3f, 1.9f, 2.0f, 5.0f, 37.0f};
  for (int i = 0; i < 200000; ++i) {
    uint8_t patch[3][6];
    const int level = static_cast<int>(next() % 256), spread = i % 3 == 0 ? 256 : 1 + static_cast<int>(next() % 40);
    for (auto& row : patch) {
      for (auto& b : row) {
        b = spread == 256 ? static_cast<uint8_t>(next())
                          : static_cast<uint8_t>(std::min(255, std::max(0, level + static_cast<int>(next() % spread) - spread / 2)));
      }
    }
    const float factor = i % 4 == 0 ? factors[i / 4 % 10] : static_cast<float>(next() % 20000) / 10000.0f;
    const float om = one_minus(factor);
    const uint32_t keep = (i % 5 == 1 ? 0xffu : 0u) | (i % 7 == 2 ? 0xff000000u : 0u);
    const uint32_t l = patch[0][0] + patch[1][0] + patch[2][0], r = patch[0][5] + patch[1][5] + patch[2][5];
    const uint32_t w = sharpness_word(row_word(patch[0] + 1), row_word(patch[1] + 1), row_word(patch[2] + 1), l, r, om, keep);
    for (int j = 0; j < 4; ++j) {
      const bool interior = !((keep >> (8 * j)) & 0xffu);
      ASSERT_EQ((w >> (8 * j)) & 0xffu, sharpness_pixel(patch, j, om, interior)) << "patch " << i << ", pixel " << j << ", factor " << factor;
    }
  }
}

TEST(FilterKernels, GaussianNoiseUint8FollowsTorchvision) {
  // x + int16(trunc(mean * 255 + z * sigma * 255)), clamped or wrapped
  NoiseSample s{0.0f, 0.1f, 0.f, 0.f, 0};
  EXPECT_EQ((gaussian_noise_px<float, true>(100.f, s, true, 1.0f)), 125.f);    // 25.5 -> 25
  EXPECT_EQ((gaussian_noise_px<float, true>(100.f, s, true, -1.0f)), 75.f);    // -25.5 -> -25
  EXPECT_EQ((gaussian_noise_px<float, true>(250.f, s, true, 1.0f)), 255.f);
  EXPECT_EQ((gaussian_noise_px<float, true>(250.f, s, false, 1.0f)), 19.f);    // 275 mod 256
}

namespace {
c10::OperatorHandle op(const char* name) { return c10::Dispatcher::singleton().findSchemaOrThrow(name, ""); }
}  // namespace

TEST(FilterOps, BlurOfAConstantImageIsConstantAndNoiseIsSeeded) {
  auto x = torch::full({2, 3, 9, 10}, 77, torch::kUInt8);
  auto blur = op("torchaug::gaussian_blur").typed<at::Tensor(const at::Tensor&, at::IntArrayRef, const at::Tensor&)>();
  EXPECT_TRUE(blur.call(x, {5, 3}, torch::tensor({1.5f, 0.7f})).equal(x));
  auto noise = op("torchaug::gaussian_noise")
                   .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, bool)>();
  auto xf = torch::full({2, 3, 9, 10}, 0.5);
  auto m = torch::zeros({1}), sd = torch::full({1}, 0.1);
  auto a = noise.call(xf, m, sd, torch::tensor({1, 2}, torch::kLong), true);
  auto b = noise.call(xf, m, sd, torch::tensor({1, 2}, torch::kLong), true);
  EXPECT_TRUE(a.equal(b));
  EXPECT_FALSE(a[0].equal(a[1]));
  EXPECT_THROW(noise.call(xf, m, sd, torch::tensor({1.0f, 2.0f}), true), c10::Error);
}
