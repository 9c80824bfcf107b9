// The backend registry (one factory per device) and the step evaluator, filled by the backends'
// static initializers.
#include <array>

#include "runtime/base/check.h"
#include "runtime/exec/backend.h"
#include "runtime/exec/evaluator.h"

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

namespace {
StepEvaluator& Evaluator() {
  static StepEvaluator evaluator = nullptr;
  return evaluator;
}
}  // namespace

bool RegisterStepEvaluator(StepEvaluator evaluator) {
  PRECIS_CHECK(Evaluator() == nullptr) << "a step evaluator registered twice";
  Evaluator() = evaluator;
  return true;
}

StepEvaluator FindStepEvaluator() { return Evaluator(); }

}  // namespace precis::rt
