// Per-pixel math of the decode family, shared by the CPU (libjpeg-turbo) and CUDA (nvJPEG) paths:
// the EXIF orientation as a pixel mapping and the CMYK -> RGB conversion of Adobe JPEGs.
#pragma once

#include "common.h"

namespace torchaug {
namespace kernels {

// Orientations 5..8 swap the two axes of the stored image.
TORCHAUG_HOST_DEVICE inline bool exif_swaps_axes(int32_t orientation) { return orientation >= 5; }

// Output pixel (y, x) of an image shown with EXIF orientation `o` reads stored pixel (*sy, *sx) of
// the stored (hs, ws) image (as PIL's ImageOps.exif_transpose: 2 mirror, 3 rotate 180, 4 flip,
// 5 transpose, 6 rotate 90 clockwise, 7 transverse, 8 rotate 90 counter-clockwise).
TORCHAUG_HOST_DEVICE inline void exif_source(int32_t o, int64_t y, int64_t x, int64_t hs, int64_t ws, int64_t* sy,
                                             int64_t* sx) {
  switch (o) {
    case 2: *sy = y; *sx = ws - 1 - x; break;
    case 3: *sy = hs - 1 - y; *sx = ws - 1 - x; break;
    case 4: *sy = hs - 1 - y; *sx = x; break;
    case 5: *sy = x; *sx = y; break;
    case 6: *sy = hs - 1 - x; *sx = y; break;
    case 7: *sy = hs - 1 - x; *sx = ws - 1 - y; break;
    case 8: *sy = x; *sx = ws - 1 - y; break;
    default: *sy = y; *sx = x; break;
  }
}

// a * b / 255 rounded to nearest, exactly (PIL's MULDIV255), for a, b in [0, 255].
TORCHAUG_HOST_DEVICE inline uint8_t muldiv255(uint32_t a, uint32_t b) {
  const uint32_t t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

// One channel of RGB from the inverted CMYK that Adobe applications store (and libjpeg returns as
// JCS_CMYK): R = C' * K' / 255 with C' = 255 - C, as PIL's "CMYK;I" -> RGB conversion.
TORCHAUG_HOST_DEVICE inline uint8_t cmyk_inverted_to_rgb_px(uint8_t c, uint8_t k) { return muldiv255(c, k); }

// Luma of an RGB pixel as libjpeg computes Y from RGB (ITU-R BT.601, rounded): the grayscale output
// of a CMYK source, which libjpeg cannot convert to grayscale itself.
TORCHAUG_HOST_DEVICE inline uint8_t rgb_to_luma_px(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((19595u * r + 38470u * g + 7471u * b + 32768u) >> 16);
}

}  // namespace kernels
}  // namespace torchaug
