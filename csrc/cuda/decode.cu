// nvJPEG decoding of a batch into the ragged output of csrc/decode_impl.h.
//
// Each sample goes one of three ways, decided from its parsed header (csrc/jpeg_header.h):
//  - baseline JPEGs (1 component, or YCbCr 4:4:4 / 4:2:2 / 4:2:0 / 4:4:0) go to nvJPEG's batched
//    decoder on the hardware JPEG engines (A100 / H100), RGB ones in one call and grayscale ones in
//    another, on a CUDA stream of the decoder's own; the planar output is written straight into the
//    samples' slots (TORCHAUG_NVJPEG_YUV=1: the RGB batch comes back as YUV planes that one kernel
//    of ours converts into the slots with libjpeg-turbo's upsampling and colour conversion,
//    exactly). Calls from different threads take different decoders of the device (each its own
//    nvJPEG handle, state, stream and lanes; up to TORCHAUG_NVJPEG_DECODERS) and decode at the same
//    time;
//  - the others nvJPEG takes (progressive, 4:1:1, everything when the GPU has no JPEG engine, and
//    the share of the hardware-decodable ones that `hw_load` leaves to them) go through nvJPEG's
//    hybrid decoder on the decoder's lanes: CPU threads, each with its own nvJPEG state and CUDA
//    stream, that take samples one at a time (Huffman decoding on the thread, the IDCT and colour
//    conversion on the GPU), while the hardware engines decode their share (DALI's hw_decoder_load);
//  - CMYK / YCCK and Adobe RGB-coded files are decoded by libjpeg-turbo on the host and copied up.
// A group that the batched decoder rejects is retried image by image, so that the error names the
// sample. Samples shown with an EXIF orientation other than 1 are decoded into a scratch buffer and
// rotated into their slot by one kernel launch for the whole batch (csrc/kernels/decode.h).
// The host waits for the GPU only inside the lanes (before a lane's next sample reuses its device
// buffer: the previous sample's IDCT) and on the rare libjpeg path.
// The samples come with their headers parsed; the check of their scans (csrc/jpeg_header.h) runs here,
// for the hardware batches on helper threads while the engines decode them (ScanCheck).
// The decoder's streams take the priority of the caller's stream (OwnStreams).
//
// The hardware decoder does not wait for earlier work on the stream it is given before it writes
// (seen on H100s: meta-pytorch/torchcodec#1634, pytorch/vision#9606): output memory taken from the
// caller's stream pool may be a block that kernels still queued there will read (a tensor freed
// while its last reader is pending), and the decoder would overwrite it under them. So the output
// and the scratch buffer come from the pool of the batched decoder's stream, a stream of the
// decoder's own that only decodes; the caller's stream is recorded on them (the caching allocator reuses
// the memory only after the caller's work on it is done).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <nvjpeg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

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
  explicit Event(unsigned int flags = cudaEventDisableTiming) { C10_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags)); }
  ~Event() { cudaEventDestroy(e); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t s) { C10_CUDA_CHECK(cudaEventRecord(e, s)); }
  void block(cudaStream_t s) const { C10_CUDA_CHECK(cudaStreamWaitEvent(s, e, 0)); }
};

// A stream of the decoder's own (not one of PyTorch's pool streams, which other code shares), never
// destroyed, like the decoder, at a CUDA stream priority (lower is more urgent).
c10::cuda::CUDAStream own_stream(const at::Device& device, int priority = 0) {
  cudaStream_t s = nullptr;
  C10_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority));
  return c10::cuda::getStreamFromExternal(s, device.index());
}

// The decoder's work runs at the priority of the caller's stream: a caller on an urgent stream
// (Prefetcher(priority=-1)) gets decode kernels that take free SMs ahead of a training step's (the
// hardware path's colour conversion is a kernel per image). Beside ResNet-50 that did not train
// faster (RESULTS.md case 5, sessions 17 and 36), but the decode keeps the caller's order. A stream of the
// decoder's whose priority differs is swapped for one of its own at that priority (each made once and
// kept), which first waits for `last`, the latest work of the stream it replaces.
struct OwnStreams {
  std::vector<c10::cuda::CUDAStream> made;
  void follow(c10::cuda::CUDAStream& stream, int priority, const Event& last) {
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
};

// A switch read once from the environment: unset or anything but "0" means on.
bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::string(v) != "0";
}

// TORCHAUG_NVJPEG_REJECT (read at each call; a switch for the tests): "1" treats every hardware batch
// as one that nvJPEG rejected, so that what follows a rejection (the batch's files retried one by one
// on the lanes, the errors naming them) runs without a file that nvJPEG's batched decoder refuses;
// "lanes" also fails every file on the lanes; unset or "0": off.
int reject_level() {
  const char* e = std::getenv("TORCHAUG_NVJPEG_REJECT");
  if (e == nullptr || std::string(e) == "0") return 0;
  if (std::string(e) == "1") return 1;
  TORCHAUG_CHECK(std::string(e) == "lanes", "torchaug::decode_jpeg: TORCHAUG_NVJPEG_REJECT must be 0, 1 or lanes, got '", e,
                 "'");
  return 2;
}

// The batched (hardware) decoder's state and the stream it decodes on.
struct Batched {
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  c10::cuda::CUDAStream stream;
  int batch = -1;
  nvjpegOutputFormat_t format = NVJPEG_OUTPUT_RGB;
  bool preallocated = false;
  Event done;  // recorded on `stream` after each batched decode
  bool pending = false;
  OwnStreams own;  // `stream` at the priorities the decoder was called at
  at::Tensor yuv;  // the YUV planes of the last RGB batch (decode_batched), grown as needed
  Batched(nvjpegHandle_t h, c10::cuda::CUDAStream s) : handle(h), stream(s) {
    TORCHAUG_NVJPEG_CHECK(nvjpegJpegStateCreate(handle, &state));
  }
};

nvjpegOutputFormat_t format_of(const DecodeSample& s) { return s.channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGB; }

struct Job {
  DecodeSample* s;
  nvjpegImage_t dst;
};

// A lane of nvJPEG's hybrid decoder: its own decoder state, two pinned buffers and two parsed
// streams (the host decodes sample k+1 while sample k's coefficients are still being copied up),
// a device buffer and a CUDA stream. Each lane is used by one thread at a time.
struct Lane {
  nvjpegJpegDecoder_t decoder = nullptr;
  nvjpegJpegState_t state = nullptr;
  nvjpegBufferPinned_t pinned[2] = {nullptr, nullptr};
  nvjpegJpegStream_t parsed[2] = {nullptr, nullptr};
  nvjpegBufferDevice_t device_buffer = nullptr;
  nvjpegDecodeParams_t params = nullptr;
  c10::cuda::CUDAStream stream;
  // recorded on `stream` after each sample; a lane waiting on it sleeps rather than spins. (Beside 7
  // busy lanes the hardware batch call takes 18-28 ms of host time against 12-13 ms alone,
  // scripts/decode_trace.py; sleeping lanes did not change that: 24.4 ms against 13.2.)
  Event done{cudaEventDisableTiming | cudaEventBlockingSync};
  int page = 0;
  bool used = false;  // decoded a sample in the current call
  OwnStreams own;  // `stream` at the priorities the lane was used at

  // a handle of the lane's own (nvJPEG allows one handle across threads; own handles were tried
  // against the hardware call's slowdown beside the lanes, which they did not remove)
  nvjpegHandle_t handle = nullptr;

  Lane(unsigned int flags, c10::cuda::CUDAStream s) : stream(s) {
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

  // One sample; a sample nvJPEG refuses gets its status and message, the lane stays usable.
  void decode(Job& job) {
    DecodeSample& s = *job.s;
    if (reject_level() == 2) {
      s.status = jpeg::kCorruptData;
      s.message = "rejected (TORCHAUG_NVJPEG_REJECT=lanes)";
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
      s.message = cat("nvJPEG: ", nvjpeg_status_name(st));
    }
  }
};

// The lanes' threads: lane 0 is the calling thread's, lanes 1.. have a thread each, started on
// first use and kept for the life of the process (like the decoder). start() / finish() hand out
// the jobs one at a time to whichever lane is free, so that slow samples do not hold up a fixed share.
class LanePool {
 public:
  LanePool(unsigned int flags, int device, int lanes) : device_(device) {
    const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    for (int i = 0; i < lanes; ++i) {
      lanes_.push_back(std::make_unique<Lane>(flags, own_stream(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device)))));
    }
    for (int i = 1; i < lanes; ++i) std::thread([this, i] { serve(i); }).detach();
  }

  int size() const { return static_cast<int>(lanes_.size()); }
  Lane& lane(int i) { return *lanes_[i]; }

  // Starts the jobs on lanes 1..; the caller then does other work and calls finish(), where it
  // joins in as lane 0 and waits for the others.
  void start(std::vector<Job>& jobs) {
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

  void finish(std::vector<Job>& jobs) {
    if (jobs.empty()) return;
    work(0);
    wait();
    TORCHAUG_CHECK(error_.empty(), "torchaug::decode_jpeg: a decoder lane failed: ", error_);
  }

  // Waits for lanes 1.. to be done with the jobs (they must not outlive the call that owns them,
  // also when that call leaves by an exception).
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return busy_ == 0; });
    jobs_ = nullptr;
  }

 private:
  void work(int i) {
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

  void serve(int i) {
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

  int device_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::vector<Job>* jobs_ = nullptr;
  std::atomic<size_t> next_{0};
  int busy_ = 0;
  uint64_t generation_ = 0;
  std::string error_;
};

// How many lanes (CPU threads, the caller's included) the hybrid decoder uses:
// TORCHAUG_NVJPEG_THREADS, else half the machine's cores, at most 8.
int lane_count() {
  if (const char* v = std::getenv("TORCHAUG_NVJPEG_THREADS")) {
    const int n = std::atoi(v);
    TORCHAUG_CHECK(n >= 1 && n <= 256, "torchaug::decode_jpeg: TORCHAUG_NVJPEG_THREADS must be an integer in [1, 256], got '",
                   v, "'");
    return n;
  }
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, std::min(8, cores / 2));
}

// The share of the hardware-decodable samples given to the hardware engines when the caller does not
// say (hw_load < 0): TORCHAUG_NVJPEG_HW_LOAD, else kDefaultHwLoad. 1: on the H100 every smaller
// share measured slower, in 3 sweeps on 3 machines (RESULTS.md, case 6, session 15): the hardware batch
// call slows down beside busy lanes, so the two do not add up.
constexpr double kDefaultHwLoad = 1.0;
double default_hw_load() {
  static const double load = [] {
    const char* v = std::getenv("TORCHAUG_NVJPEG_HW_LOAD");
    if (v == nullptr) return kDefaultHwLoad;
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    TORCHAUG_CHECK(end != v && *end == '\0' && x >= 0.0 && x <= 1.0,
                   "torchaug::decode_jpeg: TORCHAUG_NVJPEG_HW_LOAD must be a number in [0, 1], got '", v, "'");
    return x;
  }();
  return load;
}

// A decoder: its own nvJPEG handle, hardware batched state and stream, and lanes. A call holds one
// for its whole decode; calls from different threads take different decoders of the device's pool
// (below) and decode at the same time. Kept for the life of the process (as torchvision does:
// destroying nvJPEG objects from an atexit hook can run after the CUDA runtime has shut down).
struct Decoder {
  nvjpegHandle_t handle = nullptr;
  bool hardware = false;
  unsigned int flags = NVJPEG_FLAGS_DEFAULT;
  std::unique_ptr<Batched> batched_;
  std::unique_ptr<LanePool> lanes_;
  Event allocated;  // recorded on the batched stream for the lanes' streams to wait on

  Decoder() {
    // chroma upsampled by interpolation, as libjpeg-turbo's default "fancy" upsampling does (nvJPEG's
    // default replicates chroma samples: up to ~50 levels from the CPU decoder at sharp colour
    // edges); handles that refuse the flag are made without it. TORCHAUG_NVJPEG_UPSAMPLING=replicate
    // asks for nvJPEG's default (a diagnostic: what the interpolation costs in speed)
    const char* up = std::getenv("TORCHAUG_NVJPEG_UPSAMPLING");
    const bool replicate = up != nullptr && std::string(up) == "replicate";
    const unsigned int choices[2] = {replicate ? NVJPEG_FLAGS_DEFAULT : NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION,
                                   NVJPEG_FLAGS_DEFAULT};
    // TORCHAUG_NVJPEG_HARDWARE=0 leaves the hardware decoder out (every sample takes the hybrid path)
    const bool try_hardware = env_on("TORCHAUG_NVJPEG_HARDWARE");
    for (unsigned int f : choices) {
      if (!try_hardware) break;
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

  Batched& batched(const at::Device& device) {
    if (!batched_) batched_ = std::make_unique<Batched>(handle, own_stream(device));
    return *batched_;
  }

  LanePool& lanes(const at::Device& device) {
    if (!lanes_) lanes_ = std::make_unique<LanePool>(flags, device.index(), lane_count());
    return *lanes_;
  }
};

// How many decoders of a device may be in use at once, so how many calls (from different threads)
// decode on it at the same time: TORCHAUG_NVJPEG_DECODERS (read at each call, so that a process can
// compare settings), else kDefaultDecoders. A call's host work before its batched decode (the
// header parse, the output, the Python around it: ~3 ms a batch of 256) leaves the JPEG engines
// idle, which other threads' calls fill. With 1, their host work overlaps the one batched decode in
// flight; with 2, two batched decodes share the engines. On H100s (RESULTS.md case 6, session 36,
// interleaved rounds on two machines): ~110 KB files, 3 threads decoded 28,660 / 26,615 img/s on one
// decoder against 24,055 / 25,595 on two, but 2 threads 26,485 / 23,556 against 24,776 / 24,785;
// ~67 KB files were faster on two in 3 of 4 pairs. nvJPEG alone (scripts/roi_probe.cu) decoded ~110 KB
// files at ~30,100 img/s with one handle calling and 25,800-26,400 with two at once. The default
// stays 2 (session 23: two threads 1.2x-1.9x one thread on two decoders).
// (Sharing one call's batch between decoders did not gain either: its shares start and end together.)
constexpr int kDefaultDecoders = 2;
int decoder_limit() {
  const char* v = std::getenv("TORCHAUG_NVJPEG_DECODERS");
  if (v == nullptr) return kDefaultDecoders;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  TORCHAUG_CHECK(end != v && *end == '\0' && n >= 1 && n <= 16,
                 "torchaug::decode_jpeg: TORCHAUG_NVJPEG_DECODERS must be an integer in [1, 16], got '", v, "'");
  return static_cast<int>(n);
}

// The decoders of one device, made on demand and kept. A call takes one, waiting while `limit` are
// in use; the one given back last is reused first (one thread decoding keeps reusing one decoder, its
// buffers already grown).
class DecoderPool {
 public:
  Decoder& take(int limit) {
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
  void give_back(Decoder& d) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --in_use_;
      free_.push_back(&d);
    }
    given_back_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable given_back_;
  std::vector<Decoder*> free_;
  int in_use_ = 0;
};

DecoderPool& pool_for(const at::Device& device) {
  static std::mutex mutex;
  static std::map<int, DecoderPool*> pools;
  std::lock_guard<std::mutex> lock(mutex);
  DecoderPool*& p = pools[device.index()];
  if (p == nullptr) p = new DecoderPool();
  return *p;
}

// A decoder of the device's pool, held for the life of one call.
struct HeldDecoder {
  DecoderPool& pool;
  Decoder& d;
  explicit HeldDecoder(DecoderPool& p) : pool(p), d(p.take(decoder_limit())) {}
  ~HeldDecoder() { pool.give_back(d); }
  HeldDecoder(const HeldDecoder&) = delete;
  HeldDecoder& operator=(const HeldDecoder&) = delete;
};

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
// Huffman, 8-bit, a single interleaved scan, no 4:1:1 / 4:1:0). Grayscale files must also give
// their one component sampling factors 1x1: on the H100 the hardware decoder returned rows of
// wrong pixels and zeros (up to 255 levels off) for grayscale files whose component said 2x2 (as
// PIL writes with subsampling=2, and jpegtran -grayscale keeps from a 4:2:0 file), which the hybrid
// decoder and libjpeg-turbo decode right (scripts/decode_diag.py).
bool hardware_decodable(const jpeg::Info& info) {
  if (!info.baseline()) return false;
  if (info.components == 1) return info.h[0] == 1 && info.v[0] == 1;
  if (info.components != 3 || info.adobe_transform == 0) return false;
  if (info.h[1] != 1 || info.v[1] != 1 || info.h[2] != 1 || info.v[2] != 1) return false;
  return (info.h[0] == 1 || info.h[0] == 2) && (info.v[0] == 1 || info.v[0] == 2);
}

// What libjpeg must decode: 4 components, or RGB-coded 3-component files (Adobe transform 0).
bool needs_libjpeg(const jpeg::Info& info) {
  return info.components == 4 || (info.components == 3 && info.adobe_transform == 0);
}

nvjpegImage_t destination(uint8_t* base, const DecodeSample& s) {
  nvjpegImage_t img;
  const int64_t plane = stored_height(s) * stored_width(s);
  for (int c = 0; c < NVJPEG_MAX_COMPONENT; ++c) {
    img.channel[c] = c < s.channels ? base + c * plane : nullptr;
    img.pitch[c] = c < s.channels ? static_cast<unsigned int>(stored_width(s)) : 0;
  }
  return img;
}

// One sample's YUV planes in Batched::yuv and its planar RGB destination, for ycc_to_rgb_kernel.
struct YccJob {
  int64_t y, cb, cr;  // plane offsets in the YUV buffer
  uint8_t* dst;       // R, G and B planes of h x w, back to back
  int32_t h, w, ch, cw, fh, fv;
  int32_t gray;       // a one-component file: R = G = B = Y (libjpeg's gray_rgb_convert)
};

// The colour conversion of a whole hardware batch in one launch (blockIdx.y: the sample; blocks over
// its rows, threads over its columns): libjpeg-turbo's chroma upsampling and YCbCr -> RGB
// (csrc/kernels/decode.h) from nvJPEG's YUV planes, instead of nvJPEG's own conversion, a kernel per
// image.
__global__ void ycc_to_rgb_kernel(const uint8_t* __restrict__ yuv, const YccJob* __restrict__ jobs) {
  const YccJob j = jobs[blockIdx.y];
  const int64_t plane = static_cast<int64_t>(j.h) * j.w;
  for (int64_t y = blockIdx.x; y < j.h; y += gridDim.x) {
    for (int64_t x = threadIdx.x; x < j.w; x += blockDim.x) {
      const int32_t luma = yuv[j.y + y * j.w + x];
      uint8_t* o = j.dst + y * j.w + x;
      if (j.gray) {
        o[0] = o[plane] = o[2 * plane] = static_cast<uint8_t>(luma);
        continue;
      }
      const int32_t cb = kernels::chroma_sample(yuv + j.cb, j.cw, j.ch, j.cw, j.fh, j.fv, y, x);
      const int32_t cr = kernels::chroma_sample(yuv + j.cr, j.cw, j.ch, j.cw, j.fh, j.fv, y, x);
      kernels::ycc_to_rgb_px(luma, cb, cr, o, o + plane, o + 2 * plane);
    }
  }
}

// Whether a hardware RGB batch comes back as YUV planes that ycc_to_rgb_kernel converts
// (TORCHAUG_NVJPEG_YUV=1, read at each call) or converted by nvJPEG (0, the default). Measured on the
// H100 (RESULTS.md case 6, session 41): with 1 the pixels are libjpeg-turbo's exactly (nvJPEG's own
// conversion is within 1 level from 16 pixels a side, up to 13 off below), but nvJPEG then copies
// every plane out of its buffers (768 device copies a batch of 256), which made a decode 8-27% slower,
// and EfficientNet-b0 trained no faster beside it (96.1% of synthetic against 97.3%).
bool own_conversion() {
  const char* e = std::getenv("TORCHAUG_NVJPEG_YUV");
  return e != nullptr && env_switch("TORCHAUG_NVJPEG_YUV", "torchaug::decode_jpeg");
}

// One group through the hardware batched decoder; false when nvJPEG rejected it. An RGB group with
// `yuv` set is decoded to YUV planes in b.yuv and converted into the jobs' destinations by one
// ycc_to_rgb_kernel launch on the decoder's stream, instead of nvJPEG's kernel per image (256
// launches, ~0.7 ms of SM time a batch of 256 500x375 images; ours ~0.27 ms in one launch).
bool decode_batched(Batched& b, std::vector<Job>& jobs, nvjpegOutputFormat_t format, bool yuv = false) {
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
  if (reject_level() >= 1) return false;
  // the YUV planes of each job, in b.yuv, which the previous batch's conversion has read (the wait
  // above; with TORCHAUG_NVJPEG_PREVSYNC=0 nothing orders the engines' writes after that read)
  std::vector<YccJob> ycc;
  if (yuv && format == NVJPEG_OUTPUT_RGB) {
    int64_t size = 0;
    for (const auto& job : jobs) {
      const DecodeSample& s = *job.s;
      YccJob j;
      j.h = static_cast<int32_t>(stored_height(s));
      j.w = static_cast<int32_t>(stored_width(s));
      // hardware_decodable: luma 1 or 2, chroma 1 x 1; a one-component file (shown as RGB) gets
      // full-size chroma planes that nothing reads, whatever nvJPEG writes there
      j.gray = s.info.components == 1;
      j.fh = j.gray ? 1 : s.info.h[0];
      j.fv = j.gray ? 1 : s.info.v[0];
      j.cw = (j.w + j.fh - 1) / j.fh;
      j.ch = (j.h + j.fv - 1) / j.fv;
      j.dst = job.dst.channel[0];
      j.y = size;
      j.cb = j.y + static_cast<int64_t>(j.h) * j.w;
      j.cr = j.cb + static_cast<int64_t>(j.ch) * j.cw;
      size = j.cr + static_cast<int64_t>(j.ch) * j.cw;
      ycc.push_back(j);
    }
    if (!b.yuv.defined() || b.yuv.numel() < size) {
      const c10::cuda::CUDAStreamGuard on_own(b.stream);
      b.yuv = at::Tensor();  // freed first: idle (the wait above), and on this stream's pool
      b.yuv = at::empty({size}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, b.stream.device_index()));
    }
    format = NVJPEG_OUTPUT_YUV;
  }
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
    (void)nvjpegDecodeBatchedPreAllocate(b.handle, b.state, n, width, height, NVJPEG_CSS_444, format);
    b.preallocated = true;
  }
  if (b.batch != n || b.format != format) {
    trace(b.stream.device_index(), "nvjpegDecodeBatchedInitialize", n);
    if (nvjpegDecodeBatchedInitialize(b.handle, b.state, n, 1, format) != NVJPEG_STATUS_SUCCESS) return false;
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
    if (ycc.empty()) {
      std::memcpy(&dst[i], &jobs[i].dst, sizeof(nvjpegImage_t));
    } else {
      const YccJob& j = ycc[i];
      uint8_t* base = b.yuv.data_ptr<uint8_t>();
      for (int c = 0; c < NVJPEG_MAX_COMPONENT; ++c) {
        dst[i].channel[c] = c < 3 ? base + (c == 0 ? j.y : c == 1 ? j.cb : j.cr) : nullptr;
        dst[i].pitch[c] = c == 0 ? static_cast<unsigned int>(j.w) : c < 3 ? static_cast<unsigned int>(j.cw) : 0;
      }
    }
  }
  trace(b.stream.device_index(), "nvjpegDecodeBatched", n);
  const nvjpegStatus_t status =
      nvjpegDecodeBatched(b.handle, b.state, data.data(), lengths.data(), dst, b.stream.stream());
  if (status != NVJPEG_STATUS_SUCCESS) {
    b.done.record(b.stream.stream());  // a failed batch may have queued work too
    b.pending = true;
    b.batch = -1;  // "also use [Initialize] to reset failed batches"
    return false;
  }
  trace(b.stream.device_index(), "nvjpegDecodeBatched returned", n);
  if (!ycc.empty()) {
    const c10::cuda::CUDAStreamGuard on_own(b.stream);
    at::Tensor table = at::empty({static_cast<int64_t>(ycc.size() * sizeof(YccJob))},
                                 at::TensorOptions().dtype(at::kByte).pinned_memory(true));
    std::memcpy(table.data_ptr<uint8_t>(), ycc.data(), ycc.size() * sizeof(YccJob));
    const at::Tensor table_dev = table.to(b.yuv.device(), /*non_blocking=*/true);  // on b.stream
    const dim3 grid(64, static_cast<unsigned>(n));
    ycc_to_rgb_kernel<<<grid, 128, 0, b.stream.stream()>>>(
        b.yuv.data_ptr<uint8_t>(), reinterpret_cast<const YccJob*>(table_dev.data_ptr<uint8_t>()));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    trace(b.stream.device_index(), "converted", n);
  }
  b.done.record(b.stream.stream());
  b.pending = true;
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

// The scan check (check_sample_scans) of the hardware batches' samples on helper threads while the
// calling thread is in nvjpegDecodeBatched: the check reads every byte of every file (~1.4 ms a batch of
// 256 ~110 KB files on 4 threads, ~4 ms on the one intra-op thread of a Prefetcher's producer; RESULTS.md
// case 6, sessions 27 and 36), the engines decode them in ~8.5 ms, and the call used to do the two one
// after the other. One caller from pinned memory then took 9.6-11.7 ms a batch of ~110 KB files against
// 13.6-17.1 ms with the check first (scripts/scan_ab.py, 5 interleaved rounds on one H100, RESULTS.md case
// 6, session 37): more than the check's own time, not explained further. nvJPEG's hardware decoder takes
// damaged data without an error (see check_scans), so a file that fails here is decoded to garbage that
// no one sees: its status is the check's, and its slot is dropped from the output (compact_output). The
// threads are joined before anything reads the statuses, also when the decode throws.
class ScanCheck {
 public:
  ScanCheck(std::initializer_list<std::vector<Job>*> groups, int64_t threads) {
    for (auto* group : groups) {
      for (auto& job : *group) samples_.push_back(job.s);
    }
    const int64_t n = static_cast<int64_t>(samples_.size());
    const int64_t k = std::max<int64_t>(1, std::min<int64_t>(threads, (n + 7) / 8));
    try {
      for (int64_t t = 0; t < k && n > 0; ++t) {
        threads_.emplace_back([this, t, k, n] {
          for (int64_t i = t * n / k; i < (t + 1) * n / k; ++i) check_sample_scans(*samples_[i]);
        });
      }
    } catch (const std::system_error&) {  // no thread to be had: the rest checked here, now
      join();
      for (DecodeSample* s : samples_) check_sample_scans(*s);
    }
  }
  void join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  ~ScanCheck() { join(); }
  ScanCheck(const ScanCheck&) = delete;
  ScanCheck& operator=(const ScanCheck&) = delete;

 private:
  std::vector<DecodeSample*> samples_;
  std::vector<std::thread> threads_;
};

// Drops the jobs whose sample failed.
void drop_failed(std::vector<Job>& jobs) {
  jobs.erase(std::remove_if(jobs.begin(), jobs.end(), [](const Job& j) { return j.s->status != jpeg::kOk; }), jobs.end());
}

// When samples that had a slot in plan.out failed after the layout was made (their scan check), a new
// output holds only the slots of the samples that decoded, in order (the layout the CPU path makes):
// one device copy per run of consecutive kept slots, on the caller's stream, after the decode's work.
void compact_output(DecodePlan& plan, const std::vector<char>& slotted, const c10::cuda::CUDAStream& current) {
  int64_t total = 0;
  bool lost = false;
  for (size_t i = 0; i < plan.samples.size(); ++i) {
    if (!slotted[i]) continue;
    const DecodeSample& s = plan.samples[i];
    if (s.status == jpeg::kOk) {
      total += s.channels * s.height * s.width;
    } else {
      lost = true;
    }
  }
  if (!lost) return;
  at::Tensor out = at::empty({total}, plan.out.options());  // the caller's stream's pool
  const uint8_t* src = plan.out.data_ptr<uint8_t>();
  uint8_t* dst = out.data_ptr<uint8_t>();
  int64_t at = 0, run_src = 0, run_n = 0;
  auto flush = [&] {
    if (run_n > 0) {
      C10_CUDA_CHECK(cudaMemcpyAsync(dst + at, src + run_src, static_cast<size_t>(run_n), cudaMemcpyDeviceToDevice,
                                     current.stream()));
    }
    at += run_n;
    run_n = 0;
  };
  for (size_t i = 0; i < plan.samples.size(); ++i) {
    if (!slotted[i]) continue;
    DecodeSample& s = plan.samples[i];
    if (s.status != jpeg::kOk) {
      flush();
      continue;
    }
    const int64_t n = s.channels * s.height * s.width;
    if (run_n == 0) run_src = s.offset;
    s.offset = at + run_n;
    run_n += n;
  }
  flush();
  plan.out = out;
  plan.total = total;
}

void decode_jpeg_cuda(DecodePlan& plan, const at::Device& device) {
  const c10::cuda::CUDAGuard guard(device);
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device.index());
  const int dev = device.index();
  trace(dev, "enter", static_cast<int64_t>(plan.samples.size()));
  const HeldDecoder held(pool_for(device));
  Decoder& d = held.d;
  trace(dev, "locked");
  const int priority = current.priority();
  {
    Batched& b = d.batched(device);
    b.own.follow(b.stream, priority, b.done);
    trace(dev, "decoder stream priority", b.stream.priority());
  }

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
  std::vector<char> slotted(plan.samples.size());  // the samples with a slot in plan.out
  for (size_t i = 0; i < plan.samples.size(); ++i) slotted[i] = plan.samples[i].status == jpeg::kOk;
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

  // the share of the hardware-decodable samples past `hw_load` goes to the lanes as well
  const double load = plan.hw_load < 0 ? default_hw_load() : plan.hw_load;
  for (auto* group : {&hw_rgb, &hw_y}) {
    const size_t keep = static_cast<size_t>(std::llround(load * static_cast<double>(group->size())));
    hybrid.insert(hybrid.end(), group->begin() + static_cast<std::ptrdiff_t>(keep), group->end());
    group->resize(keep);
  }
  // the lanes' and libjpeg's samples are checked before they decode, the hardware batches' beside
  // their decode (ScanCheck)
  const int64_t check_threads = std::min<int64_t>(parse_threads(), at::get_num_threads());
  ScanCheck({&hybrid, &host}, check_threads).join();
  drop_failed(hybrid);
  drop_failed(host);
  trace(dev, "scan check started", static_cast<int64_t>(hw_rgb.size() + hw_y.size()));
  ScanCheck scan_check({&hw_rgb, &hw_y}, check_threads);
  // TORCHAUG_DECODE_SCAN_BESIDE=0 (read at each call): the check done before the decode, whose batches
  // then leave out the files that fail it (the order of earlier versions, for A/B)
  if (!env_switch("TORCHAUG_DECODE_SCAN_BESIDE", "torchaug::decode_jpeg")) {
    scan_check.join();
    drop_failed(hw_rgb);
    drop_failed(hw_y);
  }

  // the lanes (made on the first call that needs them: a handle, buffers and a thread each) start on
  // their samples; their streams first wait for everything queued on the batched stream, from whose
  // pool the output came (and, on a retry, where a rejected batch may have queued work on it)
  Batched& batched = d.batched(device);
  std::vector<Job> retry;
  LanePool* lanes = nullptr;
  struct Waiter {  // the lanes are done with the jobs before they go out of scope
    LanePool*& pool;
    ~Waiter() {
      if (pool != nullptr) pool->wait();
    }
  } waiter{lanes};
  auto start_lanes = [&](std::vector<Job>& jobs) {
    if (jobs.empty()) return;
    if (lanes == nullptr) lanes = &d.lanes(device);
    d.allocated.record(batched.stream.stream());
    for (int i = 0; i < lanes->size(); ++i) {
      Lane& lane = lanes->lane(i);
      lane.own.follow(lane.stream, priority, lane.done);
      d.allocated.block(lane.stream.stream());
    }
    lanes->start(jobs);
  };
  // the caller's thread joins the lanes until every sample is taken, then the caller's stream waits
  // for the lanes' last samples
  auto join_lanes = [&](std::vector<Job>& jobs) {
    if (jobs.empty()) return;
    lanes->finish(jobs);
    for (int i = 0; i < lanes->size(); ++i) {
      if (lanes->lane(i).used) lanes->lane(i).done.block(current.stream());
    }
  };
  trace(dev, "lanes", static_cast<int64_t>(hybrid.size()));
  start_lanes(hybrid);

  // meanwhile the batched groups on the decoder's stream (they need not wait for the caller's
  // stream: their memory is the decoder's); the caller's stream waits for them
  bool queued = false;
  const bool yuv = own_conversion();
  for (auto* group : {&hw_rgb, &hw_y}) {
    if (group->empty()) continue;
    if (!decode_batched(batched, *group, group == &hw_y ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGB, yuv)) {
      retry.insert(retry.end(), group->begin(), group->end());  // retried one by one on the lanes
    }
    queued = true;
  }
  if (queued) batched.done.block(current.stream());
  trace(dev, "batched queued", static_cast<int64_t>(hw_rgb.size() + hw_y.size()));
  scan_check.join();
  trace(dev, "scan check joined");
  drop_failed(retry);  // a rejected batch's samples that failed their check are not retried

  join_lanes(hybrid);
  trace(dev, "retry", static_cast<int64_t>(retry.size()));
  start_lanes(retry);
  join_lanes(retry);
  trace(dev, "lanes done", static_cast<int64_t>(hybrid.size()));
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
  compact_output(plan, slotted, current);
  trace(dev, "exit");
}

struct Register {
  Register() { cuda_decode_backend() = &decode_jpeg_cuda; }
} register_cuda_decoder;

}  // namespace
}  // namespace torchaug
