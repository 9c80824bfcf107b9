// Graph construction and lookup: values, nodes, uses and node order.
#include "compiler/ir/graph.h"

#include <algorithm>
#include <unordered_set>

#include "runtime/base/check.h"

namespace precis::ir {

const char* AttributeKindName(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::kFloat: return "float";
    case Attribute::Kind::kInt: return "int";
    case Attribute::Kind::kString: return "string";
    case Attribute::Kind::kTensor: return "tensor";
    case Attribute::Kind::kGraph: return "graph";
    case Attribute::Kind::kType: return "type";
    case Attribute::Kind::kFloats: return "floats";
    case Attribute::Kind::kInts: return "ints";
    case Attribute::Kind::kStrings: return "strings";
    case Attribute::Kind::kTensors: return "tensors";
    case Attribute::Kind::kGraphs: return "graphs";
    case Attribute::Kind::kTypes: return "types";
  }
  return "?";
}

const Attribute* Node::FindAttribute(const std::string& name) const {
  for (const auto& a : attributes_)
    if (a.name == name) return &a;
  return nullptr;
}

std::string Node::Describe() const {
  std::string s = domain_.empty() ? op_type_ : domain_ + "." + op_type_;
  if (!name_.empty()) s += " '" + name_ + "'";
  s += " (node " + std::to_string(index_) + ")";
  return s;
}

Graph* Graph::parent_graph() const { return parent_node_ ? parent_node_->owner() : nullptr; }

Value* Graph::CreateValue(const std::string& name, Value::Kind kind) {
  PRECIS_CHECK(name.empty() || !by_name_.count(name)) << "duplicate value '" << name << "'";
  auto v = std::make_unique<Value>();
  v->name_ = name;
  v->kind_ = kind;
  v->owner_ = this;
  Value* raw = v.get();
  values_.push_back(std::move(v));
  if (!name.empty()) by_name_[name] = raw;
  return raw;
}

Value* Graph::AddInput(const std::string& name, Type type) {
  Value* v = CreateValue(name, Value::Kind::kInput);
  v->type_ = std::move(type);
  inputs_.push_back(v);
  return v;
}

Value* Graph::AddInputWithDefault(const std::string& name, Type type, Tensor data) {
  Value* v = AddInput(name, std::move(type));
  v->data_ = std::make_unique<Tensor>(std::move(data));
  return v;
}

Value* Graph::AddConstant(const std::string& name, Tensor data) {
  Value* v = CreateValue(name, Value::Kind::kConstant);
  v->type_ = Type::Tensor(data.dtype(), Shape::FromStatic(data.dims()));
  v->data_ = std::make_unique<Tensor>(std::move(data));
  constants_.push_back(v);
  return v;
}

Value* Graph::NewValue(const std::string& name) {
  return CreateValue(name, Value::Kind::kNodeOutput);
}

Node* Graph::AddNode(std::string domain, std::string op_type, std::string name,
                     std::vector<Value*> inputs, std::vector<Value*> outputs,
                     std::vector<Attribute> attributes) {
  auto n = std::make_unique<Node>();
  Node* node = n.get();
  node->domain_ = std::move(domain);
  node->op_type_ = std::move(op_type);
  node->name_ = std::move(name);
  node->inputs_ = std::move(inputs);
  node->outputs_ = std::move(outputs);
  node->attributes_ = std::move(attributes);
  node->owner_ = this;
  node->index_ = int(nodes_.size());
  for (size_t i = 0; i < node->inputs_.size(); ++i)
    if (Value* in = node->inputs_[i]) in->uses_.push_back({node, int(i)});
  for (size_t i = 0; i < node->outputs_.size(); ++i) {
    Value* out = node->outputs_[i];
    if (!out) continue;
    PRECIS_CHECK(out->owner_ == this && out->kind_ == Value::Kind::kNodeOutput &&
                 out->producer_ == nullptr)
        << "output '" << out->name_ << "' already produced";
    out->producer_ = node;
    out->output_index_ = int(i);
  }
  for (auto& attr : node->attributes_)
    for (auto& g : attr.graphs) g->set_parent_node(node);
  nodes_.push_back(std::move(n));
  return node;
}

void Graph::SetNodeOrder(const std::vector<Node*>& order) {
  PRECIS_CHECK(order.size() == nodes_.size()) << "node order is not a permutation";
  std::unordered_map<Node*, std::unique_ptr<Node>> owned;
  for (auto& n : nodes_) owned.emplace(n.get(), std::move(n));
  nodes_.clear();
  for (Node* n : order) {
    auto it = owned.find(n);
    PRECIS_CHECK(it != owned.end() && it->second) << "node order is not a permutation";
    n->index_ = int(nodes_.size());
    nodes_.push_back(std::move(it->second));
  }
}

void Graph::ConvertToConstant(Value* value, Tensor data) {
  PRECIS_CHECK(value->owner_ == this && value->kind_ == Value::Kind::kNodeOutput) << value->name_;
  if (Node* p = value->producer_) p->outputs_[size_t(value->output_index_)] = nullptr;
  value->producer_ = nullptr;
  value->output_index_ = -1;
  value->kind_ = Value::Kind::kConstant;
  value->type_ = Type::Tensor(data.dtype(), Shape::FromStatic(data.dims()));
  value->data_ = std::make_unique<Tensor>(std::move(data));
  constants_.push_back(value);
}

void Graph::ConvertInputToConstant(Value* value, Tensor data) {
  PRECIS_CHECK(value->owner_ == this && value->kind_ == Value::Kind::kInput) << value->name_;
  inputs_.erase(std::find(inputs_.begin(), inputs_.end(), value));
  value->kind_ = Value::Kind::kConstant;
  value->type_ = Type::Tensor(data.dtype(), Shape::FromStatic(data.dims()));
  value->data_ = std::make_unique<Tensor>(std::move(data));
  constants_.push_back(value);
}

void Graph::ConvertConstantToInput(Value* value) {
  PRECIS_CHECK(value->owner_ == this && value->kind_ == Value::Kind::kConstant) << value->name_;
  constants_.erase(std::find(constants_.begin(), constants_.end(), value));
  value->kind_ = Value::Kind::kInput;
  inputs_.push_back(value);
}

void Graph::RemoveNode(Node* node) {
  PRECIS_CHECK(node->owner_ == this) << "node of another graph";
  for (Value* out : node->outputs_) {
    if (!out) continue;
    PRECIS_CHECK(out->uses_.empty()) << "removing a node whose output '" << out->name_ << "' is used";
    PRECIS_CHECK(std::find(outputs_.begin(), outputs_.end(), out) == outputs_.end()) << "output is a graph output";
  }
  for (Value* in : node->inputs_) {
    if (!in) continue;
    auto& uses = in->uses_;
    uses.erase(std::remove_if(uses.begin(), uses.end(), [&](const Use& u) { return u.node == node; }), uses.end());
  }
  // Uses from inside the node's subgraphs, at any depth, of values outside them go too (uses of
  // values inside die with them).
  for (auto& attr : node->attributes_)
    for (auto& g : attr.graphs)
      ForEachGraph(*g, [](const Graph& sub) {
        for (auto& inner : sub.nodes_)
          for (Value* in : inner->inputs_)
            if (in) std::erase_if(in->uses_, [&](const Use& u) { return u.node == inner.get(); });
      });
  for (Value* out : node->outputs_)
    if (out) {
      by_name_.erase(out->name_);  // before the erase below frees `out`
      values_.erase(std::find_if(values_.begin(), values_.end(), [&](const auto& v) { return v.get() == out; }));
    }
  size_t index = size_t(node->index_);
  nodes_.erase(nodes_.begin() + long(index));
  for (size_t i = index; i < nodes_.size(); ++i) nodes_[i]->index_ = int(i);
}

void Graph::DetachNode(Node* node) {
  PRECIS_CHECK(node->owner_ == this) << "node of another graph";
  for (Value* out : node->outputs_)
    if (out) {
      out->producer_ = nullptr;
      out->output_index_ = -1;
    }
  node->outputs_.clear();
  RemoveNode(node);
}

std::vector<Value*> Graph::ReplaceInput(Value* input, const std::vector<std::pair<std::string, Type>>& replacements) {
  auto at = std::find(inputs_.begin(), inputs_.end(), input);
  PRECIS_CHECK(input->owner_ == this && input->kind_ == Value::Kind::kInput && at != inputs_.end()) << input->name_;
  size_t pos = size_t(at - inputs_.begin());
  inputs_.erase(at);
  input->kind_ = Value::Kind::kNodeOutput;
  input->data_.reset();
  std::vector<Value*> added;
  for (const auto& [name, type] : replacements) {
    Value* v = CreateValue(name, Value::Kind::kInput);
    v->type_ = type;
    added.push_back(v);
  }
  inputs_.insert(inputs_.begin() + long(pos), added.begin(), added.end());
  return added;
}

void Graph::Rename(Value* value, const std::string& name) {
  PRECIS_CHECK(value->owner_ == this && !name.empty() && !by_name_.count(name)) << "cannot rename '" << value->name_ << "' to '" << name << "'";
  if (!value->name_.empty()) by_name_.erase(value->name_);
  value->name_ = name;
  by_name_[name] = value;
}

void Graph::SetNodeInput(Node* node, int index, Value* value) {
  PRECIS_CHECK(node->owner_ == this && index >= 0 && size_t(index) < node->inputs_.size()) << "bad node input";
  if (Value* old = node->inputs_[size_t(index)]) {
    auto& uses = old->uses_;
    for (size_t i = 0; i < uses.size(); ++i)
      if (uses[i].node == node && uses[i].input_index == index) {
        uses.erase(uses.begin() + long(i));
        break;
      }
  }
  node->inputs_[size_t(index)] = value;
  if (value) value->uses_.push_back({node, index});
}

void Graph::SetNodeOutput(Node* node, int index, Value* value) {
  PRECIS_CHECK(node->owner_ == this && index >= 0 && size_t(index) < node->outputs_.size()) << "bad node output";
  PRECIS_CHECK(value->owner_ == this && value->kind_ == Value::Kind::kNodeOutput && value->producer_ == nullptr)
      << "output '" << value->name_ << "' already produced";
  if (Value* old = node->outputs_[size_t(index)]) {
    old->producer_ = nullptr;
    old->output_index_ = -1;
  }
  node->outputs_[size_t(index)] = value;
  value->producer_ = node;
  value->output_index_ = index;
}

void Graph::RemoveOrphanValue(Value* value) {
  PRECIS_CHECK(value->owner_ == this && value->kind_ == Value::Kind::kNodeOutput && !value->producer_ && value->uses_.empty() &&
               std::find(outputs_.begin(), outputs_.end(), value) == outputs_.end())
      << "value '" << value->name_ << "' is still produced or used";
  by_name_.erase(value->name_);
  values_.erase(std::find_if(values_.begin(), values_.end(), [&](const auto& v) { return v.get() == value; }));
}

void Graph::ReplaceAllUses(Value* from, Value* to) {
  for (const Use& u : from->uses_) {
    u.node->inputs_[size_t(u.input_index)] = to;
    to->uses_.push_back(u);
  }
  from->uses_.clear();
  for (Value*& out : outputs_)
    if (out == from) out = to;
}

Value* Graph::FindLocal(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::Lookup(const std::string& name) const {
  for (const Graph* g = this; g != nullptr; g = g->parent_graph())
    if (Value* v = g->FindLocal(name)) return v;
  return nullptr;
}

Attribute CloneAttribute(const Attribute& a, const OuterMap& outer) {
  Attribute c;
  c.name = a.name, c.kind = a.kind, c.f = a.f, c.i = a.i, c.s = a.s, c.t = a.t, c.type = a.type;
  c.floats = a.floats, c.ints = a.ints, c.strings = a.strings, c.tensors = a.tensors, c.types = a.types;
  for (const auto& g : a.graphs) c.graphs.push_back(CloneGraph(*g, outer));
  return c;
}

void CopyNodes(Graph& dst, const Graph& src, std::unordered_map<const Value*, Value*>& map, const OuterMap& outer,
               const std::function<std::string(const std::string&)>& rename, bool untyped) {
  for (const Value* c : src.constants()) map[c] = dst.AddConstant(rename(c->name()), *c->data());
  OuterMap mapped = [&](Value* v) -> Value* {
    if (!v) return nullptr;
    auto it = map.find(v);
    return it != map.end() ? it->second : outer(v);
  };
  for (const auto& n : src.nodes()) {
    std::vector<Value*> ins, outs;
    for (Value* in : n->inputs()) ins.push_back(mapped(in));
    for (Value* o : n->outputs()) {
      Value* c = nullptr;
      if (o) {
        c = dst.NewValue(rename(o->name()));
        if (!untyped) c->set_type(o->type());
        map[o] = c;
      }
      outs.push_back(c);
    }
    std::vector<Attribute> attrs;
    for (const Attribute& a : n->attributes()) attrs.push_back(CloneAttribute(a, mapped));
    dst.AddNode(n->domain(), n->op_type(), rename(n->name().empty() ? n->op_type() : n->name()), std::move(ins), std::move(outs), std::move(attrs));
  }
}

std::unique_ptr<Graph> CloneGraph(const Graph& g, const OuterMap& outer) {
  auto out = std::make_unique<Graph>(g.name());
  std::unordered_map<const Value*, Value*> map;
  for (const Value* v : g.inputs()) map[v] = v->data() ? out->AddInputWithDefault(v->name(), v->type(), *v->data()) : out->AddInput(v->name(), v->type());
  // Unnamed nodes stay unnamed.
  CopyNodes(*out, g, map, outer, [](const std::string& name) { return name; });
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i]->name().empty()) out->nodes()[i]->set_name("");
  for (Value* v : g.outputs()) {
    auto it = map.find(v);
    out->AddOutput(it != map.end() ? it->second : outer(v));
  }
  return out;
}

}  // namespace precis::ir
