// The host-side JPEG marker walker (csrc/ops/jpeg_header.h): next_marker's vector scan against a
// byte-by-byte reference at every position and length around its 64-byte blocks, and check_scans
// against the memchr walk it replaced, on entropy-coded-like data with markers inserted.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ops/jpeg_header.h"

using namespace torchaug::jpeg;

namespace {

size_t next_marker_reference(const std::vector<uint8_t>& d, size_t pos) {
  for (size_t i = pos; i < d.size(); ++i) {
    if (d[i] == 0xFF && (i + 1 == d.size() || d[i + 1] != 0x00)) return i;
  }
  return d.size();
}

// check_scans as it was before next_marker: a memchr for every FF byte
Status check_scans_reference(const uint8_t* data, size_t n, size_t pos, uint32_t restart_interval) {
  uint32_t next_rst = 0;
  while (pos < n) {
    const void* hit = std::memchr(data + pos, 0xFF, n - pos);
    if (hit == nullptr) return kTruncated;
    pos = static_cast<size_t>(static_cast<const uint8_t*>(hit) - data) + 1;
    while (pos < n && data[pos] == 0xFF) ++pos;
    if (pos >= n) return kTruncated;
    const uint8_t code = data[pos++];
    if (code == 0x00) continue;
    if (code == 0xD9) return kOk;
    if (code >= 0xD0 && code <= 0xD7) {
      if (restart_interval == 0 || code != 0xD0 + (next_rst & 7)) return kCorruptData;
      ++next_rst;
      continue;
    }
    const bool segment = code == 0xC4 || code == 0xCC || code == 0xDA || code == 0xDB || code == 0xDD || code == 0xFE ||
                         (code >= 0xE0 && code <= 0xEF);
    if (!segment) return kCorruptData;
    if (pos + 2 > n) return kTruncated;
    const size_t len = (size_t(data[pos]) << 8) | data[pos + 1];
    if (len < 2) return kCorruptData;
    if (pos + len > n) return kTruncated;
    if (code == 0xDD && len >= 4) restart_interval = (uint32_t(data[pos + 2]) << 8) | data[pos + 3];
    if (code == 0xDA) next_rst = 0;
    pos += len;
  }
  return kTruncated;
}

// entropy-coded-like bytes: random, every FF stuffed with a 00 after it
std::vector<uint8_t> entropy_bytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> d;
  while (d.size() < n) {
    const uint8_t b = static_cast<uint8_t>(rng() % 64 == 0 ? 0xFF : rng());
    d.push_back(b);
    if (b == 0xFF) d.push_back(0x00);
  }
  d.resize(n);
  return d;
}

}  // namespace

TEST(JpegHeader, NextMarkerFindsEveryPositionAroundTheBlocks) {
  std::mt19937 rng(7);
  for (size_t n : {0, 1, 2, 15, 16, 17, 63, 64, 65, 66, 127, 128, 129, 200, 1000}) {
    const std::vector<uint8_t> base = entropy_bytes(rng, n);
    ASSERT_EQ(next_marker(base.data(), 0, n), next_marker_reference(base, 0)) << "n " << n;
    for (size_t at = 0; at < n; ++at) {
      for (uint8_t code : {0x00, 0xD0, 0xD9, 0xFF, 0xC4}) {
        std::vector<uint8_t> d = base;
        // clear stray markers first, so the inserted one is the one to find
        for (size_t i = 0; i < n; ++i) {
          if (d[i] == 0xFF && (i + 1 == n || d[i + 1] != 0x00)) d[i] = 0x12;
        }
        if (at > 0 && d[at - 1] == 0xFF) d[at - 1] = 0x12;  // a stuffed FF before would become a marker
        d[at] = 0xFF;
        if (at + 1 < n) d[at + 1] = code;
        const size_t want = next_marker_reference(d, 0);
        ASSERT_EQ(next_marker(d.data(), 0, n), want) << "n " << n << " marker at " << at << " code " << int(code);
        ASSERT_EQ(want, code == 0x00 && at + 1 < n ? n : at) << "n " << n << " at " << at << " code " << int(code);
        for (size_t from : {size_t(1), at, at + 1}) {
          if (from > n) continue;
          ASSERT_EQ(next_marker(d.data(), from, n), next_marker_reference(d, from)) << "n " << n << " from " << from;
        }
      }
    }
  }
}

TEST(JpegHeader, CheckScansMatchesTheByteWalkOnDamagedData) {
  std::mt19937 rng(11);
  int ok = 0, corrupt = 0, truncated = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<uint8_t> d = entropy_bytes(rng, 1 + rng() % 700);
    const uint32_t restart_interval = rng() % 3;
    // restart markers in sequence, or not; segments between scans; EOI at the end, or not
    const int inserts = static_cast<int>(rng() % 6);
    uint32_t rst = 0;
    for (int k = 0; k < inserts && d.size() > 8; ++k) {
      const size_t at = rng() % (d.size() - 6);
      switch (rng() % 5) {
        case 0: d[at] = 0xFF; d[at + 1] = static_cast<uint8_t>(0xD0 + (rst++ & 7)); break;
        case 1: d[at] = 0xFF; d[at + 1] = static_cast<uint8_t>(0xD0 + rng() % 8); break;
        case 2: d[at] = 0xFF; d[at + 1] = 0xFF; d[at + 2] = 0x00; break;  // fill, then a stuffed byte
        case 3: d[at] = 0xFF; d[at + 1] = 0xDA; d[at + 2] = 0x00; d[at + 3] = static_cast<uint8_t>(2 + rng() % 4); break;
        default: d[at] = 0xFF; d[at + 1] = static_cast<uint8_t>(rng()); break;
      }
    }
    if (rng() % 2) {
      d.push_back(0xFF);
      d.push_back(0xD9);
    } else if (rng() % 4 == 0) {
      d.push_back(0xFF);  // ends on an FF
    }
    const size_t start = rng() % 3 == 0 ? rng() % d.size() : 0;
    const Status want = check_scans_reference(d.data(), d.size(), start, restart_interval);
    ASSERT_EQ(check_scans(d.data(), d.size(), start, restart_interval), want) << "trial " << trial;
    ok += want == kOk;
    corrupt += want == kCorruptData;
    truncated += want == kTruncated;
  }
  // the data reach all three outcomes
  EXPECT_GT(ok, 1000);
  EXPECT_GT(corrupt, 1000);
  EXPECT_GT(truncated, 1000);
}

namespace {

// A minimal baseline file's markers: SOI, SOF0 (16x8, 3 components, 4:2:0), DRI, SOS, then the
// scan's bytes as given.
std::vector<uint8_t> tiny_jpeg(uint16_t restart_interval, const std::vector<uint8_t>& scan) {
  std::vector<uint8_t> d = {0xFF, 0xD8,
                            0xFF, 0xC0, 0x00, 0x11, 8, 0x00, 0x08, 0x00, 0x10, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1,
                            0xFF, 0xDD, 0x00, 0x04, static_cast<uint8_t>(restart_interval >> 8), static_cast<uint8_t>(restart_interval),
                            0xFF, 0xDA, 0x00, 0x0C, 3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0};
  d.insert(d.end(), scan.begin(), scan.end());
  return d;
}

}  // namespace

// parse_header stops at the first scan and says where it starts; parse is parse_header then
// check_scans from there (the CUDA decoder runs the two apart, the second beside the engines' decode).
TEST(JpegHeader, ParseIsHeaderThenScanCheck) {
  const std::vector<std::vector<uint8_t>> scans = {
      {0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56, 0xFF, 0xD9},  // a restart marker in sequence, EOI
      {0x12, 0xFF, 0x00, 0x34},                                // no EOI: truncated
      {0x12, 0xFF, 0xD3, 0x34, 0xFF, 0xD9},                    // a restart marker out of sequence
      {0x12, 0xFF, 0xC8, 0x34, 0xFF, 0xD9},                    // a marker that cannot be there
  };
  const Status want[] = {kOk, kTruncated, kCorruptData, kCorruptData};
  for (size_t i = 0; i < scans.size(); ++i) {
    const std::vector<uint8_t> d = tiny_jpeg(1, scans[i]);
    Info header, whole;
    ASSERT_EQ(parse_header(d.data(), d.size(), header), kOk) << i;
    EXPECT_EQ(header.scan_pos, d.size() - scans[i].size()) << i;
    EXPECT_EQ(header.restart_interval, 1u) << i;
    EXPECT_EQ(header.width, 16);
    EXPECT_EQ(header.height, 8);
    EXPECT_EQ(header.h[0], 2);
    EXPECT_EQ(check_scans(d.data(), d.size(), header.scan_pos, header.restart_interval), want[i]) << i;
    EXPECT_EQ(parse(d.data(), d.size(), whole), want[i]) << i;
    EXPECT_EQ(whole.scan_pos, header.scan_pos) << i;
  }
  // a header error is parse_header's, the scans never read
  std::vector<uint8_t> bad = tiny_jpeg(0, scans[1]);
  bad[5] = 0x01;  // SOF length 1
  Info info;
  EXPECT_EQ(parse_header(bad.data(), bad.size(), info), kCorruptHeader);
  EXPECT_EQ(parse(bad.data(), bad.size(), info), kCorruptHeader);
}
