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

// A uniform double in [0, 1) from two words (53 random bits).
TORCHAUG_HOST_DEVICE inline double uniform01(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 21) ^ (static_cast<uint64_t>(lo) >> 11);
  return static_cast<double>(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

// A standard normal value (Box-Muller on the four words), computed in double so that the host and
// device math libraries agree after rounding to float.
TORCHAUG_HOST_DEVICE inline double standard_normal(const Philox4& r) {
  const double u1 = 1.0 - uniform01(r.v[0], r.v[1]);  // (0, 1]
  const double u2 = uniform01(r.v[2], r.v[3]);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

}  // namespace kernels
}  // namespace torchaug
