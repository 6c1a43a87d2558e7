// The operators called through the dispatcher from LibTorch C++, checked against ATen references.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

c10::OperatorHandle op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

at::Tensor resized_crop(const at::Tensor& x, const at::Tensor& boxes, std::vector<int64_t> size, int64_t mode,
                        bool antialias) {
  static auto h = op("torchaug::resized_crop")
                      .typed<at::Tensor(const at::Tensor&, const at::Tensor&, c10::SymIntArrayRef, int64_t, bool,
                                        const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
                                        const std::optional<at::Tensor>&, std::optional<at::ScalarType>,
                                        std::optional<at::MemoryFormat>)>();
  return h.call(x, boxes, c10::fromIntArrayRefSlow(size), mode, antialias, std::nullopt, std::nullopt, std::nullopt,
                std::nullopt, std::nullopt);
}

}  // namespace

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
  auto out = resized_crop(x, boxes, {9, 11}, 1, true);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2, 3, 9, 11}));
  namespace F = torch::nn::functional;
  auto crop0 = x.slice(0, 0, 1).slice(2, 2, 14).slice(3, 3, 20);
  auto ref0 = F::interpolate(crop0, F::InterpolateFuncOptions().size(std::vector<int64_t>{9, 11})
                                       .mode(torch::kBilinear).align_corners(false).antialias(true));
  EXPECT_TRUE(torch::allclose(out.slice(0, 0, 1), ref0, 1e-9, 1e-9));
  auto ref1 = F::interpolate(x.slice(0, 1, 2), F::InterpolateFuncOptions().size(std::vector<int64_t>{9, 11})
                                                    .mode(torch::kBilinear).align_corners(false).antialias(false));
  EXPECT_TRUE(torch::allclose(resized_crop(x, boxes, {9, 11}, 1, false).slice(0, 1, 2), ref1, 1e-9, 1e-9));
}

TEST(Ops, FlipNormalizeAndWarpAffine) {
  auto x = torch::randint(0, 256, {2, 3, 5, 6}, torch::kByte);
  auto flip = op("torchaug::flip").typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>();
  auto h = torch::tensor({true, false});
  auto v = torch::tensor({false, true});
  auto f = flip.call(x, h, v);
  EXPECT_TRUE(torch::equal(f[0], x[0].flip({2})));
  EXPECT_TRUE(torch::equal(f[1], x[1].flip({1})));

  auto normalize = op("torchaug::normalize")
                       .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         std::optional<at::ScalarType>, std::optional<at::MemoryFormat>)>();
  auto mean = torch::full({2, 3}, 0.5f);
  auto std = torch::full({2, 3}, 0.25f);
  auto n = normalize.call(x, mean, std, at::kFloat, at::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(n.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::allclose(n, (x.to(torch::kFloat) * (1.0f / 255.0f) - 0.5f) / 0.25f));

  auto warp = op("torchaug::warp_affine")
                  .typed<at::Tensor(const at::Tensor&, const at::Tensor&, c10::SymIntArrayRef, int64_t,
                                    const std::optional<at::Tensor>&)>();
  auto eye = torch::tensor({1.f, 0.f, 0.f, 0.f, 1.f, 0.f}).view({1, 2, 3}).expand({2, 2, 3}).contiguous();
  std::vector<int64_t> size{5, 6};
  EXPECT_TRUE(torch::equal(warp.call(x, eye, c10::fromIntArrayRefSlow(size), 1, std::nullopt), x));
}

// The C++ autograd kernels (csrc/autograd.cpp) from LibTorch: resized_crop's gradient is
// ATen's antialiased interpolate's gradient on the crop; augment, which has none, raises when one
// is asked for, and builds no graph when its input needs none.
TEST(Ops, AutogradKernels) {
  torch::manual_seed(1);
  auto x = torch::rand({2, 3, 20, 30}, torch::kDouble).requires_grad_();
  auto boxes = torch::tensor({2, 3, 12, 17, 0, 0, 20, 30}, torch::kLong).view({2, 4});
  auto out = resized_crop(x, boxes, {9, 11}, 1, true);
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

  auto augment = op("torchaug::augment")
                     .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t,
                                       const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
                                       const std::optional<at::Tensor>&, std::optional<at::ScalarType>,
                                       std::optional<at::MemoryFormat>)>();
  auto img = torch::rand({2, 3, 8, 8});
  auto ops = torch::full({2, 1}, 1, torch::kLong);  // brightness
  auto mags = torch::full({2, 1}, 0.2f);
  auto plain = augment.call(img, ops, mags, 0, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
  EXPECT_FALSE(plain.requires_grad());
  auto y = augment.call(img.clone().requires_grad_(), ops, mags, 0, std::nullopt, std::nullopt, std::nullopt,
                        std::nullopt, std::nullopt);
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
    resized_crop(x, boxes, {4, 4}, 1, true);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("torchaug::resized_crop: boxes must have shape (B, 4) with B=2, got (2, 3)"),
              std::string::npos)
        << e.what();
  }
}
