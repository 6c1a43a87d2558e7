// nvJPEG decoding of a batch into the ragged output of csrc/decode_impl.h.
//
// Each sample goes one of three ways, decided from its parsed header (csrc/jpeg_header.h):
//  - baseline JPEGs (1 component, or YCbCr 4:4:4 / 4:2:2 / 4:2:0 / 4:4:0) go to nvJPEG's batched
//    decoder on the hardware JPEG engines (A100 / H100), RGB ones in one call and grayscale ones in
//    another, on a CUDA stream of the decoder's own; the planar output is written straight into the
//    samples' slots;
//  - the others nvJPEG takes (progressive, 4:1:1, and everything when the GPU has no JPEG engine)
//    go through nvJPEG's hybrid decoder one by one on the current stream;
//  - CMYK / YCCK and Adobe RGB-coded files are decoded by libjpeg-turbo on the host and copied up.
// A group that the batched decoder rejects is retried image by image, so that the error names the
// sample. Samples shown with an EXIF orientation other than 1 are decoded into a scratch buffer and
// rotated into their slot by one kernel launch for the whole batch (csrc/kernels/decode.h).
// Nothing here synchronises the host with the GPU except the rare hybrid and libjpeg paths.
//
// The hardware decoder does not wait for earlier work on the stream it is given before it writes
// (seen on H100s: meta-pytorch/torchcodec#1634, pytorch/vision#9606): output memory taken from the
// caller's stream pool may be a block that kernels still queued there will read (a tensor freed
// while its last reader is pending), and the decoder would overwrite it under them. So the output
// and the scratch buffer come from the pool of the batched decoder's stream, a stream of the
// decoder's own that only decodes; the caller's stream is recorded on them (the caching allocator reuses
// the memory only after the caller's work on it is done).
#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <nvjpeg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "../decode_impl.h"
#include "../kernels/decode.h"
#include "../ops_common.h"

namespace torchaug {
namespace {

const char* nvjpeg_status_name(nvjpegStatus_t s) {
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

#define TORCHAUG_NVJPEG_CHECK(call)                                                                           \
  do {                                                                                                        \
    const nvjpegStatus_t status_ = (call);                                                                    \
    TORCHAUG_CHECK(status_ == NVJPEG_STATUS_SUCCESS, "torchaug::decode_jpeg: ", #call, " failed: ",           \
                   nvjpeg_status_name(status_));                                                              \
  } while (0)

int32_t sample_status(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return jpeg::kOk;
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return jpeg::kUnsupported;
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return jpeg::kTruncated;
    default: return jpeg::kCorruptData;
  }
}

// A CUDA event (c10 only: ATen's CUDA headers pull in cuSPARSE / cuBLAS, absent from CI's compile check).
struct Event {
  cudaEvent_t e = nullptr;
  Event() { C10_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming)); }
  ~Event() { cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t s) { C10_CUDA_CHECK(cudaEventRecord(e, s)); }
  void block(cudaStream_t s) const { C10_CUDA_CHECK(cudaStreamWaitEvent(s, e, 0)); }
};

// A stream of the decoder's own (not one of PyTorch's pool streams, which other code shares), never
// destroyed, like the decoder.
c10::cuda::CUDAStream own_stream(const at::Device& device) {
  cudaStream_t s = nullptr;
  C10_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return c10::cuda::getStreamFromExternal(s, device.index());
}

// A switch read once from the environment: unset or anything but "0" means on.
bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::string(v) != "0";
}

// The batched (hardware) decoder's state and the stream it decodes on.
struct Batched {
  nvjpegJpegState_t state = nullptr;
  c10::cuda::CUDAStream stream;
  int batch = -1;
  nvjpegOutputFormat_t format = NVJPEG_OUTPUT_RGB;
  bool preallocated = false;
  Event done;  // recorded on `stream` after each batched decode
  bool pending = false;
  explicit Batched(c10::cuda::CUDAStream s) : stream(s) {}
};

// One per device, created on first use and kept for the life of the process (as torchvision does:
// destroying nvJPEG objects from an atexit hook can run after the CUDA runtime has shut down).
struct Decoder {
  nvjpegHandle_t handle = nullptr;
  bool hardware = false;
  bool interpolated = false;
  nvjpegJpegDecoder_t hybrid = nullptr;
  nvjpegJpegState_t hybrid_state = nullptr;
  nvjpegBufferPinned_t pinned = nullptr;
  nvjpegBufferDevice_t device_buffer = nullptr;
  nvjpegJpegStream_t stream_info = nullptr;
  nvjpegDecodeParams_t params = nullptr;
  std::unique_ptr<Batched> batched_;
  std::mutex mutex;

  Decoder() {
    // chroma upsampled by interpolation, as libjpeg-turbo's default "fancy" upsampling does (nvJPEG's
    // default replicates chroma samples: up to ~50 levels from the CPU decoder at sharp colour
    // edges); handles that refuse the flag are made without it. TORCHAUG_NVJPEG_UPSAMPLING=replicate
    // asks for nvJPEG's default (a diagnostic: what the interpolation costs in speed)
    const char* up = std::getenv("TORCHAUG_NVJPEG_UPSAMPLING");
    const bool replicate = up != nullptr && std::string(up) == "replicate";
    const unsigned int flags[2] = {replicate ? NVJPEG_FLAGS_DEFAULT : NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION,
                                   NVJPEG_FLAGS_DEFAULT};
    // TORCHAUG_NVJPEG_HARDWARE=0 leaves the hardware decoder out (every sample takes the hybrid path)
    const bool try_hardware = env_on("TORCHAUG_NVJPEG_HARDWARE");
    for (unsigned int f : flags) {
      if (!try_hardware) break;
      if (nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, f, &handle) == NVJPEG_STATUS_SUCCESS) {
        hardware = true;
        interpolated = f != NVJPEG_FLAGS_DEFAULT;
        break;
      }
    }
    if (!hardware) {
      for (unsigned int f : flags) {
        if (nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, f, &handle) == NVJPEG_STATUS_SUCCESS) {
          interpolated = f != NVJPEG_FLAGS_DEFAULT;
          break;
        }
      }
      TORCHAUG_CHECK(handle != nullptr, "torchaug::decode_jpeg: nvjpegCreateEx failed for every backend");
    }
    TORCHAUG_NVJPEG_CHECK(nvjpegDecoderCreate(handle, NVJPEG_BACKEND_DEFAULT, &hybrid));
    TORCHAUG_NVJPEG_CHECK(nvjpegDecoderStateCreate(handle, hybrid, &hybrid_state));
    TORCHAUG_NVJPEG_CHECK(nvjpegBufferPinnedCreate(handle, nullptr, &pinned));
    TORCHAUG_NVJPEG_CHECK(nvjpegBufferDeviceCreate(handle, nullptr, &device_buffer));
    TORCHAUG_NVJPEG_CHECK(nvjpegStateAttachPinnedBuffer(hybrid_state, pinned));
    TORCHAUG_NVJPEG_CHECK(nvjpegStateAttachDeviceBuffer(hybrid_state, device_buffer));
    TORCHAUG_NVJPEG_CHECK(nvjpegJpegStreamCreate(handle, &stream_info));
    TORCHAUG_NVJPEG_CHECK(nvjpegDecodeParamsCreate(handle, &params));
  }

  Batched& batched(const at::Device& device) {
    if (!batched_) {
      batched_ = std::make_unique<Batched>(own_stream(device));
      TORCHAUG_NVJPEG_CHECK(nvjpegJpegStateCreate(handle, &batched_->state));
    }
    return *batched_;
  }
};

Decoder& decoder_for(const at::Device& device) {
  static std::mutex mutex;
  static std::map<int, Decoder*> decoders;
  std::lock_guard<std::mutex> lock(mutex);
  Decoder*& d = decoders[device.index()];
  if (d == nullptr) d = new Decoder();  // created with `device` current (the caller's guard)
  return *d;
}

// TORCHAUG_DECODE_TRACE=1 prints a line to stderr as a decode enters each step (a diagnostic: where
// a decode that does not return is; 2-GPU training runs stalled with one rank's decode thread
// spinning inside decode_jpeg while its GPU was idle, see scripts/gpu_ddp_check.sh).
void trace(int device, const char* step, int64_t n = -1) {
  static const bool on = [] {
    const char* v = std::getenv("TORCHAUG_DECODE_TRACE");
    return v != nullptr && std::string(v) == "1";
  }();
  if (!on) return;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  std::fprintf(stderr, "torchaug decode_jpeg cuda:%d thread %ld t=%.3f: %s (%lld)\n", device,
               static_cast<long>(syscall(SYS_gettid)), t, step, static_cast<long long>(n));
  std::fflush(stderr);
}

// Whether nvJPEG's hardware batched decoder takes the sample (its documented limits: baseline
// Huffman, 8-bit, a single interleaved scan, no 4:1:1 / 4:1:0).
bool hardware_decodable(const jpeg::Info& info) {
  if (!info.baseline()) return false;
  if (info.components == 1) return true;
  if (info.components != 3 || info.adobe_transform == 0) return false;
  if (info.h[1] != 1 || info.v[1] != 1 || info.h[2] != 1 || info.v[2] != 1) return false;
  return (info.h[0] == 1 || info.h[0] == 2) && (info.v[0] == 1 || info.v[0] == 2);
}

// What libjpeg must decode: 4 components, or RGB-coded 3-component files (Adobe transform 0).
bool needs_libjpeg(const jpeg::Info& info) {
  return info.components == 4 || (info.components == 3 && info.adobe_transform == 0);
}

nvjpegOutputFormat_t format_of(const DecodeSample& s) { return s.channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGB; }

nvjpegImage_t destination(uint8_t* base, const DecodeSample& s) {
  nvjpegImage_t img;
  const int64_t plane = stored_height(s) * stored_width(s);
  for (int c = 0; c < NVJPEG_MAX_COMPONENT; ++c) {
    img.channel[c] = c < s.channels ? base + c * plane : nullptr;
    img.pitch[c] = c < s.channels ? static_cast<unsigned int>(stored_width(s)) : 0;
  }
  return img;
}

struct Job {
  DecodeSample* s;
  nvjpegImage_t dst;
};

// One sample through nvJPEG's hybrid decoder on `stream` (synchronises with it: the slow path).
void decode_hybrid(Decoder& d, Job& job, cudaStream_t stream) {
  DecodeSample& s = *job.s;
  nvjpegStatus_t st = nvjpegJpegStreamParse(d.handle, s.data, s.size, 0, 0, d.stream_info);
  if (st == NVJPEG_STATUS_SUCCESS) st = nvjpegDecodeParamsSetOutputFormat(d.params, format_of(s));
  if (st == NVJPEG_STATUS_SUCCESS) st = nvjpegDecodeJpegHost(d.handle, d.hybrid, d.hybrid_state, d.params, d.stream_info);
  if (st == NVJPEG_STATUS_SUCCESS) {
    C10_CUDA_CHECK(cudaStreamSynchronize(stream));  // the pinned buffer is reused by the next sample
    st = nvjpegDecodeJpegTransferToDevice(d.handle, d.hybrid, d.hybrid_state, d.stream_info, stream);
  }
  if (st == NVJPEG_STATUS_SUCCESS) st = nvjpegDecodeJpegDevice(d.handle, d.hybrid, d.hybrid_state, &job.dst, stream);
  if (st != NVJPEG_STATUS_SUCCESS) {
    s.status = sample_status(st);
    s.message = cat("nvJPEG: ", nvjpeg_status_name(st));
  }
}

// One group through the hardware batched decoder; false when nvJPEG rejected it.
bool decode_batched(Decoder& d, Batched& b, std::vector<Job>& jobs, nvjpegOutputFormat_t format) {
  const int n = static_cast<int>(jobs.size());
  // The previous batch finished on the GPU before the state is used again, as nvImageCodec's
  // hardware decoder plugin does (cudaEventSynchronize of the last batch's event before the next
  // nvjpegDecodeBatched): the hardware path does not order its work after what is queued on the stream
  // it is given (see decode_jpeg_cuda). Without this wait and the preallocation below, 6 of 11 2-GPU
  // training runs stalled with a decode thread spinning in cuEventSynchronize inside
  // nvjpegDecodeBatched; with both, 7 of 7 went through (RESULTS.md, case 5; which of the two matters
  // is not known). TORCHAUG_NVJPEG_PREVSYNC=0 leaves the wait out (a diagnostic).
  static const bool prev_sync = env_on("TORCHAUG_NVJPEG_PREVSYNC");
  if (prev_sync && b.pending) C10_CUDA_CHECK(cudaEventSynchronize(b.done.e));
  // The hardware decoder's buffers allocated once, from the first group's size, before the decoder
  // first runs, as DALI and nvImageCodec do ("memory pool for HW decoder ... >20% for 8GPU training"
  // in nvImageCodec); nvJPEG grows them later itself. TORCHAUG_NVJPEG_PREALLOCATE=0 leaves it out.
  static const bool preallocate = env_on("TORCHAUG_NVJPEG_PREALLOCATE");
  if (preallocate && !b.preallocated) {
    int width = 1, height = 1;
    for (const auto& job : jobs) {
      width = std::max<int>(width, static_cast<int>(stored_width(*job.s)));
      height = std::max<int>(height, static_cast<int>(stored_height(*job.s)));
    }
    trace(b.stream.device_index(), "nvjpegDecodeBatchedPreAllocate", n);
    // a hint: a refusal leaves nvJPEG allocating as it goes
    (void)nvjpegDecodeBatchedPreAllocate(d.handle, b.state, n, width, height, NVJPEG_CSS_444, format);
    b.preallocated = true;
  }
  if (b.batch != n || b.format != format) {
    trace(b.stream.device_index(), "nvjpegDecodeBatchedInitialize", n);
    if (nvjpegDecodeBatchedInitialize(d.handle, b.state, n, 1, format) != NVJPEG_STATUS_SUCCESS) return false;
    b.batch = n;
    b.format = format;
  }
  std::vector<const unsigned char*> data(n);
  std::vector<size_t> lengths(n);
  // nvjpegImage_t is an unnamed struct: a std::vector of it crashes nvcc 13.0's front end
  // (internal error in find_allocated_name_reference), so the array lives in a byte buffer
  std::vector<unsigned char> dst_bytes(sizeof(nvjpegImage_t) * n);
  nvjpegImage_t* dst = reinterpret_cast<nvjpegImage_t*>(dst_bytes.data());
  for (int i = 0; i < n; ++i) {
    data[i] = jobs[i].s->data;
    lengths[i] = jobs[i].s->size;
    std::memcpy(&dst[i], &jobs[i].dst, sizeof(nvjpegImage_t));
  }
  trace(b.stream.device_index(), "nvjpegDecodeBatched", n);
  const nvjpegStatus_t status =
      nvjpegDecodeBatched(d.handle, b.state, data.data(), lengths.data(), dst, b.stream.stream());
  b.done.record(b.stream.stream());  // a failed batch may have queued work too
  b.pending = true;
  if (status != NVJPEG_STATUS_SUCCESS) {
    b.batch = -1;  // "also use [Initialize] to reset failed batches"
    return false;
  }
  trace(b.stream.device_index(), "nvjpegDecodeBatched returned", n);
  return true;
}

struct OrientJob {
  int64_t src, dst, c, hs, ws, o;
};

__global__ void exif_orient_kernel(const uint8_t* __restrict__ scratch, uint8_t* __restrict__ out,
                                   const OrientJob* __restrict__ jobs) {
  const OrientJob j = jobs[blockIdx.y];
  const int64_t n = j.c * j.hs * j.ws;
  const bool swap = kernels::exif_swaps_axes(static_cast<int32_t>(j.o));
  const int64_t wo = swap ? j.hs : j.ws, plane = j.hs * j.ws;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = i / plane, p = i - c * plane, y = p / wo, x = p - y * wo;
    int64_t sy, sx;
    kernels::exif_source(static_cast<int32_t>(j.o), y, x, j.hs, j.ws, &sy, &sx);
    out[j.dst + i] = scratch[j.src + c * plane + sy * j.ws + sx];
  }
}

void decode_jpeg_cuda(DecodePlan& plan, const at::Device& device) {
  const c10::cuda::CUDAGuard guard(device);
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device.index());
  const int dev = device.index();
  trace(dev, "enter", static_cast<int64_t>(plan.samples.size()));
  Decoder& d = decoder_for(device);
  std::lock_guard<std::mutex> lock(d.mutex);
  trace(dev, "locked");

  // the output, and a scratch buffer for the samples shown rotated or mirrored (decoded there
  // first), from the pool of the batched decoder's stream (see the top of this file)
  int64_t scratch_size = 0;
  for (auto& s : plan.samples) {
    if (s.status == jpeg::kOk && s.orientation != 1) scratch_size += s.channels * s.height * s.width;
  }
  at::Tensor scratch;
  {
    const c10::cuda::CUDAStreamGuard on_own(d.batched(device).stream);
    const auto bytes = at::TensorOptions().dtype(at::kByte).device(device);
    plan.out = at::empty({plan.total}, bytes);
    if (scratch_size > 0) scratch = at::empty({scratch_size}, bytes);
  }
  c10::cuda::CUDACachingAllocator::recordStream(plan.out.storage().data_ptr(), current);
  if (scratch.defined()) c10::cuda::CUDACachingAllocator::recordStream(scratch.storage().data_ptr(), current);
  trace(dev, "allocated", plan.total);
  uint8_t* out = plan.out.data_ptr<uint8_t>();
  std::vector<std::pair<const DecodeSample*, OrientJob>> orient;
  std::vector<Job> hw_rgb, hw_y, hybrid, host;
  int64_t scratch_at = 0;
  for (auto& s : plan.samples) {
    if (s.status != jpeg::kOk) continue;
    uint8_t* base = out + s.offset;
    if (s.orientation != 1) {
      base = scratch.data_ptr<uint8_t>() + scratch_at;
      orient.push_back({&s, {scratch_at, s.offset, s.channels, stored_height(s), stored_width(s), s.orientation}});
      scratch_at += s.channels * s.height * s.width;
    }
    Job job{&s, destination(base, s)};
    if (needs_libjpeg(s.info)) {
      host.push_back(job);
    } else if (d.hardware && hardware_decodable(s.info)) {
      (s.channels == 1 ? hw_y : hw_rgb).push_back(job);
    } else {
      hybrid.push_back(job);
    }
  }

  // the batched groups on the decoder's stream (they need not wait for the caller's stream: their
  // memory is the decoder's); the caller's stream waits for them
  Batched& batched = d.batched(device);
  bool queued = false;
  for (auto* group : {&hw_rgb, &hw_y}) {
    if (group->empty()) continue;
    if (!decode_batched(d, batched, *group, group == &hw_y ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGB)) {
      hybrid.insert(hybrid.end(), group->begin(), group->end());  // retried one by one
    }
    queued = true;
  }
  if (queued) batched.done.block(current.stream());
  trace(dev, "batched done", static_cast<int64_t>(hw_rgb.size() + hw_y.size()));

  // the slow paths, in order on the current stream
  trace(dev, "hybrid", static_cast<int64_t>(hybrid.size()));
  for (auto& job : hybrid) decode_hybrid(d, job, current.stream());
  if (!host.empty()) {
    int64_t host_size = 0;
    for (auto& job : host) host_size += job.s->channels * stored_height(*job.s) * stored_width(*job.s);
    at::Tensor staging = at::empty({host_size}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
    int64_t at = 0;
    for (auto& job : host) {
      DecodeSample& s = *job.s;
      const int64_t n = s.channels * stored_height(s) * stored_width(s);
      s.status = libjpeg_decode(s, plan.mode, staging.data_ptr<uint8_t>() + at, s.message);
      if (s.status == jpeg::kOk) {
        C10_CUDA_CHECK(cudaMemcpyAsync(job.dst.channel[0], staging.data_ptr<uint8_t>() + at, static_cast<size_t>(n),
                                       cudaMemcpyHostToDevice, current.stream()));
      }
      at += n;
    }
    C10_CUDA_CHECK(cudaStreamSynchronize(current.stream()));  // staging is freed on return
  }

  trace(dev, "orient", static_cast<int64_t>(orient.size()));
  if (!orient.empty()) {
    std::vector<OrientJob> todo;
    for (const auto& entry : orient) {
      if (entry.first->status == jpeg::kOk) todo.push_back(entry.second);
    }
    if (!todo.empty()) {
      at::Tensor jobs = at::empty({static_cast<int64_t>(todo.size() * sizeof(OrientJob))},
                                  at::TensorOptions().dtype(at::kByte).pinned_memory(true));
      std::memcpy(jobs.data_ptr<uint8_t>(), todo.data(), todo.size() * sizeof(OrientJob));
      at::Tensor jobs_dev = jobs.to(device, /*non_blocking=*/true);
      const dim3 grid(64, static_cast<unsigned>(todo.size()));
      exif_orient_kernel<<<grid, 256, 0, current.stream()>>>(
          scratch.data_ptr<uint8_t>(), out, reinterpret_cast<const OrientJob*>(jobs_dev.data_ptr<uint8_t>()));
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  }
  trace(dev, "exit");
}

struct Register {
  Register() { cuda_decode_backend() = &decode_jpeg_cuda; }
} register_cuda_decoder;

}  // namespace
}  // namespace torchaug
