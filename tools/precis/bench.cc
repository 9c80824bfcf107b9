// `precis bench`: median latency and throughput of a plan (or of an ONNX model compiled on the
// fly) on random inputs, after warm-up runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>

#include "precis/session.h"
#include "runtime/base/half.h"
#include "tools/precis/commands.h"
#include "tools/precis/options.h"

namespace precis::tools {
namespace {

constexpr const char* kBenchUsage =
    "usage: precis bench MODEL.plan|MODEL.onnx [--device cpu] [--iterations N] [--warmup N] [--threads N]\n"
    "                    [--shape NAME=DIMS ...] [--reference] [--json] [--profile]\n"
    "                    [--precision fp32|fp16|bf16] (for .onnx models)\n";

// Time per kernel (summed over steps) and the slowest steps, per run.
void PrintProfile(const std::vector<StepProfile>& steps, int runs) {
  std::map<std::string, std::pair<double, int>> by_kernel;
  double total = 0;
  for (const StepProfile& p : steps) {
    by_kernel[p.kernel].first += p.total_ms / runs;
    ++by_kernel[p.kernel].second;
    total += p.total_ms / runs;
  }
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [name, v] : by_kernel) order.push_back({v.first, name});
  std::sort(order.rbegin(), order.rend());
  std::printf("profile: %.3f ms per run in %zu steps (all runs incl. warm-up)\n  %-32s %6s %10s %6s\n", total, steps.size(), "kernel",
              "steps", "ms/run", "share");
  for (const auto& [ms, name] : order)
    std::printf("  %-32s %6d %10.3f %5.1f%%\n", name.c_str(), by_kernel[name].second, ms, total > 0 ? 100.0 * ms / total : 0.0);
  std::vector<size_t> slow(steps.size());
  for (size_t i = 0; i < slow.size(); ++i) slow[i] = i;
  std::sort(slow.begin(), slow.end(), [&](size_t a, size_t b) { return steps[a].total_ms > steps[b].total_ms; });
  std::printf("  slowest steps:\n");
  for (size_t i = 0; i < std::min<size_t>(8, slow.size()); ++i)
    std::printf("    %-28s %-40s %8.3f ms\n", steps[slow[i]].kernel.c_str(), steps[slow[i]].node.c_str(), steps[slow[i]].total_ms / runs);
}

}  // namespace

int BenchCommand(const std::vector<std::string>& args) {
  std::string model, device = "cpu";
  int iterations = 20, warmup = 3;
  bool json = false;
  SessionOptions session_options;
  passes::CompileOptions compile_options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    const std::string* v = nullptr;
    if (a == "--iterations" && (v = value())) iterations = std::max(1, std::atoi(v->c_str()));
    else if (a == "--warmup" && (v = value())) warmup = std::max(0, std::atoi(v->c_str()));
    else if (a == "--threads" && (v = value())) session_options.threads = std::atoi(v->c_str());
    else if (a == "--device" && (v = value())) device = *v;
    else if (a == "--shape" && (v = value())) {
      Status s = ParseShapeOption(*v, compile_options.shapes);
      if (!s.ok()) return UsageError("bench", s.message(), kBenchUsage);
    } else if (a == "--reference") session_options.reference_kernels = true;
    else if (a == "--precision" && (v = value())) compile_options.precision = *v;
    else if (a == "--json") json = true;
    else if (a == "--profile") session_options.profile = true;
    else if (a == "--help" || a == "-h") {
      std::fputs(kBenchUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') return UsageError("bench", "unknown option or missing value '" + a + "'", kBenchUsage);
    else if (model.empty()) model = a;
    else return UsageError("bench", "more than one model given", kBenchUsage);
  }
  if (model.empty()) return UsageError("bench", "a plan or model is required", kBenchUsage);
  if (device != "cpu") return ReportError("bench", Unimplemented("device '" + device + "' is not available in this build (cpu only)"));
  StatusOr<std::unique_ptr<Session>> session = Status(StatusCode::kInternal, "unset");
  double compile_ms = 0;
  if (model.size() > 5 && model.compare(model.size() - 5, 5, ".onnx") == 0) {
    auto start = std::chrono::steady_clock::now();
    auto compiled = CompileModelFile(model, compile_options);
    compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!compiled.ok()) return ReportError("bench", compiled.status());
    session = Session::FromBuffer(compiled->plan.bytes.data(), compiled->plan.bytes.size(), session_options);
  } else {
    if (compile_options.precision != "fp32" || !compile_options.shapes.empty())
      return UsageError("bench", "--precision and --shape apply to .onnx models; a plan's are fixed", kBenchUsage);
    session = Session::Open(model, session_options);
  }
  if (!session.ok()) return ReportError("bench", session.status());
  Session& s = **session;
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  for (const TensorInfo& info : s.inputs()) {
    std::vector<uint8_t> data(info.ByteSize());
    for (int64_t i = 0; i < info.NumElements(); ++i) {
      uint8_t* p = data.data() + size_t(i) * DataTypeSize(info.dtype);
      if (info.dtype == DataType::kF32) { float x = real(rng); std::memcpy(p, &x, 4); }
      else if (info.dtype == DataType::kF16) { uint16_t x = FloatToHalf(real(rng)); std::memcpy(p, &x, 2); }
      else if (info.dtype == DataType::kBF16) { uint16_t x = FloatToBf16(real(rng)); std::memcpy(p, &x, 2); }
      else if (info.dtype == DataType::kF64) { double x = real(rng); std::memcpy(p, &x, 8); }
      else p[0] = uint8_t(rng() % 10);  // small non-negative integers (token ids, indices)
    }
    Status st = s.SetInput(info.name, info.dtype, info.dims, data.data(), data.size());
    if (!st.ok()) return ReportError("bench", st);
  }
  std::vector<double> ms;
  for (int i = 0; i < warmup + iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    Status st = s.Run();
    if (!st.ok()) return ReportError("bench", st);
    if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  int64_t batch = s.inputs().empty() || s.inputs()[0].dims.empty() ? 1 : s.inputs()[0].dims[0];
  if (json) {
    std::printf("{\"model\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f, \"iterations\": %d, "
                "\"batch\": %lld, \"throughput_per_s\": %.2f, \"arena_bytes\": %zu, \"compile_ms\": %.1f}\n",
                model.c_str(), median, ms.front(), ms.back(), iterations, static_cast<long long>(batch),
                1000.0 * double(batch) / median, s.arena_bytes(), compile_ms);
  } else {
    std::printf("%s: median %.3f ms (min %.3f, max %.3f) over %d runs; %.1f samples/s at batch %lld; arena %s\n", model.c_str(),
                median, ms.front(), ms.back(), iterations, 1000.0 * double(batch) / median, static_cast<long long>(batch),
                FormatBytes(s.arena_bytes()).c_str());
  }
  if (session_options.profile) PrintProfile(s.profile(), warmup + iterations);
  return 0;
}

}  // namespace precis::tools
