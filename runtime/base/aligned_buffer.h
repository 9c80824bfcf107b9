// AlignedBuffer: an owned, 64-byte aligned host allocation (arenas, state, plan copies).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace precis {

struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t, AlignedFree>;

// nullptr when the allocation fails; a zero-byte request still returns a valid buffer.
inline AlignedBuffer AllocateAligned(size_t bytes) {
  if (bytes > SIZE_MAX - 63) return nullptr;  // a size from a corrupt file must not wrap to a small one
  size_t rounded = (bytes + 63) / 64 * 64;
  return AlignedBuffer(static_cast<uint8_t*>(std::aligned_alloc(64, rounded == 0 ? 64 : rounded)));
}

}  // namespace precis
