// `precis bench`: median latency and throughput of a plan (or of an ONNX model compiled on the
// fly) on random inputs, after warm-up runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "precis/session.h"
#include "runtime/plan/report_flops.h"
#include "runtime/base/half.h"
#include "tools/precis/commands.h"
#include "tools/precis/options.h"
#include "tools/precis/tensor_io.h"

namespace precis::tools {
namespace {

constexpr const char* kBenchUsage =
    "usage: precis bench MODEL.plan|MODEL.onnx [--device cpu|cuda|cuda:N] [--iterations N] [--warmup N]\n"
    "                    [--threads N] [--reference] [--fp32-weights] [--json] [--profile] [--profile-steps N]\n"
    "                    [--no-graphs]\n"
    "                    [--batch N] [--shape NAME=DIMS ...] [--precision fp32|fp16|bf16] (for .onnx models)\n"
    "                    [--program NAME] (a plan's program other than the default, e.g. train_step)\n"
    "                    [--dim NAME=N ...] (a dynamic plan's symbolic dims; default 1)\n"
    "Prints the median latency, throughput and achieved TFLOP/s (from the plan's FLOP count).\n"
    "--profile: time per kernel and the 8 slowest steps; --profile-steps N: the N slowest steps.\n"
    "--fp32-weights: CPU, keep FP32 copies of 16-bit MatMul/Gemm/Conv weights made at load (faster at small\n"
    "batches on CPUs without FP16 arithmetic; twice the weights' memory). By default they stay 16-bit.\n";


// Time per kernel (summed over steps) and the slowest steps, per run.
void PrintProfile(const std::vector<StepProfile>& steps, int runs, size_t slowest) {
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
  for (size_t i = 0; i < std::min<size_t>(slowest, slow.size()); ++i)
    std::printf("    %-28s %-40s %8.3f ms\n", steps[slow[i]].kernel.c_str(), steps[slow[i]].node.c_str(), steps[slow[i]].total_ms / runs);
}

}  // namespace

int BenchCommand(const std::vector<std::string>& args) {
  std::string model, program;
  int iterations = 20, warmup = 3;
  int64_t batch_option = 0;
  std::map<std::string, int64_t> dim_values;
  bool json = false;
  size_t slowest = 8;  // steps listed by --profile
  SessionOptions session_options;
  session_options.synthetic_weights = true;  // benchmark plans may be compiled with --strip-weights
  driver::CompileOptions compile_options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    const std::string* v = nullptr;
    if (a == "--iterations" && (v = value())) iterations = std::max(1, std::atoi(v->c_str()));
    else if (a == "--warmup" && (v = value())) warmup = std::max(0, std::atoi(v->c_str()));
    else if (a == "--threads" && (v = value())) session_options.threads = std::atoi(v->c_str());
    else if (a == "--device" && (v = value())) {
      Status s = ParseDevice(*v, &session_options.device, &session_options.device_id);
      if (!s.ok()) return UsageError("bench", s.message(), kBenchUsage);
      compile_options.target = session_options.device == Device::kCuda ? "cuda" : "cpu";
    } else if (a == "--dim" && (v = value())) {
      Status st = ParseDimOption(*v, dim_values);
      if (!st.ok()) return UsageError("bench", st.message(), kBenchUsage);
    } else if (a == "--batch" && (v = value())) {
      batch_option = std::atoll(v->c_str());
      if (batch_option <= 0) return UsageError("bench", "--batch needs a positive number", kBenchUsage);
      compile_options.batch = batch_option;
    } else if (a == "--no-graphs") session_options.cuda_graphs = false;
    else if (a == "--shape" && (v = value())) {
      Status s = ParseShapeOption(*v, compile_options.shapes, &compile_options.dim_bounds, &compile_options.containers);
      if (!s.ok()) return UsageError("bench", s.message(), kBenchUsage);
    } else if (a == "--reference") session_options.reference_kernels = true;
    else if (a == "--fp32-weights") session_options.cpu_fp32_weights = true;
    else if (a == "--precision" && (v = value())) compile_options.precision = *v;
    else if (a == "--json") json = true;
    else if (a == "--profile") session_options.profile = true;
    else if (a == "--profile-steps" && (v = value())) {
      session_options.profile = true;
      slowest = size_t(std::max(0, std::atoi(v->c_str())));
    }
    else if (a == "--program" && i + 1 < args.size()) program = args[++i];
    else if (a == "--help" || a == "-h") {
      std::fputs(kBenchUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') return UsageError("bench", "unknown option or missing value '" + a + "'", kBenchUsage);
    else if (model.empty()) model = a;
    else return UsageError("bench", "more than one model given", kBenchUsage);
  }
  if (model.empty()) return UsageError("bench", "a plan or model is required", kBenchUsage);
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
    compile_options.batch = 0;
    session = Session::Open(model, session_options);
  }
  if (!session.ok()) return ReportError("bench", session.status());
  Session& s = **session;
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::set<std::string> defaulted;
  std::vector<TensorInfo> inputs;
  for (const TensorInfo& plan_info : s.inputs()) {
    auto concrete = ConcreteInput(s, plan_info, dim_values, defaulted);
    if (!concrete.ok()) return ReportError("bench", concrete.status());
    inputs.push_back(*concrete);
  }
  if (!defaulted.empty()) {
    std::string names;
    for (const auto& n : defaulted) names += (names.empty() ? "" : ", ") + n;
    std::fprintf(stderr, "precis bench: symbolic dims %s = 1 (set them with --dim NAME=N)\n", names.c_str());
  }
  // Floats uniform in [-1, 1]; integers small and non-negative (token ids, indices), or all 0
  // (`zero_integers`).
  auto set_inputs = [&](bool zero_integers) -> Status {
    for (const TensorInfo& info : inputs) {
      std::vector<uint8_t> data(info.ByteSize());
      for (int64_t i = 0; i < info.NumElements(); ++i) {
        uint8_t* p = data.data() + size_t(i) * DataTypeSize(info.dtype);
        if (info.dtype == DataType::kF32) { float x = real(rng); std::memcpy(p, &x, 4); }
        else if (info.dtype == DataType::kF16) { uint16_t x = FloatToHalf(real(rng)); std::memcpy(p, &x, 2); }
        else if (info.dtype == DataType::kBF16) { uint16_t x = FloatToBf16(real(rng)); std::memcpy(p, &x, 2); }
        else if (info.dtype == DataType::kF64) { double x = real(rng); std::memcpy(p, &x, 8); }
        else p[0] = zero_integers ? 0 : uint8_t(rng() % 10);
      }
      PRECIS_RETURN_IF_ERROR(s.SetInput(info.name, info.dtype, info.dims, data.data(), data.size()));
    }
    return Status::Ok();
  };
  if (Status st = set_inputs(false); !st.ok()) return ReportError("bench", st);
  bool has_integers = false;
  for (const TensorInfo& info : inputs)
    has_integers |= info.dtype != DataType::kF32 && info.dtype != DataType::kF16 && info.dtype != DataType::kBF16 && info.dtype != DataType::kF64;
  std::vector<double> ms;
  double first_ms = 0;  // a dynamic plan's first run prepares the shape (arena plan, kernels)
  for (int i = 0; i < warmup + iterations; ++i) {
    auto start = std::chrono::steady_clock::now();
    Status st = program.empty() ? s.Run() : s.Run(program);
    if (!st.ok() && i == 0 && has_integers) {
      // Random integers can be out of range for the model (a position in a sequence, an index
      // into a short axis): say so and run with every integer input 0.
      std::fprintf(stderr, "precis bench: the first run failed with random integer inputs in 0..9 (%s); integer inputs set to 0\n",
                   st.ToString().c_str());
      has_integers = false;
      if (Status again = set_inputs(true); !again.ok()) return ReportError("bench", again);
      start = std::chrono::steady_clock::now();
      st = program.empty() ? s.Run() : s.Run(program);
    }
    if (!st.ok()) return ReportError("bench", st);
    double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i == 0) first_ms = run_ms;
    if (i >= warmup) ms.push_back(run_ms);
  }
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  int64_t batch = inputs.empty() || inputs[0].dims.empty() ? 1 : inputs[0].dims[0];
  if (batch_option > 0 && batch != batch_option)
    return ReportError("bench", InvalidArgument("the plan was compiled for batch " + std::to_string(batch) + ", not " +
                                                std::to_string(batch_option) + " (compile the model with that batch)"));
  double flops = plan::ReportFlops(s.report(true));
  double tflops = flops > 0 ? flops / (median * 1e-3) / 1e12 : 0;
  if (json) {
    std::printf("{\"model\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f, \"max_ms\": %.4f, \"iterations\": %d, "
                "\"batch\": %lld, \"throughput_per_s\": %.2f, \"arena_bytes\": %zu, \"compile_ms\": %.1f, \"flops\": %.6g, "
                "\"tflops_per_s\": %.4f, \"device\": \"%s\", \"graph_replay\": %s, \"precision\": \"%s\", \"fallbacks\": %zu, "
                "\"first_run_ms\": %.4f, \"dynamic\": %s}\n",
                model.c_str(), median, ms.front(), ms.back(), iterations, static_cast<long long>(batch),
                1000.0 * double(batch) / median, s.arena_bytes(), compile_ms, flops, tflops, s.device_name().c_str(),
                s.graph_replay() ? "true" : "false", s.precision().c_str(), s.fallbacks().size(), first_ms, s.symbols().empty() ? "false" : "true");
  } else {
    std::printf("%s: median %.3f ms (min %.3f, max %.3f) over %d runs; %.1f samples/s at batch %lld; %.3f TFLOP/s; arena %s; %s%s\n",
                model.c_str(), median, ms.front(), ms.back(), iterations, 1000.0 * double(batch) / median, static_cast<long long>(batch),
                tflops, FormatBytes(s.arena_bytes()).c_str(), s.device_name().c_str(), s.graph_replay() ? " (CUDA graph)" : "");
    if (!s.symbols().empty()) std::printf("dynamic plan: first run %.3f ms (binds the shape: arena plan and kernels)\n", first_ms);
  }
  // Slower paths than planned (a library refused a step): counted, and named, never silent.
  std::vector<std::string> fallbacks = s.fallbacks();
  if (!fallbacks.empty() && !json) {
    std::printf("fallbacks: %zu step(s) run slower paths than planned\n", fallbacks.size());
    for (size_t i = 0; i < fallbacks.size() && i < 10; ++i) std::printf("  %s\n", fallbacks[i].c_str());
    if (fallbacks.size() > 10) std::printf("  ... and %zu more\n", fallbacks.size() - 10);
  }
  // FP16 on the CPU: why such plans are not faster than FP32 here, and the option that trades
  // memory for speed (docs/cpu.md, "16-bit weights in MatMul and Gemm").
  if (!json && s.precision() == "fp16" && s.device_name() == "cpu" && !session_options.cpu_fp32_weights)
    std::fprintf(stderr,
                 "precis bench: note: FP16 matrix products and convolutions compute in FP32 on the CPU (oneDNN has no FP16 kernels "
                 "here), converting their 16-bit operands as they run; --fp32-weights keeps FP32 copies of MatMul/Gemm/Conv weights "
                 "made at load instead (faster where products are large; twice their memory)\n");
  if (session_options.profile) PrintProfile(s.profile(), warmup + iterations, slowest);
  return 0;
}

}  // namespace precis::tools
