// Operator expansion: operators Precis runs as a subgraph of simpler operators. ONNX defines
// several newer operators as functions (Attention, RMSNormalization, RotaryEmbedding, Swish);
// expanded, they get the precision rules, kernels, gradients and backends of their parts, and
// the pattern pass still names what they were (a decomposed attention, a decomposed RMSNorm).
// Legacy forms are normalized the same way: before opset 7, binary operators broadcast their
// second input from an `axis` attribute. And forms that need an internal operator: a
// BatchNormalization in training mode becomes BatchNormalizationTraining and the running-statistics
// arithmetic.
//
// Shape inference (passes/infer_shapes.cc) calls the expander of a node when it reaches it, with
// the node's inputs typed; the expander builds the new nodes in front of the node, and inference
// goes on with the first of them. Built nodes are typed (and checked) by inference, so a model's
// inconsistent shapes are reported against the built node, never asserted.
#pragma once

#include <string>
#include <vector>

#include "compiler/ops/gradient.h"

namespace precis::ops {

class Expander : public IrBuilder {
 public:
  Expander(ir::Graph& graph, ir::Node& node, int64_t opset);

  ir::Node& node() const { return node_; }
  ir::Value* in(size_t i) const { return i < node_.inputs().size() ? node_.inputs()[i] : nullptr; }
  bool wants(size_t i) const { return i < node_.outputs().size() && node_.outputs()[i] != nullptr; }
  // The rank and dims of input i (an error naming the node when its rank is unknown).
  StatusOr<std::vector<ir::Dim>> InputDims(size_t i) const;
  int64_t Int(const char* name, int64_t fallback) const;
  float Float(const char* name, float fallback) const;
  bool Has(const char* name) const { return node_.FindAttribute(name) != nullptr; }
  Status Error(const std::string& message) const;        // InvalidArgument naming the node
  Status Unsupported(const std::string& message) const;  // Unimplemented naming the node

  // Dims [start, end) of v as an i64 vector (Shape; a constant once v's shape is static).
  ir::Value* ShapeOf(ir::Value* v, int64_t start, int64_t end);
  // A 0-d constant of any float dtype (16-bit ones through a Cast, folded by inference).
  ir::Value* FloatScalar(double value, ir::DType dtype);
  // Copies `body`'s constants and nodes in front of the node (untyped, for inference to type),
  // its inputs bound to `inputs`; returns what its outputs became. Values the body uses from
  // enclosing graphs stay those values.
  std::vector<ir::Value*> Inline(const ir::Graph& body, const std::vector<ir::Value*>& inputs);

  // Ends the expansion: output i of the node becomes values[i] (nullptr where the node's output
  // is absent); the node is removed and the built nodes take its place.
  void Replace(const std::vector<ir::Value*>& values);
  // Ends an expansion that changed the node in place: built nodes go in front of it.
  void KeepNode();

 private:
  void MoveBuiltNodesBefore(ir::Node* anchor);
  ir::Node& node_;
  size_t nodes_before_;
};

// Returns whether the node was changed (replaced, or nodes were put in front of it): inference
// then resumes at the node's old position. false: the node stays as it is.
using ExpandFn = StatusOr<bool> (*)(Expander& e);

// The expander of a node of `domain`::`op_type` at `opset`, or nullptr.
ExpandFn FindExpander(const std::string& domain, const std::string& op_type, int64_t opset);

// Family expanders (expand_nn.cc).
StatusOr<bool> ExpandAttention(Expander& e);
StatusOr<bool> ExpandFlexAttention(Expander& e);
StatusOr<bool> ExpandRmsNormalization(Expander& e);
StatusOr<bool> ExpandRotaryEmbedding(Expander& e);
StatusOr<bool> ExpandSwish(Expander& e);
StatusOr<bool> ExpandCausalConvWithState(Expander& e);
StatusOr<bool> ExpandBatchNormTraining(Expander& e);

}  // namespace precis::ops
