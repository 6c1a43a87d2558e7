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

  torch::manual_seed(1234);
  const at::Tensor out = pipeline.forward({x}).toTensor();
  EXPECT_EQ(out.sizes(), expected.sizes());
  EXPECT_EQ(out.scalar_type(), at::kFloat);
  EXPECT_TRUE(torch::equal(out, expected)) << "max difference " << (out - expected).abs().max().item<float>();

  // another seed draws other parameters
  torch::manual_seed(99);
  EXPECT_FALSE(torch::equal(pipeline.forward({x}).toTensor(), expected));
}
