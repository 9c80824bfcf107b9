// Calibrate (see calibrate.h).
#include "tools/precis/calibrate.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "precis/session.h"
#include "runtime/base/half.h"
#include "tools/precis/options.h"
#include "tools/precis/progress.h"
#include "tools/precis/tensor_io.h"

namespace precis::tools {
namespace {

namespace fs = std::filesystem;
using Sample = std::map<std::string, HostTensor>;

StatusOr<Sample> ReadSampleDir(const fs::path& dir) {
  Sample s;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && (e.path().extension() == ".npy" || e.path().extension() == ".pb")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    PRECIS_ASSIGN_OR_RETURN(HostTensor t, ReadTensorFile(f.string()));
    s[f.stem().string()] = std::move(t);
  }
  return s;
}

StatusOr<std::vector<Sample>> LoadSamples(const std::string& source, const Session& session) {
  std::vector<Sample> samples;
  if (source.rfind("random:", 0) == 0) {
    int n = std::atoi(source.c_str() + 7);
    if (n <= 0 || n > 100000) return InvalidArgument("--calibrate random:N needs N between 1 and 100000");
    std::mt19937_64 rng(12345);
    for (int i = 0; i < n; ++i) {
      Sample s;
      // A dynamic plan's symbolic dims are 1 in random samples (files give their own shapes).
      std::set<std::string> defaulted;
      for (const TensorInfo& plan_info : session.inputs()) {
        PRECIS_ASSIGN_OR_RETURN(TensorInfo info, ConcreteInput(session, plan_info, {}, defaulted));
        s[info.name] = HostTensor{info.name, info.dtype, info.dims, RandomData(info, rng)};
      }
      samples.push_back(std::move(s));
    }
    return samples;
  }
  fs::path p(source);
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    std::vector<fs::path> subdirs;
    for (const auto& e : fs::directory_iterator(p))
      if (e.is_directory()) subdirs.push_back(e.path());
    std::sort(subdirs.begin(), subdirs.end());
    if (subdirs.empty()) subdirs.push_back(p);
    for (const fs::path& d : subdirs) {
      PRECIS_ASSIGN_OR_RETURN(Sample s, ReadSampleDir(d));
      samples.push_back(std::move(s));
    }
    return samples;
  }
  if (p.extension() == ".npz") {
    PRECIS_ASSIGN_OR_RETURN(Sample s, ReadNpz(source));
    samples.push_back(std::move(s));
    return samples;
  }
  return InvalidArgument("--calibrate '" + source + "': expected random:N, a directory of .npy/.pb files, or FILE.npz");
}

bool IsFloatTensor(DataType d) { return d == DataType::kF32 || d == DataType::kF16 || d == DataType::kBF16; }

// The values of an FP32/FP16/BF16 tensor as doubles.
std::vector<double> Values(const TensorData& t) {
  std::vector<double> out(size_t(t.info.NumElements()));
  const uint8_t* p = static_cast<const uint8_t*>(t.data);
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.info.dtype == DataType::kF32) {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      out[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = t.info.dtype == DataType::kF16 ? HalfToFloat(h) : Bf16ToFloat(h);
    }
  }
  return out;
}

// Largest magnitude; infinity when any value is NaN or infinite.
double MaxAbs(const TensorData& t) {
  double m = 0;
  for (double v : Values(t)) m = std::isnan(v) ? INFINITY : std::max(m, std::fabs(v));
  return m;
}

Status SetSampleInputs(Session& session, const Sample& sample, size_t index) {
  for (const TensorInfo& info : session.inputs()) {
    auto it = sample.find(info.name);
    if (it == sample.end()) return InvalidArgument("sample " + std::to_string(index + 1) + " lacks input '" + info.name + "'");
    const HostTensor& t = it->second;
    Status s = session.SetInput(info.name, t.dtype, t.dims, t.data.data(), t.data.size());
    if (!s.ok()) return s.WithContext("sample " + std::to_string(index + 1));
  }
  return Status::Ok();
}

// Options of a plan compiled to observe the model's tensors by name: no generated elementwise
// kernels (their intermediates would go unseen), no fused activations and no channels-last
// regions (renamed values): every value of the graph the precision pass sees is a step output.
driver::CompileOptions MeasurementOptions(const driver::CompileOptions& options, const std::string& precision) {
  driver::CompileOptions m = options;
  m.precision = precision;
  m.codegen = false;
  m.fuse_epilogues = false;
  m.layout = "nchw";
  return m;
}

}  // namespace

StatusOr<Calibration> Calibrate(const std::string& model_path, const driver::CompileOptions& options, const std::string& source) {
  PRECIS_ASSIGN_OR_RETURN(driver::CompileResult compiled, CompileModelFile(model_path, MeasurementOptions(options, "fp32")));
  PRECIS_ASSIGN_OR_RETURN(auto session, Session::FromBuffer(compiled.plan.bytes.data(), compiled.plan.bytes.size()));
  PRECIS_ASSIGN_OR_RETURN(std::vector<Sample> samples, LoadSamples(source, *session));
  Calibration cal;
  session->SetStepObserver([&](const TensorData& t) {
    if (!IsFloatTensor(t.info.dtype)) return;
    double m = MaxAbs(t);
    double& r = cal.ranges[t.info.name];
    r = std::max(r, m);
  });
  Progress progress("calibrating: sample", samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    PRECIS_RETURN_IF_ERROR(SetSampleInputs(*session, samples[i], i));
    for (const TensorInfo& info : session->inputs()) {  // inputs are tensors too: record them
      auto out = samples[i].find(info.name);
      if (info.dtype == DataType::kF32)
        cal.ranges[info.name] = std::max(cal.ranges[info.name], MaxAbs(TensorData{info, out->second.data.data()}));
    }
    PRECIS_RETURN_IF_ERROR(session->Run());
    ++cal.samples;
    progress.Update(i + 1);
  }
  return cal;
}

StatusOr<std::map<std::string, std::string>> MeasureErrorBudget(const std::string& model_path, const driver::CompileOptions& options,
                                                                 const std::string& source, double budget) {
  PRECIS_ASSIGN_OR_RETURN(driver::CompileResult ref_plan, CompileModelFile(model_path, MeasurementOptions(options, "fp32")));
  PRECIS_ASSIGN_OR_RETURN(driver::CompileResult mixed_plan, CompileModelFile(model_path, MeasurementOptions(options, options.precision)));
  PRECIS_ASSIGN_OR_RETURN(auto ref, Session::FromBuffer(ref_plan.plan.bytes.data(), ref_plan.plan.bytes.size()));
  PRECIS_ASSIGN_OR_RETURN(auto mixed, Session::FromBuffer(mixed_plan.plan.bytes.data(), mixed_plan.plan.bytes.size()));
  PRECIS_ASSIGN_OR_RETURN(std::vector<Sample> samples, LoadSamples(source, *ref));
  const auto& regions = mixed_plan.low_regions;
  std::map<std::string, std::vector<double>> ref_values;  // boundary value -> FP32 values of one sample
  std::map<std::string, std::pair<double, double>> sums;  // boundary value -> (sum (d^2), sum (ref^2))
  for (const auto& r : regions) {
    for (const auto& v : r.inputs) sums[v];
    for (const auto& v : r.outputs) sums[v];
  }
  ref->SetStepObserver([&](const TensorData& t) {
    if (sums.count(t.info.name) && IsFloatTensor(t.info.dtype)) ref_values[t.info.name] = Values(t);
  });
  mixed->SetStepObserver([&](const TensorData& t) {
    auto it = ref_values.find(t.info.name);
    if (it == ref_values.end() || !IsFloatTensor(t.info.dtype)) return;
    std::vector<double> got = Values(t);
    if (got.size() != it->second.size()) return;
    auto& [d2, r2] = sums[t.info.name];
    for (size_t i = 0; i < got.size(); ++i) {
      double d = std::isfinite(got[i]) ? got[i] - it->second[i] : 1e30;
      d2 += d * d;
      r2 += it->second[i] * it->second[i];
    }
  });
  Progress progress("error budget: sample", samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    for (Session* s : {ref.get(), mixed.get()}) PRECIS_RETURN_IF_ERROR(SetSampleInputs(*s, samples[i], i));
    ref_values.clear();
    PRECIS_RETURN_IF_ERROR(ref->Run());
    for (const TensorInfo& info : ref->inputs())  // model inputs are exact in both runs
      ref_values.erase(info.name);
    PRECIS_RETURN_IF_ERROR(mixed->Run());
    progress.Update(i + 1);
  }
  progress.Finish();
  auto rel = [&](const std::string& v) {
    auto it = sums.find(v);
    if (it == sums.end() || it->second.second <= 0) return 0.0;
    return std::sqrt(it->second.first / it->second.second);
  };
  std::map<std::string, std::string> over;
  int kept = 0;
  for (const auto& r : regions) {
    double in = 0, out = 0;
    std::string worst;
    for (const auto& v : r.inputs) in = std::max(in, rel(v));
    for (const auto& v : r.outputs)
      if (rel(v) >= out) out = rel(v), worst = v;
    double added = out - in;
    if (!(added > budget)) continue;
    ++kept;
    char buf[200];
    std::snprintf(buf, sizeof buf, "16-bit region of %zu nodes adds relative error %.3g (output '%s') > budget %.3g", r.nodes.size(), added,
                  worst.c_str(), budget);
    for (const auto& n : r.nodes) over[n] = buf;
  }
  std::fprintf(stderr, "error budget: %zu regions measured, %d over budget %.3g\n", regions.size(), kept, budget);
  return over;
}

}  // namespace precis::tools
