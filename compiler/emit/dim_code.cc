// DimCoder (see dim_code.h).
#include "compiler/emit/dim_code.h"

#include <algorithm>

namespace precis::emit {

int64_t DimCoder::SymbolIndex(const std::string& symbol) const {
  return int64_t(std::lower_bound(symbols_.begin(), symbols_.end(), symbol) - symbols_.begin());
}

void DimCoder::Encode(const ir::DimExpr& e, std::vector<int64_t>& code) {
  code.push_back(int64_t(e.terms().size()));
  for (const auto& [monomial, coeff] : e.terms()) {
    code.push_back(coeff);
    code.push_back(int64_t(monomial.size()));
    for (const std::string& s : monomial) {
      if (auto atom = ir::ParseDimAtom(s)) {
        code.push_back(-1 - AtomIndex(s, *atom));
        continue;
      }
      code.push_back(SymbolIndex(s));
    }
  }
}

// Atoms of run-time values start with their kind instead of k (plan.fbs Plan.dim_atoms).
int64_t DimCoder::AtomIndex(const std::string& text, const ir::DimAtom& atom) {
  auto it = std::find(atom_texts_.begin(), atom_texts_.end(), text);
  if (it != atom_texts_.end()) return int64_t(it - atom_texts_.begin());
  using K = ir::DimAtom::Kind;
  std::vector<int64_t> code{atom.kind == K::kFloor ? atom.k
                            : atom.kind == K::kEq  ? -1
                            : atom.kind == K::kNeg ? -2
                            : atom.kind == K::kDiv ? -3
                            : atom.kind == K::kMin ? -4
                                                   : -5};
  Encode(atom.p, code);  // registers inner atoms first
  if (atom.kind != K::kFloor && atom.kind != K::kEq && atom.kind != K::kNeg) Encode(atom.q, code);
  atom_texts_.push_back(text);
  atom_code_.insert(atom_code_.end(), code.begin(), code.end());
  return int64_t(atom_texts_.size()) - 1;
}

}  // namespace precis::emit
