// The order in which the blocks of augment's resident kernel (csrc/cuda/augment_resident.cu) take
// the samples of a batch.
#include <c10/cuda/CUDAException.h>

#include <algorithm>

#include "../kernels/augment.h"
#include "../kernels/color.h"
#include "dependent_launch.cuh"
#include "resident_order.cuh"
#include "warp.cuh"

namespace torchaug {
namespace {

// ---- the order of the samples ----------------------------------------------------------------
// The launch is a block per sample in a few waves (256 samples of 224 x 224 are two on an H100's
// 132 SMs, one block an SM), and blocks start in index order. A program costs from nothing (the
// identity) to ~6 LUT slots a slot (hue, bilinear geometric ops), so a costly sample that starts
// late finishes alone while the other SMs idle. Blocks therefore take their samples by cost:
// resident_order_kernel sorts the sample indices by an estimate of the program's time in one block
// (a counting sort), and block i runs sample order[i]: half a wave of the cheapest programs, then
// the others longest first (list scheduling, LPT). The cheap half wave comes first because a
// block's load and normalize store are bound by DRAM and its slots by its SM: a first wave of long
// programs alone leaves DRAM idle while it computes. On an H100 (RandAugment(2, 9) with the fused
// normalize, 256 x 224 x 224) the kernel took 0.147-0.190 ms in the drawn order, 0.126-0.130 ms
// longest first and 0.115-0.119 ms with the cheap half wave first. Which block runs a sample does
// not change its bytes.
constexpr int kOrderThreads = 1024;  // at most; a thread a sample, and at least one a bucket
constexpr int kOrderBuckets = 256;  // estimated costs above the last bucket share it

// A slot's estimated time on the resident path, in ~3 us units of a batch of 256 samples of 224 x
// 224 on an H100 (the batch of [op, identity] programs minus the batch of identities, fused
// normalize to float32: a LUT slot 12-15 us, contrast / autocontrast 21-22, grayscale 25, equalize
// 36, nearest shear 34-36, translate and rotate 30-32, every geometric op bilinear 71-73, sharpness
// in 4-pixel words ~51-63; saturation and hue in their word paths (kernels::saturation_words,
// hue_words) on an H200, uint8 out: 18 and 43 us, a LUT slot 14). Unknown ids are the identity
// (lower_aug).
__device__ __forceinline__ int resident_slot_cost(int64_t op, bool bilinear) {
  switch (op) {
    case kernels::kColorBrightness:
    case kernels::kColorInvert:
    case kernels::kColorPosterize:
    case kernels::kColorSolarize:
      return 4;
    case kernels::kColorGamma:
    case kernels::kColorSolarizeAdd:
      return 5;
    case kernels::kColorContrast:
    case kernels::kColorAutocontrast:
      return 7;
    case kernels::kColorGrayscale:
      return 8;
    case kernels::kColorSaturation:
      return 6;
    case kernels::kColorEqualize:
      return 12;
    case kernels::kAugShearX:
    case kernels::kAugShearY:
      return bilinear ? 24 : 12;
    case kernels::kAugTranslateX:
    case kernels::kAugTranslateY:
    case kernels::kAugRotate:
      return bilinear ? 24 : 10;
    case kernels::kColorHue:
      return 14;
    case kernels::kAugSharpness:
      return 21;
    default:
      return 0;
  }
}

// order: the B sample indices, the lead least costly first (the cheapest first), then the others the
// most costly first (the order within a cost is whichever the atomics give: it only decides which
// block runs which sample).
__global__ void __launch_bounds__(kOrderThreads) resident_order_kernel(const int64_t* ops, Strides2 ops_s, int B, int n,
                                                                       bool bilinear, int lead, int* order) {
  dependent_launch_begin();
  __shared__ int start[kOrderBuckets];
  __shared__ int wsum[kOrderBuckets / 32];
  const int t = threadIdx.x, lane = t % 32;
  const auto bucket = [&](int b) {  // buckets run from the most costly (0) down
    int c = 0;
    for (int k = 0; k < n; ++k) c += resident_slot_cost(ops[ops_s.at(b, k)], bilinear);
    return kOrderBuckets - 1 - min(c, kOrderBuckets - 1);
  };
  const int nt = blockDim.x;
  // a thread's first sample's bucket is kept (a batch of at most nt samples reads its ops once), its
  // loads issued before the counts are cleared
  const int first = t < B ? bucket(t) : 0;
  for (int i = t; i < kOrderBuckets; i += nt) start[i] = 0;
  __syncthreads();
  if (t < B) atomicAdd(&start[first], 1);
  for (int b = t + nt; b < B; b += nt) atomicAdd(&start[bucket(b)], 1);
  __syncthreads();
  // each bucket's first position: the exclusive scan of the counts (a warp scan, then the warps before)
  int h = 0, x = 0;
  if (t < kOrderBuckets) {
    h = start[t];
    x = warp_inclusive_sum(h, lane);
    if (lane == 31) wsum[t / 32] = x;
  }
  __syncthreads();
  if (t < kOrderBuckets) {
    for (int w = 0; w < t / 32; ++w) x += wsum[w];
    start[t] = x - h;
  }
  __syncthreads();
  for (int b = t; b < B; b += nt) {
    const int rank = atomicAdd(&start[b == t ? first : bucket(b)], 1);  // 0: the most costly
    order[rank >= B - lead ? B - 1 - rank : lead + rank] = b;
  }
}

}  // namespace

void launch_resident_order(const int64_t* ops, Strides2 ops_s, int B, int n, bool bilinear, int lead, int* order,
                           cudaStream_t stream, int device) {
  // a thread a sample up to kOrderThreads (fewer warps at the barriers of a small batch)
  const int threads = std::min(kOrderThreads, std::max(kOrderBuckets, (B + 31) / 32 * 32));
  launch_dependent(resident_order_kernel, dim3(1), dim3(threads), 0, stream, device, ops, ops_s, B, n, bilinear, lead,
                   order);
}

}  // namespace torchaug
