// EmitPlan: tensors and steps from the IR, arena offsets from the memory planner, constants
// 64-byte aligned in one blob, all wrapped in the checksummed plan container.
#include "compiler/emit/plan_emitter.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "compiler/emit/memory_planner.h"
#include "compiler/emit/step_attrs.h"
#include "compiler/ir/text.h"
#include "compiler/ops/op_registry.h"
#include "runtime/base/hash.h"
#include "runtime/cuda/kernel_list.h"
#include "runtime/plan/plan_format.h"

namespace precis::emit {
namespace {

struct TensorEntry {
  const ir::Value* value;
  std::vector<int64_t> dims;
  size_t bytes;
  bool constant;
  size_t offset = 0;
  bool synthetic = false;  // a stripped weight (EmitOptions::strip_weights)
};

StatusOr<std::vector<int64_t>> StaticShapeOf(const ir::Value& v) {
  const ir::Type& t = v.type();
  if (!t.is_tensor() || t.dtype() == ir::DType::kUndefined)
    return Unimplemented("value '" + v.name() + "' has no known tensor type (" + ir::PrintType(t) + ")");
  if (t.dtype() == ir::DType::kString) return Unimplemented("value '" + v.name() + "' is a string tensor; plans hold numbers only");
  if (!t.shape().has_rank()) return Unimplemented("value '" + v.name() + "' has unknown rank");
  std::vector<int64_t> dims;
  for (const ir::Dim& d : t.shape().dims()) {
    if (d.is_symbolic())
      return Unimplemented("value '" + v.name() + "' has symbolic dim '" + d.symbol() + "': give the inputs concrete shapes (--shape NAME=1x3x224x224)");
    if (!d.is_static()) return Unimplemented("value '" + v.name() + "' has a dimension unknown at compile time (" + ir::PrintType(t) + ")");
    dims.push_back(d.value());
  }
  return dims;
}

class Emitter {
 public:
  Emitter(const ir::Model& model, const EmitOptions& options) : model_(model), options_(options) {}

  StatusOr<EmittedPlan> Run() {
    const ir::Graph& g = *model_.graph;
    for (const ir::Value* v : g.inputs()) PRECIS_RETURN_IF_ERROR(AddTensor(*v).status());
    for (const auto& n : g.nodes()) PRECIS_RETURN_IF_ERROR(CollectStep(*n));
    for (const ir::Value* v : g.outputs()) PRECIS_RETURN_IF_ERROR(AddTensor(*v).status());
    PlanArena();
    PlaceConstants();
    if (options_.measure_only) {
      result_.steps = steps_.size();
      return std::move(result_);
    }
    return Write();
  }

 private:
  StatusOr<int> AddTensor(const ir::Value& v) {
    if (auto it = ids_.find(&v); it != ids_.end()) return it->second;
    PRECIS_ASSIGN_OR_RETURN(auto dims, StaticShapeOf(v));
    TensorEntry e{&v, dims, 0, v.is_constant()};
    e.bytes = size_t(*ir::CheckedElements(dims)) * size_t(ir::DTypeSize(v.type().dtype()));
    int id = int(tensors_.size());
    tensors_.push_back(std::move(e));
    ids_[&v] = id;
    first_.push_back(v.kind() == ir::Value::Kind::kInput ? -1 : int(steps_.size()));
    last_.push_back(first_.back());
    inplace_of_.push_back(-1);
    return id;
  }

  Status CollectStep(const ir::Node& n) {
    const ops::OpDef* def = ops::OpRegistry::Get().Find(n.domain(), n.op_type());
    if (!def) return Unimplemented(n.Describe() + ": no operator definition");
    for (const auto& a : n.attributes())
      if (!a.graphs.empty()) return Unimplemented(n.Describe() + ": operators with subgraphs cannot be emitted yet");
    Step s{&n, def, {}, {}};
    for (const ir::Value* v : n.inputs()) {
      if (!v) {
        s.inputs.push_back(-1);
        continue;
      }
      PRECIS_ASSIGN_OR_RETURN(int id, AddTensor(*v));
      last_[size_t(id)] = int(steps_.size());
      s.inputs.push_back(id);
    }
    for (const ir::Value* v : n.outputs()) {
      if (!v) {
        s.outputs.push_back(-1);
        continue;
      }
      PRECIS_ASSIGN_OR_RETURN(int id, AddTensor(*v));
      s.outputs.push_back(id);
    }
    if (def->inplace_input >= 0 && size_t(def->inplace_input) < s.inputs.size() && !s.outputs.empty() && s.outputs[0] >= 0) {
      int src = s.inputs[size_t(def->inplace_input)];
      if (src >= 0 && !tensors_[size_t(src)].constant && tensors_[size_t(src)].value->kind() != ir::Value::Kind::kInput)
        inplace_of_[size_t(s.outputs[0])] = src;
    }
    steps_.push_back(std::move(s));
    return Status::Ok();
  }

  void PlanArena() {
    const ir::Graph& g = *model_.graph;
    std::vector<PlannedTensor> planned;
    std::vector<size_t> arena_ids;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      if (tensors_[i].constant) continue;
      PlannedTensor p{tensors_[i].bytes, first_[i], last_[i], -1};
      if (std::find(g.outputs().begin(), g.outputs().end(), tensors_[i].value) != g.outputs().end())
        p.last = int(steps_.size());
      if (tensors_[i].value->kind() == ir::Value::Kind::kInput) p.first = -1;
      arena_ids.push_back(i);
      planned.push_back(p);
    }
    std::unordered_map<size_t, int> index;
    for (size_t k = 0; k < arena_ids.size(); ++k) index[arena_ids[k]] = int(k);
    for (size_t k = 0; k < arena_ids.size(); ++k) {
      int src = inplace_of_[arena_ids[k]];
      // A graph output must keep its bytes to the end, so it never gives them away in place.
      if (src >= 0 && index.count(size_t(src)) && planned[size_t(index[size_t(src)])].last != int(steps_.size()))
        planned[k].inplace_of = index[size_t(src)];
    }
    MemoryPlan mp = PlanMemory(planned);
    for (size_t k = 0; k < arena_ids.size(); ++k) tensors_[arena_ids[k]].offset = mp.offsets[k];
    result_.arena_bytes = mp.arena_bytes;
    result_.arena_lower_bound = mp.lower_bound;
    result_.inplace_count = mp.inplace_count;
  }

  void PlaceConstants() {
    size_t offset = 0;
    for (auto& t : tensors_) {
      if (!t.constant) continue;
      // Stripped weights: float constants of 1 KiB and more (shape and index constants stay).
      ir::DType d = t.value->type().dtype();
      t.synthetic = options_.strip_weights && t.bytes >= 1024 &&
                    (d == ir::DType::kF32 || d == ir::DType::kF16 || d == ir::DType::kBF16 || d == ir::DType::kF64);
      if (t.synthetic) {
        t.offset = 0;
        continue;
      }
      t.offset = offset;
      offset = (offset + t.bytes + plan::kConstantAlignment - 1) / plan::kConstantAlignment * plan::kConstantAlignment;
    }
    constants_size_ = offset;
    result_.constant_bytes = offset;
  }

  StatusOr<EmittedPlan> Write();

  struct Step {
    const ir::Node* node;
    const ops::OpDef* def;
    std::vector<int> inputs, outputs;
  };

  const ir::Model& model_;
  const EmitOptions& options_;
  std::vector<TensorEntry> tensors_;
  std::unordered_map<const ir::Value*, int> ids_;
  std::vector<int> first_, last_, inplace_of_;
  std::vector<Step> steps_;
  size_t constants_size_ = 0;
  EmittedPlan result_;
};

StatusOr<EmittedPlan> Emitter::Write() {
  const ir::Graph& g = *model_.graph;
  flatbuffers::FlatBufferBuilder b(1 << 16);
  b.ForceDefaults(false);
  std::vector<flatbuffers::Offset<plan::TensorDesc>> tensors;
  for (const auto& t : tensors_) {
    auto name = b.CreateString(t.value->name());
    auto dims = b.CreateVector(t.dims);
    tensors.push_back(plan::CreateTensorDesc(b, name, uint8_t(ir::DTypeToOnnx(t.value->type().dtype())), dims,
                                             t.constant ? plan::Placement_Constant : plan::Placement_Arena, t.offset, t.bytes,
                                             t.synthetic));
  }
  // A plan for the GPU holds only steps with CUDA kernels: list every one without, at once.
  if (options_.target == "cuda") {
    std::string missing;
    for (const Step& s : steps_) {
      const ir::Node& n = *s.node;
      std::string kernel = s.def->kernel.empty() ? (n.domain().empty() ? n.op_type() : n.domain() + "::" + n.op_type()) : s.def->kernel;
      if (!rt::HasCudaKernel(kernel)) missing += (missing.empty() ? "" : ", ") + kernel + " '" + n.name() + "'";
    }
    if (!missing.empty()) return Unimplemented("the CUDA backend has no kernel for: " + missing);
  } else if (options_.target != "cpu") {
    return InvalidArgument("unknown target '" + options_.target + "' (cpu or cuda)");
  }
  std::vector<flatbuffers::Offset<plan::Step>> steps;
  for (const Step& s : steps_) {
    const ir::Node& n = *s.node;
    auto opset_it = model_.opsets.find(n.domain());
    int64_t opset = opset_it == model_.opsets.end() ? 0 : opset_it->second;
    std::string kernel = s.def->kernel.empty() ? (n.domain().empty() ? n.op_type() : n.domain() + "::" + n.op_type()) : s.def->kernel;
    auto kname = b.CreateString(kernel);
    auto node_name = b.CreateString(n.name().empty() ? n.op_type() + "#" + std::to_string(n.index()) : n.name());
    auto ins = b.CreateVector(s.inputs);
    auto outs = b.CreateVector(s.outputs);
    auto attrs = BuildStepAttrs(b, n, opset);
    steps.push_back(plan::CreateStep(b, kname, node_name, ins, outs, attrs));
  }
  std::vector<int32_t> inputs, outputs;
  for (const ir::Value* v : g.inputs()) inputs.push_back(ids_.at(v));
  for (const ir::Value* v : g.outputs()) outputs.push_back(ids_.at(v));
  flatbuffers::Offset<flatbuffers::String> report_json, report_text;
  if (!options_.report_json.empty()) report_json = b.CreateString(options_.report_json);
  if (!options_.report_text.empty()) report_text = b.CreateString(options_.report_text);
  auto root = plan::CreatePlan(b, b.CreateString(options_.target), b.CreateString(options_.precision), options_.source_hash,
                               b.CreateString("precis 0.1"), b.CreateVector(tensors), b.CreateVector(inputs),
                               b.CreateVector(outputs), b.CreateVector(steps), result_.arena_bytes, result_.arena_lower_bound,
                               report_json, report_text);
  plan::FinishPlanBuffer(b, root);

  plan::FileHeader h{};
  std::memcpy(h.magic, plan::kMagic, sizeof h.magic);
  h.version = plan::kFormatVersion;
  h.header_bytes = sizeof h;
  h.meta_offset = sizeof h;
  h.meta_size = b.GetSize();
  h.const_offset = (h.meta_offset + h.meta_size + plan::kConstantAlignment - 1) / plan::kConstantAlignment * plan::kConstantAlignment;
  h.const_size = constants_size_;
  h.file_size = h.const_offset + h.const_size;
  std::vector<uint8_t>& out = result_.bytes;
  out.assign(size_t(h.file_size), 0);
  std::memcpy(out.data() + h.meta_offset, b.GetBufferPointer(), b.GetSize());
  for (const auto& t : tensors_)
    if (t.constant && !t.synthetic && t.bytes) std::memcpy(out.data() + h.const_offset + t.offset, t.value->data()->buffer().data(), t.bytes);
  h.checksum = HashBytes(out.data() + sizeof h, out.size() - sizeof h);
  std::memcpy(out.data(), &h, sizeof h);
  result_.steps = steps_.size();
  return std::move(result_);
}

}  // namespace

StatusOr<EmittedPlan> EmitPlan(const ir::Model& model, const EmitOptions& options) { return Emitter(model, options).Run(); }

}  // namespace precis::emit
