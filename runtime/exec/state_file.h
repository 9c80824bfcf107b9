// The state file: every State tensor of a plan (trained weights, optimizer moments, counters),
// written by Session::SaveState and read by Session::LoadState.
//
// Layout (little-endian): magic "PRECISST", u32 format version, u32 tensor count, u64 state
// signature (StateSignature of the plan), then per tensor: u32 name length, the name, u8 dtype,
// u32 rank, i64 dims[rank], u64 byte count, the bytes; last, u64 HashBytes of everything before.
// Writes go to a temporary file in the same folder that is flushed and renamed over the target,
// so an interrupted save leaves the previous file intact.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "precis/status.h"
#include "precis/types.h"

namespace precis::rt {

struct StateRecord {
  TensorInfo info;
  std::vector<uint8_t> bytes;
};

// Identifies a plan's state layout: names, dtypes and dims, in order.
uint64_t StateSignature(const std::vector<TensorInfo>& state);

Status WriteStateFile(const std::string& path, uint64_t signature, const std::vector<StateRecord>& records);
// Errors: missing file, truncation, checksum mismatch, another format, a signature different
// from `signature` (a file of another plan), each naming the file.
StatusOr<std::vector<StateRecord>> ReadStateFile(const std::string& path, uint64_t signature);

}  // namespace precis::rt
