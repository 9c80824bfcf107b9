// Specializes a model's inputs before compilation: `shapes` gives concrete dims per input name
// (binding each symbolic dim it replaces everywhere it appears, e.g. "batch" = 8 in all inputs);
// `values` turns inputs into constants of the given data (a plan specialized to those values).
// Errors: unknown input names, rank or static-dim mismatches, one symbol bound to two sizes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::passes {

Status SpecializeInputs(ir::Model& model, const std::map<std::string, std::vector<int64_t>>& shapes,
                        std::map<std::string, ir::Tensor> values = {});

}  // namespace precis::passes
