// The Precis graph IR: Model, Graph, Node, Value and Attribute.
//
// Ownership: a Model owns its main Graph; a Graph owns its Values and Nodes; a Node owns the
// subgraphs in its graph attributes (If/Loop/Scan bodies). Values are SSA: one producer (a node
// output, a graph input or a constant) and any number of uses. A node in a subgraph may use a
// Value of an enclosing graph (an outer-scope reference); such uses are recorded on that Value.
// Nodes are kept in topological order (the verifier checks it). Pointers stay valid for the
// life of the Graph; nothing is ever moved between graphs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/ir/dim_expr.h"
#include "compiler/ir/tensor.h"
#include "compiler/ir/type.h"

namespace precis::ir {

class Graph;
class Node;

struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kGraph, kType,
                    kFloats, kInts, kStrings, kTensors, kGraphs, kTypes };
  std::string name;
  Kind kind = Kind::kInt;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  Type type;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  std::vector<Type> types;
  std::vector<std::unique_ptr<Graph>> graphs;  // kGraph holds exactly one
};

const char* AttributeKindName(Attribute::Kind kind);

// A node's precision decision (set by the precision pass; empty before it runs).
struct PrecisionRecord {
  DType accumulate = DType::kUndefined;  // accumulation dtype of ops that compute
  std::string reason;                    // reason code: "compute-op", "softmax-input", ...
  std::string evidence;                  // what the decision rests on, for the report
  bool empty() const { return accumulate == DType::kUndefined && reason.empty() && evidence.empty(); }
};

struct Use {
  Node* node;
  int input_index;
};

class Value {
 public:
  enum class Kind { kNodeOutput, kInput, kConstant };

  const std::string& name() const { return name_; }
  const Type& type() const { return type_; }
  void set_type(Type type) { type_ = std::move(type); }
  Kind kind() const { return kind_; }
  Node* producer() const { return producer_; }  // node outputs only
  int output_index() const { return output_index_; }
  const std::vector<Use>& uses() const { return uses_; }
  Graph* owner() const { return owner_; }
  bool is_constant() const { return kind_ == Kind::kConstant; }
  // Constants: their data. Inputs: an optional default (an initializer kept as an input).
  const Tensor* data() const { return data_.get(); }
  // An integer tensor's values (row-major) as dim expressions, when shape inference knows them
  // although the tensor is computed at run time (the Shape of a tensor with symbolic dims, and
  // arithmetic on it); nullptr otherwise. Derived data: shape inference sets it.
  const std::vector<DimExpr>* known_values() const { return known_values_.get(); }
  void set_known_values(std::vector<DimExpr> v) { known_values_ = std::make_shared<const std::vector<DimExpr>>(std::move(v)); }
  // A small float tensor's values (row-major) as value expressions (ops/value_expr.h: the
  // arithmetic of run-time float values, "sub_i1e0_i0e0"), when shape inference can follow them
  // to a size (Range over float inputs); nullptr otherwise. Derived data: shape inference sets it.
  const std::vector<std::string>* known_exprs() const { return known_exprs_.get(); }
  void set_known_exprs(std::vector<std::string> v) { known_exprs_ = std::make_shared<const std::vector<std::string>>(std::move(v)); }
  // A sequence or optional that the compiler resolved (passes/sequences.h): its elements in order
  // (an optional: none or one); nullptr when not resolved. Such a value has no producer (its
  // node was detached) until its uses are resolved too.
  const std::vector<Value*>* elements() const { return elements_.get(); }
  void set_elements(std::vector<Value*> v) { elements_ = std::make_shared<const std::vector<Value*>>(std::move(v)); }
  // A sequence of a length known only at run time that the compiler keeps as one tensor: its
  // elements are the slices of `stacked` along axis 0 (a Loop's list appends became a scan
  // output, passes/sequences.h); nullptr otherwise. Such a value has no producer either.
  Value* stacked() const { return stacked_; }
  void set_stacked(Value* v) { stacked_ = v; }
  // With `stacked`: an int64 [count, rank] tensor of each element's dims, where the elements
  // differ in shape (the stack is then padded to the largest; SplitToSequence's last chunk);
  // nullptr: every element has the stack's trailing dims.
  Value* stacked_dims() const { return stacked_dims_; }
  void set_stacked_dims(Value* v) { stacked_dims_ = v; }
  // An optional whose presence is decided at run time (an If gives a value in one branch only):
  // `present` is a bool scalar and `payload` the optional's content where it is true (a tensor,
  // or a resolved sequence); nullptr otherwise. Such a value has no producer either.
  Value* present() const { return present_; }
  Value* payload() const { return payload_; }
  void set_runtime_optional(Value* present, Value* payload) { present_ = present, payload_ = payload; }
  // A sequence or optional the compiler resolved (any of the forms above).
  bool resolved_container() const { return elements_ || stacked_ || present_; }

 private:
  friend class Graph;
  std::string name_;
  Type type_;
  std::shared_ptr<const std::vector<DimExpr>> known_values_;
  std::shared_ptr<const std::vector<std::string>> known_exprs_;
  std::shared_ptr<const std::vector<Value*>> elements_;
  Value* stacked_ = nullptr;
  Value* stacked_dims_ = nullptr;
  Value* present_ = nullptr;
  Value* payload_ = nullptr;
  Kind kind_ = Kind::kNodeOutput;
  Node* producer_ = nullptr;
  int output_index_ = -1;
  std::vector<Use> uses_;
  Graph* owner_ = nullptr;
  std::unique_ptr<Tensor> data_;
};

class Node {
 public:
  const std::string& domain() const { return domain_; }  // "" is the default ONNX domain
  const std::string& op_type() const { return op_type_; }
  const std::string& name() const { return name_; }  // the ONNX node name, may be empty
  void set_name(std::string name) { name_ = std::move(name); }
  const std::vector<Value*>& inputs() const { return inputs_; }    // nullptr: omitted optional
  const std::vector<Value*>& outputs() const { return outputs_; }  // nullptr: omitted optional
  const std::vector<Attribute>& attributes() const { return attributes_; }
  std::vector<Attribute>& mutable_attributes() { return attributes_; }
  const PrecisionRecord& precision() const { return precision_; }
  PrecisionRecord& mutable_precision() { return precision_; }
  const Attribute* FindAttribute(const std::string& name) const;
  Graph* owner() const { return owner_; }
  int index() const { return index_; }  // position in the owner's node order
  // "Conv 'conv1' (node 7)": how messages name a node.
  std::string Describe() const;

 private:
  friend class Graph;
  std::string domain_, op_type_, name_;
  std::vector<Value*> inputs_, outputs_;
  std::vector<Attribute> attributes_;
  PrecisionRecord precision_;
  Graph* owner_ = nullptr;
  int index_ = -1;
};

class Graph {
 public:
  explicit Graph(std::string name = "") : name_(std::move(name)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  // The node whose attribute owns this graph; nullptr for a model's main graph.
  Node* parent_node() const { return parent_node_; }
  Graph* parent_graph() const;

  // Builders. Names must be unique in this graph (checked by the caller: the importer and the
  // parser report duplicates as errors; a second value of one name here is a bug).
  Value* AddInput(const std::string& name, Type type);
  Value* AddConstant(const std::string& name, Tensor data);
  // A graph input with a default value (an initializer kept as an input).
  Value* AddInputWithDefault(const std::string& name, Type type, Tensor data);
  // A value to be produced by a node added later with AddNode.
  Value* NewValue(const std::string& name);
  Node* AddNode(std::string domain, std::string op_type, std::string name,
                std::vector<Value*> inputs, std::vector<Value*> outputs,
                std::vector<Attribute> attributes);
  void AddOutput(Value* value) { outputs_.push_back(value); }
  void SetOutputs(std::vector<Value*> outputs) { outputs_ = std::move(outputs); }
  // Replaces the node order with a permutation of the same nodes.
  void SetNodeOrder(const std::vector<Node*>& order);
  // Turns a node output into a constant holding `data` (its producer no longer produces it);
  // uses are kept. Used by constant folding.
  void ConvertToConstant(Value* value, Tensor data);
  // Turns a graph input into a constant holding `data` (the graph no longer has that input).
  void ConvertInputToConstant(Value* value, Tensor data);
  // Turns a constant into a graph input whose default value is its data (a weight to be trained).
  void ConvertConstantToInput(Value* value);
  // Removes a node whose outputs have no uses and are not graph outputs (or are nullptr);
  // its input uses are dropped. Indices of later nodes shift down.
  void RemoveNode(Node* node);
  // Removes a node whose outputs stay, without a producer and with their uses (a sequence
  // resolved at compile time: passes/sequences.h). Each must get a producer or lose its uses
  // (RemoveOrphanValue) before the graph is used.
  void DetachNode(Node* node);
  // Replaces graph input `input` by new inputs at its position (none: the input goes away);
  // `input` stays as a value without a producer, with its uses.
  std::vector<Value*> ReplaceInput(Value* input, const std::vector<std::pair<std::string, Type>>& replacements);
  // Gives a value another name (unique in this graph).
  void Rename(Value* value, const std::string& name);
  // Makes input `index` of `node` (a node of this graph) read `value`; uses are updated.
  void SetNodeInput(Node* node, int index, Value* value);
  // Makes `node` produce `value` (a fresh value from NewValue) as output `index`; the old output
  // value loses its producer and must be given a new one (AddNode) before the graph is used.
  void SetNodeOutput(Node* node, int index, Value* value);
  // Deletes a node-output value that nothing produces or uses (left over after SetNodeOutput
  // gave its producer another value).
  void RemoveOrphanValue(Value* value);
  // Replaces every use of `from` (in this graph and subgraphs, and graph outputs) with `to`.
  void ReplaceAllUses(Value* from, Value* to);
  // Marks this graph as owned by `node` (called when attaching a subgraph).
  void set_parent_node(Node* node) { parent_node_ = node; }

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<Value*>& constants() const { return constants_; }
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  Value* FindLocal(const std::string& name) const;
  // Looks `name` up here, then in enclosing graphs.
  Value* Lookup(const std::string& name) const;

 private:
  Value* CreateValue(const std::string& name, Value::Kind kind);
  std::string name_;
  Node* parent_node_ = nullptr;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_, outputs_, constants_;
  std::unordered_map<std::string, Value*> by_name_;
};

// A graph output that is a sequence or optional decided when the plan runs (passes/sequences.h):
// the names of the graph outputs it is read from (plan.fbs Container).
struct OutputContainer {
  enum class Kind { kSequence, kOptionalTensor, kOptionalSequence };
  std::string name;  // the model's output
  Kind kind = Kind::kSequence;
  std::vector<std::string> elements;  // elements of a count fixed when compiling
  std::string stack, dims, present;   // "" where absent
};

struct Model {
  int64_t ir_version = 0;
  std::string producer_name, producer_version, domain;
  int64_t model_version = 0;
  std::map<std::string, int64_t> opsets;  // domain ("" for ai.onnx) -> version
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();
  std::vector<OutputContainer> output_containers;
};

// Maps a value a copied graph uses from an enclosing graph to the value the copy uses instead.
using OuterMap = std::function<Value*(Value*)>;

// A copy of `a`; its subgraphs (If/Loop/Scan bodies) are copied with CloneGraph.
Attribute CloneAttribute(const Attribute& a, const OuterMap& outer);
// Copies `src`'s constants and nodes (with their subgraphs) to the end of `dst`, in order, with
// their types unless `untyped` (for shape inference to type them). `map` takes `src`'s values to
// their copies: the caller maps `src`'s inputs first, and a value in neither is an outer value,
// used as outer(value). Copies are named rename(original name) (a node without a name:
// rename(its op type)).
void CopyNodes(Graph& dst, const Graph& src, std::unordered_map<const Value*, Value*>& map, const OuterMap& outer,
               const std::function<std::string(const std::string&)>& rename, bool untyped = false);
// A copy of `g` as a new graph (inputs, constants, nodes with their subgraphs, outputs, same
// names and types); a value it uses from an enclosing graph becomes outer(value).
std::unique_ptr<Graph> CloneGraph(const Graph& g, const OuterMap& outer);

// Calls fn(graph) for `graph` and every subgraph below it, parents first.
template <typename Fn>
void ForEachGraph(const Graph& graph, Fn&& fn) {
  fn(graph);
  for (const auto& node : graph.nodes())
    for (const auto& attr : node->attributes())
      for (const auto& sub : attr.graphs) ForEachGraph(*sub, fn);
}

}  // namespace precis::ir
