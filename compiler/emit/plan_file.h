// The plan file around the emitter's metadata (runtime/plan/plan_format.h): the generated-code
// modules table, and the container (header, metadata, 64-byte aligned constants blob, checksum).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/emit/plan_emitter.h"
#include "runtime/plan/plan_schema.h"

namespace precis::emit {

// The modules table of `modules` (null when there are none), each code image 16-byte aligned
// with its content hash.
flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<plan::Module>>> WriteModules(flatbuffers::FlatBufferBuilder& b,
                                                                                     const std::vector<EmitOptions::Module>& modules);

// The file: header, the finished metadata in `b`, then `constants_size` bytes of constants that
// `fill` writes (given the blob's start, zero-filled), and the checksum over everything after the
// header.
std::vector<uint8_t> PlanFileBytes(const flatbuffers::FlatBufferBuilder& b, size_t constants_size, const std::function<void(uint8_t* blob)>& fill);

}  // namespace precis::emit
