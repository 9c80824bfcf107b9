// precis_plan_bench: median latency, throughput and achieved TFLOP/s of plans on a device, on
// random inputs. The runtime-only twin of `precis bench MODEL.plan` for GPU machines without the
// compiler's dependencies (bench/gpu/run_gpu_bench.sh). Prints one JSON object per plan.
//
// usage: precis_plan_bench [--device cuda|cpu] [--iterations N] [--warmup N] [--no-graphs] PLAN ...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "precis/session.h"
#include "runtime/plan/report_flops.h"
#include "runtime/base/half.h"

using namespace precis;


int main(int argc, char** argv) {
  SessionOptions options;
  options.device = Device::kCuda;
  options.synthetic_weights = true;  // benchmark plans may be compiled with --strip-weights
  int iterations = 50, warmup = 10;
  std::vector<std::string> plans;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      Status s = ParseDevice(argv[++i], &options.device, &options.device_id);
      if (!s.ok()) return std::fprintf(stderr, "precis_plan_bench: %s\n", s.message().c_str()), 2;
    } else if (a == "--iterations" && i + 1 < argc) iterations = std::max(1, std::atoi(argv[++i]));
    else if (a == "--warmup" && i + 1 < argc) warmup = std::max(0, std::atoi(argv[++i]));
    else if (a == "--no-graphs") options.cuda_graphs = false;
    else if (!a.empty() && a[0] == '-') return std::fprintf(stderr, "usage: precis_plan_bench [--device cuda|cpu] [--iterations N] [--warmup N] [--no-graphs] PLAN ...\n"), 2;
    else plans.push_back(a);
  }
  int failures = 0;
  for (const std::string& plan : plans) {
    auto session = Session::Open(plan, options);
    if (!session.ok()) {
      std::fprintf(stderr, "precis_plan_bench: %s\n", session.status().ToString().c_str());
      if (session.status().code() == StatusCode::kUnavailable) return 77;
      ++failures;
      continue;
    }
    Session& s = **session;
    std::mt19937 rng(0);
    std::uniform_real_distribution<float> real(-1.0f, 1.0f);
    for (const TensorInfo& info : s.inputs()) {
      std::vector<uint8_t> data(info.ByteSize());
      size_t size = DataTypeSize(info.dtype);
      for (int64_t i = 0; i < info.NumElements(); ++i) {
        uint8_t* p = data.data() + size_t(i) * size;
        float x = real(rng);
        if (info.dtype == DataType::kF32) std::memcpy(p, &x, 4);
        else if (info.dtype == DataType::kF16) { uint16_t h = FloatToHalf(x); std::memcpy(p, &h, 2); }
        else if (info.dtype == DataType::kBF16) { uint16_t h = FloatToBf16(x); std::memcpy(p, &h, 2); }
        else p[0] = uint8_t(rng() % 10);  // small non-negative integers (token ids)
      }
      Status st = s.SetInput(info.name, info.dtype, info.dims, data.data(), data.size());
      if (!st.ok()) return std::fprintf(stderr, "precis_plan_bench: %s\n", st.ToString().c_str()), 1;
    }
    std::vector<double> ms;
    Status st;
    for (int i = 0; i < warmup + iterations && st.ok(); ++i) {
      auto start = std::chrono::steady_clock::now();
      st = s.Run();
      if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    if (!st.ok()) {
      std::fprintf(stderr, "precis_plan_bench: %s: %s\n", plan.c_str(), st.ToString().c_str());
      ++failures;
      continue;
    }
    std::sort(ms.begin(), ms.end());
    double median = ms[ms.size() / 2];
    int64_t batch = s.inputs().empty() || s.inputs()[0].dims.empty() ? 1 : s.inputs()[0].dims[0];
    double flops = plan::ReportFlops(s.report(true));
    std::printf("{\"plan\": \"%s\", \"precision\": \"%s\", \"device\": \"%s\", \"graph_replay\": %s, \"batch\": %lld, "
                "\"median_ms\": %.4f, \"min_ms\": %.4f, \"throughput_per_s\": %.2f, \"flops\": %.6g, \"tflops_per_s\": %.3f}\n",
                plan.c_str(), s.precision().c_str(), s.device_name().c_str(), s.graph_replay() ? "true" : "false",
                static_cast<long long>(batch), median, ms.front(), 1000.0 * double(batch) / median, flops,
                flops > 0 ? flops / (median * 1e-3) / 1e12 : 0.0);
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}
