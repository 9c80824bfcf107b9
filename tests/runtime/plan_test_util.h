// Helpers shared by the plan file tests: recomputing a plan's checksum after a deliberate edit,
// so that only the check under test can notice it.
#pragma once

#include <cstring>
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

}  // namespace precis::testing
