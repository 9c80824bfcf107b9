// Shape arithmetic shared by the data movement operators (tensor*.cc): products and sums of
// possibly symbolic dims, Slice's clamping rules, and shape text for messages.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ops/op_registry.h"
#include "runtime/kernels/strided_views.h"

namespace precis::ops {

// Starts/ends at or beyond this magnitude mean "from the beginning" / "to the end".
inline constexpr int64_t kMaxSliceDim = ir::kMaxDim;

// A product of dims as a static factor times symbolic factors ("batch" * "seq" * 12), so that
// Reshape/Flatten can cancel symbols ([batch, 3, 4] -> [batch, -1] gives [batch, 12]).
struct DimFactors {
  int64_t product = 1;
  std::map<std::string, int> symbols;  // symbol -> multiplicity
  bool unknown = false;

  bool is_static() const { return !unknown && (symbols.empty() || product == 0); }
  // The product as one dim: static, a single symbol, or unknown.
  ir::Dim AsDim() const {
    if (!unknown && product == 0) return ir::Dim::Static(0);
    if (unknown) return ir::Dim();
    if (symbols.empty()) return ir::Dim::Static(product);
    if (product == 1 && symbols.size() == 1 && symbols.begin()->second == 1) return ir::Dim::Symbolic(symbols.begin()->first);
    return ir::Dim();
  }
  // this / divisor as one dim, when it is known.
  ir::Dim Divide(const DimFactors& divisor) const {
    if (unknown || divisor.unknown || divisor.product == 0 || product % divisor.product != 0) return ir::Dim();
    DimFactors q;
    q.product = product / divisor.product;
    q.symbols = symbols;
    for (const auto& [s, n] : divisor.symbols) {
      auto it = q.symbols.find(s);
      if (it == q.symbols.end() || it->second < n) return ir::Dim();
      if ((it->second -= n) == 0) q.symbols.erase(it);
    }
    return q.AsDim();
  }
};

// The product of dims, leaving out index `skip`.
inline DimFactors Factor(const std::vector<ir::Dim>& dims, int skip = -1) {
  DimFactors f;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (int(i) == skip) continue;
    if (dims[i].is_static()) f.product *= dims[i].value();
    else if (dims[i].is_symbolic()) f.symbols[dims[i].symbol()]++;
    else f.unknown = true;
  }
  return f;
}

// The sum of dims: static when all are, the one non-static dim when the others are 0.
inline ir::Dim SumDims(const std::vector<ir::Dim>& dims) {
  int64_t sum = 0;
  const ir::Dim* dynamic = nullptr;
  for (const ir::Dim& d : dims) {
    if (d.is_static()) {
      sum += d.value();
    } else {
      if (dynamic) return ir::Dim();
      dynamic = &d;
    }
  }
  if (!dynamic) return ir::Dim::Static(sum);
  return sum == 0 ? *dynamic : ir::Dim();
}

// Two dims that must be equal: the better known one, or nullopt when both are static and differ.
inline std::optional<ir::Dim> MergeDims(const ir::Dim& a, const ir::Dim& b) {
  if (a.is_static() && b.is_static()) return a.value() == b.value() ? std::optional<ir::Dim>(a) : std::nullopt;
  if (a.is_static()) return a;
  if (b.is_static()) return b;
  return a.is_symbolic() ? a : b;
}

// ONNX Slice clamping of one axis, as the kernels do it (runtime/kernels/strided_views.h).
using rt::SliceAxis;
using rt::SliceRange;

inline std::string ShapeText(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace precis::ops
