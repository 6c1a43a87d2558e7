// A torchaug pipeline scripted and saved by Python (tests/cpp/make_scripted.py, run by ctest as
// this test's fixture) runs from C++ with the torchaug library loaded, and gives the output that
// Python's scripted module gave under the same seed.
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdlib>
#include <string>

TEST(TorchScript, PipelineSavedByPythonRunsFromCpp) {
  const char* dir = std::getenv("TORCHAUG_SCRIPTED_DIR");
  ASSERT_NE(dir, nullptr) << "TORCHAUG_SCRIPTED_DIR is not set: run through ctest (the make_scripted_pipeline fixture writes it)";
  auto data = torch::jit::load(std::string(dir) + "/data.pt");
  const at::Tensor x = data.attr("x").toTensor();
  const at::Tensor expected = data.attr("expected").toTensor();
  auto pipeline = torch::jit::load(std::string(dir) + "/pipeline.pt");

  auto mixer = torch::jit::load(std::string(dir) + "/mixer.pt");

  torch::manual_seed(1234);
  const at::Tensor out = pipeline.forward({x}).toTensor();
  EXPECT_EQ(out.sizes(), expected.sizes());
  EXPECT_EQ(out.scalar_type(), at::kFloat);
  EXPECT_TRUE(torch::equal(out, expected)) << "max difference " << (out - expected).abs().max().item<float>();
  // CutMix: (images, labels) -> (images, soft labels), drawn after the pipeline as in Python
  auto mixed = mixer.forward({out, data.attr("labels").toTensor()}).toTuple();
  EXPECT_TRUE(torch::equal(mixed->elements()[0].toTensor(), data.attr("mixed").toTensor()));
  EXPECT_TRUE(torch::equal(mixed->elements()[1].toTensor(), data.attr("mixed_labels").toTensor()));

  // another seed draws other parameters
  torch::manual_seed(99);
  EXPECT_FALSE(torch::equal(pipeline.forward({x}).toTensor(), expected));
}
