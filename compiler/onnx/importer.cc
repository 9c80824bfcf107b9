// The ONNX importer's driver: parses the ModelProto, converts the model header and opsets, and
// imports graphs (recursively for If/Loop/Scan bodies) in three steps — declare every value a
// graph defines, build its nodes resolving names through the enclosing scopes, then put the
// nodes in topological order (reporting cycles). Weight bytes are never copied.
#include "compiler/onnx/importer.h"

#include <fcntl.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/stubs/logging.h>

#include "compiler/ir/verifier.h"
#include "compiler/onnx/attribute_import.h"
#include "compiler/onnx/import_internal.h"

namespace precis::onnx {
namespace {

std::string NormalizeDomain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

std::string DescribeProtoNode(const ::onnx::NodeProto& n, int index) {
  std::string domain = NormalizeDomain(n.domain());
  std::string s = domain.empty() ? n.op_type() : domain + "." + n.op_type();
  if (!n.name().empty()) s += " '" + n.name() + "'";
  return s + " (node " + std::to_string(index) + ")";
}

struct Scope {
  ir::Graph* graph;
  const Scope* parent;
  ir::Value* Lookup(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent)
      if (ir::Value* v = s->graph->FindLocal(name)) return v;
    return nullptr;
  }
};

bool IsConstantNode(const ::onnx::NodeProto& n) {
  return n.op_type() == "Constant" && NormalizeDomain(n.domain()).empty() && n.output_size() == 1 &&
         n.attribute_size() == 1;
}

template <typename T>
ir::Buffer BytesOf(const std::vector<T>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  return ir::Buffer::Own(std::move(bytes));
}

// The tensor a Constant node holds, in whichever attribute form it uses.
StatusOr<ir::Tensor> ConstantNodeValue(::onnx::NodeProto& n, ImportContext& ctx, const std::string& what) {
  auto& a = *n.mutable_attribute(0);
  const std::string& k = a.name();
  if (k == "value") return ImportTensor(*a.mutable_t(), ctx, what);
  if (k == "sparse_value") return DensifySparse(*a.mutable_sparse_tensor(), ctx, what);
  if (k == "value_float") return ir::Tensor(ir::DType::kF32, {}, BytesOf(std::vector<float>{a.f()}));
  if (k == "value_int") return ir::Tensor(ir::DType::kI64, {}, BytesOf(std::vector<int64_t>{a.i()}));
  if (k == "value_string") return ir::Tensor({}, std::vector<std::string>{a.s()});
  if (k == "value_floats") {
    std::vector<float> v(a.floats().begin(), a.floats().end());
    return ir::Tensor(ir::DType::kF32, {int64_t(v.size())}, BytesOf(v));
  }
  if (k == "value_ints") {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    return ir::Tensor(ir::DType::kI64, {int64_t(v.size())}, BytesOf(v));
  }
  if (k == "value_strings") {
    std::vector<std::string> v(a.strings().begin(), a.strings().end());
    int64_t size = int64_t(v.size());
    return ir::Tensor({size}, std::move(v));
  }
  return InvalidArgument(what + ": unknown Constant attribute '" + k + "'");
}

class GraphImporter {
 public:
  explicit GraphImporter(ImportContext& ctx) : ctx_(ctx) {}

  StatusOr<std::unique_ptr<ir::Graph>> Import(::onnx::GraphProto& gp, const Scope* parent) {
    auto graph = std::make_unique<ir::Graph>(gp.name());
    Scope scope{graph.get(), parent};
    where_ = "graph '" + gp.name() + "'";
    PRECIS_RETURN_IF_ERROR(DeclareInputsAndConstants(gp, scope));
    PRECIS_RETURN_IF_ERROR(DeclareNodeOutputs(gp, scope));
    PRECIS_RETURN_IF_ERROR(ApplyValueInfo(gp, scope));
    PRECIS_RETURN_IF_ERROR(BuildNodes(gp, scope));
    PRECIS_RETURN_IF_ERROR(SortNodes(*graph));
    for (const auto& out : gp.output()) {
      ir::Value* v = scope.Lookup(out.name());
      if (!v) return Fail("graph output '" + out.name() + "' is not produced by any node, input or initializer");
      graph->AddOutput(v);
    }
    return graph;
  }

 private:
  Status Fail(const std::string& message) const { return InvalidArgument(where_ + ": " + message); }

  Status CheckNewName(const Scope& scope, const std::string& name, const std::string& what) {
    if (name.empty()) return Fail(what + " has an empty name");
    if (scope.graph->FindLocal(name)) return Fail("duplicate value name '" + name + "' (" + what + ")");
    if (scope.parent && scope.parent->Lookup(name))
      return Fail("value '" + name + "' (" + what + ") shadows a value of an enclosing graph");
    return Status::Ok();
  }

  Status DeclareInputsAndConstants(::onnx::GraphProto& gp, const Scope& scope) {
    std::unordered_map<std::string, int> init_index;
    for (int i = 0; i < gp.initializer_size(); ++i) {
      const std::string& name = gp.initializer(i).name();
      if (name.empty()) return Fail("initializer " + std::to_string(i) + " has no name");
      if (!init_index.emplace(name, i).second) return Fail("duplicate initializer '" + name + "'");
    }
    for (int i = 0; i < gp.sparse_initializer_size(); ++i) {
      const std::string& name = gp.sparse_initializer(i).values().name();
      if (name.empty() || init_index.count(name)) return Fail("sparse initializer " + std::to_string(i) + " has a missing or duplicate name");
    }
    std::unordered_set<std::string> kept_as_input;
    for (auto& vi : *gp.mutable_input()) {
      std::string what = "input '" + vi.name() + "'";
      PRECIS_RETURN_IF_ERROR(CheckNewName(scope, vi.name(), "graph input"));
      PRECIS_ASSIGN_OR_RETURN(ir::Type type, ImportType(vi.type(), where_ + ": " + what));
      auto it = init_index.find(vi.name());
      if (it == init_index.end()) {
        scope.graph->AddInput(vi.name(), std::move(type));
      } else if (ctx_.options().keep_initializer_inputs) {
        PRECIS_ASSIGN_OR_RETURN(ir::Tensor t, ImportTensor(*gp.mutable_initializer(it->second), ctx_, where_ + ": initializer '" + vi.name() + "'"));
        if (type.is_unknown()) type = ir::Type::Tensor(t.dtype(), ir::Shape::FromStatic(t.dims()));
        if (!type.is_tensor() || type.dtype() != t.dtype())
          return Fail("input '" + vi.name() + "' and its initializer have different element types");
        scope.graph->AddInputWithDefault(vi.name(), std::move(type), std::move(t));
        kept_as_input.insert(vi.name());
      }
    }
    // Initializers not kept as inputs are constants, including those an old-IR model also lists
    // as graph inputs (those inputs were skipped above).
    for (int i = 0; i < gp.initializer_size(); ++i) {
      auto& tp = *gp.mutable_initializer(i);
      if (kept_as_input.count(tp.name())) continue;
      std::string name = tp.name();
      PRECIS_RETURN_IF_ERROR(CheckNewName(scope, name, "initializer"));
      PRECIS_ASSIGN_OR_RETURN(ir::Tensor t, ImportTensor(tp, ctx_, where_ + ": initializer '" + name + "'"));
      scope.graph->AddConstant(name, std::move(t));
    }
    for (auto& sp : *gp.mutable_sparse_initializer()) {
      std::string name = sp.values().name();
      PRECIS_RETURN_IF_ERROR(CheckNewName(scope, name, "sparse initializer"));
      PRECIS_ASSIGN_OR_RETURN(ir::Tensor t, DensifySparse(sp, ctx_, where_ + ": sparse initializer '" + name + "'"));
      scope.graph->AddConstant(name, std::move(t));
    }
    return Status::Ok();
  }

  Status DeclareNodeOutputs(::onnx::GraphProto& gp, const Scope& scope) {
    for (int i = 0; i < gp.node_size(); ++i) {
      auto& n = *gp.mutable_node(i);
      std::string node = DescribeProtoNode(n, i);
      if (n.op_type().empty()) return Fail(node + ": node has no operator type");
      if (IsConstantNode(n)) {
        PRECIS_RETURN_IF_ERROR(CheckNewName(scope, n.output(0), "output of " + node));
        PRECIS_ASSIGN_OR_RETURN(ir::Tensor t, ConstantNodeValue(n, ctx_, where_ + ": " + node));
        scope.graph->AddConstant(n.output(0), std::move(t));
        continue;
      }
      for (const auto& out : n.output()) {
        if (out.empty()) continue;
        PRECIS_RETURN_IF_ERROR(CheckNewName(scope, out, "output of " + node));
        scope.graph->NewValue(out);
      }
    }
    return Status::Ok();
  }

  Status ApplyValueInfo(::onnx::GraphProto& gp, const Scope& scope) {
    auto apply = [&](const ::onnx::ValueInfoProto& vi) -> Status {
      ir::Value* v = scope.graph->FindLocal(vi.name());
      if (!v || v->kind() != ir::Value::Kind::kNodeOutput || !vi.has_type()) return Status::Ok();
      PRECIS_ASSIGN_OR_RETURN(ir::Type t, ImportType(vi.type(), where_ + ": value '" + vi.name() + "'"));
      if (!t.is_unknown()) v->set_type(std::move(t));
      return Status::Ok();
    };
    for (const auto& vi : gp.value_info()) PRECIS_RETURN_IF_ERROR(apply(vi));
    for (const auto& vi : gp.output()) PRECIS_RETURN_IF_ERROR(apply(vi));
    return Status::Ok();
  }

  Status BuildNodes(::onnx::GraphProto& gp, const Scope& scope) {
    for (int i = 0; i < gp.node_size(); ++i) {
      auto& n = *gp.mutable_node(i);
      if (IsConstantNode(n)) continue;
      std::string node = DescribeProtoNode(n, i);
      std::vector<ir::Value*> inputs;
      for (const auto& name : n.input()) {
        if (name.empty()) {
          inputs.push_back(nullptr);
          continue;
        }
        ir::Value* v = scope.Lookup(name);
        if (!v) return Fail(node + ": input '" + name + "' is not produced by any node, graph input or initializer");
        inputs.push_back(v);
      }
      std::vector<ir::Value*> outputs;
      for (const auto& name : n.output()) outputs.push_back(name.empty() ? nullptr : scope.graph->FindLocal(name));
      std::vector<ir::Attribute> attrs;
      std::unordered_set<std::string> attr_names;
      SubgraphImporter sub = [&](::onnx::GraphProto& g, const std::string& what) {
        GraphImporter inner(ctx_);
        auto r = inner.Import(g, &scope);
        if (!r.ok()) return StatusOr<std::unique_ptr<ir::Graph>>(r.status().WithContext(where_ + ": " + what));
        return r;
      };
      for (auto& a : *n.mutable_attribute()) {
        if (!attr_names.insert(a.name()).second) return Fail(node + ": duplicate attribute '" + a.name() + "'");
        auto attr = ImportAttribute(a, ctx_, node, sub);
        if (!attr.ok()) {
          // Subgraph errors already carry their location; others get this graph's.
          if (attr.status().message().rfind("graph '", 0) == 0) return attr.status();
          return attr.status().WithContext(where_);
        }
        attrs.push_back(std::move(attr).value());
      }
      scope.graph->AddNode(NormalizeDomain(n.domain()), n.op_type(), n.name(), std::move(inputs),
                           std::move(outputs), std::move(attrs));
    }
    return Status::Ok();
  }

  // Values of `graph` that `node` reads, directly or from inside its subgraphs.
  static void CollectReads(const ir::Node& node, const ir::Graph& graph, std::vector<const ir::Value*>& out) {
    for (const ir::Value* v : node.inputs())
      if (v && v->owner() == &graph) out.push_back(v);
    for (const auto& attr : node.attributes())
      for (const auto& sub : attr.graphs) {
        for (const auto& inner : sub->nodes()) CollectReads(*inner, graph, out);
        for (const ir::Value* v : sub->outputs())
          if (v->owner() == &graph) out.push_back(v);
      }
  }

  // Kahn's algorithm, taking ready nodes in their original order so sorted input is unchanged.
  Status SortNodes(ir::Graph& g) {
    size_t n = g.nodes().size();
    std::vector<std::vector<int>> users(n);
    std::vector<int> pending(n, 0);
    for (size_t i = 0; i < n; ++i) {
      std::vector<const ir::Value*> reads;
      CollectReads(*g.nodes()[i], g, reads);
      std::unordered_set<int> deps;
      for (const ir::Value* v : reads)
        if (v->producer()) deps.insert(v->producer()->index());
      for (int d : deps) {
        users[size_t(d)].push_back(int(i));
        ++pending[i];
      }
    }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (size_t i = 0; i < n; ++i)
      if (pending[i] == 0) ready.push(int(i));
    std::vector<ir::Node*> order;
    while (!ready.empty()) {
      int i = ready.top();
      ready.pop();
      order.push_back(g.nodes()[size_t(i)].get());
      for (int u : users[size_t(i)])
        if (--pending[size_t(u)] == 0) ready.push(u);
    }
    if (order.size() != n) {
      std::string names;
      int listed = 0;
      for (size_t i = 0; i < n && listed < 5; ++i)
        if (pending[i] > 0) {
          names += (listed++ ? ", " : "") + g.nodes()[i]->Describe();
        }
      return Fail("the graph has a cycle: " + std::to_string(n - order.size()) +
                  " nodes cannot be ordered, among them " + names);
    }
    g.SetNodeOrder(order);
    return Status::Ok();
  }

  ImportContext& ctx_;
  std::string where_;
};

Status CheckLocalFunctions(const ::onnx::ModelProto& mp) {
  if (mp.functions_size() == 0) return Status::Ok();
  std::unordered_set<std::string> functions;
  for (const auto& f : mp.functions()) functions.insert(NormalizeDomain(f.domain()) + "::" + f.name());
  std::string used;
  std::vector<const ::onnx::GraphProto*> stack = {&mp.graph()};
  while (!stack.empty()) {
    const auto* g = stack.back();
    stack.pop_back();
    for (const auto& n : g->node()) {
      if (functions.count(NormalizeDomain(n.domain()) + "::" + n.op_type()) && used.find(n.op_type()) == std::string::npos)
        used += (used.empty() ? "" : ", ") + n.op_type();
      for (const auto& a : n.attribute()) {
        if (a.has_g()) stack.push_back(&a.g());
        for (const auto& sg : a.graphs()) stack.push_back(&sg);
      }
    }
  }
  if (!used.empty()) return Unimplemented("model-local functions are not supported (used: " + used + ")");
  return Status::Ok();
}

StatusOr<std::unique_ptr<ir::Model>> ImportParsed(::onnx::ModelProto& mp, const std::string& base_dir,
                                                  const ImportOptions& options) {
  if (!mp.has_ir_version()) return InvalidArgument("model has no ir_version: not an ONNX model, or truncated");
  if (mp.ir_version() < 3)
    return Unimplemented("IR version " + std::to_string(mp.ir_version()) + " is not supported (3 or newer is)");
  if (!mp.has_graph()) return InvalidArgument("model has no graph");
  // Required since IR 3; its absence also catches a file cut just before the opset_import field.
  if (mp.opset_import_size() == 0)
    return InvalidArgument("model imports no opset (opset_import is empty): not a complete ONNX model, or truncated");
  PRECIS_RETURN_IF_ERROR(CheckLocalFunctions(mp));
  auto model = std::make_unique<ir::Model>();
  model->ir_version = mp.ir_version();
  model->producer_name = mp.producer_name();
  model->producer_version = mp.producer_version();
  model->domain = mp.domain();
  model->model_version = mp.model_version();
  for (const auto& op : mp.opset_import()) {
    std::string domain = NormalizeDomain(op.domain());
    if (!model->opsets.emplace(domain, op.version()).second)
      return InvalidArgument("opset for domain '" + domain + "' is imported twice");
  }
  ImportContext ctx(base_dir, options);
  GraphImporter importer(ctx);
  PRECIS_ASSIGN_OR_RETURN(model->graph, importer.Import(*mp.mutable_graph(), nullptr));
  if (options.verify) {
    Status s = ir::Verify(*model);
    if (!s.ok()) return s.WithContext("imported model fails verification");
  }
  return model;
}

void SilenceProtobufLogging() {
  static bool once = [] {
    google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int, const std::string&) {});
    return true;
  }();
  (void)once;
}

}  // namespace

StatusOr<std::unique_ptr<ir::Model>> ImportModelFromBuffer(const void* data, size_t size,
                                                           const std::string& base_dir,
                                                           const ImportOptions& options) {
  SilenceProtobufLogging();
  if (size > size_t(INT_MAX))
    return InvalidArgument("a serialized model over 2 GiB cannot be parsed: store weights as external data");
  ::onnx::ModelProto mp;
  if (!mp.ParseFromArray(data, int(size)))
    return InvalidArgument("not a valid ONNX model: the protobuf does not parse (corrupt or truncated)");
  return ImportParsed(mp, base_dir, options);
}

StatusOr<std::unique_ptr<ir::Model>> ImportModelFile(const std::string& path, const ImportOptions& options) {
  SilenceProtobufLogging();
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) return NotFound("model file '" + path + "' does not exist");
  if (!fs::is_regular_file(path, ec)) return InvalidArgument("'" + path + "' is not a regular file");
  auto size = fs::file_size(path, ec);
  if (ec) return Internal("cannot read the size of '" + path + "'");
  if (size > uint64_t(INT_MAX))
    return InvalidArgument("'" + path + "' is over 2 GiB: protobuf cannot parse it; store weights as external data");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Internal("cannot open '" + path + "'");
  ::onnx::ModelProto mp;
  bool parsed;
  {
    // Streamed from the file: the only in-memory copy of the weights is the parsed protobuf,
    // whose raw_data strings the IR then takes over.
    google::protobuf::io::FileInputStream stream(fd);
    google::protobuf::io::CodedInputStream coded(&stream);
    coded.SetTotalBytesLimit(INT_MAX);
    parsed = mp.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  }
  ::close(fd);
  if (!parsed)
    return InvalidArgument("'" + path + "' is not a valid ONNX model: the protobuf does not parse (corrupt or truncated)");
  auto model = ImportParsed(mp, ModelFolder(path), options);
  if (!model.ok()) return model.status().WithContext(path);
  return model;
}

}  // namespace precis::onnx
