// Specializes a model's inputs before compilation: `shapes` gives concrete dims per input name
// (binding each symbolic dim it replaces everywhere it appears, e.g. "batch" = 8 in all inputs);
// `values` turns inputs into constants of the given data (a plan specialized to those values).
// Errors: unknown input names, rank or static-dim mismatches, one symbol bound to two sizes.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::passes {

// Sequence and optional inputs (`--shape NAME=[2x3,4]`, `--shape NAME=none`). Precis fixes a
// sequence's length at compile time: a sequence input becomes one plan input per element, named
// NAME[0], NAME[1]... (passes/sequences.h). An optional input is present unless it is in `absent`;
// a present optional tensor is an ordinary input (its shape in `shapes`).
struct ContainerShapes {
  std::map<std::string, std::vector<std::vector<int64_t>>> sequences;  // each element's dims
  std::set<std::string> absent;
};

Status SpecializeInputs(ir::Model& model, const std::map<std::string, std::vector<int64_t>>& shapes,
                        std::map<std::string, ir::Tensor> values = {}, const ContainerShapes& containers = {});

// The name of element `i` of sequence `name` as a plan input or output: "name[i]".
std::string ElementName(const std::string& name, size_t i);

}  // namespace precis::passes
