// The shared math of the filter and noise families (csrc/kernels/filter.h, random.h, noise.h) on
// the host, and the filter / noise ops through the dispatcher.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "kernels/filter.h"
#include "kernels/noise.h"
#include "kernels/random.h"

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
  double s = 0, s2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const Philox4 r = random_words(12345, kStreamGaussian, i);
    const double z = standard_normal(r.v[0], r.v[1]);
    s += z;
    s2 += z * z;
  }
  EXPECT_NEAR(s / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 1.0, 0.01);
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
