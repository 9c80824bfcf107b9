// `precis export TRAIN.plan [--checkpoint DIR] -o TRAINED.onnx`: the forward ONNX model a
// training plan was compiled from (kept in the plan, plan.fbs source_model) with every
// initializer that the plan trains or updates (weights, BatchNormalization statistics: state
// tensors named as their initializers) replaced by its value in the plan's initial state or in a
// checkpoint. Inputs, outputs, opset and symbolic dims stay the model's own; a model exported in
// training mode is written in inference form (BatchNormalization on its running statistics,
// Dropout the identity).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include <onnx/onnx_pb.h>

#include "precis/session.h"
#include "tools/precis/checkpoint.h"
#include "tools/precis/commands.h"
#include "tools/precis/options.h"

namespace precis::tools {
namespace {

constexpr const char* kExportUsage =
    "usage: precis export TRAIN.plan [--checkpoint DIR] -o TRAINED.onnx\n"
    "  writes the ONNX model the training plan was compiled from, with the trained weights and\n"
    "  BatchNormalization statistics of the checkpoint (or of the plan's initial state)\n";

// Overwrites `init` with a state tensor of the same dtype and dims (as raw little-endian data).
Status ReplaceInitializer(::onnx::TensorProto& init, const Session& s, const TensorInfo& t) {
  std::vector<int64_t> dims(init.dims().begin(), init.dims().end());
  if (init.data_type() != int(t.dtype) || dims != t.dims)
    return InvalidArgument("state tensor '" + t.name + "' (" + DataTypeName(t.dtype) + " " + DimsToString(t.dims) + ") does not match the model's initializer (" +
                           DataTypeName(DataType(init.data_type())) + " " + DimsToString(dims) + ")");
  std::string bytes(t.ByteSize(), '\0');
  PRECIS_RETURN_IF_ERROR(s.ReadState(t.name, bytes.data(), bytes.size()));
  init.clear_float_data();
  init.clear_double_data();
  init.clear_int32_data();
  init.clear_int64_data();
  init.clear_external_data();
  init.clear_data_location();
  init.set_raw_data(std::move(bytes));
  return Status::Ok();
}

// A model exported in training mode, turned into its inference form: BatchNormalization with
// training_mode=1 reads its running statistics (training_mode 0, only output Y), and Dropout's
// training_mode input is dropped (inference: the identity). Returns how many nodes changed; a
// node whose training-only outputs are read (batch statistics) is an error.
StatusOr<int> ToInferenceForm(::onnx::GraphProto& g) {
  std::map<std::string, int> uses;
  for (const auto& n : g.node())
    for (const auto& in : n.input()) ++uses[in];
  for (const auto& o : g.output()) ++uses[o.name()];
  int changed = 0;
  for (::onnx::NodeProto& n : *g.mutable_node()) {
    if (n.op_type() == "BatchNormalization" && (n.domain().empty() || n.domain() == "ai.onnx")) {
      for (::onnx::AttributeProto& a : *n.mutable_attribute()) {
        if (a.name() != "training_mode" || a.i() == 0) continue;
        for (int k = 1; k < n.output_size(); ++k)
          if (!n.output(k).empty() && uses[n.output(k)])
            return InvalidArgument("BatchNormalization '" + n.name() + "': its running-statistics output '" + n.output(k) +
                                   "' is read, so the model has no inference form");
        a.set_i(0);
        while (n.output_size() > 1) n.mutable_output()->RemoveLast();
        ++changed;
      }
    } else if (n.op_type() == "Dropout" && (n.domain().empty() || n.domain() == "ai.onnx") && n.input_size() >= 3) {
      while (n.input_size() > 2) n.mutable_input()->RemoveLast();
      ++changed;
    }
  }
  return changed;
}

Status Export(const std::string& plan, const std::string& checkpoint, const std::string& out) {
  PRECIS_ASSIGN_OR_RETURN(PlanFileInfo info, ReadPlanFileInfo(plan));
  if (info.source_model.empty())
    return InvalidArgument("'" + plan + "' holds no source model: precis export reads training plans (precis compile --train), not inference plans");
  PRECIS_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::Open(plan));
  if (!checkpoint.empty()) PRECIS_RETURN_IF_ERROR(LoadCheckpoint(*session, checkpoint, info.hash).status());
  ::onnx::ModelProto model;
  if (!model.ParseFromArray(info.source_model.data(), int(info.source_model.size())))
    return InvalidArgument("'" + plan + "': its source model does not parse as ONNX");
  std::map<std::string, ::onnx::TensorProto*> inits;
  for (::onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) inits[t.name()] = &t;
  int replaced = 0;
  for (const TensorInfo& t : session->state()) {
    auto it = inits.find(t.name);
    if (it == inits.end()) continue;  // optimizer moments and counters
    PRECIS_RETURN_IF_ERROR(ReplaceInitializer(*it->second, *session, t));
    inits.erase(it);
    ++replaced;
  }
  // The plan keeps initializers that became state without their data: each must have come back.
  for (const auto& [name, t] : inits) {
    bool has_data = t->has_raw_data() || t->float_data_size() || t->double_data_size() || t->int32_data_size() || t->int64_data_size() ||
                    t->external_data_size() || t->string_data_size() || t->uint64_data_size();
    int64_t elements = 1;
    for (int64_t d : t->dims()) elements *= d;
    if (!has_data && elements > 0)
      return InvalidArgument("'" + plan + "': initializer '" + name + "' of the source model has no data and no state tensor of its name");
  }
  PRECIS_ASSIGN_OR_RETURN(int inference_form, ToInferenceForm(*model.mutable_graph()));
  std::string bytes;
  if (!model.SerializeToString(&bytes)) return Internal("cannot serialize the exported model");
  std::string tmp = out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(bytes.data(), std::streamsize(bytes.size()));
    if (!f) return NotFound("cannot write '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) return Internal("cannot rename '" + tmp + "' to '" + out + "'");
  std::printf("%s: %d trained initializers from %s\n", out.c_str(), replaced, checkpoint.empty() ? "the plan's initial state" : checkpoint.c_str());
  if (inference_form) std::printf("  %d training-mode node(s) (BatchNormalization, Dropout) written in inference form\n", inference_form);
  return Status::Ok();
}

}  // namespace

int ExportCommand(const std::vector<std::string>& args) {
  std::string plan, checkpoint, out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    const std::string* v = nullptr;
    if ((a == "-o" || a == "--output") && (v = value())) out = *v;
    else if (a == "--checkpoint" && (v = value())) checkpoint = *v;
    else if (a == "--help" || a == "-h") {
      std::fputs(kExportUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') return UsageError("export", "unknown option or missing value '" + a + "'", kExportUsage);
    else if (plan.empty()) plan = a;
    else return UsageError("export", "more than one plan given", kExportUsage);
  }
  if (plan.empty() || out.empty()) return UsageError("export", "a plan and -o TRAINED.onnx are required", kExportUsage);
  Status s = Export(plan, checkpoint, out);
  return s.ok() ? 0 : ReportError("export", s);
}

}  // namespace precis::tools
