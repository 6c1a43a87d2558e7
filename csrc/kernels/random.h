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

// Two independent standard normal values from two words (Box-Muller: the radius of w0, the
// cosine and sine of the angle of w1), in float32: logf / sqrtf / cosf / sinf of the host and
// device math libraries agree to an ulp or two.
TORCHAUG_HOST_DEVICE inline void standard_normal_pair(uint32_t w0, uint32_t w1, float* z) {
  const float u1 = static_cast<float>((w0 >> 8) + 1u) * (1.0f / 16777216.0f);  // (0, 1]
  const float radius = sqrtf(-2.0f * logf(u1)), angle = 6.2831853071795865f * uniform01(w1);
  z[0] = radius * cosf(angle);
  z[1] = radius * sinf(angle);
}

// Four standard normal values from the four words of one Philox call (two Box-Muller pairs).
TORCHAUG_HOST_DEVICE inline void standard_normal_quad(const Philox4& r, float* z) {
  standard_normal_pair(r.v[0], r.v[1], z);
  standard_normal_pair(r.v[2], r.v[3], z + 2);
}

// ---- torch's uniform numbers on CUDA -----------------------------------------------------------
// Element i of torch.rand(n, dtype=torch.float64), or of the float uniforms behind
// torch.empty(n, dtype=torch.bool).bernoulli_(p), drawn on CUDA by a generator whose Philox state
// for the call is (seed, offset), so that an op's kernel can draw what a torch call before it would
// have drawn (csrc/cuda/draws.cuh). torch's distribution kernels (ATen/native/cuda/
// DistributionTemplates.h: distribution_nullary_kernel) run `stride` = 256 x grid threads; thread t's
// curand state is curand_init(seed, t, offset), and each of its curand calls gives `per_call` values
// (curand_uniform2_double: 2, curand_uniform4: 4): value k of its j-th call is element
// t + stride x (per_call x j + k). curand's Philox4_32_10 (curand_kernel.h): counter (x, y) =
// offset / 4 + j, (z, w) = t, key = seed, with offset % 4 words of the stream skipped.
TORCHAUG_HOST_DEVICE inline Philox4 curand_philox_block(uint64_t seed, uint64_t lo, uint64_t hi) {
  return philox4x32(static_cast<uint32_t>(lo), static_cast<uint32_t>(lo >> 32), static_cast<uint32_t>(hi),
                    static_cast<uint32_t>(hi >> 32), static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// The four words of the curand call that gives element i (i < 2^31: resolve_draws) into w; returns
// the element's value index k in that call.
TORCHAUG_HOST_DEVICE inline unsigned torch_cuda_call_words(uint64_t seed, uint64_t offset, int64_t stride, unsigned per_call,
                                                           int64_t i, uint32_t* w) {
  // t = i % stride, r = i / stride (32-bit, and none for the first stride)
  uint64_t t = static_cast<uint64_t>(i), r = 0;
  if (i >= stride) {
    const uint32_t q = static_cast<uint32_t>(i) / static_cast<uint32_t>(stride);
    r = q;
    t = static_cast<uint64_t>(i) - static_cast<uint64_t>(q) * static_cast<uint64_t>(stride);
  }
  // the words of the (r / per_call)-th curand4 of thread t: 4 words of its stream from word
  // 4 (offset / 4 + r / per_call) + offset % 4
  uint64_t lo = offset / 4 + r / per_call, hi = t;
  if (lo < offset / 4) ++hi;  // the 128-bit counter's carry
  const unsigned skip = static_cast<unsigned>(offset % 4);
  const Philox4 a = curand_philox_block(seed, lo, hi);
  if (skip == 0) {
    for (int k = 0; k < 4; ++k) w[k] = a.v[k];
  } else {
    const uint64_t lo2 = lo + 1, hi2 = lo2 == 0 ? hi + 1 : hi;
    const Philox4 b = curand_philox_block(seed, lo2, hi2);
    for (unsigned k = 0; k < 4; ++k) w[k] = k + skip < 4 ? a.v[k + skip] : b.v[k + skip - 4];
  }
  return static_cast<unsigned>(r % per_call);
}

// torch.rand's float64 element i: a double from words (a, b) is (a ^ (b << 21)) x 2^-53 + 2^-54,
// and uniform_ maps 1 to 0 ([0, 1)).
TORCHAUG_HOST_DEVICE inline double torch_cuda_uniform_f64(uint64_t seed, uint64_t offset, int64_t stride, int64_t i) {
  uint32_t w[4];
  const unsigned pair = torch_cuda_call_words(seed, offset, stride, 2, i, w) * 2;
  const uint64_t z = static_cast<uint64_t>(w[pair]) ^ (static_cast<uint64_t>(w[pair + 1]) << 21);
  const double x = static_cast<double>(z) * 1.1102230246251565e-16 + 1.1102230246251565e-16 / 2.0;
  return x == 1.0 ? 0.0 : x;
}

// The float uniform in (0, 1] of a bool tensor's bernoulli_(p) at element i (curand_uniform4: a
// word w gives w x 2^-32 + 2^-33; the product is exact, so a fused multiply-add rounds the same);
// the coin is that value < float(p).
TORCHAUG_HOST_DEVICE inline float torch_cuda_uniform_f32(uint64_t seed, uint64_t offset, int64_t stride, int64_t i) {
  uint32_t w[4];
  const unsigned k = torch_cuda_call_words(seed, offset, stride, 4, i, w);
  constexpr float kInv = 2.3283064e-10f;  // 2^-32
  return static_cast<float>(w[k]) * kInv + kInv / 2.0f;
}

}  // namespace kernels
}  // namespace torchaug
