// Counter-based random numbers for the noise ops: Philox4x32-10 (Salmon et al., "Parallel random
// numbers: as easy as 1, 2, 3", SC'11) keyed by the sample's seed, with the element's logical index
// as the counter. Every element's numbers depend only on (seed, stream, index), so the CPU and CUDA
// kernels, any launch geometry and any memory format give the same values. Shared by
// csrc/cpu/noise.cpp, csrc/cuda/noise.cu and the GoogleTest suite.
#pragma once

#include "common.h"

namespace torchaug {
namespace kernels {

struct Philox4 {
  uint32_t v[4];
};

TORCHAUG_HOST_DEVICE inline void mulhilo32(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// Philox4x32 with 10 rounds: counter (c0, c1, c2, c3), key (k0, k1).
TORCHAUG_HOST_DEVICE inline Philox4 philox4x32(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                               uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo32(kM0, c0, hi0, lo0);
    mulhilo32(kM1, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

// Streams: independent sequences under one seed, one per use.
enum RandomStream : uint32_t {
  kStreamGaussian = 1,
  kStreamSaltPepper = 2,
  kStreamEraseFill = 3,
};

// The four random words of element `index` of a sample with `seed` in `stream`.
TORCHAUG_HOST_DEVICE inline Philox4 random_words(int64_t seed, uint32_t stream, int64_t index) {
  const uint64_t s = static_cast<uint64_t>(seed), i = static_cast<uint64_t>(index);
  return philox4x32(static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), stream, 0u, static_cast<uint32_t>(s),
                    static_cast<uint32_t>(s >> 32));
}

// A uniform float in [0, 1) from one word (24 random bits).
TORCHAUG_HOST_DEVICE inline float uniform01(uint32_t w) {
  return static_cast<float>(w >> 8) * (1.0f / 16777216.0f);
}

// A standard normal value from two words (Box-Muller), in float32: logf / sqrtf / cosf of the host
// and device math libraries agree to an ulp or two.
TORCHAUG_HOST_DEVICE inline float standard_normal(uint32_t w0, uint32_t w1) {
  const float u1 = static_cast<float>((w0 >> 8) + 1u) * (1.0f / 16777216.0f);  // (0, 1]
  const float u2 = uniform01(w1);
  return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795865f * u2);
}

}  // namespace kernels
}  // namespace torchaug
