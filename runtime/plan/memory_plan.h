// The arena planner (shared by the compiler, and by the runtime for dynamic plans, whose arena
// is planned per binding of their symbolic dims): gives every activation tensor an offset in one arena so that tensors whose
// lifetimes overlap never share bytes, and reuses bytes otherwise. A tensor may be planned in
// place of another (same storage) when its step is that tensor's last use and sizes match.
//
// Lifetimes are inclusive step ranges: `first` is the defining step (-1 for graph inputs) and
// `last` the last reading step (num_steps for graph outputs, which must survive the run).
// Placement is greedy by size (largest first, lowest fitting offset), as in TFLite's arena
// planner; `lower_bound` is the largest sum of live bytes at any step, which no plan can beat.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace precis::plan {

inline constexpr size_t kArenaAlignment = 64;

struct PlannedTensor {
  size_t bytes = 0;
  int first = 0;
  int last = 0;
  int inplace_of = -1;  // index of a tensor whose storage this one may take over
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per tensor
  size_t arena_bytes = 0;
  size_t lower_bound = 0;
  int inplace_count = 0;
  std::vector<std::string> trace;  // one line per decision, for debugging
};

MemoryPlan PlanMemory(const std::vector<PlannedTensor>& tensors);

}  // namespace precis::plan
