// Printer for the IR text form (see text.h for the grammar by example). Deterministic: the
// same graph always prints to the same bytes; floats print in their shortest exact form.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "compiler/ir/text.h"
#include "compiler/ir/text_format.h"
#include "runtime/base/half.h"

namespace precis::ir {
namespace {

class Printer {
 public:
  explicit Printer(const PrintOptions& options) : options_(options) {}

  void PrintModelHeader(const Model& m) {
    out_ << "model {ir_version = " << m.ir_version
         << ", producer_name = " << QuoteString(m.producer_name)
         << ", producer_version = " << QuoteString(m.producer_version)
         << ", domain = " << QuoteString(m.domain) << ", model_version = " << m.model_version
         << ", opsets = {";
    bool first = true;
    for (const auto& [domain, version] : m.opsets) {
      out_ << (first ? "" : ", ") << QuoteString(domain) << " = " << version;
      first = false;
    }
    out_ << "}}\n";
  }

  void PrintGraphBody(const Graph& g, int indent) {
    std::string pad(size_t(indent) * 2, ' ');
    out_ << "graph " << QuoteString(g.name()) << " {\n";
    std::string inner = pad + "  ";
    for (const Value* v : g.inputs()) {
      out_ << inner << "input " << ValueRef(v) << TypeSuffix(v->type());
      if (v->data()) {
        out_ << " = ";
        PrintTensorData(*v->data());
      }
      out_ << "\n";
    }
    for (const Value* v : g.constants()) {
      out_ << inner << "const " << ValueRef(v) << ": " << PrintType(v->type()) << " = ";
      PrintTensorData(*v->data());
      out_ << "\n";
    }
    for (const auto& n : g.nodes()) PrintNode(*n, indent + 1);
    for (const Value* v : g.outputs()) out_ << inner << "output " << ValueRef(v) << "\n";
    out_ << pad << "}";
  }

  std::string str() const { return out_.str(); }

 private:
  static std::string ValueRef(const Value* v) { return v ? "%" + QuoteValueName(v->name()) : "_"; }
  // Words that begin a statement ("output %z") or a node name would misread as an operator
  // with no outputs, so such operators are quoted.
  static std::string OpName(const std::string& op) {
    if (op == "input" || op == "const" || op == "output" || op == "name" || op == "precision") return QuoteString(op);
    return QuoteName(op);
  }
  static std::string TypeSuffix(const Type& t) {
    return t.is_unknown() ? "" : ": " + PrintType(t);
  }

  void PrintNode(const Node& n, int indent) {
    std::string pad(size_t(indent) * 2, ' ');
    out_ << pad;
    for (size_t i = 0; i < n.outputs().size(); ++i) {
      const Value* v = n.outputs()[i];
      out_ << (i ? ", " : "") << ValueRef(v) << (v ? TypeSuffix(v->type()) : "");
    }
    if (!n.outputs().empty()) out_ << " = ";
    if (!n.domain().empty()) out_ << QuoteString(n.domain()) << "::";
    out_ << OpName(n.op_type()) << "(";
    for (size_t i = 0; i < n.inputs().size(); ++i) out_ << (i ? ", " : "") << ValueRef(n.inputs()[i]);
    out_ << ")";
    if (!n.attributes().empty()) {
      out_ << " {";
      for (size_t i = 0; i < n.attributes().size(); ++i) {
        if (i) out_ << ", ";
        PrintAttribute(n.attributes()[i], indent);
      }
      out_ << "}";
    }
    if (!n.name().empty()) out_ << " name " << QuoteString(n.name());
    if (const PrecisionRecord& p = n.precision(); !p.empty()) {
      out_ << " precision {reason = " << QuoteString(p.reason);
      if (p.accumulate != DType::kUndefined) out_ << ", accumulate = " << DTypeName(p.accumulate);
      if (!p.evidence.empty()) out_ << ", evidence = " << QuoteString(p.evidence);
      out_ << "}";
    }
    out_ << "\n";
  }

  void PrintAttribute(const Attribute& a, int indent) {
    using K = Attribute::Kind;
    out_ << QuoteName(a.name) << " = ";
    auto list = [&](size_t n, auto&& item) {
      if (n == 0) {
        out_ << "[] : " << AttributeKindName(a.kind);
        return;
      }
      out_ << "[";
      for (size_t i = 0; i < n; ++i) {
        if (i) out_ << ", ";
        item(i);
      }
      out_ << "]";
    };
    switch (a.kind) {
      case K::kFloat: out_ << FormatF32(a.f); break;
      case K::kInt: out_ << a.i; break;
      case K::kString: out_ << QuoteString(a.s); break;
      case K::kTensor: PrintTensorLiteral(a.t); break;
      case K::kGraph: PrintGraphBody(*a.graphs[0], indent + 1); break;
      case K::kType: out_ << "type<" << PrintType(a.type) << ">"; break;
      case K::kFloats: list(a.floats.size(), [&](size_t i) { out_ << FormatF32(a.floats[i]); }); break;
      case K::kInts: list(a.ints.size(), [&](size_t i) { out_ << a.ints[i]; }); break;
      case K::kStrings: list(a.strings.size(), [&](size_t i) { out_ << QuoteString(a.strings[i]); }); break;
      case K::kTensors: list(a.tensors.size(), [&](size_t i) { PrintTensorLiteral(a.tensors[i]); }); break;
      case K::kGraphs: list(a.graphs.size(), [&](size_t i) { PrintGraphBody(*a.graphs[i], indent + 1); }); break;
      case K::kTypes: list(a.types.size(), [&](size_t i) { out_ << "type<" << PrintType(a.types[i]) << ">"; }); break;
    }
  }

  void PrintTensorLiteral(const Tensor& t) {
    out_ << "tensor<" << PrintType(Type::Tensor(t.dtype(), Shape::FromStatic(t.dims()))) << "> ";
    PrintTensorData(t);
  }

  void PrintTensorData(const Tensor& t) {
    int64_t n = t.NumElements();
    if (!t.has_data() || (options_.inline_limit >= 0 && n > options_.inline_limit)) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "ref 0x%016llx", static_cast<unsigned long long>(t.ContentHash()));
      out_ << buf;
      return;
    }
    out_ << "[";
    for (int64_t i = 0; i < n; ++i) {
      if (i) out_ << ", ";
      out_ << FormatElement(t, i);
    }
    out_ << "]";
  }

  const PrintOptions& options_;
  std::ostringstream out_;
};

}  // namespace

std::string PrintType(const Type& t) {
  switch (t.kind()) {
    case Type::Kind::kUnknown: return "?";
    case Type::Kind::kSequence: return "seq<" + PrintType(t.element()) + ">";
    case Type::Kind::kOptional: return "opt<" + PrintType(t.element()) + ">";
    case Type::Kind::kTensor: break;
  }
  std::string s(DTypeName(t.dtype()));
  if (!t.shape().has_rank()) return s + "[*]";
  s += "[";
  const auto& dims = t.shape().dims();
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    if (dims[i].is_static()) s += std::to_string(dims[i].value());
    else if (dims[i].is_symbolic()) s += QuoteName(dims[i].symbol());
    else s += "?";
  }
  return s + "]";
}

std::string PrintGraph(const Graph& graph, const PrintOptions& options) {
  Printer p(options);
  p.PrintGraphBody(graph, 0);
  return p.str() + "\n";
}

std::string PrintModel(const Model& model, const PrintOptions& options) {
  Printer p(options);
  p.PrintModelHeader(model);
  p.PrintGraphBody(*model.graph, 0);
  return p.str() + "\n";
}

}  // namespace precis::ir
