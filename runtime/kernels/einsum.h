// Einsum equations ("ij,jk->ik", "...ii->...i", implicit "ij,jk"), parsed once for given input
// ranks. Shared by the Einsum kernels (CPU and CUDA) and the compiler's shape inference so all
// read an equation the same way; PlanEinsumLoops is the kernels' common loop nest.
//
// Labels are small integers: letters map to 0..51 ('A'..'Z', 'a'..'z'), and the dimensions an
// ellipsis stands for map to kEllipsisLabel + k, right-aligned across inputs (numpy broadcasting:
// the last ellipsis dimension of every input shares one label). Spaces are ignored. Implicit
// output: the ellipsis dimensions, then every letter used exactly once, in ASCII order.
// Errors (InvalidArgument, message without node name): bad characters, a term whose letter count
// does not fit the input rank, more terms than inputs, an output letter missing from the inputs
// or repeated, an ellipsis in the output when no input has one.
#pragma once

#include <string>
#include <vector>

#include "precis/status.h"
#include "runtime/exec/step.h"

namespace precis::rt {

constexpr int kEllipsisLabel = 52;

struct EinsumSpec {
  std::vector<std::vector<int>> inputs;  // one label per input dimension
  std::vector<int> output;               // one label per output dimension
  int ellipsis_rank = 0;                 // dimensions covered by "..." (broadcast over inputs)
};

StatusOr<EinsumSpec> ParseEinsum(const std::string& equation, const std::vector<int64_t>& input_ranks);

// The loop nest of an Einsum step: one loop per used label, the output's labels first (in
// output order), then the summed ones; each input's element stride per loop (0 where the input
// lacks the label or broadcasts it).
struct EinsumLoops {
  std::vector<int64_t> label_size;  // by label; -1 when unused
  std::vector<int> loop;            // labels in loop order
  size_t n_out = 0;                 // the first n_out loops are the output's dims
  std::vector<int64_t> sizes;       // by loop position
  std::vector<int64_t> strides;     // [input][loop position]
};

// Label sizes (ellipsis labels broadcast: 1 yields to any size; letters must agree) and the loop
// nest for the step's inputs; checks the output's dims. Errors name the step.
Status PlanEinsumLoops(const KernelArgs& args, const EinsumSpec& spec, EinsumLoops* loops);

}  // namespace precis::rt
