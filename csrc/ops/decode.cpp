// torchaug::decode_jpeg: argument checks, header parsing (csrc/ops/jpeg_header.h), the ragged output
// layout and one output allocation, then the libjpeg-turbo decoder (CPU) or the nvJPEG decoder
// (CUDA, csrc/cuda/decode.cu). The encoded bytes are always host tensors, so the op is registered
// once (CompositeExplicitAutograd) and routes on its `device` argument.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "decode.h"
#include "../kernels/decode.h"
#include "common.h"
#include "settings.h"

namespace torchaug {

DecodeBackend& cuda_decode_backend() {
  static DecodeBackend backend = nullptr;
  return backend;
}

void exif_orient_cpu(const uint8_t* src, uint8_t* dst, int64_t c, int64_t hs, int64_t ws, int32_t o) {
  const bool swap = kernels::exif_swaps_axes(o);
  const int64_t ho = swap ? ws : hs, wo = swap ? hs : ws;
  for (int64_t ch = 0; ch < c; ++ch) {
    const uint8_t* s = src + ch * hs * ws;
    uint8_t* d = dst + ch * ho * wo;
    for (int64_t y = 0; y < ho; ++y) {
      for (int64_t x = 0; x < wo; ++x) {
        int64_t sy, sx;
        kernels::exif_source(o, y, x, hs, ws, &sy, &sx);
        d[y * wo + x] = s[sy * ws + sx];
      }
    }
  }
}

namespace {

const char* status_text(int32_t status) {
  switch (status) {
    case jpeg::kEmpty: return "the data is empty (0 bytes)";
    case jpeg::kNotJpeg: return "not a JPEG file (it does not start with the SOI marker FF D8)";
    case jpeg::kTruncated: return "truncated JPEG (the data ends before the image's EOI marker)";
    case jpeg::kCorruptHeader: return "corrupt JPEG header (a malformed marker segment)";
    case jpeg::kUnsupported: return "unsupported JPEG";
    case jpeg::kTooLarge: return "image too large";
    case jpeg::kCorruptData: return "corrupt JPEG data";
    default: return "decoding failed";
  }
}

std::string describe(const DecodeSample& s) {
  std::string text = status_text(s.status);
  if (s.status == jpeg::kTooLarge) {
    text = cat(text, ": ", s.info.width, "x", s.info.height, " is more than ", jpeg::kMaxPixels, " pixels");
  } else if (s.status == jpeg::kUnsupported && s.message.empty()) {
    text = cat(text, " (", s.info.precision, "-bit samples, SOF", s.info.sof, ")");
  }
  if (!s.message.empty()) text = cat(text, ": ", s.message);
  return text;
}

}  // namespace

// 4, or the decode_parse_threads test hook. The check of the scans reads memory at about one core's
// bandwidth (~4 ms a batch of 256 ~110 KB files on one core of an H100 machine); 4 threads take it to
// ~1.5 ms a call there and 16 to ~1 ms, but a team of all the cores spins on cores that a training
// step's threads need.
int64_t parse_threads() {
  const int64_t forced = test_hooks::get(test_hooks::kDecodeParseThreads);
  return forced > 0 ? forced : 4;
}

namespace {

void decode_cpu(DecodePlan& plan) {
  uint8_t* out = plan.out.data_ptr<uint8_t>();
  const int64_t B = static_cast<int64_t>(plan.samples.size());
  at::parallel_for(0, B, 1, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> scratch;
    for (int64_t b = begin; b < end; ++b) {
      DecodeSample& s = plan.samples[b];
      if (s.status != jpeg::kOk) continue;
      uint8_t* dst = out + s.offset;
      if (s.orientation != 1) {
        scratch.resize(static_cast<size_t>(s.channels * s.height * s.width));
        dst = scratch.data();
      }
      s.status = libjpeg_decode(s, plan.mode, dst, s.message);
      if (s.status == jpeg::kOk && s.orientation != 1) {
        exif_orient_cpu(dst, out + s.offset, s.channels, stored_height(s), stored_width(s), s.orientation);
      }
    }
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> decode_jpeg(const at::TensorList data, int64_t mode,
                                                                       bool apply_exif_orientation, bool skip_errors,
                                                                       std::optional<at::Device> device_opt,
                                                                       std::optional<double> hw_load) {
  const char* op = "decode_jpeg";
  const at::Device device = device_opt.value_or(at::Device(at::kCPU));
  TORCHAUG_CHECK(device.is_cpu() || device.is_cuda(), "torchaug::", op, ": device must be cpu or cuda, got ", device);
  TORCHAUG_CHECK(!hw_load.has_value() || (*hw_load >= 0.0 && *hw_load <= 1.0), "torchaug::", op,
                 ": hw_load must be in [0, 1] (the hardware decoder's share of the batch), got ", hw_load.value_or(0.0));
  TORCHAUG_CHECK(mode == kModeUnchanged || mode == kModeGray || mode == kModeRGB, "torchaug::", op,
                 ": mode must be 0 (unchanged), 1 (gray) or 3 (rgb), got ", mode);
  const int64_t B = static_cast<int64_t>(data.size());
  DecodePlan plan;
  plan.mode = mode;
  plan.hw_load = hw_load.value_or(-1.0);
  plan.samples.resize(B);
  std::vector<at::Tensor> contiguous(B);
  for (int64_t b = 0; b < B; ++b) {
    const at::Tensor& t = data[b];
    TORCHAUG_CHECK(t.defined() && t.device().is_cpu(), "torchaug::", op, ": data[", b,
                   "] must be a CPU tensor of the file's bytes, got ", t.defined() ? t.device().str() : std::string("None"));
    TORCHAUG_CHECK(t.scalar_type() == at::kByte, "torchaug::", op, ": data[", b, "] must be uint8, got ", t.scalar_type());
    TORCHAUG_CHECK(t.dim() == 1, "torchaug::", op, ": data[", b, "] must be 1-D (the file's bytes), got shape ",
                   shape_str(t.sizes()));
    contiguous[b] = t.contiguous();
    DecodeSample& s = plan.samples[b];
    s.data = contiguous[b].data_ptr<uint8_t>();
    s.size = static_cast<size_t>(contiguous[b].numel());
  }
  // headers and the marker structure of the scans (jpeg::next_marker over each file: ~1 ms for 256
  // files of 110 KB on one CI core, ~4 ms on one core of the H100 machine), spread over at most
  // parse_threads() of the intra-op threads. The CUDA backend takes the headers only: it checks the
  // scans itself, those of its hardware batches while the JPEG engines decode them.
  const int64_t threads = parse_threads();
  const bool backend_checks = device.is_cuda() && cuda_decode_backend() != nullptr;
  at::parallel_for(0, B, std::max<int64_t>(8, (B + threads - 1) / threads), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      DecodeSample& s = plan.samples[b];
      s.status = backend_checks ? jpeg::parse_header(s.data, s.size, s.info) : jpeg::parse(s.data, s.size, s.info);
      s.scans_checked = !backend_checks;
      if (s.status == jpeg::kOk && s.info.components == 2) s.status = jpeg::kUnsupported;
    }
  });
  // the ragged layout: every sample that parsed gets its slot, in order
  int64_t total = 0;
  for (auto& s : plan.samples) {
    if (s.status != jpeg::kOk) continue;
    s.channels = decode_channels(mode, s.info.components);
    s.orientation = apply_exif_orientation ? s.info.orientation : 1;
    const bool swap = kernels::exif_swaps_axes(s.orientation);
    s.height = swap ? s.info.width : s.info.height;
    s.width = swap ? s.info.height : s.info.width;
    s.offset = total;
    total += s.channels * s.height * s.width;
  }
  plan.total = total;
  if (total > 0 && device.is_cuda()) {
    TORCHAUG_CHECK(cuda_decode_backend() != nullptr, "torchaug::", op,
                   ": device is cuda but this torchaug build has no CUDA decoder (built without CUDA or nvJPEG)");
    cuda_decode_backend()(plan, device);  // allocates plan.out (see csrc/cuda/decode.cu)
  } else {
    plan.out = empty_output(op, {total}, at::TensorOptions().dtype(at::kByte).device(device));
    if (total > 0) decode_cpu(plan);
  }
  at::Tensor offsets = at::zeros({B}, at::kLong);
  at::Tensor sizes = at::zeros({B, 3}, at::kLong);
  at::Tensor status = at::zeros({B}, at::kInt);
  int64_t* o = offsets.data_ptr<int64_t>();
  int64_t* sz = sizes.data_ptr<int64_t>();
  int32_t* st = status.data_ptr<int32_t>();
  for (int64_t b = 0; b < B; ++b) {
    const DecodeSample& s = plan.samples[b];
    TORCHAUG_CHECK(s.status != jpeg::kOk || s.scans_checked, "torchaug::", op, ": internal error: sample ", b,
                   " was decoded without the check of its scans");
    st[b] = s.status;
    if (s.status != jpeg::kOk) {
      TORCHAUG_CHECK(skip_errors, "torchaug::", op, ": sample ", b, " (", static_cast<long long>(s.size),
                     " bytes): ", describe(s), " (pass on_error='skip' to skip bad samples)");
      continue;
    }
    o[b] = s.offset;
    sz[3 * b] = s.channels;
    sz[3 * b + 1] = s.height;
    sz[3 * b + 2] = s.width;
  }
  return {plan.out, offsets, sizes, status};
}

TORCH_LIBRARY_IMPL(torchaug, CompositeExplicitAutograd, m) { m.impl("decode_jpeg", decode_jpeg); }

}  // namespace torchaug
