// Shape and Type helpers.
#include "compiler/ir/type.h"

#include "runtime/base/check.h"

namespace precis::ir {

Shape Shape::FromStatic(const std::vector<int64_t>& dims) {
  std::vector<Dim> d;
  d.reserve(dims.size());
  for (int64_t v : dims) d.push_back(Dim::Static(v));
  return Shape(std::move(d));
}

const std::vector<Dim>& Shape::dims() const {
  PRECIS_CHECK(dims_.has_value()) << "dims() of a shape of unknown rank";
  return *dims_;
}

bool Shape::is_static() const {
  if (!dims_) return false;
  for (const Dim& d : *dims_)
    if (!d.is_static()) return false;
  return true;
}

std::optional<int64_t> Shape::NumElements() const {
  if (!is_static()) return std::nullopt;
  std::vector<int64_t> v;
  for (const Dim& d : *dims_) v.push_back(d.value());
  return CheckedElements(v);
}

std::optional<int64_t> CheckedElements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  // Every dim is range-checked before a zero dim may win: [0, -5] is not an empty tensor.
  for (int64_t d : dims)
    if (d < 0 || d > kMaxDim) return std::nullopt;
  for (int64_t d : dims)
    if (d == 0) return 0;  // a zero dim wins over any later size
  for (int64_t d : dims) {
    if (n > kMaxElements / d) return std::nullopt;
    n *= d;
  }
  return n;
}

Type Type::Tensor(DType dtype, Shape shape) {
  Type t;
  t.kind_ = Kind::kTensor;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  return t;
}

Type Type::Sequence(Type element) {
  Type t;
  t.kind_ = Kind::kSequence;
  t.element_ = std::make_shared<const Type>(std::move(element));
  return t;
}

Type Type::Optional(Type element) {
  Type t;
  t.kind_ = Kind::kOptional;
  t.element_ = std::make_shared<const Type>(std::move(element));
  return t;
}

const Type& Type::element() const {
  PRECIS_CHECK(element_ != nullptr) << "element() of a non-container type";
  return *element_;
}

bool Type::operator==(const Type& o) const {
  if (kind_ != o.kind_ || dtype_ != o.dtype_ || !(shape_ == o.shape_)) return false;
  if (!element_ || !o.element_) return element_ == o.element_;
  return *element_ == *o.element_;
}

}  // namespace precis::ir
