// CUDA kernels of the detection family (csrc/ops/detection.h).
//
// NMS: one kernel fills the overlap bit matrix of the score-sorted boxes (64 x 64 tiles of the
// upper triangle; word (column tile c, row i) has bit j set when box 64c + j > i overlaps box i,
// stored column-tile-major so a tile's 64 rows are adjacent), and one single-block kernel runs the
// greedy scan on the GPU: a warp resolves the 64 rows of a tile from the removal word and the
// tile's diagonal words, then the block ORs the kept rows' words into the removal words of the
// later tiles. torchvision copies the whole matrix to the host and scans there.
//
// RoI Align: one thread per output element; the backward adds with atomics into an fp32 (fp64)
// input gradient.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <algorithm>

#include "../ops/detection.h"
#include "../ops/settings.h"

namespace torchaug {
namespace {

constexpr int kTile = 64;
constexpr int kScanThreads = 1024;
constexpr int kThreads = 256;

// The last column tile that a row tile's boxes can overlap: the tile holding the end of the
// category of its last box (batched_nms: categories are contiguous runs), else the last tile.
__device__ __forceinline__ int64_t nms_last_tile(const int64_t* class_end, int64_t n, int64_t tiles, int64_t row_tile) {
  return class_end ? class_end[min((row_tile + 1) * kTile, n) - 1] / kTile : tiles - 1;
}

template <typename T>
__global__ void __launch_bounds__(kTile) nms_mask_kernel(const T* __restrict__ boxes, const int64_t* __restrict__ cls,
                                                         const int64_t* __restrict__ class_end, int64_t n, int64_t tiles,
                                                         double threshold, unsigned long long* __restrict__ mask) {
  using acc_t = typename AccOf<T>::type;
  const int64_t row_tile = blockIdx.y, col_tile = blockIdx.x;
  if (row_tile > col_tile || col_tile > nms_last_tile(class_end, n, tiles, row_tile)) return;  // never read
  const int64_t row_size = min(n - row_tile * kTile, static_cast<int64_t>(kTile));
  const int64_t col_size = min(n - col_tile * kTile, static_cast<int64_t>(kTile));
  __shared__ T tile[kTile * 4];
  __shared__ int64_t tile_cls[kTile];
  if (threadIdx.x < col_size) {
    const int64_t j = col_tile * kTile + threadIdx.x;
    for (int k = 0; k < 4; ++k) tile[threadIdx.x * 4 + k] = boxes[j * 4 + k];
    tile_cls[threadIdx.x] = cls ? cls[j] : 0;
  }
  __syncthreads();
  if (threadIdx.x >= row_size) return;
  const int64_t i = row_tile * kTile + threadIdx.x;
  T box[4];
  for (int k = 0; k < 4; ++k) box[k] = boxes[i * 4 + k];
  const int64_t ci = cls ? cls[i] : 0;
  const acc_t thr = static_cast<acc_t>(threshold);
  unsigned long long bits = 0;
  for (int64_t j = row_tile == col_tile ? threadIdx.x + 1 : 0; j < col_size; ++j)
    if (tile_cls[j] == ci && kernels::nms_overlaps<acc_t>(box, tile + j * 4, thr)) bits |= 1ULL << j;
  mask[col_tile * n + i] = bits;
}

// remv: the removal words, in shared memory when they fit (remv_global == nullptr), else global.
__global__ void __launch_bounds__(kScanThreads) nms_scan_kernel(const unsigned long long* __restrict__ mask, int64_t n,
                                                               int64_t tiles, const int64_t* __restrict__ class_end,
                                                               bool* __restrict__ keep, unsigned long long* remv_global) {
  extern __shared__ unsigned long long remv_shared[];
  unsigned long long* remv = remv_global ? remv_global : remv_shared;
  __shared__ int kept_rows[kTile];
  __shared__ int kept_count;
  for (int64_t c = threadIdx.x; c < tiles; c += blockDim.x) remv[c] = 0;
  __syncthreads();
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t row0 = t * kTile;
    const int rows = static_cast<int>(min(n - row0, static_cast<int64_t>(kTile)));
    if (threadIdx.x < 32) {
      const int lane = threadIdx.x;
      const unsigned long long* diag = mask + t * n + row0;
      const unsigned long long d0 = lane < rows ? diag[lane] : 0ULL;
      const unsigned long long d1 = lane + 32 < rows ? diag[lane + 32] : 0ULL;
      unsigned long long removed = remv[t], kept = 0;
      for (int r = 0; r < rows; ++r) {
        const unsigned long long dr = __shfl_sync(0xffffffffu, r < 32 ? d0 : d1, r & 31);
        if (!((removed >> r) & 1ULL)) {
          kept |= 1ULL << r;
          removed |= dr;
        }
      }
      if (lane < rows) keep[row0 + lane] = (kept >> lane) & 1ULL;
      if (lane + 32 < rows) keep[row0 + lane + 32] = (kept >> (lane + 32)) & 1ULL;
      if (lane == 0) {
        int count = 0;
        for (unsigned long long k = kept; k; k &= k - 1) kept_rows[count++] = __ffsll(static_cast<long long>(k)) - 1;
        kept_count = count;
      }
    }
    __syncthreads();
    const int count = kept_count;
    const int64_t last = nms_last_tile(class_end, n, tiles, t);
    for (int64_t c = t + 1 + threadIdx.x; c <= last; c += blockDim.x) {
      const unsigned long long* col = mask + c * n + row0;
      unsigned long long acc = 0;
#pragma unroll 8
      for (int k = 0; k < count; ++k) acc |= col[kept_rows[k]];
      remv[c] |= acc;
    }
    __syncthreads();
  }
}

void nms_keep_cuda(const at::Tensor& boxes, const at::Tensor& classes, const at::Tensor& class_end,
                   double iou_threshold, at::Tensor& keep) {
  const c10::cuda::CUDAGuard guard(boxes.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const int64_t n = boxes.size(0), tiles = (n + kTile - 1) / kTile;
  TORCHAUG_CHECK(tiles <= 65535, "torchaug::nms: at most ", 65535 * kTile, " boxes on CUDA, got ", n);
  at::Tensor mask = at::empty({tiles * n}, boxes.options().dtype(at::kLong));
  auto* m = reinterpret_cast<unsigned long long*>(mask.data_ptr<int64_t>());
  const int64_t* cls = classes.defined() ? classes.data_ptr<int64_t>() : nullptr;
  const int64_t* end = class_end.defined() ? class_end.data_ptr<int64_t>() : nullptr;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, boxes.scalar_type(), "nms_cuda", [&] {
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(tiles));
    nms_mask_kernel<scalar_t><<<grid, kTile, 0, stream>>>(boxes.data_ptr<scalar_t>(), cls, end, n, tiles, iou_threshold, m);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  // the removal words live in shared memory up to 5120 tiles (327,680 boxes); beyond, in global
  // memory (the nms_shared_tiles test hook lowers the limit, for the test of that path)
  const int64_t forced = test_hooks::get(test_hooks::kNmsSharedTiles);
  const int64_t shared_tiles = forced >= 0 ? forced : int64_t{5120};
  const int64_t shared_bytes = tiles * static_cast<int64_t>(sizeof(unsigned long long));
  const bool in_shared = tiles <= shared_tiles;
  at::Tensor remv;
  if (!in_shared) remv = at::empty({tiles}, boxes.options().dtype(at::kLong));
  nms_scan_kernel<<<1, kScanThreads, in_shared ? shared_bytes : 0, stream>>>(
      m, n, tiles, end, keep.data_ptr<bool>(),
      in_shared ? nullptr : reinterpret_cast<unsigned long long*>(remv.data_ptr<int64_t>()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Output element idx: its channel and bin (c, ph, pw) and the sampling grid of its RoI. index_t
// int32 when the output has fewer than 2^31 elements (64-bit division is several times slower on
// the GPU).
template <typename acc_t, typename index_t, typename T>
__device__ __forceinline__ kernels::RoiGrid<acc_t> roi_element(index_t idx, const T* rois, const RoiAlignArgs& a,
                                                               int64_t& c, int64_t& ph, int64_t& pw) {
  const index_t w = static_cast<index_t>(a.pooled_w), h = static_cast<index_t>(a.pooled_h);
  const index_t ch = static_cast<index_t>(a.channels);
  const index_t q = idx / w, r = q / h, k = r / ch;
  pw = idx - q * w;
  ph = q - r * h;
  c = r - k * ch;
  return roi_grid<acc_t>(rois, static_cast<int64_t>(k), a);
}

template <typename T, typename index_t>
__global__ void __launch_bounds__(kThreads) roi_align_kernel(const T* __restrict__ input, const T* __restrict__ rois,
                                                             RoiAlignArgs a, int64_t total, T* __restrict__ out) {
  using acc_t = typename AccOf<T>::type;
  const int64_t plane = a.height * a.width;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t c, ph, pw;
    const kernels::RoiGrid<acc_t> g = roi_element<acc_t>(static_cast<index_t>(idx), rois, a, c, ph, pw);
    if (g.batch < 0 || g.batch >= a.batch) {  // zeros (the Python wrapper reports such RoIs)
      out[idx] = static_cast<T>(0);
      continue;
    }
    out[idx] = static_cast<T>(kernels::roi_align_px(input + (g.batch * a.channels + c) * plane, a.height, a.width, g, ph, pw));
  }
}

template <typename T, typename index_t>
__global__ void __launch_bounds__(kThreads) roi_align_backward_kernel(const T* __restrict__ grad, const T* __restrict__ rois,
                                                                      RoiAlignArgs a, int64_t total,
                                                                      typename AccOf<T>::type* __restrict__ grad_input) {
  using acc_t = typename AccOf<T>::type;
  const int64_t plane = a.height * a.width;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t c, ph, pw;
    const kernels::RoiGrid<acc_t> g = roi_element<acc_t>(static_cast<index_t>(idx), rois, a, c, ph, pw);
    if (g.batch < 0 || g.batch >= a.batch) continue;
    acc_t* dst = grad_input + (g.batch * a.channels + c) * plane;
    kernels::roi_align_backward_px<acc_t>(static_cast<acc_t>(grad[idx]), a.height, a.width, g, ph, pw,
                                          [&](int64_t i, acc_t v) { atomicAdd(dst + i, v); });
  }
}

int64_t blocks_for(int64_t total) { return std::min<int64_t>((total + kThreads - 1) / kThreads, 65536 * 8); }

void roi_align_cuda(const at::Tensor& input, const at::Tensor& rois, const RoiAlignArgs& a, at::Tensor& out) {
  const c10::cuda::CUDAGuard guard(input.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const int64_t total = out.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "roi_align_cuda", [&] {
    const auto launch = [&](auto index_zero) {
      roi_align_kernel<scalar_t, decltype(index_zero)><<<static_cast<unsigned>(blocks_for(total)), kThreads, 0, stream>>>(
          input.data_ptr<scalar_t>(), rois.data_ptr<scalar_t>(), a, total, out.data_ptr<scalar_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    if (total < (int64_t{1} << 31)) launch(int32_t{0}); else launch(int64_t{0});
  });
}

void roi_align_backward_cuda(const at::Tensor& grad, const at::Tensor& rois, const RoiAlignArgs& a,
                             at::Tensor& grad_input) {
  const c10::cuda::CUDAGuard guard(grad.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const int64_t total = grad.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad.scalar_type(), "roi_align_backward_cuda", [&] {
    using acc_t = typename AccOf<scalar_t>::type;
    const auto launch = [&](auto index_zero) {
      roi_align_backward_kernel<scalar_t, decltype(index_zero)>
          <<<static_cast<unsigned>(blocks_for(total)), kThreads, 0, stream>>>(
              grad.data_ptr<scalar_t>(), rois.data_ptr<scalar_t>(), a, total, grad_input.data_ptr<acc_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    };
    if (total < (int64_t{1} << 31)) launch(int32_t{0}); else launch(int64_t{0});
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, CUDA, m) {
  register_detection_ops<nms_keep_cuda, roi_align_cuda, roi_align_backward_cuda>(m);
}

}  // namespace torchaug
