// Helpers shared by the plan file tests: recomputing a plan's checksum after a deliberate edit,
// so that only the check under test can notice it, and rewriting a plan's metadata through the
// FlatBuffers object API (a valid file that says something hostile).
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "runtime/base/hash.h"
#include "runtime/plan/plan_format.h"

namespace precis::testing {

inline void Reseal(std::vector<uint8_t>& bytes) {
  plan::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  h.checksum = HashBytes(bytes.data() + sizeof h, bytes.size() - sizeof h);
  std::memcpy(bytes.data(), &h, sizeof h);
}

// The plan `bytes` with its metadata unpacked, edited by `edit` and packed again; the constants
// are kept (`edit` may change them too) and the header, offsets and checksum are made consistent.
inline std::vector<uint8_t> RewritePlan(const std::vector<uint8_t>& bytes,
                                        const std::function<void(plan::PlanT&, std::vector<uint8_t>&)>& edit) {
  plan::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  std::unique_ptr<plan::PlanT> meta(plan::GetPlan(bytes.data() + h.meta_offset)->UnPack());
  std::vector<uint8_t> constants(bytes.begin() + std::ptrdiff_t(h.const_offset), bytes.begin() + std::ptrdiff_t(h.const_offset + h.const_size));
  edit(*meta, constants);
  flatbuffers::FlatBufferBuilder b;
  b.Finish(plan::Plan::Pack(b, meta.get()));
  h.meta_offset = sizeof h;
  h.meta_size = b.GetSize();
  h.const_offset = (h.meta_offset + h.meta_size + plan::kConstantAlignment - 1) / plan::kConstantAlignment * plan::kConstantAlignment;
  h.const_size = constants.size();
  h.file_size = h.const_offset + h.const_size;
  std::vector<uint8_t> out(size_t(h.file_size), 0);
  std::memcpy(out.data() + h.meta_offset, b.GetBufferPointer(), b.GetSize());
  std::copy(constants.begin(), constants.end(), out.begin() + std::ptrdiff_t(h.const_offset));
  std::memcpy(out.data(), &h, sizeof h);
  Reseal(out);
  return out;
}

}  // namespace precis::testing
