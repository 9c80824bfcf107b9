// Gradient rules: how each operator propagates gradients, written as IR ops (reverse mode). One
// rule per operator and opset range, in one table (gradients.cc), in the spirit of tinygrad's
// gradient table with onnxruntime's opset discipline. The autodiff pass (passes/autodiff.h) calls
// them from the loss backwards.
//
// A rule reads the forward node (its inputs, outputs and attributes, all with static types), the
// gradients flowing into its outputs (nullptr where none flows) and which input gradients are
// wanted; it builds the backward nodes through the GradContext and returns one gradient per input
// (nullptr for inputs that are not differentiable or not wanted). Gradients have the shape of
// the value they belong to: Unbroadcast sums a broadcast gradient back to its input's shape.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::ops {

// An attribute of a node a rule builds (copyable, unlike ir::Attribute).
struct GradAttr {
  std::string name;
  ir::Attribute::Kind kind = ir::Attribute::Kind::kInt;
  int64_t i = 0;
  float f = 0;
  std::vector<int64_t> ints = {};
  std::string s = {};
  static GradAttr Int(std::string name, int64_t v) { return {std::move(name), ir::Attribute::Kind::kInt, v, 0, {}}; }
  static GradAttr Float(std::string name, float v) { return {std::move(name), ir::Attribute::Kind::kFloat, 0, v, {}}; }
  static GradAttr Ints(std::string name, std::vector<int64_t> v) { return {std::move(name), ir::Attribute::Kind::kInts, 0, 0, std::move(v)}; }
  static GradAttr String(std::string name, std::string v) { return {std::move(name), ir::Attribute::Kind::kString, 0, 0, {}, std::move(v)}; }
};

// Builds nodes of the default domain in a graph, typing their outputs at once through the op's
// shape inference (a failure is a bug of the caller and aborts, naming `what`).
class IrBuilder {
 public:
  IrBuilder(ir::Graph& graph, int64_t opset, std::string base, std::string what)
      : graph_(graph), opset_(opset), base_(std::move(base)), what_(std::move(what)) {}

  int64_t opset() const { return opset_; }
  std::vector<int64_t> Dims(const ir::Value* v) const;  // static dims of a typed value
  ir::DType Dtype(const ir::Value* v) const { return v->type().dtype(); }
  ir::Value* Op(const std::string& op, std::vector<ir::Value*> inputs, std::vector<GradAttr> attrs = {});
  std::vector<ir::Value*> OpN(const std::string& op, std::vector<ir::Value*> inputs, std::vector<GradAttr> attrs, size_t outputs);
  ir::Value* Scalar(double value, ir::DType dtype);           // a 0-d constant
  ir::Value* Int64s(const std::vector<int64_t>& values);      // a 1-d i64 constant (shapes, axes)
  ir::Value* Floats(const std::vector<double>& values, ir::DType dtype);  // a 1-d f32/f64 constant
  ir::Value* Zeros(const std::vector<int64_t>& dims, ir::DType dtype);    // 0 expanded to `dims`
  ir::Value* CastTo(ir::Value* v, ir::DType dtype);                      // v itself when it has that dtype
  // `g` (of a broadcast result's shape) summed over the broadcast axes and reshaped to `like`.
  ir::Value* Unbroadcast(ir::Value* g, const ir::Value* like);
  // Sum over `axes` keeping them, or reshaped away when keepdims is 0 (ReduceSum, opset 13 form).
  ir::Value* SumAxes(ir::Value* g, const std::vector<int64_t>& axes, bool keepdims);
  // A fresh value name in the graph, starting with `base`.
  std::string Fresh(const std::string& base);

 protected:
  ir::Graph& graph_;
  int64_t opset_;
  std::string base_, what_;
  // false: built nodes stay untyped, for shape inference to type (and check) them in order
  // (operator expansion, ops/expand.h, where a failure is the model's and must be reported).
  bool type_outputs_ = true;
  // true: built nodes get distinct names (base/MatMul, base/MatMul1...), for the report.
  bool number_node_names_ = false;
  std::map<std::string, int> node_names_;
};

class GradContext : public IrBuilder {
 public:
  GradContext(ir::Graph& graph, const ir::Node& node, int64_t opset, std::vector<ir::Value*> grads, std::vector<bool> wanted)
      : IrBuilder(graph, opset, (node.name().empty() ? node.op_type() : node.name()) + "_grad", "the gradient of " + node.Describe()),
        node_(node), grads_(std::move(grads)), wanted_(std::move(wanted)) {}

  const ir::Node& node() const { return node_; }
  ir::Value* in(size_t i) const { return i < node_.inputs().size() ? node_.inputs()[i] : nullptr; }
  ir::Value* out(size_t i) const { return i < node_.outputs().size() ? node_.outputs()[i] : nullptr; }
  ir::Value* grad(size_t i) const { return i < grads_.size() ? grads_[i] : nullptr; }  // d loss / d out(i)
  bool wants(size_t i) const { return i < wanted_.size() && wanted_[i]; }
  int64_t Int(const char* name, int64_t fallback) const;
  float Float(const char* name, float fallback) const;
  std::vector<int64_t> Ints(const char* name, std::vector<int64_t> fallback = {}) const;
  // The node's attributes among `names` that it sets (int, float, ints or string), to build a
  // node of the same configuration.
  std::vector<GradAttr> CopyAttrs(const std::vector<const char*>& names) const;

 private:
  const ir::Node& node_;
  std::vector<ir::Value*> grads_;
  std::vector<bool> wanted_;
};

using GradFn = std::vector<ir::Value*> (*)(GradContext& ctx);

// Why a rule does not cover this node (nullptr: it does), for the autodiff error.
using GradRefusal = const char* (*)(const ir::Node& node);

struct GradRule {
  std::string op_type;
  int64_t min_opset = 1, max_opset = 1 << 30;
  GradFn fn = nullptr;
  std::vector<int> non_differentiable = {};  // inputs that never get a gradient (indices, shapes, axes)
  GradRefusal refuse = nullptr;
};

// The rule for a node of the default domain at `opset`, or nullptr.
const GradRule* FindGradRule(const std::string& op_type, int64_t opset);
// Every op type with a rule (sorted), for messages and tests.
std::vector<std::string> GradOps();

}  // namespace precis::ops
