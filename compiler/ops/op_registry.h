// Operator semantics: one OpDef per supported (domain, operator), registered by family files
// (elementwise.cc, nn.cc, ...). An OpDef says which opset versions Precis accepts, infers output
// types from input types, constant inputs and attributes, and tells the compiler whether the op
// can be evaluated at compile time and whether its kernel may write output 0 over input 0.
//
// Adding an operator: its OpDef in the family file (with shape inference), its CPU kernel under
// runtime/cpu/kernels/, and conformance coverage (tests/conformance).
#pragma once

#include <climits>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace precis::ops {

class InferContext {
 public:
  InferContext(const ir::Node& node, int64_t opset) : node_(node), opset_(opset) {}

  const ir::Node& node() const { return node_; }
  int64_t opset() const { return opset_; }  // version of the node's domain in the model
  size_t num_inputs() const { return node_.inputs().size(); }
  size_t num_outputs() const { return node_.outputs().size(); }
  bool has_input(size_t i) const { return i < node_.inputs().size() && node_.inputs()[i] != nullptr; }
  bool has_output(size_t i) const { return i < node_.outputs().size() && node_.outputs()[i] != nullptr; }
  const ir::Type& input_type(size_t i) const;
  ir::DType input_dtype(size_t i) const { return input_type(i).dtype(); }
  // Requires a tensor input of known rank; errors name the input.
  StatusOr<std::vector<ir::Dim>> InputDims(size_t i) const;
  // Constant data of input i when it is known at compile time, else nullptr.
  const ir::Tensor* input_constant(size_t i) const;
  // Integer values of a constant input (any integer dtype), or an Unimplemented error saying
  // that the plan needs that value at compile time.
  StatusOr<std::vector<int64_t>> ConstantInts(size_t i) const;
  StatusOr<std::vector<double>> ConstantFloats(size_t i) const;
  // Integer values of input i as dim expressions: a constant's values, or values shape inference
  // knows symbolically (ir::Value::known_values); the same Unimplemented error otherwise.
  StatusOr<std::vector<ir::DimExpr>> ShapeValues(size_t i) const;

  const ir::Attribute* attr(const char* name) const { return node_.FindAttribute(name); }
  int64_t Int(const char* name, int64_t fallback) const;
  float Float(const char* name, float fallback) const;
  std::string String(const char* name, const std::string& fallback) const;
  std::optional<std::vector<int64_t>> Ints(const char* name) const;

  void SetOutput(size_t i, ir::Type type);
  void SetOutput(size_t i, ir::DType dtype, std::vector<ir::Dim> dims) {
    SetOutput(i, ir::Type::Tensor(dtype, ir::Shape(std::move(dims))));
  }
  const std::vector<ir::Type>& outputs() const { return outputs_; }

  Status Error(const std::string& message) const;        // InvalidArgument naming the node
  Status Unsupported(const std::string& message) const;  // Unimplemented naming the node

 private:
  const ir::Node& node_;
  int64_t opset_;
  std::vector<ir::Type> outputs_;
};

using InferFn = Status (*)(InferContext&);

// How an operator takes part in mixed precision (see the precision section of the design):
//   compute      MatMul, Gemm, Conv...: 16-bit operands, FP32 accumulation; output dtype chosen by
//                its consumers (FP32 directly when a consumer needs FP32).
//   follow       elementwise math, pooling, inference BatchNorm: runs in 16 bits when its float
//                inputs are 16-bit; kernels compute in FP32 and round once when storing.
//   passthrough  data movement (Reshape, Transpose, Slice, Gather...): takes the dtype that arrives.
//   keep-fp32    softmax, reductions, normalization statistics, exp/log/pow, losses: FP32 inputs.
//   untouched    integer/bool/shape computations, Cast targets, comparisons: original dtypes.
// Accumulation: every class that computes (compute, follow, keep-fp32) accumulates in FP32
// whatever its storage dtype; passthrough and untouched ops move values without arithmetic.
enum class PrecisionClass { kUnclassified, kCompute, kFollow, kPassthrough, kKeepFp32, kUntouched };
const char* PrecisionClassName(PrecisionClass c);

struct OpDef {
  std::string domain;        // "" for the default ONNX domain
  std::string op_type;
  int64_t min_opset = 1;     // accepted versions of the domain's opset
  int64_t max_opset = INT_MAX;
  InferFn infer = nullptr;
  bool foldable = true;      // may be evaluated at compile time (deterministic, CPU kernel exists)
  int inplace_input = -1;    // output 0 may share storage with this input
  std::string kernel;        // runtime kernel name; empty: the operator name
  PrecisionClass precision = PrecisionClass::kUnclassified;
  // Leading inputs that take the node's run dtype when it runs in 16 bits; later float inputs
  // keep their dtype (Resize scales and roi, Dropout ratio). -1: every input.
  int low_inputs = -1;
  // Leading float outputs that take the node's run dtype; later float outputs keep the type
  // inference gives them (a training BatchNorm's FP32 batch statistics). -1: every output.
  int low_outputs = -1;
  // When set, a node runs in place (inplace_input) only where this says so (FusedElementwise:
  // its input 0 is read element for element with the output's element size).
  bool (*inplace_ok)(const ir::Node& node) = nullptr;
};

class OpRegistry {
 public:
  static const OpRegistry& Get();
  void Register(OpDef def);
  const OpDef* Find(const std::string& domain, const std::string& op_type) const;
  std::vector<const OpDef*> All() const;

 private:
  std::vector<OpDef> defs_;  // sorted by (domain, op_type)
};

// Family registration functions (one per file); RegisterAllOps calls them all.
void RegisterElementwiseOps(OpRegistry& r);
void RegisterMatMulOps(OpRegistry& r);
void RegisterQuantizeOps(OpRegistry& r);  // quantize.cc
void RegisterSignalOps(OpRegistry& r);    // signal.cc
void RegisterImageOps(OpRegistry& r);     // RoiAlign, AffineGrid, Col2Im, CenterCropPad, TfIdfVectorizer (image.cc)
void RegisterActivationOps(OpRegistry& r);
void RegisterNnOps(OpRegistry& r);
void RegisterTensorOps(OpRegistry& r);
void RegisterReduceOps(OpRegistry& r);
void RegisterLossOps(OpRegistry& r);
void RegisterTrainingOps(OpRegistry& r);  // internal operators of training plans (training.cc)
void RegisterRecurrentOps(OpRegistry& r);  // RNN, GRU, LSTM (rnn.cc)
void RegisterControlFlowOps(OpRegistry& r);  // If, Loop, Scan (control_flow.cc)
void RegisterMlOps(OpRegistry& r);         // ai.onnx.ml: Binarizer, ArrayFeatureExtractor, TreeEnsemble (ml.cc)
void RegisterFusedOps(OpRegistry& r);      // FusedElementwise (fused.cc, passes/fuse_elementwise.h)

// Shape helpers shared by families.
// Multidirectional (numpy) broadcasting of two shapes; error text names both.
StatusOr<std::vector<ir::Dim>> BroadcastDims(const std::vector<ir::Dim>& a, const std::vector<ir::Dim>& b);
// Normalizes a possibly negative axis into [0, rank); error when out of range.
StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank, const InferContext& ctx);
std::vector<ir::Dim> StaticDims(const std::vector<int64_t>& dims);

}  // namespace precis::ops
