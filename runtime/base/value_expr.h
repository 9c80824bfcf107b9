// Value expressions: sizes computed from run-time float values (docs/dynamic-shapes.md). Range
// over float inputs has ceil((limit - start) / delta) elements; the expanded form of Range
// computes the same count with Sub, Div, Ceil and a Cast to int64 and gives it to a Loop as its
// trip count. The compiler follows such arithmetic as an expression over the inputs' elements,
// the plan stores it, and the session evaluates it when the inputs are set, before the arena is
// planned, as it binds a value symbol.
//
// An expression is text: tokens joined by '_' in prefix order, so that it can be part of a symbol
// name (letters, digits, '_' and '$'):
//   i<K>e<E>    element E of graph input K (the compiler's form)
//   t<T>e<E>    element E of plan tensor T (the plan's form)
//   c<16 hex>   a constant, the bits of a double
//   ceil floor neg abs relu round f32 f16 bf16      one operand (f32, f16, bf16: rounding to that type)
//   add sub mul div max min                         two operands
// Arithmetic is in double; an operation on FP32, FP16 or BF16 values is followed by rounding to
// its type, which gives what the kernels compute (they widen to float, compute, and round).
// A symbol is "$x_" followed by a conversion to an integer and its operands:
//   int X       X truncated toward zero (Cast to an integer type)
//   bool X      1 where X != 0 (Cast to bool)
//   rlen S L D  max(ceil((L - S) / D), 0), Range's length
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "precis/status.h"

namespace precis::value_expr {

// Expressions longer than this many tokens are not followed.
inline constexpr size_t kMaxTokens = 48;

std::string Input(size_t input, size_t element);
std::string Constant(double v);
// `op` applied to `args` (each an expression); nullopt when the result would be too long.
std::optional<std::string> Apply(const std::string& op, const std::vector<std::string>& args);
// The symbol of conversion `op` ("int", "bool", "rlen") of `args`; nullopt when too long.
std::optional<std::string> Symbol(const std::string& op, const std::vector<std::string>& args);
bool IsSymbol(const std::string& name);

// A leaf: 'i' (graph input) or 't' (plan tensor), its index and element.
struct Leaf {
  char kind = 'i';
  int64_t index = 0;
  int64_t element = 0;
};
// Every leaf of the expression or symbol `text`; nullopt when it does not parse.
std::optional<std::vector<Leaf>> Leaves(const std::string& text);
// `text` with each leaf replaced by `map(leaf)` (an expression); nullopt when it does not parse.
std::optional<std::string> MapLeaves(const std::string& text, const std::function<std::string(const Leaf&)>& map);
// The symbol `name` written for people: "ceil((limit[0]-start[0])/delta[0])", leaves named by
// `leaf_name`; roundings to FP32 are not written.
std::optional<std::string> Display(const std::string& name, const std::function<std::string(const Leaf&)>& leaf_name);
// A symbol parsed once (the session keeps one per plan symbol and evaluates it at each run).
struct ExprNode;
class Expression {
 public:
  // nullopt when `name` is no symbol or does not parse.
  static std::optional<Expression> Parse(const std::string& name);
  const std::vector<Leaf>& leaves() const { return leaves_; }
  // The integer value, its leaves read by `value`; errors as Evaluate's below.
  StatusOr<int64_t> Evaluate(const std::function<double(const Leaf&)>& value, const std::string& display) const;

 private:
  std::shared_ptr<const ExprNode> root_;
  std::vector<Leaf> leaves_;
};

// The integer value of the symbol `name`, its leaves read by `value`. Errors name the symbol by
// `display`: NaN or an infinity converted to an integer, a Range delta of 0.
StatusOr<int64_t> Evaluate(const std::string& name, const std::function<double(const Leaf&)>& value, const std::string& display);

}  // namespace precis::value_expr
