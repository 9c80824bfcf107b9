// Dim, Shape and Type: what the IR knows about a value's type.
//
// A Dim is a static size, a named symbolic size ("batch") or unknown. A Shape has a known rank
// (a list of Dims) or an unknown rank. A Type is a tensor (dtype + shape), a sequence or an
// optional of another Type, or unknown (nothing recorded yet). Types are plain values: copy,
// compare with ==.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/dtype.h"

namespace precis::ir {

// Static dims are limited to 2^40 and static element counts to 2^50: anything larger is not a
// real model and would overflow byte arithmetic downstream.
inline constexpr int64_t kMaxDim = int64_t(1) << 40;
inline constexpr int64_t kMaxElements = int64_t(1) << 50;

class Dim {
 public:
  Dim() = default;  // unknown
  static Dim Static(int64_t value) { return Dim(value, {}); }
  static Dim Symbolic(std::string name) { return Dim(-1, std::move(name)); }

  bool is_static() const { return value_ >= 0; }
  bool is_symbolic() const { return value_ < 0 && !symbol_.empty(); }
  bool is_unknown() const { return value_ < 0 && symbol_.empty(); }
  int64_t value() const { return value_; }
  const std::string& symbol() const { return symbol_; }
  bool operator==(const Dim& o) const { return value_ == o.value_ && symbol_ == o.symbol_; }

 private:
  Dim(int64_t v, std::string s) : value_(v), symbol_(std::move(s)) {}
  int64_t value_ = -1;
  std::string symbol_;
};

class Shape {
 public:
  Shape() = default;  // unknown rank
  explicit Shape(std::vector<Dim> dims) : dims_(std::move(dims)) {}
  static Shape FromStatic(const std::vector<int64_t>& dims);

  bool has_rank() const { return dims_.has_value(); }
  int64_t rank() const { return dims_ ? int64_t(dims_->size()) : -1; }
  const std::vector<Dim>& dims() const;  // requires has_rank()
  bool is_static() const;
  // Product of static dims; nullopt when not fully static.
  std::optional<int64_t> NumElements() const;
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }

 private:
  std::optional<std::vector<Dim>> dims_;
};

class Type {
 public:
  enum class Kind { kUnknown, kTensor, kSequence, kOptional };

  Type() = default;  // unknown
  static Type Tensor(DType dtype, Shape shape);
  static Type Sequence(Type element);
  static Type Optional(Type element);

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_unknown() const { return kind_ == Kind::kUnknown; }
  DType dtype() const { return dtype_; }  // tensors; kUndefined when the element type is unknown
  const Shape& shape() const { return shape_; }  // tensors
  const Type& element() const;  // sequences and optionals
  bool operator==(const Type& o) const;
  bool operator!=(const Type& o) const { return !(*this == o); }

 private:
  Kind kind_ = Kind::kUnknown;
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  std::shared_ptr<const Type> element_;
};

// Multiplies non-negative counts, returning nullopt past kMaxElements.
std::optional<int64_t> CheckedElements(const std::vector<int64_t>& dims);

}  // namespace precis::ir
