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

// The file's bytes (the layout above), checksum included: what WriteStateFile writes.
std::vector<uint8_t> SerializeStateFile(uint64_t signature, const std::vector<StateRecord>& records);
Status WriteStateFile(const std::string& path, uint64_t signature, const std::vector<StateRecord>& records);

// Parses a state file's bytes; `name` names the file in errors. Errors: truncation, checksum
// mismatch, another format, a signature different from `signature` (a file of another plan), a
// malformed tensor (an invalid dtype, a negative dim, a byte count that does not match its dtype
// and dims, trailing bytes). Every record it returns is consistent: bytes == numel * dtype size.
// Reads only within [data, data + size).
StatusOr<std::vector<StateRecord>> ParseStateFile(const uint8_t* data, size_t size, uint64_t signature, const std::string& name);
// ParseStateFile of the file at `path`; also an error when the file cannot be read.
StatusOr<std::vector<StateRecord>> ReadStateFile(const std::string& path, uint64_t signature);

}  // namespace precis::rt
