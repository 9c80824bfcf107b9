// HashBytes: a fast, stable 64-bit content hash (FNV-1a over 64-bit words with a shift mix).
// Not cryptographic: it identifies constant contents in the text IR and checks plan files for
// corruption. Stable across runs and machines (little-endian).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace precis {

inline constexpr uint64_t kHashSeed = 0xcbf29ce484222325ull;

inline uint64_t HashBytes(const uint8_t* data, size_t size, uint64_t seed = kHashSeed) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  uint64_t h = seed;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    h = (h ^ w) * kPrime;
    h ^= h >> 29;
  }
  for (; i < size; ++i) h = (h ^ data[i]) * kPrime;
  return (h ^ uint64_t(size)) * kPrime;
}

}  // namespace precis
