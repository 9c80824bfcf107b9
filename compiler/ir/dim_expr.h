// DimExpr: a dimension as a polynomial with integer coefficients over named symbols ("batch",
// "seq"), so that shape inference can carry symbolic dims through Reshape, Concat and the shape
// arithmetic exporters emit (Shape -> Gather -> Mul -> Concat -> Reshape).
//
// A symbolic ir::Dim holds its expression as text in canonical form (ToString), so two dims are
// the same expression exactly when their texts are equal: "batch", "batch*seq", "seq+1",
// "2*batch*seq-1". Terms are ordered by degree (highest first), then by their symbols; a
// coefficient of 1 is not written; the constant comes last. Parse reads that form and anything
// with the same grammar (integers, names, + - * and parentheses).
//
// Floor division by a positive constant (convolution and pooling output sizes over a symbolic
// spatial dim) makes an atom of its own, written "(P)/k" with P canonical and 0 <= every
// coefficient of P < k (multiples of k are taken out first: (H+3)/2 is 1+(H+1)/2); an atom is a
// factor like a symbol. Symbols() lists the symbols inside atoms too; Atoms() the atoms.
//
// Values that decide shapes at run time (docs/dynamic-shapes.md) add atoms, each a factor like a
// symbol: "eq(P)" is 1 where P = 0 and 0 elsewhere, "neg(P)" is 1 where P < 0, "div(P,Q)" is
// floor(P / Q) (0 where Q = 0), "min(P,Q)" and "max(P,Q)". With them a select is arithmetic
// (Select: c*a + (1-c)*b). They fold where the sign of P is known: symbols are
// dims (>= 0) except value symbols, "$I_E" (element E of entry input I), which may be negative.
//
// Arithmetic returns nullopt where the result is not a polynomial (division that does not come
// out exact) or a coefficient would overflow int64.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/type.h"

namespace precis::ir {

class DimExpr {
 public:
  using Monomial = std::vector<std::string>;  // sorted symbol names; a power repeats the name

  DimExpr() = default;  // 0
  static DimExpr Constant(int64_t v);
  static DimExpr Symbol(const std::string& name);
  // A static dim's value or a symbolic dim's expression; nullopt for an unknown dim (or a
  // symbolic dim whose text does not parse).
  static std::optional<DimExpr> FromDim(const Dim& d);
  static std::optional<DimExpr> Parse(const std::string& text);

  bool is_constant() const { return terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty()); }
  int64_t constant() const;  // the constant term
  // A constant >= 0 as a static dim, a negative constant as unknown, else a symbolic dim.
  Dim ToDim() const;
  std::string ToString() const;
  std::set<std::string> Symbols() const;
  const std::map<Monomial, int64_t>& terms() const { return terms_; }

  std::optional<DimExpr> Add(const DimExpr& o) const;
  std::optional<DimExpr> Sub(const DimExpr& o) const;
  std::optional<DimExpr> Mul(const DimExpr& o) const;
  // this / o when o divides every term exactly (o a nonzero constant or a single monomial with
  // a coefficient); nullopt otherwise.
  std::optional<DimExpr> DivExact(const DimExpr& o) const;
  // floor(this / k) for k > 0 (an atom unless it comes out exact).
  std::optional<DimExpr> FloorDiv(int64_t k) const;
  // The atoms among the factors ("(P)/k", "eq(P)", "neg(P)", "div(P,Q)", ...), innermost first.
  std::vector<std::string> Atoms() const;
  // A factor that is a floor atom: its polynomial and divisor.
  static std::optional<std::pair<DimExpr, int64_t>> ParseAtom(const std::string& factor);
  // floor(this / q), 0 where q is 0 (an atom unless q is a constant or divides exactly).
  std::optional<DimExpr> FloorDivBy(const DimExpr& q) const;
  // 1 where a = b (a < b), else 0.
  static std::optional<DimExpr> Eq(const DimExpr& a, const DimExpr& b);
  static std::optional<DimExpr> Lt(const DimExpr& a, const DimExpr& b);
  // c ? a : b for c in {0, 1}; min and max.
  static std::optional<DimExpr> Select(const DimExpr& c, const DimExpr& a, const DimExpr& b);
  static std::optional<DimExpr> Min(const DimExpr& a, const DimExpr& b);
  static std::optional<DimExpr> Max(const DimExpr& a, const DimExpr& b);
  // >= 0 for every binding (dims are >= 0; value symbols have no sign).
  bool KnownNonNegative() const;
  bool HasValueSymbols() const;
  // "$I_E": element E of entry input I (an integer); "$I_E_M": floor(M * element E) of a float
  // input (M >= 1; *scale 0 for the integer form).
  static std::string ValueSymbol(size_t input, size_t element);
  static std::string FloatValueSymbol(size_t input, size_t element, int64_t scale);
  static bool ParseValueSymbol(const std::string& name, size_t* input, size_t* element, int64_t* scale = nullptr);
  // Value with every symbol bound; nullopt when one is missing or the arithmetic overflows.
  std::optional<int64_t> Evaluate(const std::map<std::string, int64_t>& symbols) const;

  bool operator==(const DimExpr& o) const { return terms_ == o.terms_; }

 private:
  std::map<Monomial, int64_t> terms_;  // no zero coefficients
};

// An atom's parts: floor(p / k), p = 0, p < 0, floor(p / q), min(p, q) or max(p, q).
struct DimAtom {
  enum class Kind { kFloor, kEq, kNeg, kDiv, kMin, kMax };
  Kind kind = Kind::kFloor;
  DimExpr p, q;
  int64_t k = 0;
};
std::optional<DimAtom> ParseDimAtom(const std::string& factor);

// The product of dims (nullopt when one is unknown or the product overflows).
std::optional<DimExpr> DimProduct(const std::vector<Dim>& dims);

// A name that Parse reads as one symbol: letters, digits and '_' (others become '_'), not
// starting with a digit. Import uses it for ONNX dim_params that are not expressions.
std::string SymbolName(const std::string& dim_param);

}  // namespace precis::ir
