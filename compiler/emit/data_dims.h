// Symbolic dims of plan tensors: a value's dims as the plan writes them, the iteration numbers
// that Loop bodies' dims read (plan.fbs Plan.iteration_symbols), and the data dims of a dynamic
// plan (plan.fbs Plan.data_symbols; ops/shape_values.h DataDim): which step output binds each, at
// which axis, and the upper bound the arena is planned for.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::emit {

// A value's dims: static ones, and -1 for each symbolic dim (its expression in `symbolic`).
StatusOr<std::vector<int64_t>> ShapeOf(const ir::Value& v, std::vector<ir::DimExpr>& symbolic);

struct DataDimSource {
  std::string symbol;
  size_t value = 0;  // index into the `values` given to FindDataDims: the producing step's output that holds it
  size_t axis = 0;
  ir::DimExpr bound;
  std::string display;  // "count(name)", the symbol's name in the plan and in messages
};

// The symbols of `unbound` (symbols no input binds) that a data-dependent node produces: the node
// is the producer of one of `values` (the plan's tensors), outside control-flow bodies, with an
// upper bound over the symbols of `input_bound`. Symbols that are no data dim are left out (the
// caller refuses them).
StatusOr<std::vector<DataDimSource>> FindDataDims(const std::set<std::string>& unbound, const std::set<std::string>& input_bound,
                                                  const std::vector<const ir::Value*>& values);

// A Loop's body program, and the symbol its iteration number is known as (ops::IterationSymbol).
struct LoopBody {
  std::string symbol;
  size_t program = 0;
  const ir::Node* loop = nullptr;
};

// plan.fbs Plan.iteration_symbols: an iteration number that some dim reads, and its bound.
struct IterationSource {
  std::string symbol;
  size_t program = 0;
  ir::DimExpr bound;  // the largest iteration number (ops::IterationBound)
};

// The loops whose iteration symbol is among `all` (the plan's symbols): each with its bound,
// whose symbols (a trip count's value) join `all`. A loop without a bound is refused.
StatusOr<std::vector<IterationSource>> FindIterationSymbols(const std::vector<LoopBody>& loops, std::set<std::string>& all);

}  // namespace precis::emit
