// Structural equality of models and graphs, as the text round trip requires: same header, same
// values (names, kinds, types), same constants (content, or content hash for hash-only
// tensors), same nodes in the same order with the same attributes. On a difference, `why`
// (when given) receives a description of the first one found.
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace precis::ir {

bool ModelsEqual(const Model& a, const Model& b, std::string* why = nullptr);
bool GraphsEqual(const Graph& a, const Graph& b, std::string* why = nullptr);

}  // namespace precis::ir
