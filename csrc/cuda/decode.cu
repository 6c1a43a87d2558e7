// nvJPEG decoding of a batch into the ragged output of csrc/ops/decode.h.
//
// Each sample goes one of three ways, decided from its parsed header (csrc/ops/jpeg_header.h):
//  - baseline JPEGs (1 component, or YCbCr 4:4:4 / 4:2:2 / 4:2:0 / 4:4:0) go to nvJPEG's batched
//    decoder on the hardware JPEG engines (A100 / H100), RGB ones in one call and grayscale ones in
//    another, on a CUDA stream of the decoder's own; the planar output is written straight into the
//    samples' slots. Calls from different threads take different decoders of the device (each its
//    own nvJPEG handle, state, stream and lanes; up to TORCHAUG_NVJPEG_DECODERS) and decode at the
//    same time;
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
// The samples come with their headers parsed; the check of their scans (csrc/ops/jpeg_header.h) runs here,
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
#include <c10/cuda/CUDAFunctions.h>
#include <nvjpeg.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <system_error>
#include <thread>
#include <vector>

#include "../kernels/decode.h"
#include "../ops/decode.h"
#include "decoder_pool.cuh"

namespace torchaug {
namespace {

using namespace nvjpeg;

// The share of the hardware-decodable samples given to the hardware engines when the caller does not
// say (hw_load < 0). 1: on H100s every smaller share measured slower, in 3 sweeps on 3 machines: the
// hardware batch call slows down beside busy lanes, so the two do not add up.
constexpr double kDefaultHwLoad = 1.0;

// Whether nvJPEG's hardware batched decoder takes the sample (its documented limits: baseline
// Huffman, 8-bit, a single interleaved scan, no 4:1:1 / 4:1:0). Grayscale files must also give
// their one component sampling factors 1x1: on the H100 the hardware decoder returned rows of
// wrong pixels and zeros (up to 255 levels off) for grayscale files whose component said 2x2 (as
// PIL writes with subsampling=2, and jpegtran -grayscale keeps from a 4:2:0 file), which the hybrid
// decoder and libjpeg-turbo decode right.
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

// One group through the hardware batched decoder; false when nvJPEG rejected it.
bool decode_batched(Batched& b, std::vector<Job>& jobs, nvjpegOutputFormat_t format) {
  const int n = static_cast<int>(jobs.size());
  // The previous batch finished on the GPU before the state is used again, as nvImageCodec's
  // hardware decoder plugin does (cudaEventSynchronize of the last batch's event before the next
  // nvjpegDecodeBatched): the hardware path does not order its work after what is queued on the stream
  // it is given (see decode_jpeg_cuda). Without this wait and the preallocation below, 6 of 11 2-GPU
  // training runs stalled with a decode thread spinning in cuEventSynchronize inside
  // nvjpegDecodeBatched; with both, 7 of 7 went through (which of the two matters is not known).
  if (b.pending) C10_CUDA_CHECK(cudaEventSynchronize(b.done.e));
  if (reject_level() >= 1) return false;
  // The hardware decoder's buffers allocated once, from the first group's size, before the decoder
  // first runs, as DALI and nvImageCodec do ("memory pool for HW decoder ... >20% for 8GPU training"
  // in nvImageCodec); nvJPEG grows them later itself.
  if (!b.preallocated) {
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
    std::memcpy(&dst[i], &jobs[i].dst, sizeof(nvjpegImage_t));
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
// 256 ~110 KB files on 4 threads, ~4 ms on the one intra-op thread of a Prefetcher's producer), and
// the engines decode them in ~8.5 ms. One caller from pinned memory takes 9.6-11.7 ms a batch of
// ~110 KB files so, against 13.6-17.1 ms with the check first (5 interleaved rounds on one H100):
// more than the check's own time, not explained further. nvJPEG's hardware decoder takes
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

void decode_jpeg_cuda(DecodePlan& plan, const at::Device& requested) {
  // "cuda" without an index is the current device. Every stream, pool and guard below takes the
  // index: a stream made with index -1 and set current wrote the thread's current-stream table at
  // [-1], a heap corruption that aborted the process at exit ("double free or corruption").
  const at::Device device(at::kCUDA, requested.has_index() ? requested.index() : c10::cuda::current_device());
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
  const double load = plan.hw_load < 0 ? kDefaultHwLoad : plan.hw_load;
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
  for (auto* group : {&hw_rgb, &hw_y}) {
    if (group->empty()) continue;
    if (!decode_batched(batched, *group, group == &hw_y ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGB)) {
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
