// The nvJPEG decoders of a device (csrc/cuda/decoder_pool.cu), which csrc/cuda/decode.cu drives: a
// decoder is an nvJPEG handle with the hardware batched decoder's state and stream (Batched) and the
// hybrid decoder's lanes (LanePool: CPU threads, each with its own nvJPEG state and CUDA stream).
// A call holds one decoder of the device's pool for its whole decode (HeldDecoder); calls from
// different threads take different decoders and decode at the same time. Decoders, streams and lane
// threads are kept for the life of the process (as torchvision does: destroying nvJPEG objects from
// an atexit hook can run after the CUDA runtime has shut down).
#pragma once

#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../ops/common.h"
#include "../ops/decode.h"

namespace torchaug {
namespace nvjpeg {

const char* status_name(nvjpegStatus_t s);

#define TORCHAUG_NVJPEG_CHECK(call)                                                                           \
  do {                                                                                                        \
    const nvjpegStatus_t status_ = (call);                                                                    \
    TORCHAUG_CHECK(status_ == NVJPEG_STATUS_SUCCESS, "torchaug::decode_jpeg: ", #call, " failed: ",           \
                   ::torchaug::nvjpeg::status_name(status_));                                                 \
  } while (0)

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
c10::cuda::CUDAStream own_stream(const at::Device& device, int priority = 0);

// The decoder's work runs at the priority of the caller's stream: a caller on an urgent stream
// (Prefetcher(priority=-1)) gets decode kernels that take free SMs ahead of a training step's, and
// the decode keeps the caller's order. A stream of the decoder's whose priority differs is swapped
// for one of its own at that priority (each made once and kept), which first waits for `last`, the
// latest work of the stream it replaces.
struct OwnStreams {
  std::vector<c10::cuda::CUDAStream> made;
  void follow(c10::cuda::CUDAStream& stream, int priority, const Event& last);
};

// The nvjpeg_reject test hook: 1 treats every hardware batch as one that nvJPEG rejected, so that
// what follows a rejection (the batch's files retried one by one on the lanes, the errors naming
// them) runs without a file that nvJPEG's batched decoder refuses; 2 also fails every file on the
// lanes.
int reject_level();

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
  Batched(nvjpegHandle_t h, c10::cuda::CUDAStream s);
};

// A sample and where its planes go.
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
  // recorded on `stream` after each sample; a lane waiting on it sleeps rather than spins (spinning
  // lanes did not make the hardware batch call beside them any faster either)
  Event done{cudaEventDisableTiming | cudaEventBlockingSync};
  int page = 0;
  bool used = false;  // decoded a sample in the current call
  OwnStreams own;  // `stream` at the priorities the lane was used at

  // a handle of the lane's own (nvJPEG allows one handle across threads; own handles were tried
  // against the hardware call's slowdown beside the lanes, which they did not remove)
  nvjpegHandle_t handle = nullptr;

  Lane(unsigned int flags, c10::cuda::CUDAStream s);

  // One sample; a sample nvJPEG refuses gets its status and message, the lane stays usable.
  void decode(Job& job);
};

// The lanes' threads: lane 0 is the calling thread's, lanes 1.. have a thread each, started on
// first use and kept for the life of the process (like the decoder). start() / finish() hand out
// the jobs one at a time to whichever lane is free, so that slow samples do not hold up a fixed share.
class LanePool {
 public:
  LanePool(unsigned int flags, int device, int lanes);

  int size() const { return static_cast<int>(lanes_.size()); }
  Lane& lane(int i) { return *lanes_[i]; }

  // Starts the jobs on lanes 1..; the caller then does other work and calls finish(), where it
  // joins in as lane 0 and waits for the others.
  void start(std::vector<Job>& jobs);
  void finish(std::vector<Job>& jobs);

  // Waits for lanes 1.. to be done with the jobs (they must not outlive the call that owns them,
  // also when that call leaves by an exception).
  void wait();

 private:
  void work(int i);
  void serve(int i);

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

// A decoder: its own nvJPEG handle, hardware batched state and stream, and lanes, each made on first
// use.
struct Decoder {
  nvjpegHandle_t handle = nullptr;
  bool hardware = false;
  unsigned int flags = NVJPEG_FLAGS_DEFAULT;
  std::unique_ptr<Batched> batched_;
  std::unique_ptr<LanePool> lanes_;
  Event allocated;  // recorded on the batched stream for the lanes' streams to wait on

  Decoder();
  Batched& batched(const at::Device& device);
  LanePool& lanes(const at::Device& device);
};

// The decoders of one device, made on demand and kept. A call takes one, waiting while `limit` are
// in use; the one given back last is reused first (one thread decoding keeps reusing one decoder, its
// buffers already grown).
class DecoderPool {
 public:
  Decoder& take(int limit);
  void give_back(Decoder& d);

 private:
  std::mutex mutex_;
  std::condition_variable given_back_;
  std::vector<Decoder*> free_;
  int in_use_ = 0;
};

DecoderPool& pool_for(const at::Device& device);

// A decoder of the device's pool, held for the life of one call. How many decoders of a device may
// be in use at once, so how many calls (from different threads) decode on it at the same time:
// TORCHAUG_NVJPEG_DECODERS (csrc/ops/settings.h, default 2), read at each call. A call's host work
// before its batched decode (the header parse, the output, the Python around it: ~3 ms a batch of
// 256) leaves the JPEG engines idle, which other threads' calls fill. With 1, their host work
// overlaps the one batched decode in flight; with 2, two batched decodes share the engines. On H100s
// two threads decode 1.2x-1.9x faster than one on two decoders; with 3 threads and ~110 KB files one
// decoder was faster on some machines and two on others.
struct HeldDecoder {
  DecoderPool& pool;
  Decoder& d;
  explicit HeldDecoder(DecoderPool& p);
  ~HeldDecoder() { pool.give_back(d); }
  HeldDecoder(const HeldDecoder&) = delete;
  HeldDecoder& operator=(const HeldDecoder&) = delete;
};

// With TORCHAUG_DECODE_TRACE=1, a line on stderr as a decode enters each step: where a decode that
// does not return is (say a rank of a multi-GPU run whose decode thread spins while its GPU idles).
void trace(int device, const char* step, int64_t n = -1);

}  // namespace nvjpeg
}  // namespace torchaug
