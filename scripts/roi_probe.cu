// Does nvJPEG's hardware batched decoder decode a crop region (ROI) faster than the whole image?
// A standalone probe (CUDA runtime + nvJPEG, no torch), for issue 6's "decode only the crop region
// where nvJPEG allows it": batches of files decoded whole (nvjpegDecodeBatched), whole through
// nvjpegDecodeBatchedEx, and each file's RandomResizedCrop-like box (scale (0.08, 1), ratio
// (3/4, 4/3)) through nvjpegDecodeBatchedEx with nvjpegDecodeParamsSetROI; the ROI output is
// checked against the same region of the whole decode.
//
//   nvcc -O2 -std=c++17 -arch=sm_90 scripts/roi_probe.cu -lnvjpeg -o /tmp/roi_probe
//   /tmp/roi_probe FILE... [--batch 256] [--iters 20] [--rounds 3]
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)
#define NJ(x)                                                                         \
  do {                                                                                \
    nvjpegStatus_t s_ = (x);                                                          \
    if (s_ != NVJPEG_STATUS_SUCCESS) {                                                \
      std::fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #x, (int)s_); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

struct Box {
  int x, y, w, h;
};

// nvJPEG's hardware batched decoder as the library's decoder uses it: a handle, state and stream of
// its own, and each batch waits for the previous one to finish on the GPU before the state is reused.
struct HwDecoder {
  nvjpegHandle_t handle;
  nvjpegJpegState_t state;
  cudaStream_t stream;
  cudaEvent_t done;
  int initialized = -1;  // the batch size the state was initialized for
  HwDecoder() {
    NJ(nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION, &handle));
    NJ(nvjpegJpegStateCreate(handle, &state));
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CK(cudaEventRecord(done, stream));
  }
  // `count` files into `dst`: nvjpegDecodeBatched without params, nvjpegDecodeBatchedEx with them
  void decode(const unsigned char* const* data, const size_t* lengths, nvjpegImage_t* dst, int count,
              nvjpegDecodeParams_t* params = nullptr) {
    CK(cudaEventSynchronize(done));
    if (initialized != count) {
      NJ(nvjpegDecodeBatchedInitialize(handle, state, count, 1, NVJPEG_OUTPUT_RGB));
      initialized = count;
    }
    if (params == nullptr) {
      NJ(nvjpegDecodeBatched(handle, state, data, lengths, dst, stream));
    } else {
      NJ(nvjpegDecodeBatchedEx(handle, state, data, lengths, dst, params, stream));
    }
    CK(cudaEventRecord(done, stream));
  }
};

// Planar RGB planes of a w x h image starting at base.
nvjpegImage_t planes(unsigned char* base, int w, int h) {
  nvjpegImage_t img{};
  for (int c = 0; c < 3; ++c) {
    img.channel[c] = base + static_cast<size_t>(c) * w * h;
    img.pitch[c] = w;
  }
  return img;
}

int main(int argc, char** argv) {
  std::vector<std::string> paths;
  int batch = 256, iters = 20, rounds = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--batch") batch = std::atoi(argv[++i]);
    else if (a == "--iters") iters = std::atoi(argv[++i]);
    else if (a == "--rounds") rounds = std::atoi(argv[++i]);
    else paths.push_back(a);
  }
  const int n = static_cast<int>(paths.size());
  if (n < batch) {
    std::fprintf(stderr, "need at least --batch files, got %d\n", n);
    return 1;
  }
  // every file in one pinned buffer (as a DataLoader with pin_memory hands them over)
  std::vector<std::vector<char>> raw(n);
  size_t total = 0;
  for (int i = 0; i < n; ++i) {
    std::ifstream f(paths[i], std::ios::binary);
    raw[i].assign(std::istreambuf_iterator<char>(f), {});
    total += raw[i].size();
  }
  unsigned char* pinned = nullptr;
  CK(cudaMallocHost(&pinned, total));
  std::vector<const unsigned char*> data(n);
  std::vector<size_t> lengths(n);
  size_t at = 0;
  for (int i = 0; i < n; ++i) {
    std::memcpy(pinned + at, raw[i].data(), raw[i].size());
    data[i] = pinned + at;
    lengths[i] = raw[i].size();
    at += raw[i].size();
  }

  HwDecoder dec;
  const nvjpegHandle_t handle = dec.handle;

  // sizes, boxes, support
  std::vector<int> W(n), H(n);
  std::vector<Box> box(n);
  std::mt19937 rng(0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < n; ++i) {
    int nc;
    nvjpegChromaSubsampling_t css;
    int w[NVJPEG_MAX_COMPONENT], h[NVJPEG_MAX_COMPONENT];
    NJ(nvjpegGetImageInfo(handle, data[i], lengths[i], &nc, &css, w, h));
    W[i] = w[0];
    H[i] = h[0];
    box[i] = {0, 0, W[i], H[i]};
    for (int t = 0; t < 10; ++t) {  // torchvision's RandomResizedCrop.get_params
      const double area = W[i] * H[i] * (0.08 + 0.92 * u(rng));
      const double r = std::exp(std::log(3.0 / 4) + (std::log(4.0 / 3) - std::log(3.0 / 4)) * u(rng));
      const int bw = static_cast<int>(std::lround(std::sqrt(area * r))), bh = static_cast<int>(std::lround(std::sqrt(area / r)));
      if (bw > 0 && bw <= W[i] && bh > 0 && bh <= H[i]) {
        box[i] = {static_cast<int>(u(rng) * (W[i] - bw + 1)), static_cast<int>(u(rng) * (H[i] - bh + 1)), bw, bh};
        break;
      }
    }
  }
  std::vector<nvjpegDecodeParams_t> full_params(n), roi_params(n);
  nvjpegJpegStream_t parsed;
  NJ(nvjpegJpegStreamCreate(handle, &parsed));
  int unsupported_full = 0, unsupported_roi = 0;
  double area_full = 0, area_roi = 0;
  for (int i = 0; i < n; ++i) {
    NJ(nvjpegDecodeParamsCreate(handle, &full_params[i]));
    NJ(nvjpegDecodeParamsSetOutputFormat(full_params[i], NVJPEG_OUTPUT_RGB));
    NJ(nvjpegDecodeParamsSetROI(full_params[i], 0, 0, -1, -1));
    NJ(nvjpegDecodeParamsCreate(handle, &roi_params[i]));
    NJ(nvjpegDecodeParamsSetOutputFormat(roi_params[i], NVJPEG_OUTPUT_RGB));
    NJ(nvjpegDecodeParamsSetROI(roi_params[i], box[i].x, box[i].y, box[i].w, box[i].h));
    NJ(nvjpegJpegStreamParse(handle, data[i], lengths[i], 0, 0, parsed));
    int sup = -1;
    NJ(nvjpegDecodeBatchedSupportedEx(handle, parsed, full_params[i], &sup));
    unsupported_full += sup != 0;
    NJ(nvjpegDecodeBatchedSupportedEx(handle, parsed, roi_params[i], &sup));
    unsupported_roi += sup != 0;
    area_full += static_cast<double>(W[i]) * H[i];
    area_roi += static_cast<double>(box[i].w) * box[i].h;
  }
  std::printf("%d files, %.1f MB, mean %.0f KB; batch %d; ROI area %.1f%% of the images'; "
              "nvjpegDecodeBatchedSupportedEx refuses %d whole, %d ROI\n",
              n, total / 1e6, total / 1e3 / n, batch, 100.0 * area_roi / area_full, unsupported_full, unsupported_roi);

  // outputs: planar RGB, each sample at its own offset (whole: W x H, ROI: its box)
  std::vector<size_t> off_full(n), off_roi(n);
  size_t sum_full = 0, sum_roi = 0;
  for (int i = 0; i < n; ++i) {
    off_full[i] = sum_full;
    sum_full += 3ull * W[i] * H[i];
    off_roi[i] = sum_roi;
    sum_roi += 3ull * box[i].w * box[i].h;
  }
  unsigned char *out_full, *out_roi;
  CK(cudaMalloc(&out_full, sum_full));
  CK(cudaMalloc(&out_roi, sum_roi));
  auto dest = [&](int i, bool roi) {
    return roi ? planes(out_roi + off_roi[i], box[i].w, box[i].h) : planes(out_full + off_full[i], W[i], H[i]);
  };

  const int nbatches = n / batch;
  // mode 0: nvjpegDecodeBatched whole; 1: Ex whole; 2: Ex ROI
  auto run_batch = [&](int b, int mode) {
    std::vector<nvjpegImage_t> dst(batch);
    std::vector<nvjpegDecodeParams_t> params(batch);
    for (int k = 0; k < batch; ++k) {
      const int i = b * batch + k;
      dst[k] = dest(i, mode == 2);
      params[k] = mode == 2 ? roi_params[i] : full_params[i];
    }
    dec.decode(data.data() + b * batch, lengths.data() + b * batch, dst.data(), batch, mode == 0 ? nullptr : params.data());
  };

  const char* names[3] = {"whole, nvjpegDecodeBatched", "whole, nvjpegDecodeBatchedEx", "ROI, nvjpegDecodeBatchedEx"};
  for (int mode = 0; mode < 3; ++mode) run_batch(0, mode);  // warm-up
  CK(cudaStreamSynchronize(dec.stream));
  for (int r = 0; r < rounds; ++r) {
    for (int mode = 0; mode < 3; ++mode) {
      for (int b = 0; b < 2; ++b) run_batch(b % nbatches, mode);
      CK(cudaStreamSynchronize(dec.stream));
      const auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < iters; ++it) run_batch(it % nbatches, mode);
      CK(cudaStreamSynchronize(dec.stream));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("round %d  %-30s %8.3f ms/batch  %8.0f img/s\n", r, names[mode], 1e3 * s / iters, iters * batch / s);
      std::fflush(stdout);
    }
  }

  // T threads at once, each with its own handle, state and stream, decoding whole batches
  // (nvjpegDecodeBatched) back to back: whether two decoders in flight go beyond one
  for (int threads : {1, 2, 3}) {
    std::atomic<int> ready{0};
    auto t0 = std::chrono::steady_clock::now();
    auto work = [&](int t, int count) {
      HwDecoder d;
      unsigned char* out;
      CK(cudaMalloc(&out, sum_full));
      std::vector<nvjpegImage_t> dst(batch);
      for (int it = -2; it < count; ++it) {
        if (it == 0) {  // every thread warm before the clock starts
          CK(cudaStreamSynchronize(d.stream));
          ready.fetch_add(1);
          while (ready.load() < threads) std::this_thread::yield();
          if (t == 0) t0 = std::chrono::steady_clock::now();
        }
        const int b = (t + std::max(it, 0)) % nbatches;
        for (int k = 0; k < batch; ++k) {
          const int i = b * batch + k;
          dst[k] = planes(out + off_full[i], W[i], H[i]);
        }
        d.decode(data.data() + b * batch, lengths.data() + b * batch, dst.data(), batch);
      }
      CK(cudaStreamSynchronize(d.stream));
    };
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) ts.emplace_back(work, t, iters);
    for (auto& t : ts) t.join();
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%d threads, own handles, whole batches: %8.0f img/s (after 2 warm-up batches each)\n",
                threads, iters * threads * batch / sec);
    std::fflush(stdout);
  }

  // the ROI decode against the same region of the whole decode, for every file
  int bad = 0, maxdiff = 0;
  for (int b = 0; b < nbatches; ++b) {
    run_batch(b, 0);
    run_batch(b, 2);
  }
  CK(cudaStreamSynchronize(dec.stream));
  std::vector<unsigned char> hf(sum_full), hr(sum_roi);
  CK(cudaMemcpy(hf.data(), out_full, sum_full, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hr.data(), out_roi, sum_roi, cudaMemcpyDeviceToHost));
  for (int i = 0; i < nbatches * batch; ++i) {
    int worst = 0;
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < box[i].h; ++y)
        for (int x = 0; x < box[i].w; ++x) {
          const int a = hf[off_full[i] + static_cast<size_t>(c) * W[i] * H[i] + static_cast<size_t>(box[i].y + y) * W[i] + box[i].x + x];
          const int r = hr[off_roi[i] + (static_cast<size_t>(c) * box[i].h + y) * box[i].w + x];
          worst = std::max(worst, std::abs(a - r));
        }
    bad += worst != 0;
    maxdiff = std::max(maxdiff, worst);
  }
  std::printf("ROI against the whole decode's region: %d of %d files differ, max diff %d\n", bad, nbatches * batch, maxdiff);
  return 0;
}
