// The plan emitter: lowers a fully inferred IR graph (every value a tensor of static shape) to
// runtime steps, plans the arena, and writes the plan file bytes (runtime/plan/plan_format.h).
// Deterministic: the same graph and options give identical bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::emit {

struct EmitOptions {
  std::string target = "cpu";
  bool strip_weights = false;  // leave large float constants out (benchmark plans; see plan.fbs)
  std::string precision = "fp32";
  uint64_t source_hash = 0;
  std::string report_json, report_text;  // embedded precision report (may be empty)
  bool measure_only = false;             // plan the arena and stop: no bytes are written
};

struct EmittedPlan {
  std::vector<uint8_t> bytes;
  size_t steps = 0;
  size_t arena_bytes = 0;
  size_t arena_lower_bound = 0;
  size_t constant_bytes = 0;
  int inplace_count = 0;
};

// Errors: a value without a static tensor type (naming it and the symbolic dim), an operator
// without an OpDef, a subgraph operator.
StatusOr<EmittedPlan> EmitPlan(const ir::Model& model, const EmitOptions& options);

}  // namespace precis::emit
