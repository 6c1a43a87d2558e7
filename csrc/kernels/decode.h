// Per-pixel math of the decode family, shared by the CPU (libjpeg-turbo) and CUDA (nvJPEG) paths:
// the EXIF orientation as a pixel mapping, the CMYK -> RGB conversion of Adobe JPEGs, and
// libjpeg-turbo's chroma upsampling and YCbCr -> RGB conversion.
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

// libjpeg-turbo's YCbCr -> RGB conversion (jdcolor.c, ycc_rgb_convert: 16-bit fixed point, its
// tables' rounding), for a YCbCr pixel that chroma_sample() upsampled. The CUDA decoder's own colour
// conversion of nvJPEG's YUV planes (csrc/cuda/decode.cu) uses it, so that the GPU's pixels differ
// from libjpeg-turbo's only where the two IDCTs do.
TORCHAUG_HOST_DEVICE inline void ycc_to_rgb_px(int32_t y, int32_t cb, int32_t cr, uint8_t* r, uint8_t* g, uint8_t* b) {
  // FIX(1.40200), FIX(1.77200), FIX(0.71414), FIX(0.34414) at 16 bits; ONE_HALF rounds
  const int32_t xb = cb - 128, xr = cr - 128;
  *r = static_cast<uint8_t>(clamp_of<int32_t>(y + ((91881 * xr + 32768) >> 16), 0, 255));
  *g = static_cast<uint8_t>(clamp_of<int32_t>(y + ((-22554 * xb + 32768 - 46802 * xr) >> 16), 0, 255));
  *b = static_cast<uint8_t>(clamp_of<int32_t>(y + ((116130 * xb + 32768) >> 16), 0, 255));
}

// One chroma sample at full-size pixel (y, x), upsampled from a (ch, cw) plane (row pitch `pitch`)
// by fh x fv (each 1 or 2) as libjpeg-turbo's "fancy" upsampling does it (jdsample.c: the triangle
// filters h2v1, h1v2 and h2v2 with their alternating rounding biases; the rows above the first and
// below the last, and the columns beside the edges, are the edge's own, as jdmainct.c's context rows
// are; planes at most 2 samples wide are replicated, as libjpeg-turbo then does).
TORCHAUG_HOST_DEVICE inline int32_t chroma_sample(const uint8_t* plane, int64_t pitch, int64_t ch, int64_t cw,
                                                  int32_t fh, int32_t fv, int64_t y, int64_t x) {
  const int64_t i = fv == 2 ? y >> 1 : y, j = fh == 2 ? x >> 1 : x;
  // the neighbouring column (odd x: the next one, even x: the previous one) and row, edges replicated
  const int64_t k = (x & 1) ? min_of<int64_t>(j + 1, cw - 1) : max_of<int64_t>(j - 1, 0);
  const uint8_t* row = plane + i * pitch;
  if (fv == 1) {
    if (fh == 1 || cw <= 2) return row[j];
    return (3 * row[j] + row[k] + ((x & 1) ? 2 : 1)) >> 2;
  }
  const uint8_t* other = plane + ((y & 1) ? min_of<int64_t>(i + 1, ch - 1) : max_of<int64_t>(i - 1, 0)) * pitch;
  if (fh == 1) return (3 * row[j] + other[j] + ((y & 1) ? 2 : 1)) >> 2;
  if (cw <= 2) return row[j];
  const int32_t here = 3 * row[j] + other[j], beside = 3 * row[k] + other[k];
  return (3 * here + beside + ((x & 1) ? 7 : 8)) >> 4;
}

}  // namespace kernels
}  // namespace torchaug
