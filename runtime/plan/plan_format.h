// The plan file container: a 64-byte header, the FlatBuffers metadata (plan.fbs) and a 64-byte
// aligned constants blob. ValidatePlan checks everything a loader relies on before any of it is
// used: magic, format version, section bounds, the checksum of all bytes after the header, the
// FlatBuffers verifier and the content hash of every code module. A truncated, corrupted or newer-version plan is refused by name.
#pragma once

#include <cstddef>
#include <cstdint>

#include "precis/status.h"
#include "runtime/plan/plan_schema.h"

namespace precis::plan {

inline constexpr char kMagic[8] = {'P', 'R', 'E', 'C', 'I', 'S', 'P', 'L'};
// 2: programs, State tensors, per-step dtypes/layout/predicate, modules (plan.fbs). Version 1
// plans are refused with a request to recompile.
// 4: Step.widen (the steps each backend runs widened, decided at compile time); older plans are
// refused with a request to recompile.
inline constexpr uint32_t kFormatVersion = 4;
inline constexpr size_t kConstantAlignment = 64;

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;  // sizeof(FileHeader)
  uint64_t meta_offset, meta_size;
  uint64_t const_offset, const_size;
  uint64_t file_size;
  uint64_t checksum;      // HashBytes of bytes [header_bytes, file_size)
};
static_assert(sizeof(FileHeader) == 64, "plan header must stay 64 bytes");

struct PlanView {
  const Plan* meta = nullptr;
  const uint8_t* constants = nullptr;
  size_t constants_size = 0;
};

StatusOr<PlanView> ValidatePlan(const uint8_t* data, size_t size);

}  // namespace precis::plan
