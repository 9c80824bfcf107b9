// Symbolic dims as the plan writes them (plan.fbs TensorDesc.dim_code and Plan.dim_atoms): each
// polynomial as its term count, then per term the coefficient, the factor count and the factors,
// a factor being a symbol's index (>= 0) or -1-j for atom j of the plan's atom table (floor
// divisions and atoms of run-time values, registered here, inner atoms first).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/dim_expr.h"

namespace precis::emit {

class DimCoder {
 public:
  // The plan's symbols, sorted (a symbol's index is its position).
  void SetSymbols(std::vector<std::string> sorted) { symbols_ = std::move(sorted); }
  const std::vector<std::string>& symbols() const { return symbols_; }
  int64_t SymbolIndex(const std::string& symbol) const;
  // Appends `e`'s code to `code` (registering its atoms first).
  void Encode(const ir::DimExpr& e, std::vector<int64_t>& code);
  // Plan.dim_atoms: every atom registered so far, in order.
  const std::vector<int64_t>& atom_code() const { return atom_code_; }

 private:
  int64_t AtomIndex(const std::string& text, const ir::DimAtom& atom);

  std::vector<std::string> symbols_;
  std::vector<std::string> atom_texts_;  // in Plan.dim_atoms order
  std::vector<int64_t> atom_code_;
};

}  // namespace precis::emit
