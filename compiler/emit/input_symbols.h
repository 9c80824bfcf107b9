// Symbols a dynamic plan binds from its inputs' values (docs/dynamic-shapes.md): value symbols
// ("$K_E", element E of integer input K; "$K_E_M", floor(M * element E) of float input K) and
// value expressions ("$x_...", runtime/base/value_expr.h, float arithmetic over input elements).
// The plan emitter finds which entry-program input each one reads and how the plan names it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::emit {

// An entry-program input of static dims: its plan tensor id and value.
struct EntryInput {
  int tensor = -1;
  const ir::Value* value = nullptr;
};

struct ValueSymbolSource {
  std::string symbol;
  int tensor = -1;
  int64_t element = 0;
  int64_t scale = 0;  // plan.fbs value_symbol_scale
};

struct ExprSymbolSource {
  std::string symbol;
  std::string code;  // plan.fbs expr_symbol_code: leaves t<tensor>e<element>
};

struct InputSymbols {
  std::vector<ValueSymbolSource> values;
  std::vector<ExprSymbolSource> exprs;
  // How the plan and its messages name each symbol: "input[E]", "floor(M*input[E])",
  // "range_length(start[0],limit[0],delta[0])".
  std::map<std::string, std::string> display;
};

// The value symbols and value expressions among `symbols`, each with the inputs it reads. An
// Internal error when one reads a value no entry input holds.
StatusOr<InputSymbols> FindInputSymbols(const std::set<std::string>& symbols, const std::vector<EntryInput>& inputs);

}  // namespace precis::emit
