// A small host-side JPEG marker walker shared by the CPU (libjpeg-turbo) and CUDA (nvJPEG) decoders.
// It reads what both need before any pixel is decoded (size, components, coding process, chroma
// sampling, the Adobe colour transform, the EXIF orientation) and rejects what neither should see:
// empty buffers, data that is not a JPEG, truncated streams (no EOI marker after the first scan),
// zero or absurd dimensions. Both backends therefore report the same error for the same bad file.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace torchaug {
namespace jpeg {

// Status codes of a sample, returned per sample by torchaug::decode_jpeg (0 = decoded). Python
// (torchaug/io/_decode.py: _STATUS) holds the matching messages.
enum Status : int32_t {
  kOk = 0,
  kEmpty = 1,          // zero-length buffer
  kNotJpeg = 2,        // does not start with the SOI marker FF D8
  kTruncated = 3,      // the stream ends before its EOI marker (or before its first scan)
  kCorruptHeader = 4,  // a marker segment is malformed
  kUnsupported = 5,    // a JPEG this decoder cannot decode (12-bit, lossless, DNL height, ...)
  kTooLarge = 6,       // width * height above kMaxPixels
  kCorruptData = 7,    // damaged entropy-coded data (a misplaced marker, or the decoder failed on it)
};

// The decoders refuse images above this many pixels (PIL's decompression-bomb limit is 179M; a
// 16384 x 16384 image is 268M): an absurd size in a corrupt header must not allocate gigabytes.
constexpr int64_t kMaxPixels = int64_t(1) << 28;

struct Info {
  int32_t width = 0, height = 0, components = 0, precision = 0;
  int32_t sof = -1;             // SOF marker low nibble: 0 baseline, 1 extended, 2 progressive, ...
  bool arithmetic = false;      // SOF9..SOF15
  int32_t h[4] = {0, 0, 0, 0};  // sampling factors of each component
  int32_t v[4] = {0, 0, 0, 0};
  int32_t adobe_transform = -1; // APP14 Adobe transform byte (-1: no Adobe marker)
  int32_t orientation = 1;      // EXIF orientation 1..8 (1 when absent or invalid)
  size_t scan_pos = 0;              // where the first scan's entropy-coded data starts (parse_header)
  uint32_t restart_interval = 0;    // the restart interval in force there
  bool progressive() const { return sof == 2 || sof == 6 || sof == 10 || sof == 14; }
  bool baseline() const { return (sof == 0 || sof == 1) && !arithmetic && precision == 8; }
};

inline uint32_t be16(const uint8_t* p) { return (uint32_t(p[0]) << 8) | p[1]; }

// EXIF orientation from an APP1 payload (after the length field); 1 when absent or malformed.
inline int32_t exif_orientation(const uint8_t* p, size_t n) {
  if (n < 14 || std::memcmp(p, "Exif\0\0", 6) != 0) return 1;
  const uint8_t* t = p + 6;  // TIFF header
  const size_t tn = n - 6;
  const bool le = t[0] == 'I' && t[1] == 'I';
  if (!le && !(t[0] == 'M' && t[1] == 'M')) return 1;
  auto u16 = [&](size_t o) -> uint32_t { return le ? (t[o] | (uint32_t(t[o + 1]) << 8)) : be16(t + o); };
  auto u32 = [&](size_t o) -> uint32_t {
    return le ? (t[o] | (uint32_t(t[o + 1]) << 8) | (uint32_t(t[o + 2]) << 16) | (uint32_t(t[o + 3]) << 24))
              : ((uint32_t(t[o]) << 24) | (uint32_t(t[o + 1]) << 16) | (uint32_t(t[o + 2]) << 8) | t[o + 3]);
  };
  if (u16(2) != 42) return 1;
  const size_t ifd = u32(4);
  if (ifd + 2 > tn) return 1;
  const uint32_t count = u16(ifd);
  for (uint32_t i = 0; i < count; ++i) {
    const size_t e = ifd + 2 + size_t(i) * 12;
    if (e + 12 > tn) return 1;
    if (u16(e) == 0x0112) {  // Orientation, SHORT
      const uint32_t value = u16(e + 8);
      return (value >= 1 && value <= 8) ? int32_t(value) : 1;
    }
  }
  return 1;
}

// The first i in [pos, n) where data[i] is FF and not a stuffed byte's FF (data[i + 1] != 00, or i
// is the last byte), else n. In entropy-coded data FF bytes come every ~200 bytes (5.4 a KB in 110 KB
// photos), almost all stuffed (FF 00); what this finds is rare (restart markers, fill bytes, the
// markers between scans, EOI). With SSE2, 64 bytes an iteration: a byte is FF and the next one is
// not 00, from two overlapping loads. A memchr for FF instead stopped at every stuffed byte: 5.3 ms
// for a batch of 256 such files on one core of an H100 machine.
inline size_t next_marker(const uint8_t* data, size_t pos, size_t n) {
  size_t i = pos;
#if defined(__SSE2__)
  const __m128i ff = _mm_set1_epi8(static_cast<char>(0xFF));
  const __m128i zero = _mm_setzero_si128();
  const auto hits = [&](size_t at) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + at));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + at + 1));
    return _mm_andnot_si128(_mm_cmpeq_epi8(b, zero), _mm_cmpeq_epi8(a, ff));
  };
  for (; i + 65 <= n; i += 64) {  // bytes i .. i + 64 are read
    const __m128i h0 = hits(i), h1 = hits(i + 16), h2 = hits(i + 32), h3 = hits(i + 48);
    if (_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(h0, h1), _mm_or_si128(h2, h3))) == 0) continue;
    const uint64_t m = static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(h0))) |
                       (static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(h1))) << 16) |
                       (static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(h2))) << 32) |
                       (static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(h3))) << 48);
    return i + static_cast<size_t>(__builtin_ctzll(m));
  }
#endif
  for (; i < n; ++i) {
    if (data[i] == 0xFF && (i + 1 == n || data[i + 1] != 0x00)) return i;
  }
  return n;
}

// Checks the marker structure of everything after the first scan header (at `pos`): in entropy-coded
// data an FF byte may only be followed by 00 (a stuffed byte), FF (fill), the next restart marker
// in sequence (RST0..7, only when a restart interval is set), a marker segment between the scans of
// a progressive file, or EOI, which must come. nvJPEG's hardware decoder decodes damaged data
// without an error, so this host check (next_marker's speed: markers are rare in entropy-coded
// data) is what turns structural damage (inserted markers, lost bytes at a restart, a missing end)
// into an error on both backends. Damage that keeps the structure (flipped bits inside Huffman
// codes) is not detected here.
inline Status check_scans(const uint8_t* data, size_t n, size_t pos, uint32_t restart_interval) {
  uint32_t next_rst = 0;
  while (pos < n) {
    pos = next_marker(data, pos, n);
    if (pos >= n) return kTruncated;
    ++pos;
    while (pos < n && data[pos] == 0xFF) ++pos;  // fill bytes
    if (pos >= n) return kTruncated;
    const uint8_t code = data[pos++];
    if (code == 0x00) continue;  // a stuffed byte after fill bytes (FF FF 00)
    if (code == 0xD9) return kOk;  // EOI; trailing bytes after it are allowed
    if (code >= 0xD0 && code <= 0xD7) {
      if (restart_interval == 0 || code != 0xD0 + (next_rst & 7)) return kCorruptData;
      ++next_rst;
      continue;
    }
    // a marker segment between scans (progressive / multi-scan files)
    const bool segment = code == 0xC4 || code == 0xCC || code == 0xDA || code == 0xDB || code == 0xDD || code == 0xFE ||
                         (code >= 0xE0 && code <= 0xEF);
    if (!segment) return kCorruptData;
    if (pos + 2 > n) return kTruncated;
    const size_t len = be16(data + pos);
    if (len < 2) return kCorruptData;
    if (pos + len > n) return kTruncated;
    if (code == 0xDD && len >= 4) restart_interval = be16(data + pos + 2);
    if (code == 0xDA) next_rst = 0;
    pos += len;
  }
  return kTruncated;
}

// Walks the markers of data[0:n) up to the first SOS: the header's checks and fields, and in
// info.scan_pos / info.restart_interval where check_scans starts. The scans are not read.
inline Status parse_header(const uint8_t* data, size_t n, Info& info) {
  if (n == 0) return kEmpty;
  if (n < 2 || data[0] != 0xFF || data[1] != 0xD8) return kNotJpeg;
  size_t pos = 2;
  bool have_sof = false;
  uint32_t restart_interval = 0;
  for (;;) {
    // a marker: one or more FF fill bytes, then the code
    if (pos >= n) return kTruncated;
    if (data[pos] != 0xFF) return kCorruptHeader;
    while (pos < n && data[pos] == 0xFF) ++pos;
    if (pos >= n) return kTruncated;
    const uint8_t code = data[pos++];
    if (code == 0xD8 || code == 0x00) return kCorruptHeader;  // a second SOI, or a stuffed byte
    if (code == 0x01 || (code >= 0xD0 && code <= 0xD7)) continue;  // TEM, RSTn: no length
    if (code == 0xD9) return kTruncated;  // EOI before any scan: no image data
    if (pos + 2 > n) return kTruncated;
    const size_t len = be16(data + pos);
    if (len < 2) return kCorruptHeader;
    if (pos + len > n) return kTruncated;
    const uint8_t* seg = data + pos + 2;
    const size_t seg_n = len - 2;
    const bool is_sof = code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC;
    if (is_sof) {
      if (have_sof) return kCorruptHeader;
      if (seg_n < 6) return kCorruptHeader;
      have_sof = true;
      info.sof = code - 0xC0;
      info.arithmetic = code >= 0xC9;
      info.precision = seg[0];
      info.height = int32_t(be16(seg + 1));
      info.width = int32_t(be16(seg + 3));
      info.components = seg[5];
      if (info.components < 1 || info.components > 4 || seg_n < size_t(6 + 3 * info.components)) return kCorruptHeader;
      for (int c = 0; c < info.components; ++c) {
        info.h[c] = seg[6 + 3 * c + 1] >> 4;
        info.v[c] = seg[6 + 3 * c + 1] & 15;
        if (info.h[c] < 1 || info.h[c] > 4 || info.v[c] < 1 || info.v[c] > 4) return kCorruptHeader;
      }
    } else if (code == 0xE1 && info.orientation == 1) {
      info.orientation = exif_orientation(seg, seg_n);
    } else if (code == 0xEE && seg_n >= 12 && std::memcmp(seg, "Adobe", 5) == 0) {
      info.adobe_transform = seg[11];
    } else if (code == 0xDD && seg_n >= 2) {
      restart_interval = be16(seg);
    } else if (code == 0xDA) {  // SOS: the header ends here
      if (!have_sof) return kCorruptHeader;
      pos += len;
      break;
    }
    pos += len;
  }
  if (info.width == 0) return kCorruptHeader;
  if (info.height == 0) return kUnsupported;  // height given by a DNL marker after the first scan
  if (info.sof == 3 || info.sof == 7 || info.sof == 11 || info.sof == 15) return kUnsupported;  // lossless
  if (info.precision != 8) return kUnsupported;
  if (int64_t(info.width) * info.height > kMaxPixels) return kTooLarge;
  // Every MCU codes at least one Huffman symbol (a DC difference) of at least one bit, so a file
  // whose bytes after the header are fewer than MCUs / 8 cannot hold the image it declares: refused
  // here, before the decoders allocate and fill it (a 675-byte file declaring 16384 x 16384 would
  // otherwise cost a gigabyte and seconds). Arithmetic coding has no such floor.
  if (!info.arithmetic) {
    int32_t hmax = 1, vmax = 1;
    for (int c = 0; c < info.components && c < 4; ++c) {
      hmax = std::max(hmax, info.h[c]);
      vmax = std::max(vmax, info.v[c]);
    }
    const int64_t mcus = ((int64_t(info.width) + 8 * hmax - 1) / (8 * hmax)) * ((int64_t(info.height) + 8 * vmax - 1) / (8 * vmax));
    if (pos > n || mcus / 8 > static_cast<int64_t>(n - pos)) return kTruncated;
  }
  info.scan_pos = pos;
  info.restart_interval = restart_interval;
  return kOk;
}

// The whole check of a file: parse_header, then check_scans (that an EOI marker follows the first
// scan, with the marker structure in between intact).
inline Status parse(const uint8_t* data, size_t n, Info& info) {
  const Status st = parse_header(data, n, info);
  return st != kOk ? st : check_scans(data, n, info.scan_pos, info.restart_interval);
}

}  // namespace jpeg
}  // namespace torchaug
