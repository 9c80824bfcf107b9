// libFuzzer target for the state (checkpoint) file reader, runtime/exec/state_file.h. Any bytes
// must give an error Status or records that are consistent (bytes == numel * dtype size) and
// serialize back to exactly the bytes parsed (the format is canonical); a file parsed against its
// own signature must be refused, naming the other plan, against any other signature. A crash, a
// sanitizer report or a broken property is a bug; the last aborts with the reason on stderr.
//
// The file ends with a hash of everything before it: the target rewrites it after mutation so
// that mutations reach the parser (the checksum check itself is covered by the checkpoint tests).
// The fuzzer's first byte of that hash, overwritten anyway, picks the expected signature: the
// file's own (the parser runs) or another one (the signature check refuses it).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/base/hash.h"
#include "runtime/exec/state_file.h"

namespace {

constexpr size_t kSignatureOffset = 16;  // after the magic, the version and the tensor count

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "state_fuzz: %s\n", what.c_str());
  std::abort();
}

void CheckRecords(const std::vector<precis::rt::StateRecord>& records) {
  for (const auto& r : records) {
    uint64_t n = 1;
    for (int64_t d : r.info.dims) {
      if (d < 0) Die("record '" + r.info.name + "' has a negative dim");
      n *= uint64_t(d);  // no overflow: the bytes below are in memory
    }
    if (n * precis::DataTypeSize(r.info.dtype) != r.bytes.size() || precis::DataTypeSize(r.info.dtype) == 0)
      Die("record '" + r.info.name + "' holds " + std::to_string(r.bytes.size()) + " bytes, inconsistent with its dtype and dims");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  uint8_t flags = 0;
  if (bytes.size() >= 8) {
    flags = bytes[bytes.size() - 8];
    uint64_t sum = precis::HashBytes(bytes.data(), bytes.size() - 8);
    std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
  }
  uint64_t own = 0;
  if (bytes.size() >= kSignatureOffset + 8) std::memcpy(&own, bytes.data() + kSignatureOffset, 8);
  uint64_t expected = (flags & 1) ? own ^ (uint64_t(flags) << 32 | 1) : own;

  auto records = precis::rt::ParseStateFile(bytes.data(), bytes.size(), expected, "fuzz");
  if (!records.ok()) return 0;
  if (expected != own) Die("a file was accepted against a signature other than its own");
  CheckRecords(*records);
  if (precis::rt::SerializeStateFile(own, *records) != bytes) Die("the records do not serialize back to the bytes parsed");
  return 0;
}
