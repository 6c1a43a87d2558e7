// The operators from LibTorch C++ through the installed public header (torchaug/torchaug.h), checked
// against ATen references.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torchaug/torchaug.h>

#include <string>
#include <vector>

TEST(Ops, SchemasAreRegistered) {
  for (const char* name : {"torchaug::resized_crop", "torchaug::resized_crop_ragged", "torchaug::warp_affine",
                           "torchaug::flip", "torchaug::normalize", "torchaug::_resized_crop_backward",
                           "torchaug::_warp_affine_backward"}) {
    EXPECT_TRUE(c10::Dispatcher::singleton().findSchema({name, ""}).has_value()) << name;
  }
}

TEST(Ops, ResizedCropMatchesInterpolateOfTheCrop) {
  torch::manual_seed(0);
  auto x = torch::rand({2, 3, 20, 30}, torch::kDouble);
  auto boxes = torch::tensor({2, 3, 12, 17, 0, 0, 20, 30}, torch::kLong).view({2, 4});
  auto out = torchaug::resized_crop(x, boxes, {9, 11}, 1, true);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2, 3, 9, 11}));
  namespace F = torch::nn::functional;
  auto crop0 = x.slice(0, 0, 1).slice(2, 2, 14).slice(3, 3, 20);
  auto ref0 = F::interpolate(crop0, F::InterpolateFuncOptions().size(std::vector<int64_t>{9, 11})
                                       .mode(torch::kBilinear).align_corners(false).antialias(true));
  EXPECT_TRUE(torch::allclose(out.slice(0, 0, 1), ref0, 1e-9, 1e-9));
  auto ref1 = F::interpolate(x.slice(0, 1, 2), F::InterpolateFuncOptions().size(std::vector<int64_t>{9, 11})
                                                    .mode(torch::kBilinear).align_corners(false).antialias(false));
  EXPECT_TRUE(torch::allclose(torchaug::resized_crop(x, boxes, {9, 11}, 1, false).slice(0, 1, 2), ref1, 1e-9, 1e-9));
}

TEST(Ops, FlipNormalizeAndWarpAffine) {
  auto x = torch::randint(0, 256, {2, 3, 5, 6}, torch::kByte);
  auto h = torch::tensor({true, false});
  auto v = torch::tensor({false, true});
  auto f = torchaug::flip(x, h, v);
  EXPECT_TRUE(torch::equal(f[0], x[0].flip({2})));
  EXPECT_TRUE(torch::equal(f[1], x[1].flip({1})));

  auto mean = torch::full({2, 3}, 0.5f);
  auto std = torch::full({2, 3}, 0.25f);
  auto n = torchaug::normalize(x, mean, std, at::kFloat, at::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(n.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::allclose(n, (x.to(torch::kFloat) * (1.0f / 255.0f) - 0.5f) / 0.25f));

  auto eye = torch::tensor({1.f, 0.f, 0.f, 0.f, 1.f, 0.f}).view({1, 2, 3}).expand({2, 2, 3}).contiguous();
  EXPECT_TRUE(torch::equal(torchaug::warp_affine(x, eye, {5, 6}), x));
  // an op without a typed function, by name
  auto bright = torchaug::call<at::Tensor(const at::Tensor&, const at::Tensor&)>("adjust_brightness", x.to(torch::kFloat) / 255,
                                                                              torch::full({2}, 2.0f));
  EXPECT_TRUE(torch::allclose(bright, (x.to(torch::kFloat) / 255 * 2).clamp(0, 1)));
}

// The C++ autograd kernels (csrc/autograd.cpp) from LibTorch: resized_crop's gradient is
// ATen's antialiased interpolate's gradient on the crop; augment, which has none, raises when one
// is asked for, and builds no graph when its input needs none.
TEST(Ops, AutogradKernels) {
  torch::manual_seed(1);
  auto x = torch::rand({2, 3, 20, 30}, torch::kDouble).requires_grad_();
  auto boxes = torch::tensor({2, 3, 12, 17, 0, 0, 20, 30}, torch::kLong).view({2, 4});
  auto out = torchaug::resized_crop(x, boxes, {9, 11}, 1, true);
  ASSERT_TRUE(out.requires_grad());
  auto g = torch::rand(out.sizes(), torch::kDouble);
  auto grad = torch::autograd::grad({out}, {x}, {g})[0];
  namespace F = torch::nn::functional;
  auto opts = F::InterpolateFuncOptions().size(std::vector<int64_t>{9, 11}).mode(torch::kBilinear).align_corners(false).antialias(true);
  auto xr = x.detach().clone().requires_grad_();
  auto ref = torch::cat({F::interpolate(xr.slice(0, 0, 1).slice(2, 2, 14).slice(3, 3, 20), opts),
                         F::interpolate(xr.slice(0, 1, 2), opts)});
  auto grad_ref = torch::autograd::grad({ref}, {xr}, {g})[0];
  EXPECT_TRUE(torch::allclose(grad, grad_ref, 1e-9, 1e-12));
  EXPECT_EQ(grad.slice(0, 0, 1).slice(2, 0, 2).abs().sum().item<double>(), 0.0);  // outside the crop

  auto img = torch::rand({2, 3, 8, 8});
  auto ops = torch::full({2, 1}, 1, torch::kLong);  // brightness
  auto mags = torch::full({2, 1}, 0.2f);
  auto plain = torchaug::augment(img, ops, mags);
  EXPECT_FALSE(plain.requires_grad());
  auto y = torchaug::augment(img.clone().requires_grad_(), ops, mags);
  ASSERT_TRUE(y.requires_grad());
  EXPECT_TRUE(torch::equal(y.detach(), plain));
  try {
    y.sum().backward();
    FAIL() << "augment's backward did not raise";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("torchaug::augment is not differentiable with respect to images"), std::string::npos)
        << e.what();
  }
}

TEST(Ops, ErrorsNameTheArgument) {
  auto x = torch::zeros({2, 3, 5, 6}, torch::kByte);
  auto boxes = torch::zeros({2, 3}, torch::kLong);
  try {
    torchaug::resized_crop(x, boxes, {4, 4});
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("torchaug::resized_crop: boxes must have shape (B, 4) with B=2, got (2, 3)"),
              std::string::npos)
        << e.what();
  }
}
