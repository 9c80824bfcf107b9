// The arena planner lives with the plan format (runtime/plan/memory_plan.h): the runtime plans
// the arena of dynamic plans with the same algorithm. The compiler's names for it.
#pragma once

#include "runtime/plan/memory_plan.h"

namespace precis::emit {

using plan::kArenaAlignment;
using plan::MemoryPlan;
using plan::PlanMemory;
using plan::PlannedTensor;

}  // namespace precis::emit
