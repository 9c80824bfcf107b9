// ONNX backend conformance runner: compiles each node-test model with its test inputs' shapes,
// runs the plan on the CPU and compares every output with the stored expected output.
// Each case is pass, mismatch, unsupported (refused at compile time, with the reason), error
// (anything else) or bad-case (the test data contradicts its own model), and a summary table is
// printed. Tolerance: |got - want| <= atol + rtol*|want|
// with rtol 1e-3, atol 1e-7 as the ONNX backend tests use (NaN matches NaN); integers and bools
// exactly. DFT and STFT cases, whose references are FP32 FFTs with rounding noise near zero, get
// atol 1e-6 times the output's largest magnitude. A case whose output shape depends on the value of an integer input (Reshape's shape
// given as a graph input, say) compiles to a dynamic plan that binds those values at run time;
// only CUDA bundles (--export) compile such inputs in as constants ("(specialized)" within pass).
// Sequence and optional test values (SequenceProto, OptionalProto) are read as the model declares
// them; a sequence input is compiled with its test elements' shapes, as tensor inputs are with
// theirs, and fed as NAME[0], NAME[1]... (docs/sequences.md); the plan's outputs must be exactly
// the expected ones (a sequence's elements, nothing for an absent optional).
//
// Mixed-precision mode (--precision fp16|bf16) compiles every case with that policy (model inputs
// and outputs keep their dtypes) and compares with looser, scaled tolerances: |got - want| <=
// tol * (max(1, max|want|) + |want|) with tol 1e-2 for fp16 (11-bit significand: each stored
// value carries up to 2^-11 = 4.9e-4 relative rounding, a few roundings per case and sums of
// tens of terms) and 6e-2 for bf16 (8 bits: 3.9e-3 per value). Inputs and outputs are lowered
// too (no --keep-io-types: FP32 test inputs are rounded to 16 bits), so that every operator of
// a one-node model runs in 16 bits where the policy allows it. There a mismatch of a case on the
// --expect list fails the run; other mismatches are counted and listed (16-bit rounding of
// inputs legitimately breaks some cases, e.g. integer-valued outputs near rounding boundaries),
// and errors (a plan that fails to compile or run) always fail.
//
// usage: conformance_runner [--filter TEXT] [--verbose] [--expect FILE] [--min-pass N]
//                           [--precision fp32|fp16|bf16] [--report FILE] [--export DIR] LABEL=DIR ...
// --export DIR compiles every case for CUDA (every operator must have a CUDA kernel) and writes
// each passing one there, with its inputs and the CPU backend's outputs: a GPU test bundle.
// --expect FILE lists cases that must pass (one per line); any that does not, or that is missing
// from its corpus, fails the run, as does any FP32 mismatch or error, fewer than --min-pass
// passing cases, and a corpus folder that is missing or (without --filter) holds no case.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <cctype>
#include <fstream>
#include <map>
#include <set>

#include "compiler/ir/text.h"
#include "compiler/onnx/importer.h"
#include "compiler/driver/compile.h"
#include "passes/specialize_inputs.h"
#include "precis/session.h"
#include "runtime/base/half.h"
#include "tools/precis/tensor_io.h"
#include "runtime/base/small_types.h"

namespace fs = std::filesystem;
using namespace precis;

namespace {

enum class Outcome { kPass, kMismatch, kUnsupported, kError, kBadCase };
const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kMismatch: return "mismatch";
    case Outcome::kUnsupported: return "unsupported";
    case Outcome::kError: return "error";
    case Outcome::kBadCase: return "bad-case";
  }
  return "?";
}

struct Result {
  Outcome outcome;
  std::string detail;
};

double AsDouble(DataType t, const uint8_t* p) {
  switch (t) {
    case DataType::kF32: { float v; std::memcpy(&v, p, 4); return v; }
    case DataType::kF64: { double v; std::memcpy(&v, p, 8); return v; }
    case DataType::kF16: { uint16_t v; std::memcpy(&v, p, 2); return HalfToFloat(v); }
    case DataType::kBF16: { uint16_t v; std::memcpy(&v, p, 2); return Bf16ToFloat(v); }
    default: return 0;
  }
}

bool IsFloatType(DataType t) {
  return t == DataType::kF32 || t == DataType::kF64 || t == DataType::kF16 || t == DataType::kBF16;
}

std::string Compare(const tools::HostTensor& want, const TensorData& got, double rtol, double atol) {
  // Mixed precision without --keep-io-types: an FP32 output may come back in 16 bits.
  bool lowered = want.dtype == DataType::kF32 && (got.info.dtype == DataType::kF16 || got.info.dtype == DataType::kBF16);
  if (want.dtype != got.info.dtype && !lowered)
    return std::string("dtype ") + DataTypeName(got.info.dtype) + ", expected " + DataTypeName(want.dtype);
  if (want.dims != got.info.dims) return "shape " + DimsToString(got.info.dims) + ", expected " + DimsToString(want.dims);
  size_t esize = DataTypeSize(want.dtype), gsize = DataTypeSize(got.info.dtype);
  const auto* g = static_cast<const uint8_t*>(got.data);
  if (IsSmallType(want.dtype)) {  // float8/float4/int4/int2: values equal (any NaN encoding)
    for (size_t i = 0; i < want.data.size(); ++i) {
      double w = SmallToDouble(want.dtype, want.data[i]), v = SmallToDouble(want.dtype, g[i]);
      if (!(w == v || (std::isnan(w) && std::isnan(v))))
        return "element " + std::to_string(i) + " is " + std::to_string(v) + ", expected " + std::to_string(w);
    }
    return "";
  }
  if (!IsFloatType(want.dtype)) {
    for (size_t i = 0; i * esize < want.data.size(); ++i)
      if (std::memcmp(want.data.data() + i * esize, g + i * esize, esize) != 0) return "element " + std::to_string(i) + " differs";
    return "";
  }
  double worst = 0;
  size_t worst_i = 0, bad = 0;
  for (size_t i = 0; i * esize < want.data.size(); ++i) {
    double w = AsDouble(want.dtype, want.data.data() + i * esize), v = AsDouble(got.info.dtype, g + i * gsize);
    if (std::isnan(w) && std::isnan(v)) continue;
    if (std::isinf(w) && v == w) continue;
    double err = std::fabs(v - w), allowed = atol + rtol * std::fabs(w);
    if (!(err <= allowed)) {
      ++bad;
      if (!(err <= worst)) {
        worst = std::isnan(err) ? INFINITY : err;
        worst_i = i;
      }
    }
  }
  if (!bad) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf, "%zu elements out of tolerance, worst at %zu: got %.9g, want %.9g", bad, worst_i,
                AsDouble(got.info.dtype, g + worst_i * gsize), AsDouble(want.dtype, want.data.data() + worst_i * esize));
  return buf;
}

// The largest finite |value| of a float tensor (1 for others and for all-small tensors).
double MaxAbs(const tools::HostTensor& t) {
  double m = 1;
  if (t.dtype == DataType::kF32 || t.dtype == DataType::kF64 || t.dtype == DataType::kF16)
    for (size_t k = 0, n = t.data.size() / DataTypeSize(t.dtype); k < n; ++k) {
      double w = std::fabs(AsDouble(t.dtype, t.data.data() + k * DataTypeSize(t.dtype)));
      if (std::isfinite(w)) m = std::max(m, w);
    }
  return m;
}

// Compiles and runs one case. Integer inputs that decide shapes (Reshape's shape, Slice's starts,
// TopK's k, ...) stay inputs: the plan binds their values at run time. With `specialize` (CUDA
// bundles only, whose plans need static shapes) they are compiled in as constants.
std::string g_precision = "fp32";
// --export DIR: every passing case is compiled for CUDA and written there with its inputs and the
// CPU backend's outputs, as a cuda_plan_check bundle (tests/cuda/plan_check.cc).
std::string g_export;
std::ofstream g_cases;
std::string g_case_id;

bool WriteBytes(const fs::path& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), std::streamsize(size));
  return bool(f);
}

std::string FileSafe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return s;
}

// A test value flattened to what the plan takes or gives: a tensor by its own name, a sequence's
// elements as NAME[0], NAME[1]... (passes/sequences.h); an absent optional as nothing.
void Flatten(const std::string& name, const tools::HostValue& v, std::vector<std::pair<std::string, tools::HostTensor>>& out) {
  if (!v.present) return;
  if (!v.sequence) {
    out.push_back({name, v.tensors.at(0)});
    return;
  }
  for (size_t k = 0; k < v.tensors.size(); ++k) out.push_back({passes::ElementName(name, k), v.tensors[k]});
}

Result Attempt(const fs::path& dir, const std::vector<tools::HostValue>& input_values,
               const std::vector<tools::HostValue>& output_values, bool specialize) {
  auto model = onnx::ImportModelFile((dir / "model.onnx").string());
  if (!model.ok())
    return {model.status().code() == StatusCode::kUnimplemented ? Outcome::kUnsupported : Outcome::kError, model.status().ToString()};
  std::vector<std::string> model_inputs;
  for (const auto* v : (*model)->graph->inputs()) model_inputs.push_back(v->name());
  const auto& graph_inputs = (*model)->graph->inputs();
  if (graph_inputs.size() != input_values.size())
    return {Outcome::kError, "test has " + std::to_string(input_values.size()) + " inputs, model " + std::to_string(graph_inputs.size())};
  driver::CompileOptions options;
  options.precision = g_precision;
  if (!g_export.empty()) options.target = "cuda";
  std::set<std::string> op_types;
  for (const auto& n : (*model)->graph->nodes()) op_types.insert(n->op_type());
  // Single-operator models: with the interface kept FP32 most operators would stay FP32 (their
  // only consumer is the FP32 model output), so mixed mode lowers the interface too.
  options.precision_options.keep_io_types = false;
  // Sequence inputs: the plan fixes their lengths and element shapes, as it fixes the test's
  // tensor shapes; absent optionals are compiled as absent.
  std::vector<std::string> input_names;
  std::vector<tools::HostTensor> inputs;
  for (size_t i = 0; i < graph_inputs.size(); ++i) {
    const tools::HostValue& v = input_values[i];
    if (!v.present) options.containers.absent.insert(model_inputs[i]);
    else if (v.sequence) {
      auto& shapes = options.containers.sequences[model_inputs[i]];
      for (const auto& t : v.tensors) shapes.push_back(t.dims);
    }
    std::vector<std::pair<std::string, tools::HostTensor>> flat;
    Flatten(model_inputs[i], v, flat);
    for (auto& [name, t] : flat) input_names.push_back(name), inputs.push_back(std::move(t));
  }
  std::vector<bool> frozen(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value* declared_value = (*model)->graph->FindLocal(input_names[i]);
    bool element = !declared_value || !declared_value->type().is_tensor();
    if (element) continue;  // a sequence's element or an optional's value: shapes set above
    // A few ONNX 1.12 cases store inputs whose rank contradicts the model's own declaration.
    const ir::Type& declared = declared_value->type();
    if (declared.is_tensor() && declared.shape().has_rank() && declared.shape().rank() != int64_t(inputs[i].dims.size()))
      return {Outcome::kBadCase, "test input '" + input_names[i] + "' has rank " + std::to_string(inputs[i].dims.size()) +
                                     " but the model declares " + ir::PrintType(declared)};
    options.shapes[input_names[i]] = inputs[i].dims;
    bool integer = inputs[i].dtype == DataType::kI64 || inputs[i].dtype == DataType::kI32 || inputs[i].dtype == DataType::kBool;
    if (specialize && integer) {
      frozen[i] = true;
      ir::DType d = inputs[i].dtype == DataType::kI64 ? ir::DType::kI64 : inputs[i].dtype == DataType::kI32 ? ir::DType::kI32 : ir::DType::kBool;
      options.input_values[input_names[i]] = ir::Tensor(d, inputs[i].dims, ir::Buffer::Own(std::vector<uint8_t>(inputs[i].data)));
    }
  }
  for (size_t i = 0; i < graph_inputs.size(); ++i)  // a present optional tensor: its test shape
    if (graph_inputs[i]->type().kind() == ir::Type::Kind::kOptional && input_values[i].present && !input_values[i].sequence)
      options.shapes[model_inputs[i]] = input_values[i].tensors.at(0).dims;
  std::vector<std::string> graph_output_names;
  for (const auto* v : (*model)->graph->outputs()) graph_output_names.push_back(v->name());
  if (graph_output_names.size() != output_values.size()) return {Outcome::kError, "output count differs from the test data"};
  auto compiled = driver::Compile(**model, options);
  if (!compiled.ok())
    return {compiled.status().code() == StatusCode::kUnimplemented ? Outcome::kUnsupported : Outcome::kError, compiled.status().ToString()};
  auto session = Session::FromBuffer(compiled->plan.bytes.data(), compiled->plan.bytes.size());
  if (!session.ok())
    return {session.status().code() == StatusCode::kUnimplemented ? Outcome::kUnsupported : Outcome::kError, session.status().ToString()};
  // Outputs the plan gives as containers (sequences and optionals decided when it runs) are
  // compared as wholes after the run; the others element by element.
  std::vector<std::pair<std::string, const tools::HostValue*>> containers;
  std::set<std::string> container_parts;
  for (const ContainerInfo& c : (*session)->containers()) {
    auto at = std::find(graph_output_names.begin(), graph_output_names.end(), c.name);
    if (at == graph_output_names.end()) return {Outcome::kError, "the plan's container output '" + c.name + "' is not a model output"};
    containers.push_back({c.name, &output_values[size_t(at - graph_output_names.begin())]});
    container_parts.insert(c.parts.begin(), c.parts.end());
  }
  std::vector<std::string> output_names;
  std::vector<tools::HostTensor> outputs;
  for (size_t i = 0; i < graph_output_names.size(); ++i) {
    if (std::any_of(containers.begin(), containers.end(), [&](const auto& c) { return c.first == graph_output_names[i]; })) continue;
    std::vector<std::pair<std::string, tools::HostTensor>> flat;
    Flatten(graph_output_names[i], output_values[i], flat);
    for (auto& [name, t] : flat) output_names.push_back(name), outputs.push_back(std::move(t));
  }
  {
    // The plan gives exactly the expected values: every element of a sequence, nothing for an
    // absent optional.
    std::set<std::string> want(output_names.begin(), output_names.end()), got;
    for (const auto& info : (*session)->outputs())
      if (!container_parts.count(info.name)) got.insert(info.name);
    if (want != got) {
      std::string w, g;
      for (const auto& n : want) w += (w.empty() ? "" : ", ") + n;
      for (const auto& n : got) g += (g.empty() ? "" : ", ") + n;
      return {Outcome::kMismatch, "the plan's outputs are {" + g + "}, the test's {" + w + "}"};
    }
  }
  std::vector<std::pair<std::string, std::vector<uint8_t>>> set_inputs;  // for --export
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (frozen[i]) continue;
    if (inputs[i].dtype == DataType::kU16 && (*session)->inputs().size() > 0) {
      for (const auto& info : (*session)->inputs())
        if (info.name == input_names[i] && info.dtype == DataType::kBF16)
          return {Outcome::kBadCase, "test data stores bfloat16 input '" + input_names[i] + "' as uint16 (ONNX 1.12 test data)"};
    }
    DataType plan_dtype = inputs[i].dtype;
    for (const auto& info : (*session)->inputs())
      if (info.name == input_names[i]) plan_dtype = info.dtype;
    if (inputs[i].dtype == DataType::kF32 && (plan_dtype == DataType::kF16 || plan_dtype == DataType::kBF16)) {
      // Mixed precision without --keep-io-types: the plan takes this input in 16 bits.
      size_t n = inputs[i].data.size() / 4;
      std::vector<uint16_t> low(n);
      for (size_t k = 0; k < n; ++k) {
        float f;
        std::memcpy(&f, inputs[i].data.data() + 4 * k, 4);
        low[k] = plan_dtype == DataType::kF16 ? FloatToHalf(f) : FloatToBf16(f);
      }
      Status s = (*session)->SetInput(input_names[i], plan_dtype, inputs[i].dims, low.data(), n * 2);
      if (!s.ok()) return {Outcome::kError, s.ToString()};
      if (!g_export.empty())
        set_inputs.push_back({input_names[i], std::vector<uint8_t>(reinterpret_cast<uint8_t*>(low.data()), reinterpret_cast<uint8_t*>(low.data()) + n * 2)});
      continue;
    }
    Status s = (*session)->SetInput(input_names[i], inputs[i].dtype, inputs[i].dims, inputs[i].data.data(), inputs[i].data.size());
    if (!s.ok()) return {Outcome::kError, s.ToString()};
    if (!g_export.empty()) set_inputs.push_back({input_names[i], inputs[i].data});
  }
  Status s = (*session)->Run();
  // Unimplemented from a run: the inputs ask for what the plan does not do (Dropout in training
  // mode with a ratio above 0: random masks).
  if (!s.ok()) return {s.code() == StatusCode::kUnimplemented ? Outcome::kUnsupported : Outcome::kError, "run: " + s.ToString()};
  // One expected tensor against what the plan gave.
  auto check = [&](const std::string& name, const tools::HostTensor& want, const TensorData& got) -> Result {
    if (want.dtype == DataType::kU16 && got.info.dtype == DataType::kBF16)
      return {Outcome::kBadCase, "test data stores bfloat16 output '" + name + "' as uint16, rounded by truncation (ONNX 1.12 test data)"};
    std::string diff;
    if (g_precision == "fp32") {
      double atol = 1e-7;
      // DFT/STFT references are FP32 FFTs: near-zero outputs carry their rounding noise (about
      // 1e-7 of the output's scale per term), which a double-precision transform does not have.
      if (op_types.count("DFT") || op_types.count("STFT")) atol = 1e-6 * MaxAbs(want);
      diff = Compare(want, got, 1e-3, std::max(atol, 1e-7));
    } else {
      double tol = g_precision == "fp16" ? 1e-2 : 6e-2, scale = 1;
      if (want.dtype == DataType::kF32 || want.dtype == DataType::kF64 || want.dtype == DataType::kF16)
        for (size_t k = 0, n = want.data.size() / DataTypeSize(want.dtype); k < n; ++k) {
          double w = std::fabs(AsDouble(want.dtype, want.data.data() + k * DataTypeSize(want.dtype)));
          if (std::isfinite(w)) scale = std::max(scale, w);
        }
      diff = Compare(want, got, tol, tol * scale);
    }
    if (!diff.empty()) return {Outcome::kMismatch, "output '" + name + "': " + diff};
    return {Outcome::kPass, ""};
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    auto got = (*session)->Output(output_names[i]);
    if (!got.ok()) return {Outcome::kError, got.status().ToString()};
    if (Result r = check(output_names[i], outputs[i], *got); r.outcome != Outcome::kPass) return r;
  }
  for (const auto& [name, want] : containers) {
    auto got = (*session)->OutputContainer(name);
    if (!got.ok()) return {Outcome::kError, got.status().ToString()};
    if (got->present != want->present)
      return {Outcome::kMismatch, "output '" + name + "': the optional is " + (got->present ? "present" : "absent") + ", the test's " +
                                      (want->present ? "present" : "absent")};
    size_t count = want->present ? want->tensors.size() : 0;
    if (got->elements.size() != count)
      return {Outcome::kMismatch, "output '" + name + "': " + std::to_string(got->elements.size()) + " elements, the test's " + std::to_string(count)};
    for (size_t k = 0; k < count; ++k)
      if (Result r = check(got->elements[k].info.name, want->tensors[k], got->elements[k]); r.outcome != Outcome::kPass) return r;
  }
  if (!g_export.empty()) {
    // The plan, the inputs as the plan takes them, and the CPU backend's outputs.
    std::string base = FileSafe(g_case_id);
    fs::path dir_out(g_export);
    if (!WriteBytes(dir_out / (base + ".plan"), compiled->plan.bytes.data(), compiled->plan.bytes.size()))
      return {Outcome::kError, "cannot write the export"};
    std::string ins, outs, ops;
    for (const std::string& op : op_types) ops += (ops.empty() ? "" : ",") + op;
    for (size_t i = 0; i < set_inputs.size(); ++i) {
      std::string file = base + ".in" + std::to_string(i) + ".bin";
      if (!WriteBytes(dir_out / file, set_inputs[i].second.data(), set_inputs[i].second.size())) return {Outcome::kError, "cannot write the export"};
      ins += (ins.empty() ? "" : ",") + set_inputs[i].first + "=" + file;
    }
    for (size_t i = 0; i < output_names.size(); ++i) {
      auto got = (*session)->Output(output_names[i]);
      std::string file = base + ".out" + std::to_string(i) + ".bin";
      if (!got.ok() || !WriteBytes(dir_out / file, got->data, got->info.ByteSize())) return {Outcome::kError, "cannot write the export"};
      outs += (outs.empty() ? "" : ",") + output_names[i] + "=" + file;
    }
    g_cases << "op\t" << g_case_id << "\t" << g_precision << "\t" << ops << "\t" << base << ".plan\t" << (ins.empty() ? "-" : ins) << "\t"
            << (outs.empty() ? "-" : outs) << "\n";
  }
  return {Outcome::kPass, ""};
}

Result RunCase(const fs::path& dir, bool* specialized) {
  *specialized = false;
  fs::path data = dir / "test_data_set_0";
  // The model's declared types say how to read each .pb (tensor, sequence or optional).
  auto model = onnx::ImportModelFile((dir / "model.onnx").string());
  if (!model.ok())
    return {model.status().code() == StatusCode::kUnimplemented ? Outcome::kUnsupported : Outcome::kError, model.status().ToString()};
  auto kind = [](const ir::Type& t) {
    switch (t.kind()) {
      case ir::Type::Kind::kSequence: return tools::HostValue::Kind::kSequence;
      case ir::Type::Kind::kOptional: return tools::HostValue::Kind::kOptional;
      default: return tools::HostValue::Kind::kTensor;
    }
  };
  std::vector<tools::HostValue> inputs, outputs;
  for (int i = 0;; ++i) {
    fs::path p = data / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    const auto& declared = (*model)->graph->inputs();
    auto t = tools::ReadValueProto(p.string(), size_t(i) < declared.size() ? kind(declared[size_t(i)]->type()) : tools::HostValue::Kind::kTensor);
    if (!t.ok()) return {Outcome::kUnsupported, "input " + std::to_string(i) + ": " + t.status().message()};
    inputs.push_back(std::move(*t));
  }
  for (int i = 0;; ++i) {
    fs::path p = data / ("output_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    const auto& declared = (*model)->graph->outputs();
    auto t = tools::ReadValueProto(p.string(), size_t(i) < declared.size() ? kind(declared[size_t(i)]->type()) : tools::HostValue::Kind::kTensor);
    if (!t.ok()) return {Outcome::kUnsupported, "output " + std::to_string(i) + ": " + t.status().message()};
    outputs.push_back(std::move(*t));
  }
  Result r = Attempt(dir, inputs, outputs, false);
  // Values that decide shapes make dynamic plans that the CUDA target does not take yet (its dims
  // come from input shapes only): a CUDA bundle (--export) takes such a case with its integer
  // inputs compiled in as constants.
  bool needs_static = !g_export.empty() && r.outcome == Outcome::kUnsupported &&
                      r.detail.find("dynamic plans for the CUDA target take their dims from input shapes only") != std::string::npos;
  if (!needs_static) return r;
  Result again = Attempt(dir, inputs, outputs, true);
  if (again.outcome == Outcome::kUnsupported) return r;  // the first reason is the informative one
  *specialized = true;
  return again;
}

}  // namespace

int main(int argc, char** argv) {
  std::string filter, expect_file, report_file;
  bool verbose = false;
  int min_pass = 0;
  std::vector<std::pair<std::string, std::string>> corpora;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--expect" && i + 1 < argc) expect_file = argv[++i];
    else if (a == "--report" && i + 1 < argc) report_file = argv[++i];
    else if (a == "--min-pass" && i + 1 < argc) min_pass = std::atoi(argv[++i]);
    else if (a == "--verbose") verbose = true;
    else if (a == "--precision" && i + 1 < argc) g_precision = argv[++i];
    else if (a == "--export" && i + 1 < argc) g_export = argv[++i];
    else if (a.find('=') != std::string::npos) corpora.push_back({a.substr(0, a.find('=')), a.substr(a.find('=') + 1)});
    else {
      std::fprintf(stderr, "usage: %s [--filter TEXT] [--verbose] [--expect FILE] [--min-pass N] [--report FILE] [--export DIR] LABEL=DIR...\n", argv[0]);
      return 2;
    }
  }
  std::set<std::string> expected;
  if (!expect_file.empty()) {
    std::ifstream in(expect_file);
    if (!in) {
      std::fprintf(stderr, "cannot read the expected-pass list %s\n", expect_file.c_str());
      return 2;
    }
    std::string line;
    while (std::getline(in, line))
      if (!line.empty() && line[0] != '#') expected.insert(line.substr(0, line.find(' ')));
    if (expected.empty()) {
      std::fprintf(stderr, "the expected-pass list %s names no case\n", expect_file.c_str());
      return 2;
    }
  }
  if (corpora.empty()) {
    std::fprintf(stderr, "no corpus given (LABEL=DIR)\n");
    return 2;
  }
  std::ofstream report;
  if (!report_file.empty()) report.open(report_file);
  std::vector<std::string> failures, mixed_mismatches;
  std::set<std::string> seen;  // ids of the cases found on disk
  int total_pass = 0;
  if (g_precision != "fp32" && g_precision != "fp16" && g_precision != "bf16") {
    std::fprintf(stderr, "--precision must be fp32, fp16 or bf16\n");
    return 2;
  }
  if (!g_export.empty()) {
    std::error_code ec;
    fs::create_directories(g_export, ec);
    g_cases.open(fs::path(g_export) / "cases.txt");
    if (ec || !g_cases) {
      std::fprintf(stderr, "cannot create the export folder %s\n", g_export.c_str());
      return 2;
    }
  }
  std::printf("precision %s\n", g_precision.c_str());
  std::printf("%-16s %6s %6s %12s %9s %12s %6s %9s\n", "corpus", "cases", "pass", "(specialized)", "mismatch", "unsupported", "error", "bad-case");
  for (const auto& [label, dir] : corpora) {
    std::map<Outcome, int> counts;
    int counts_specialized = 0;
    std::vector<fs::path> cases;
    // A missing or empty corpus is a broken installation, never "0 cases, all passed".
    if (!fs::is_directory(dir)) failures.push_back("corpus " + label + ": " + dir + " is not a folder (is the corpus installed?)");
    else
      for (const auto& e : fs::directory_iterator(dir))
        if (fs::exists(e.path() / "model.onnx") && e.path().filename().string().find(filter) != std::string::npos) cases.push_back(e.path());
    if (fs::is_directory(dir) && cases.empty() && filter.empty()) failures.push_back("corpus " + label + ": no cases under " + dir);
    std::sort(cases.begin(), cases.end());
    for (const auto& c : cases) seen.insert(label + "/" + c.filename().string());
    for (const auto& c : cases) {
      std::string id = label + "/" + c.filename().string();
      g_case_id = id;
      bool specialized = false;
      Result r = RunCase(c, &specialized);
      counts[r.outcome]++;
      if (specialized && r.outcome == Outcome::kPass) counts_specialized++;
      if (report) report << id << " " << OutcomeName(r.outcome) << (specialized ? " (specialized)" : "") << " " << r.detail << "\n";
      if (verbose && r.outcome != Outcome::kPass) std::printf("%-12s %s: %s\n", OutcomeName(r.outcome), id.c_str(), r.detail.c_str());
      if (r.outcome != Outcome::kPass && expected.count(id)) failures.push_back(id + " is expected to pass: " + OutcomeName(r.outcome) + ": " + r.detail);
      else if (r.outcome == Outcome::kMismatch && g_precision != "fp32") mixed_mismatches.push_back(id + ": " + r.detail);
      else if (r.outcome == Outcome::kMismatch || r.outcome == Outcome::kError) failures.push_back(id + " " + OutcomeName(r.outcome) + ": " + r.detail);
      if (r.outcome == Outcome::kPass) ++total_pass;
    }
    std::printf("%-16s %6zu %6d %12d %9d %12d %6d %9d\n", label.c_str(), cases.size(), counts[Outcome::kPass], counts_specialized, counts[Outcome::kMismatch],
                counts[Outcome::kUnsupported], counts[Outcome::kError], counts[Outcome::kBadCase]);
  }
  // Expected cases of the corpora given (and the filter) that are not on disk: a case that
  // vanished (renamed, corpus version changed) must not silently stop being checked.
  int absent = 0;
  for (const std::string& id : expected) {
    std::string label = id.substr(0, id.find('/'));
    bool given = std::any_of(corpora.begin(), corpora.end(), [&](const auto& c) { return c.first == label; });
    if (!given || id.substr(id.find('/') + 1).find(filter) == std::string::npos || seen.count(id)) continue;
    if (++absent <= 20) failures.push_back(id + " is expected to pass but is not in its corpus");
  }
  if (absent > 20) failures.push_back(std::to_string(absent - 20) + " more expected cases are not in their corpora");
  if (total_pass < min_pass) failures.push_back(std::to_string(total_pass) + " cases pass, fewer than the required " + std::to_string(min_pass));
  if (!mixed_mismatches.empty()) {
    std::printf("\nmismatches beyond the %s tolerance (counted, not failures):\n", g_precision.c_str());
    for (const auto& m : mixed_mismatches) std::printf("  %s\n", m.c_str());
  }
  if (!failures.empty()) {
    std::printf("\nfailures:\n");
    for (const auto& f : failures) std::printf("  %s\n", f.c_str());
  }
  std::printf("\n%d passed, %zu failed\n", total_pass, failures.size());
  return failures.empty() ? 0 : 1;
}
