// The backend registry: one factory per device, filled by the backends' static initializers.
#include <array>

#include "runtime/base/check.h"
#include "runtime/exec/backend.h"

namespace precis::rt {
namespace {

std::array<BackendFactory, 2>& Factories() {
  static std::array<BackendFactory, 2> factories{};
  return factories;
}

}  // namespace

bool RegisterBackend(Device device, BackendFactory factory) {
  BackendFactory& slot = Factories()[size_t(device)];
  PRECIS_CHECK(slot == nullptr) << "a backend registered twice for one device";
  slot = factory;
  return true;
}

BackendFactory FindBackend(Device device) { return Factories()[size_t(device)]; }

}  // namespace precis::rt
