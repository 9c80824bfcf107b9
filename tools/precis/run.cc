// `precis run`: runs a plan (or compiles an ONNX model first) on inputs from .npy/.pb files or
// random data, writes one OUTPUTNAME.npy per output and prints a summary of each output.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#include "precis/session.h"
#include "runtime/base/half.h"
#include "tools/precis/commands.h"
#include "tools/precis/options.h"
#include "tools/precis/tensor_io.h"

namespace precis::tools {
namespace {

constexpr const char* kRunUsage =
    "usage: precis run MODEL.plan|MODEL.onnx [--input NAME=FILE.npy|FILE.pb ...] [--random [--dim NAME=N ...]] [--seed N]\n"
    "                  [--output-dir DIR] [--compare DIR] [--shape NAME=DIMS ...] [--threads N] [--reference] [--fp32-weights]\n"
    "                  [--device cpu|cuda|cuda:N]\n"
    "                  [--precision fp32|fp16|bf16] (for .onnx models)\n"
    "--compare DIR: compare each output with DIR/OUTPUT.npy (max abs error, relative L2 error)\n"
    "--fp32-weights: CPU, keep FP32 copies of 16-bit MatMul/Gemm/Conv weights made at load (faster at small\n"
    "batches on CPUs without FP16 arithmetic; twice the weights' memory). By default they stay 16-bit.\n";

double ElementAsDouble(const TensorData& t, int64_t i) {
  const uint8_t* p = static_cast<const uint8_t*>(t.data) + size_t(i) * DataTypeSize(t.info.dtype);
  switch (t.info.dtype) {
    case DataType::kF32: { float v; std::memcpy(&v, p, 4); return v; }
    case DataType::kF64: { double v; std::memcpy(&v, p, 8); return v; }
    case DataType::kF16: { uint16_t v; std::memcpy(&v, p, 2); return HalfToFloat(v); }
    case DataType::kBF16: { uint16_t v; std::memcpy(&v, p, 2); return Bf16ToFloat(v); }
    case DataType::kI8: return double(int8_t(*p));
    case DataType::kU8: case DataType::kBool: return double(*p);
    case DataType::kI16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DataType::kU16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case DataType::kI32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DataType::kU32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case DataType::kI64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
    case DataType::kU64: { uint64_t v; std::memcpy(&v, p, 8); return double(v); }
    default: return 0;
  }
}

void PrintSummary(const TensorData& t) {
  int64_t n = t.info.NumElements(), nonfinite = 0;
  double mn = INFINITY, mx = -INFINITY, sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = ElementAsDouble(t, i);
    if (!std::isfinite(v)) {
      ++nonfinite;
      continue;
    }
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
  }
  std::printf("  %s: %s %s", t.info.name.c_str(), DataTypeName(t.info.dtype), DimsToString(t.info.dims).c_str());
  if (n > nonfinite) std::printf("  min %.6g  max %.6g  mean %.6g", mn, mx, sum / double(n - nonfinite));
  if (nonfinite) std::printf("  %lld NaN/Inf", static_cast<long long>(nonfinite));
  std::printf("\n    [");
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i) std::printf("%s%.6g", i ? ", " : "", ElementAsDouble(t, i));
  std::printf("%s]\n", n > 6 ? ", ..." : "");
}

// Max abs error and relative L2 error of `got` against a reference array (any float dtypes).
Status CompareWith(const TensorData& got, const std::string& path) {
  PRECIS_ASSIGN_OR_RETURN(HostTensor want, ReadNpy(path));
  if (want.dims != got.info.dims)
    return InvalidArgument(path + ": shape " + DimsToString(want.dims) + " differs from the output's " + DimsToString(got.info.dims));
  TensorData w{{"", want.dtype, want.dims}, want.data.data()};
  double max_abs = 0, diff2 = 0, ref2 = 0;
  int64_t nonfinite = 0;
  for (int64_t i = 0; i < got.info.NumElements(); ++i) {
    double g = ElementAsDouble(got, i), r = ElementAsDouble(w, i);
    if (!std::isfinite(g)) {
      ++nonfinite;
      continue;
    }
    max_abs = std::max(max_abs, std::fabs(g - r));
    diff2 += (g - r) * (g - r);
    ref2 += r * r;
  }
  std::printf("    vs %s: max abs error %.3g, relative L2 error %.3g%s\n", path.c_str(), max_abs, std::sqrt(diff2 / std::max(ref2, 1e-300)),
              nonfinite ? (", " + std::to_string(nonfinite) + " NaN/Inf").c_str() : "");
  return Status::Ok();
}

std::string FileNameFor(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (c == '/' || c == '\\' || c == ':' || c == ' ') c = '_';
  return s.empty() ? "output" : s;
}

}  // namespace

int RunCommand(const std::vector<std::string>& args) {
  std::string model, output_dir, compare_dir;
  std::vector<std::pair<std::string, std::string>> input_files;
  bool random = false;
  uint64_t seed = 0;
  std::map<std::string, int64_t> dim_values;
  SessionOptions session_options;
  driver::CompileOptions compile_options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    if (a == "--input") {
      const std::string* v = value();
      auto eq = v ? v->find('=') : std::string::npos;
      if (eq == std::string::npos) return UsageError("run", "--input expects NAME=FILE", kRunUsage);
      input_files.push_back({v->substr(0, eq), v->substr(eq + 1)});
    } else if (a == "--random") {
      random = true;
    } else if (a == "--dim") {
      const std::string* v = value();
      Status s = v ? ParseDimOption(*v, dim_values) : InvalidArgument("--dim needs NAME=N");
      if (!s.ok()) return UsageError("run", s.message(), kRunUsage);
    } else if (a == "--seed") {
      const std::string* v = value();
      if (!v) return UsageError("run", "--seed needs a number", kRunUsage);
      seed = std::strtoull(v->c_str(), nullptr, 10);
    } else if (a == "--output-dir") {
      const std::string* v = value();
      if (!v) return UsageError("run", "--output-dir needs a folder", kRunUsage);
      output_dir = *v;
    } else if (a == "--compare") {
      const std::string* v = value();
      if (!v) return UsageError("run", "--compare needs a folder", kRunUsage);
      compare_dir = *v;
    } else if (a == "--shape") {
      const std::string* v = value();
      Status s = v ? ParseShapeOption(*v, compile_options.shapes, &compile_options.dim_bounds) : InvalidArgument("--shape needs NAME=DIMS");
      if (!s.ok()) return UsageError("run", s.message(), kRunUsage);
    } else if (a == "--threads") {
      const std::string* v = value();
      if (!v) return UsageError("run", "--threads needs a number", kRunUsage);
      session_options.threads = std::atoi(v->c_str());
    } else if (a == "--reference") {
      session_options.reference_kernels = true;
    } else if (a == "--fp32-weights") {
      session_options.cpu_fp32_weights = true;
    } else if (a == "--device") {
      const std::string* v = value();
      Status s = v ? ParseDevice(*v, &session_options.device, &session_options.device_id) : InvalidArgument("--device needs cpu, cuda or cuda:N");
      if (!s.ok()) return UsageError("run", s.message(), kRunUsage);
      compile_options.target = session_options.device == Device::kCuda ? "cuda" : "cpu";
    } else if (a == "--precision") {
      const std::string* v = value();
      if (!v) return UsageError("run", "--precision needs fp32, fp16 or bf16", kRunUsage);
      compile_options.precision = *v;
    } else if (a == "--help" || a == "-h") {
      std::fputs(kRunUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return UsageError("run", "unknown option '" + a + "'", kRunUsage);
    } else if (model.empty()) {
      model = a;
    } else {
      return UsageError("run", "more than one model given", kRunUsage);
    }
  }
  if (model.empty()) return UsageError("run", "a plan or model is required", kRunUsage);

  StatusOr<std::unique_ptr<Session>> session = Status(StatusCode::kInternal, "unset");
  if (model.size() > 5 && model.compare(model.size() - 5, 5, ".onnx") == 0) {
    auto compiled = CompileModelFile(model, compile_options);
    if (!compiled.ok()) return ReportError("run", compiled.status());
    session = Session::FromBuffer(compiled->plan.bytes.data(), compiled->plan.bytes.size(), session_options);
  } else {
    if (!compile_options.shapes.empty()) return UsageError("run", "--shape applies to .onnx models; a plan's shapes are fixed", kRunUsage);
    if (compile_options.precision != "fp32")
      return UsageError("run", "--precision applies to .onnx models; a plan's precision is fixed", kRunUsage);
    session = Session::Open(model, session_options);
  }
  if (!session.ok()) return ReportError("run", session.status());
  Session& s = **session;

  std::mt19937_64 rng(seed);
  std::vector<std::string> given;
  for (const auto& [name, file] : input_files) {
    auto t = ReadTensorFile(file);
    if (!t.ok()) return ReportError("run", t.status());
    Status st = s.SetInput(name, t->dtype, t->dims, t->data.data(), t->data.size());
    if (!st.ok()) return ReportError("run", st);
    given.push_back(name);
  }
  std::set<std::string> defaulted;
  for (const TensorInfo& plan_info : s.inputs()) {
    if (std::find(given.begin(), given.end(), plan_info.name) != given.end()) continue;
    if (!random)
      return ReportError("run", InvalidArgument("input '" + plan_info.name + "' (" + DataTypeName(plan_info.dtype) + " " +
                                                DimsToString(plan_info.dims) + ") is not given: pass --input " + plan_info.name +
                                                "=FILE or --random"));
    auto info = ConcreteInput(s, plan_info, dim_values, defaulted);
    if (!info.ok()) return ReportError("run", info.status());
    auto data = RandomData(*info, rng);
    Status st = s.SetInput(info->name, info->dtype, info->dims, data.data(), data.size());
    if (!st.ok()) return ReportError("run", st);
  }
  if (!defaulted.empty()) {
    std::string names;
    for (const auto& n : defaulted) names += (names.empty() ? "" : ", ") + n;
    std::fprintf(stderr, "precis run: random inputs with symbolic dims %s = 1 (set them with --dim NAME=N)\n", names.c_str());
  }
  auto start = std::chrono::steady_clock::now();
  Status st = s.Run();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!st.ok()) return ReportError("run", st);
  std::printf("ran %s in %.2f ms (%s plan, arena %s, %s)\n", model.c_str(), ms, s.precision().c_str(), FormatBytes(s.arena_bytes()).c_str(),
              s.device_name().c_str());
  if (!output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(output_dir, ec);
    if (ec) return ReportError("run", Internal("cannot create '" + output_dir + "'"));
  }
  // Containers (sequences and optionals decided when the plan runs) in place of their parts:
  // each element as NAME[i] (an optional tensor as NAME), an absent optional as nothing.
  std::vector<TensorData> results;
  std::set<std::string> parts;
  for (const ContainerInfo& c : s.containers()) {
    parts.insert(c.parts.begin(), c.parts.end());
    auto got = s.OutputContainer(c.name);
    if (!got.ok()) return ReportError("run", got.status());
    if (!got->present) std::printf("%s: absent (an optional without a value)\n", c.name.c_str());
    else if (c.kind != ContainerInfo::Kind::kOptionalTensor)
      std::printf("%s: a sequence of %zu element(s)\n", c.name.c_str(), got->elements.size());
    results.insert(results.end(), got->elements.begin(), got->elements.end());
  }
  for (const TensorInfo& info : s.outputs()) {
    if (parts.count(info.name)) continue;
    auto out = s.Output(info.name);
    if (!out.ok()) return ReportError("run", out.status());
    results.push_back(*out);
  }
  for (const TensorData& result : results) {
    const TensorData* out = &result;
    const TensorInfo& info = out->info;
    PrintSummary(*out);
    if (!compare_dir.empty()) {
      Status c = CompareWith(*out, compare_dir + "/" + FileNameFor(info.name) + ".npy");
      if (!c.ok()) return ReportError("run", c);
    }
    if (!output_dir.empty()) {
      std::string path = output_dir + "/" + FileNameFor(info.name) + ".npy";
      Status w = WriteNpy(path, out->info.dtype, out->info.dims, out->data, out->info.ByteSize());
      if (!w.ok()) return ReportError("run", w);
    }
  }
  return 0;
}

}  // namespace precis::tools
