// The nvJPEG decoders of a device: their hardware batched state, the hybrid decoder's lanes and the
// pool calls take them from (csrc/cuda/decoder_pool.cuh).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "../ops/settings.h"
#include "decoder_pool.cuh"

namespace torchaug {
namespace nvjpeg {

const char* status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG: return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
    default: return "unknown nvJPEG status";
  }
}

namespace {

int32_t sample_status(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return jpeg::kOk;
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return jpeg::kUnsupported;
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return jpeg::kTruncated;
    default: return jpeg::kCorruptData;
  }
}

nvjpegOutputFormat_t format_of(const DecodeSample& s) { return s.channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGB; }

}  // namespace

c10::cuda::CUDAStream own_stream(const at::Device& device, int priority) {
  cudaStream_t s = nullptr;
  C10_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority));
  return c10::cuda::getStreamFromExternal(s, device.index());
}

void OwnStreams::follow(c10::cuda::CUDAStream& stream, int priority, const Event& last) {
  if (stream.priority() == priority) return;
  const auto same = [&](const c10::cuda::CUDAStream& s) { return s == stream; };
  if (std::none_of(made.begin(), made.end(), same)) made.push_back(stream);
  c10::cuda::CUDAStream next = stream;
  const auto at = std::find_if(made.begin(), made.end(), [&](const c10::cuda::CUDAStream& s) { return s.priority() == priority; });
  if (at != made.end()) {
    next = *at;
  } else {
    next = own_stream(at::Device(at::kCUDA, stream.device_index()), priority);
    made.push_back(next);
  }
  last.block(next.stream());
  stream = next;
}

int reject_level() { return static_cast<int>(std::max<int64_t>(0, test_hooks::get(test_hooks::kNvjpegReject))); }

Batched::Batched(nvjpegHandle_t h, c10::cuda::CUDAStream s) : handle(h), stream(s) {
  TORCHAUG_NVJPEG_CHECK(nvjpegJpegStateCreate(handle, &state));
}

Lane::Lane(unsigned int flags, c10::cuda::CUDAStream s) : stream(s) {
  if (nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, flags, &handle) != NVJPEG_STATUS_SUCCESS) {
    TORCHAUG_NVJPEG_CHECK(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &handle));
  }
  TORCHAUG_NVJPEG_CHECK(nvjpegDecoderCreate(handle, NVJPEG_BACKEND_HYBRID, &decoder));
  TORCHAUG_NVJPEG_CHECK(nvjpegDecoderStateCreate(handle, decoder, &state));
  for (int i = 0; i < 2; ++i) {
    TORCHAUG_NVJPEG_CHECK(nvjpegBufferPinnedCreate(handle, nullptr, &pinned[i]));
    TORCHAUG_NVJPEG_CHECK(nvjpegJpegStreamCreate(handle, &parsed[i]));
  }
  TORCHAUG_NVJPEG_CHECK(nvjpegBufferDeviceCreate(handle, nullptr, &device_buffer));
  TORCHAUG_NVJPEG_CHECK(nvjpegStateAttachDeviceBuffer(state, device_buffer));
  TORCHAUG_NVJPEG_CHECK(nvjpegDecodeParamsCreate(handle, &params));
  done.record(stream.stream());
}

void Lane::decode(Job& job) {
  DecodeSample& s = *job.s;
  if (reject_level() == 2) {
    s.status = jpeg::kCorruptData;
    s.message = "rejected (the nvjpeg_reject test hook)";
    return;
  }
  const int p = page;
  page ^= 1;
  nvjpegStatus_t st = nvjpegStateAttachPinnedBuffer(state, pinned[p]);
  if (st == NVJPEG_STATUS_SUCCESS) st = nvjpegJpegStreamParse(handle, s.data, s.size, 0, 0, parsed[p]);
  if (st == NVJPEG_STATUS_SUCCESS) st = nvjpegDecodeParamsSetOutputFormat(params, format_of(s));
  if (st == NVJPEG_STATUS_SUCCESS) st = nvjpegDecodeJpegHost(handle, decoder, state, params, parsed[p]);
  if (st == NVJPEG_STATUS_SUCCESS) {
    // the previous sample's IDCT read the device buffer this transfer overwrites; it also
    // finished with the pinned buffer of two samples back, which the next host phase reuses
    C10_CUDA_CHECK(cudaEventSynchronize(done.e));
    st = nvjpegDecodeJpegTransferToDevice(handle, decoder, state, parsed[p], stream.stream());
    if (st == NVJPEG_STATUS_SUCCESS) st = nvjpegDecodeJpegDevice(handle, decoder, state, &job.dst, stream.stream());
    done.record(stream.stream());
    used = true;
  }
  if (st != NVJPEG_STATUS_SUCCESS) {
    s.status = sample_status(st);
    s.message = cat("nvJPEG: ", status_name(st));
  }
}

LanePool::LanePool(unsigned int flags, int device, int lanes) : device_(device) {
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  for (int i = 0; i < lanes; ++i) {
    lanes_.push_back(std::make_unique<Lane>(flags, own_stream(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device)))));
  }
  for (int i = 1; i < lanes; ++i) std::thread([this, i] { serve(i); }).detach();
}

void LanePool::start(std::vector<Job>& jobs) {
  for (auto& l : lanes_) l->used = false;
  if (jobs.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_ = &jobs;
  next_.store(0);
  busy_ = size() - 1;
  error_.clear();
  ++generation_;
  wake_.notify_all();
}

void LanePool::finish(std::vector<Job>& jobs) {
  if (jobs.empty()) return;
  work(0);
  wait();
  TORCHAUG_CHECK(error_.empty(), "torchaug::decode_jpeg: a decoder lane failed: ", error_);
}

void LanePool::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return busy_ == 0; });
  jobs_ = nullptr;
}

void LanePool::work(int i) {
  Lane& lane = *lanes_[i];
  for (size_t k = next_.fetch_add(1); k < jobs_->size(); k = next_.fetch_add(1)) {
    try {
      lane.decode((*jobs_)[k]);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error_.empty()) error_ = e.what();
    }
  }
}

void LanePool::serve(int i) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
    }
    {
      const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
      work(i);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (--busy_ == 0) idle_.notify_all();
  }
}

Decoder::Decoder() {
  // chroma upsampled by interpolation, as libjpeg-turbo's default "fancy" upsampling does (nvJPEG's
  // default replicates chroma samples: up to ~50 levels from the CPU decoder at sharp colour
  // edges); handles that refuse the flag are made without it
  const unsigned int choices[2] = {NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION, NVJPEG_FLAGS_DEFAULT};
  for (unsigned int f : choices) {
    if (nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, f, &handle) == NVJPEG_STATUS_SUCCESS) {
      hardware = true;
      flags = f;
      break;
    }
  }
  if (!hardware) {
    for (unsigned int f : choices) {
      if (nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, f, &handle) == NVJPEG_STATUS_SUCCESS) {
        flags = f;
        break;
      }
    }
    TORCHAUG_CHECK(handle != nullptr, "torchaug::decode_jpeg: nvjpegCreateEx failed for every backend");
  }
}

Batched& Decoder::batched(const at::Device& device) {
  if (!batched_) batched_ = std::make_unique<Batched>(handle, own_stream(device));
  return *batched_;
}

LanePool& Decoder::lanes(const at::Device& device) {
  if (!lanes_) lanes_ = std::make_unique<LanePool>(flags, device.index(), settings::nvjpeg_threads());
  return *lanes_;
}

Decoder& DecoderPool::take(int limit) {
  std::unique_lock<std::mutex> lock(mutex_);
  given_back_.wait(lock, [&] { return in_use_ < limit; });
  ++in_use_;
  if (!free_.empty()) {
    Decoder* d = free_.back();
    free_.pop_back();
    return *d;
  }
  lock.unlock();
  try {
    return *new Decoder();  // made with the caller's device current (its guard)
  } catch (...) {
    lock.lock();
    --in_use_;
    given_back_.notify_all();
    throw;
  }
}

void DecoderPool::give_back(Decoder& d) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --in_use_;
    free_.push_back(&d);
  }
  given_back_.notify_all();
}

DecoderPool& pool_for(const at::Device& device) {
  static std::mutex mutex;
  static std::map<int, DecoderPool*> pools;
  std::lock_guard<std::mutex> lock(mutex);
  DecoderPool*& p = pools[device.index()];
  if (p == nullptr) p = new DecoderPool();
  return *p;
}

HeldDecoder::HeldDecoder(DecoderPool& p) : pool(p), d(p.take(settings::nvjpeg_decoders())) {}

void trace(int device, const char* step, int64_t n) {
  if (!settings::decode_trace()) return;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  std::fprintf(stderr, "torchaug decode_jpeg cuda:%d thread %ld t=%.3f: %s (%lld)\n", device,
               static_cast<long>(syscall(SYS_gettid)), t, step, static_cast<long long>(n));
  std::fflush(stderr);
}

}  // namespace nvjpeg
}  // namespace torchaug
