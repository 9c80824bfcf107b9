// `precis inspect`: a summary of an ONNX model as Precis imports it (header, opsets, inputs and
// outputs, operator histogram, parameters per dtype, subgraphs), as text or JSON, or the whole
// text IR with --ir.
#include <cstdio>
#include <map>

#include "compiler/ir/json_writer.h"
#include "compiler/ir/text.h"
#include "compiler/onnx/importer.h"
#include "tools/precis/commands.h"

namespace precis::tools {
namespace {

constexpr const char* kInspectUsage =
    "usage: precis inspect MODEL.onnx [--ir] [--json] [--full] [--keep-initializer-inputs]\n";

struct ParamStats {
  int64_t count = 0;     // elements
  int64_t bytes = 0;
  int64_t tensors = 0;
};

struct SubgraphInfo {
  std::string node, attribute, graph;
  size_t nodes;
  int depth;
};

struct Summary {
  std::map<std::string, int64_t> ops;         // "domain::Op" or "Op" -> count, all graphs
  std::map<std::string, ParamStats> params;   // dtype name -> stats, all graphs
  std::vector<SubgraphInfo> subgraphs;
  int64_t nodes = 0;
};

void Collect(const ir::Graph& g, int depth, Summary& s) {
  for (const ir::Value* c : g.constants()) {
    auto& p = s.params[std::string(ir::DTypeName(c->data()->dtype()))];
    p.count += c->data()->NumElements();
    p.bytes += c->data()->ByteSize();
    p.tensors += 1;
  }
  for (const auto& n : g.nodes()) {
    ++s.nodes;
    s.ops[n->domain().empty() ? n->op_type() : n->domain() + "::" + n->op_type()]++;
    for (const auto& a : n->attributes())
      for (const auto& sub : a.graphs) {
        s.subgraphs.push_back({n->Describe(), a.name, sub->name(), sub->nodes().size(), depth + 1});
        Collect(*sub, depth + 1, s);
      }
  }
}

std::string FormatBytes(int64_t b) {
  char buf[32];
  if (b >= (int64_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / (1 << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024);
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}

void PrintText(const ir::Model& m, const Summary& s) {
  std::printf("ir_version: %lld\n", static_cast<long long>(m.ir_version));
  std::printf("producer: %s %s\n", m.producer_name.c_str(), m.producer_version.c_str());
  std::printf("opsets:");
  for (const auto& [d, v] : m.opsets) std::printf(" %s=%lld", d.empty() ? "ai.onnx" : d.c_str(), static_cast<long long>(v));
  std::printf("\ninputs:\n");
  for (const ir::Value* v : m.graph->inputs())
    std::printf("  %s: %s%s\n", v->name().c_str(), ir::PrintType(v->type()).c_str(), v->data() ? " (has default)" : "");
  std::printf("outputs:\n");
  for (const ir::Value* v : m.graph->outputs())
    std::printf("  %s: %s\n", v->name().c_str(), ir::PrintType(v->type()).c_str());
  std::printf("nodes: %lld (%zu operator types)\n", static_cast<long long>(s.nodes), s.ops.size());
  for (const auto& [op, n] : s.ops) std::printf("  %-28s %lld\n", op.c_str(), static_cast<long long>(n));
  int64_t total_count = 0, total_bytes = 0;
  std::printf("parameters:\n");
  for (const auto& [dtype, p] : s.params) {
    std::printf("  %-8s %lld in %lld tensors, %s\n", dtype.c_str(), static_cast<long long>(p.count),
                static_cast<long long>(p.tensors), FormatBytes(p.bytes).c_str());
    total_count += p.count;
    total_bytes += p.bytes;
  }
  std::printf("  total    %lld, %s\n", static_cast<long long>(total_count), FormatBytes(total_bytes).c_str());
  std::printf("subgraphs: %zu\n", s.subgraphs.size());
  for (const auto& sg : s.subgraphs)
    std::printf("  %*s%s.%s: graph '%s', %zu nodes\n", (sg.depth - 1) * 2, "", sg.node.c_str(),
                sg.attribute.c_str(), sg.graph.c_str(), sg.nodes);
}

void WriteValues(ir::JsonWriter& j, const std::vector<ir::Value*>& values) {
  j.BeginArray();
  for (const ir::Value* v : values) {
    j.BeginObject().Key("name").String(v->name()).Key("type").String(ir::PrintType(v->type()));
    if (v->type().is_tensor()) {
      j.Key("dtype").String(ir::DTypeName(v->type().dtype()));
      if (v->type().shape().has_rank()) {
        j.Key("shape").BeginArray();
        for (const auto& d : v->type().shape().dims()) {
          if (d.is_static()) j.Int(d.value());
          else if (d.is_symbolic()) j.String(d.symbol());
          else j.Null();
        }
        j.EndArray();
      } else {
        j.Key("shape").Null();
      }
    }
    j.EndObject();
  }
  j.EndArray();
}

void PrintJson(const ir::Model& m, const Summary& s) {
  ir::JsonWriter j;
  j.BeginObject();
  j.Key("ir_version").Int(m.ir_version);
  j.Key("producer_name").String(m.producer_name).Key("producer_version").String(m.producer_version);
  j.Key("opsets").BeginObject();
  for (const auto& [d, v] : m.opsets) j.Key(d.empty() ? "ai.onnx" : d).Int(v);
  j.EndObject();
  j.Key("inputs");
  WriteValues(j, m.graph->inputs());
  j.Key("outputs");
  WriteValues(j, m.graph->outputs());
  j.Key("node_count").Int(s.nodes);
  j.Key("operators").BeginObject();
  for (const auto& [op, n] : s.ops) j.Key(op).Int(n);
  j.EndObject();
  int64_t total_count = 0, total_bytes = 0;
  j.Key("parameters").BeginObject();
  for (const auto& [dtype, p] : s.params) {
    j.Key(dtype).BeginObject().Key("elements").Int(p.count).Key("bytes").Int(p.bytes).Key("tensors").Int(p.tensors).EndObject();
    total_count += p.count;
    total_bytes += p.bytes;
  }
  j.EndObject();
  j.Key("parameter_count").Int(total_count).Key("parameter_bytes").Int(total_bytes);
  j.Key("subgraphs").BeginArray();
  for (const auto& sg : s.subgraphs)
    j.BeginObject().Key("node").String(sg.node).Key("attribute").String(sg.attribute).Key("graph").String(sg.graph)
        .Key("nodes").Int(int64_t(sg.nodes)).Key("depth").Int(sg.depth).EndObject();
  j.EndArray();
  j.EndObject();
  std::fputs(j.str().c_str(), stdout);
}

}  // namespace

int InspectCommand(const std::vector<std::string>& args) {
  std::string path;
  bool ir = false, json = false, full = false;
  onnx::ImportOptions options;
  for (const auto& a : args) {
    if (a == "--ir") ir = true;
    else if (a == "--json") json = true;
    else if (a == "--full") full = true;
    else if (a == "--keep-initializer-inputs") options.keep_initializer_inputs = true;
    else if (a == "--help" || a == "-h") {
      std::fputs(kInspectUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "precis inspect: unknown option '%s'\n%s", a.c_str(), kInspectUsage);
      return 2;
    } else if (path.empty()) path = a;
    else {
      std::fprintf(stderr, "precis inspect: more than one model given\n%s", kInspectUsage);
      return 2;
    }
  }
  if (path.empty()) {
    std::fputs(kInspectUsage, stderr);
    return 2;
  }
  if (ir && json) {
    std::fputs("precis inspect: --ir and --json are exclusive\n", stderr);
    return 2;
  }
  auto model = onnx::ImportModelFile(path, options);
  if (!model.ok()) {
    std::fprintf(stderr, "precis inspect: %s\n", model.status().ToString().c_str());
    return 1;
  }
  if (ir) {
    ir::PrintOptions po;
    if (full) po.inline_limit = -1;
    std::fputs(ir::PrintModel(**model, po).c_str(), stdout);
    return 0;
  }
  Summary s;
  Collect(*(*model)->graph, 0, s);
  if (json) PrintJson(**model, s);
  else PrintText(**model, s);
  return 0;
}

}  // namespace precis::tools
