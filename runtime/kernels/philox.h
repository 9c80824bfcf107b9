// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), the
// counter-based generator of cuRAND and PyTorch's CUDA generator: 4 random 32-bit words from a
// 128-bit counter and a 64-bit key, with no state between draws. Dropout masks use it so that the
// CPU and CUDA kernels draw the same mask for the same (seed, step counter, stream, element), and a
// resumed run continues the same sequence. Header-only, plain integer code (host and device).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define PRECIS_PHILOX_FN __host__ __device__ inline
#else
#define PRECIS_PHILOX_FN inline
#endif

namespace precis::rt {

struct Philox4x32 {
  uint32_t v[4];
};

PRECIS_PHILOX_FN Philox4x32 Philox4x32_10(Philox4x32 ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u, kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kMul0) * ctr.v[0], p1 = uint64_t(kMul1) * ctr.v[2];
    Philox4x32 next{{uint32_t(p1 >> 32) ^ ctr.v[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ ctr.v[3] ^ k1, uint32_t(p0)}};
    ctr = next;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return ctr;
}

// The 32-bit word of a dropout draw for element `index` of the stream (one Dropout node) at
// training step `counter` with `seed`: words come four per Philox block, blocks indexed by
// index / 4 (48 bits), the stream (16 bits), and the step counter (64 bits).
PRECIS_PHILOX_FN uint32_t DropoutWord(uint64_t seed, uint64_t counter, uint32_t stream, uint64_t index) {
  uint64_t block = index >> 2;
  Philox4x32 ctr{{uint32_t(block), uint32_t(block >> 32) | (stream << 16), uint32_t(counter), uint32_t(counter >> 32)}};
  return Philox4x32_10(ctr, uint32_t(seed), uint32_t(seed >> 32)).v[index & 3];
}

// An element is kept when its word is at or above ratio * 2^32 (drop probability ratio, exact to
// 2^-32).
PRECIS_PHILOX_FN uint32_t DropoutThreshold(float ratio) {
  double t = double(ratio) * 4294967296.0;
  return t >= 4294967295.0 ? 0xFFFFFFFFu : uint32_t(t);
}

}  // namespace precis::rt
