// csrc/kernels/decode.h's chroma upsampling and YCbCr -> RGB conversion (what the CUDA decoder runs on
// nvJPEG's YUV planes) against libjpeg-turbo itself: a JPEG written here by libjpeg, decoded once to
// raw planes (no upsampling, no conversion) and once to RGB; the kernels' math on the raw planes must
// give libjpeg's RGB bit for bit, for every subsampling the hardware decoder takes and for sizes
// whose chroma planes end in half a sample or are at most 2 samples wide.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/decode.h"

#ifdef TORCHAUG_WITH_LIBJPEG
#include <jpeglib.h>

namespace {

struct Planes {
  int width = 0, height = 0;
  std::vector<std::vector<uint8_t>> plane;  // per component, padded to whole blocks
  std::vector<int> pitch, cw, ch, h, v;
};

std::vector<uint8_t> encode(const std::vector<uint8_t>& rgb, int w, int h, int fh, int fv) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 85, TRUE);
  c.comp_info[0].h_samp_factor = fh;
  c.comp_info[0].v_samp_factor = fv;
  for (int i = 1; i < 3; ++i) c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(rgb.data() + static_cast<size_t>(c.next_scanline) * w * 3);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<uint8_t> out(buf, buf + size);
  jpeg_destroy_compress(&c);
  std::free(buf);
  return out;
}

// A libjpeg decompressor over `file`, its header read, the islow IDCT (libjpeg-turbo's default, and
// what torchaug's CPU decoder and PIL use).
struct Decompressor {
  jpeg_decompress_struct d;
  jpeg_error_mgr err;
  explicit Decompressor(const std::vector<uint8_t>& file) {
    d.err = jpeg_std_error(&err);
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, file.data(), static_cast<unsigned long>(file.size()));
    jpeg_read_header(&d, TRUE);
    d.dct_method = JDCT_ISLOW;
  }
  ~Decompressor() { jpeg_destroy_decompress(&d); }
};

std::vector<uint8_t> decode_rgb(const std::vector<uint8_t>& file, int* w, int* h) {
  Decompressor dec(file);
  jpeg_decompress_struct& d = dec.d;
  d.out_color_space = JCS_RGB;
  d.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&d);
  *w = static_cast<int>(d.output_width);
  *h = static_cast<int>(d.output_height);
  std::vector<uint8_t> rgb(static_cast<size_t>(*w) * *h * 3);
  while (d.output_scanline < d.output_height) {
    JSAMPROW row = rgb.data() + static_cast<size_t>(d.output_scanline) * *w * 3;
    jpeg_read_scanlines(&d, &row, 1);
  }
  jpeg_finish_decompress(&d);
  return rgb;
}

Planes decode_raw(const std::vector<uint8_t>& file) {
  Decompressor dec(file);
  jpeg_decompress_struct& d = dec.d;
  d.raw_data_out = TRUE;
  jpeg_start_decompress(&d);
  Planes p;
  p.width = static_cast<int>(d.image_width);
  p.height = static_cast<int>(d.image_height);
  const int imcu_rows = d.max_v_samp_factor * DCTSIZE;
  const int imcus = (p.height + imcu_rows - 1) / imcu_rows;
  for (int c = 0; c < 3; ++c) {
    const jpeg_component_info& ci = d.comp_info[c];
    p.pitch.push_back(static_cast<int>(ci.width_in_blocks) * DCTSIZE);
    p.cw.push_back(static_cast<int>(ci.downsampled_width));
    p.ch.push_back(static_cast<int>(ci.downsampled_height));
    p.h.push_back(d.max_h_samp_factor / ci.h_samp_factor);
    p.v.push_back(d.max_v_samp_factor / ci.v_samp_factor);
    p.plane.emplace_back(static_cast<size_t>(p.pitch[c]) * imcus * ci.v_samp_factor * DCTSIZE);
  }
  std::vector<JSAMPROW> rows[3];
  for (int m = 0; m < imcus; ++m) {
    JSAMPARRAY arrays[3];
    for (int c = 0; c < 3; ++c) {
      const int n = d.comp_info[c].v_samp_factor * DCTSIZE;
      rows[c].resize(n);
      for (int r = 0; r < n; ++r) rows[c][r] = p.plane[c].data() + static_cast<size_t>(m * n + r) * p.pitch[c];
      arrays[c] = rows[c].data();
    }
    jpeg_read_raw_data(&d, arrays, static_cast<JDIMENSION>(imcu_rows));
  }
  jpeg_finish_decompress(&d);
  return p;
}

class YccTest : public ::testing::TestWithParam<std::tuple<int, int, int, int>> {};

TEST_P(YccTest, KernelsOnRawPlanesEqualLibjpegRgb) {
  const auto [w, h, fh, fv] = GetParam();
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  uint32_t state = 12345u + static_cast<uint32_t>(w * 31 + h * 7 + fh * 3 + fv);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) {
        state = state * 1664525u + 1013904223u;
        const int smooth = (x * (c + 1) * 255 / (w + 1) + y * (3 - c) * 255 / (h + 1)) / 2;
        rgb[(static_cast<size_t>(y) * w + x) * 3 + c] = static_cast<uint8_t>((smooth + static_cast<int>(state >> 27)) & 255);
      }
    }
  }
  const std::vector<uint8_t> file = encode(rgb, w, h, fh, fv);
  int ow = 0, oh = 0;
  const std::vector<uint8_t> want = decode_rgb(file, &ow, &oh);
  const Planes p = decode_raw(file);
  ASSERT_EQ(ow, w);
  ASSERT_EQ(oh, h);
  ASSERT_EQ(p.h[1], fh);
  ASSERT_EQ(p.v[1], fv);
  ASSERT_EQ(p.cw[1], (w + fh - 1) / fh);
  ASSERT_EQ(p.ch[1], (h + fv - 1) / fv);
  int64_t wrong = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int32_t luma = p.plane[0][static_cast<size_t>(y) * p.pitch[0] + x];
      const int32_t cb = torchaug::kernels::chroma_sample(p.plane[1].data(), p.pitch[1], p.ch[1], p.cw[1], fh, fv, y, x);
      const int32_t cr = torchaug::kernels::chroma_sample(p.plane[2].data(), p.pitch[2], p.ch[2], p.cw[2], fh, fv, y, x);
      uint8_t px[3];
      torchaug::kernels::ycc_to_rgb_px(luma, cb, cr, &px[0], &px[1], &px[2]);
      for (int c = 0; c < 3; ++c) {
        const uint8_t expect = want[(static_cast<size_t>(y) * w + x) * 3 + c];
        if (px[c] != expect && wrong++ < 5) {
          ADD_FAILURE() << "pixel (" << y << ", " << x << ") channel " << c << ": " << int(px[c]) << " != libjpeg's "
                        << int(expect);
        }
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Subsamplings, YccTest,
    ::testing::Values(std::make_tuple(500, 375, 2, 2), std::make_tuple(375, 500, 2, 2), std::make_tuple(37, 23, 2, 2),
                      std::make_tuple(33, 17, 2, 1), std::make_tuple(64, 48, 2, 1), std::make_tuple(29, 35, 1, 2),
                      std::make_tuple(41, 19, 1, 1), std::make_tuple(3, 5, 2, 2), std::make_tuple(4, 9, 2, 1),
                      std::make_tuple(1, 1, 2, 2), std::make_tuple(2, 7, 1, 2)));

}  // namespace

#else

TEST(Ycc, NeedsLibjpeg) { GTEST_SKIP() << "built without libjpeg-turbo"; }

#endif
