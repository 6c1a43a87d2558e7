// The detection family from C++: the shared IoU and RoI Align math on the host, and nms through
// the dispatcher.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>

#include <torchaug/kernels/detection.h>

using namespace torchaug::kernels;

TEST(DetectionKernels, OverlapIsStrictlyAboveTheThreshold) {
  const float a[4] = {0, 0, 10, 10}, b[4] = {5, 0, 15, 10};  // IoU = 50 / 150 = 1/3
  EXPECT_TRUE(nms_overlaps<float>(a, b, 0.33f));
  EXPECT_FALSE(nms_overlaps<float>(a, b, 0.34f));
  const double same[4] = {1, 1, 3, 3};
  EXPECT_FALSE(nms_overlaps<double>(same, same, 1.0));  // IoU 1 is not > 1
  EXPECT_TRUE(nms_overlaps<double>(same, same, 0.999));
  const float point[4] = {2, 2, 2, 2};  // zero area: 0 / 0 never suppresses
  EXPECT_FALSE(nms_overlaps<float>(point, point, 0.0f));
}

TEST(DetectionKernels, RoiTapsAreTorchvisionsBilinearWeights) {
  const RoiTap<double> t = roi_bilinear_tap<double>(1.25, 2.5, 4, 4);
  ASSERT_TRUE(t.valid);
  EXPECT_EQ(t.y0, 1);
  EXPECT_EQ(t.y1, 2);
  EXPECT_EQ(t.x0, 2);
  EXPECT_EQ(t.x1, 3);
  EXPECT_DOUBLE_EQ(t.w00 + t.w01 + t.w10 + t.w11, 1.0);
  EXPECT_DOUBLE_EQ(t.w11, 0.25 * 0.5);
  EXPECT_FALSE((roi_bilinear_tap<double>(-1.5, 0.0, 4, 4).valid));   // more than a pixel outside
  const RoiTap<double> edge = roi_bilinear_tap<double>(3.7, -0.5, 4, 4);  // clamped to the last row
  ASSERT_TRUE(edge.valid);
  EXPECT_EQ(edge.y0, 3);
  EXPECT_EQ(edge.y1, 3);
  EXPECT_DOUBLE_EQ(edge.w00, 1.0);
}

TEST(DetectionOps, NmsThroughTheDispatcher) {
  auto h = c10::Dispatcher::singleton()
               .findSchemaOrThrow("torchaug::nms", "")
               .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double)>();
  const at::Tensor boxes = at::tensor({0.f, 0.f, 10.f, 10.f, 1.f, 1.f, 11.f, 11.f, 20.f, 20.f, 30.f, 30.f}).view({3, 4});
  const at::Tensor scores = at::tensor({0.5f, 0.9f, 0.1f});
  const at::Tensor keep = h.call(boxes, scores, 0.5);
  ASSERT_EQ(keep.numel(), 2);
  EXPECT_EQ(keep[0].item<int64_t>(), 1);  // the best box first; box 0 overlaps it by 0.68
  EXPECT_EQ(keep[1].item<int64_t>(), 2);
}
