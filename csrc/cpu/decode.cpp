// libjpeg-turbo decoding of one sample into CHW planes (csrc/ops/decode.h). Used by the CPU path
// of torchaug::decode_jpeg and by the CUDA path for what nvJPEG cannot decode (CMYK / YCCK).
// libjpeg errors longjmp back here and become the sample's status; of its warnings, those that mean
// the entropy-coded data is damaged (premature end, bad Huffman code, a marker in the data) are
// errors too, while benign ones (extraneous bytes before a marker, common in real photo
// collections and ignored by PIL) are not.
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../ops/decode.h"
#include "../kernels/decode.h"

#ifdef TORCHAUG_WITH_LIBJPEG
#include <jpeglib.h>
#include <jerror.h>
#endif

namespace torchaug {

#ifdef TORCHAUG_WITH_LIBJPEG

bool have_libjpeg() { return true; }

namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  bool damaged = false;
  char first_warning[JMSG_LENGTH_MAX] = {0};
};

void on_error(j_common_ptr cinfo) {
  ErrorManager* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  std::longjmp(err->jump, 1);
}

void on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  ErrorManager* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  const int code = err->pub.msg_code;
  if (code == JWRN_JPEG_EOF || code == JWRN_HUFF_BAD_CODE || code == JWRN_HIT_MARKER || code == JWRN_MUST_RESYNC ||
      code == JWRN_BOGUS_PROGRESSION) {
    if (!err->damaged) (*cinfo->err->format_message)(cinfo, err->first_warning);
    err->damaged = true;
  }
}

}  // namespace

int32_t libjpeg_decode(const DecodeSample& s, int64_t mode, uint8_t* out, std::string& message) {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  err.pub.emit_message = on_message;
  std::vector<uint8_t> row;
  // everything the longjmp may skip over lives above this line
  if (setjmp(err.jump)) {
    char buf[JMSG_LENGTH_MAX];
    (*cinfo.err->format_message)(reinterpret_cast<j_common_ptr>(&cinfo), buf);
    message = buf;
    jpeg_destroy_decompress(&cinfo);
    return jpeg::kCorruptData;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, s.data, static_cast<unsigned long>(s.size));
  jpeg_read_header(&cinfo, TRUE);
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  if (cmyk) {
    cinfo.out_color_space = JCS_CMYK;
  } else {
    cinfo.out_color_space = s.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  }
  jpeg_start_decompress(&cinfo);
  const int64_t W = cinfo.output_width, H = cinfo.output_height, n = cinfo.output_components;
  if (H != s.info.height || W != s.info.width) {
    message = "the decoder's image size differs from the frame header's";
    jpeg_destroy_decompress(&cinfo);
    return jpeg::kCorruptHeader;
  }
  row.resize(static_cast<size_t>(W * n));
  const int64_t plane = H * W;
  while (cinfo.output_scanline < cinfo.output_height) {
    const int64_t y = cinfo.output_scanline;
    JSAMPROW rows[1] = {row.data()};
    jpeg_read_scanlines(&cinfo, rows, 1);
    uint8_t* o = out + y * W;
    const uint8_t* r = row.data();
    if (cmyk) {
      for (int64_t x = 0; x < W; ++x, r += 4) {
        const uint8_t R = kernels::cmyk_inverted_to_rgb_px(r[0], r[3]);
        const uint8_t G = kernels::cmyk_inverted_to_rgb_px(r[1], r[3]);
        const uint8_t B = kernels::cmyk_inverted_to_rgb_px(r[2], r[3]);
        if (s.channels == 1) {
          o[x] = kernels::rgb_to_luma_px(R, G, B);
        } else {
          o[x] = R;
          o[plane + x] = G;
          o[2 * plane + x] = B;
        }
      }
    } else if (n == 1) {
      std::memcpy(o, r, static_cast<size_t>(W));
    } else {
      for (int64_t x = 0; x < W; ++x, r += 3) {
        o[x] = r[0];
        o[plane + x] = r[1];
        o[2 * plane + x] = r[2];
      }
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (err.damaged) {
    message = err.first_warning;
    return std::strstr(err.first_warning, "Premature end") ? jpeg::kTruncated : jpeg::kCorruptData;
  }
  return jpeg::kOk;
}

#else  // built without libjpeg

bool have_libjpeg() { return false; }

int32_t libjpeg_decode(const DecodeSample&, int64_t, uint8_t*, std::string& message) {
  message = "this torchaug build has no CPU JPEG decoder (libjpeg-turbo was not found when it was built)";
  return jpeg::kUnsupported;
}

#endif

}  // namespace torchaug
