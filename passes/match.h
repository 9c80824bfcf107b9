// Small graph-matching helpers shared by the passes that recognize node patterns
// and rewrite the graph (recognize_patterns.cc, fuse_epilogues.cc, choose_layout.cc,
// fold_batchnorm.cc, inline_if.cc, precision.cc). Header-only, no pass logic.
#pragma once

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "runtime/base/half.h"

namespace precis::passes::match {

inline bool Is(const ir::Node* n, const char* op) { return n && n->domain().empty() && n->op_type() == op; }

inline ir::Node* Producer(const ir::Value* v) {
  return v && v->kind() == ir::Value::Kind::kNodeOutput ? v->producer() : nullptr;
}
inline ir::Node* In(const ir::Node* n, size_t i) { return n && i < n->inputs().size() ? Producer(n->inputs()[i]) : nullptr; }
inline ir::Value* InV(const ir::Node* n, size_t i) { return n && i < n->inputs().size() ? n->inputs()[i] : nullptr; }

// Element i of a float tensor with data (f64, f32, f16 or bf16) as a double.
inline double FloatAt(const ir::Tensor& t, int64_t i) {
  const uint8_t* p = t.buffer().data() + size_t(i) * ir::DTypeSize(t.dtype());
  switch (t.dtype()) {
    case ir::DType::kF64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case ir::DType::kF32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    default: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return t.dtype() == ir::DType::kF16 ? HalfToFloat(h) : Bf16ToFloat(h);
    }
  }
}

// The values of a constant float tensor (f64, f32, f16 or bf16), in order.
inline std::optional<std::vector<double>> Floats(const ir::Value* v) {
  if (!v || !v->is_constant() || !v->data() || !v->data()->has_data()) return std::nullopt;
  const ir::Tensor& t = *v->data();
  if (t.dtype() != ir::DType::kF64 && t.dtype() != ir::DType::kF32 && t.dtype() != ir::DType::kF16 && t.dtype() != ir::DType::kBF16)
    return std::nullopt;
  std::vector<double> out(size_t(t.NumElements()));
  for (int64_t i = 0; i < t.NumElements(); ++i) out[size_t(i)] = FloatAt(t, i);
  return out;
}

// Scalar value of a constant float tensor with one element (f64, f32, f16 or bf16: the precision
// pass stores constants in their run dtype).
inline std::optional<double> Scalar(const ir::Value* v) {
  if (!v || !v->is_constant() || !v->data() || !v->data()->has_data() || v->data()->NumElements() != 1) return std::nullopt;
  auto f = Floats(v);
  if (!f) return std::nullopt;
  return (*f)[0];
}
inline bool Near(std::optional<double> x, double want, double tol = 1e-3) { return x && std::fabs(*x - want) <= tol * std::fabs(want); }

// The input of a binary node other than `v`, or nullptr when `v` is not an input.
inline ir::Value* Other(const ir::Node* n, const ir::Value* v) {
  if (!n || n->inputs().size() != 2) return nullptr;
  if (n->inputs()[0] == v) return n->inputs()[1];
  if (n->inputs()[1] == v) return n->inputs()[0];
  return nullptr;
}

// The single consumer of a node's only output, when it has exactly one.
inline ir::Node* OnlyUser(const ir::Node* n) {
  if (!n || n->outputs().size() != 1 || !n->outputs()[0] || n->outputs()[0]->uses().size() != 1) return nullptr;
  return n->outputs()[0]->uses()[0].node;
}

// The dims of a tensor value whose shape is fully static.
inline std::optional<std::vector<int64_t>> StaticDims(const ir::Value* v) {
  if (!v || !v->type().is_tensor() || !v->type().shape().has_rank() || !v->type().shape().is_static()) return std::nullopt;
  std::vector<int64_t> d;
  for (const ir::Dim& x : v->type().shape().dims()) d.push_back(x.value());
  return d;
}

// `base`, or `base.2`, `base.3`... : the first name no value of `g` has.
inline std::string FreshName(const ir::Graph& g, const std::string& base) {
  std::string name = base;
  for (int k = 2; g.Lookup(name); ++k) name = base + "." + std::to_string(k);
  return name;
}

// Appends to a node's precision evidence (the report's "why"), "; "-separated.
inline void AddEvidence(ir::Node* n, const std::string& text) {
  auto& rec = n->mutable_precision();
  rec.evidence += (rec.evidence.empty() ? "" : "; ") + text;
}

// Attributes the rewrites attach to nodes they make or change.
inline ir::Attribute StringAttr(const std::string& name, const std::string& value) {
  ir::Attribute a;
  a.name = name;
  a.kind = ir::Attribute::Kind::kString;
  a.s = value;
  return a;
}
inline ir::Attribute IntAttr(const std::string& name, int64_t value) {
  ir::Attribute a;
  a.name = name;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = value;
  return a;
}
inline ir::Attribute FloatAttr(const std::string& name, float value) {
  ir::Attribute a;
  a.name = name;
  a.kind = ir::Attribute::Kind::kFloat;
  a.f = value;
  return a;
}

// A new int64 constant holding `dims`: the shape input of a Reshape the rewrite inserts.
inline ir::Value* ShapeConstant(ir::Graph& g, const std::string& base, const std::vector<int64_t>& dims) {
  std::vector<uint8_t> bytes(dims.size() * sizeof(int64_t));
  if (!dims.empty()) std::memcpy(bytes.data(), dims.data(), bytes.size());
  return g.AddConstant(FreshName(g, base), ir::Tensor(ir::DType::kI64, {int64_t(dims.size())}, ir::Buffer::Own(std::move(bytes))));
}

}  // namespace precis::passes::match
