// Einsum equations ("ij,jk->ik", "...ii->...i", implicit "ij,jk"), parsed once for given input
// ranks. Shared by the Einsum kernel and the compiler's shape inference so both read an
// equation the same way.
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

namespace precis::rt {

constexpr int kEllipsisLabel = 52;

struct EinsumSpec {
  std::vector<std::vector<int>> inputs;  // one label per input dimension
  std::vector<int> output;               // one label per output dimension
  int ellipsis_rank = 0;                 // dimensions covered by "..." (broadcast over inputs)
};

StatusOr<EinsumSpec> ParseEinsum(const std::string& equation, const std::vector<int64_t>& input_ranks);

}  // namespace precis::rt
