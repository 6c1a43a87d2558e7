// Glue of the decode family between the host entry (csrc/ops/decode.cpp: checks, header parsing,
// one output allocation), the libjpeg-turbo decoder (csrc/cpu/decode.cpp) and the nvJPEG decoder
// (csrc/cuda/decode.cu). A batch decodes into one flat uint8 buffer, sample i stored CHW from
// offsets[i] with sizes[i] = (C, H, W): the ragged layout resized_crop_ragged reads in one launch.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "jpeg_header.h"

namespace torchaug {

// The `mode` argument: torchvision's ImageReadMode numbering.
enum DecodeMode : int64_t { kModeUnchanged = 0, kModeGray = 1, kModeRGB = 3 };

struct DecodeSample {
  const uint8_t* data = nullptr;
  size_t size = 0;
  jpeg::Info info;
  int32_t status = jpeg::kOk;
  std::string message;          // the decoder's own words when status != 0 (may be empty)
  int64_t channels = 0;         // output channels (1 or 3)
  int64_t height = 0, width = 0;  // output size, after the EXIF orientation when it is applied
  int64_t offset = 0;           // element offset of the sample in the flat output
  int32_t orientation = 1;      // the orientation to apply (1 when not applied)
  // whether jpeg::check_scans has run (the CPU path checks every file before its layout; the CUDA
  // backend checks the files of its hardware batches beside their decode, see csrc/cuda/decode.cu)
  bool scans_checked = false;
};

// The scan check of a sample whose header parsed, unless it ran already; it may turn the status
// into an error.
inline void check_sample_scans(DecodeSample& s) {
  if (s.status != jpeg::kOk || s.scans_checked) return;
  s.status = jpeg::check_scans(s.data, s.size, s.info.scan_pos, s.info.restart_interval);
  s.scans_checked = true;
}

// How many threads the files' checks take at most (csrc/ops/decode.cpp).
int64_t parse_threads();

struct DecodePlan {
  std::vector<DecodeSample> samples;
  int64_t mode = kModeRGB;
  int64_t total = 0;  // elements of the flat output
  double hw_load = -1.0;  // CUDA: the share of hardware-decodable samples for the hardware engines (< 0: default)
  at::Tensor out;     // flat uint8 on the target device (the CUDA backend allocates it itself)
};

// Output channels of a sample of `components` components in `mode`.
inline int64_t decode_channels(int64_t mode, int components) {
  if (mode == kModeGray) return 1;
  if (mode == kModeRGB) return 3;
  return components == 1 ? 1 : 3;
}

// The stored (pre-orientation) height and width of sample s.
inline int64_t stored_height(const DecodeSample& s) { return s.info.height; }
inline int64_t stored_width(const DecodeSample& s) { return s.info.width; }

// Decodes sample s with libjpeg-turbo into `out` (host memory, CHW, stored orientation, s.channels
// planes of info.height x info.width). Returns a jpeg::Status and sets `message` on failure. When
// torchaug was built without libjpeg it returns kUnsupported with a message saying so.
int32_t libjpeg_decode(const DecodeSample& s, int64_t mode, uint8_t* out, std::string& message);
bool have_libjpeg();

// dst (c, H_o, W_o) = src (c, hs, ws) shown with EXIF orientation o (host memory).
void exif_orient_cpu(const uint8_t* src, uint8_t* dst, int64_t c, int64_t hs, int64_t ws, int32_t o);

// The CUDA decoder, registered by csrc/cuda/decode.cu when torchaug is built with CUDA.
// Samples whose header parsed may come with their scans unchecked (check_sample_scans): the backend
// checks them, and gives the output only the slots of the samples that decoded (plan.total and the
// offsets shrink when one failed its check after the layout was made).
using DecodeBackend = void (*)(DecodePlan& plan, const at::Device& device);
DecodeBackend& cuda_decode_backend();

}  // namespace torchaug
