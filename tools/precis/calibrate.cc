// Calibrate (see calibrate.h).
#include "tools/precis/calibrate.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "precis/session.h"
#include "runtime/base/half.h"
#include "tools/precis/options.h"
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

uint32_t Le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
uint16_t Le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

// np.savez archives are zip files whose members are stored uncompressed: walk the local headers.
StatusOr<Sample> ReadNpz(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot open '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Sample s;
  size_t pos = 0;
  fs::path tmp = fs::temp_directory_path() / ("precis-npz-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  Status status = Status::Ok();
  while (pos + 30 <= bytes.size() && Le32(&bytes[pos]) == 0x04034b50u) {
    uint16_t flags = Le16(&bytes[pos + 6]), method = Le16(&bytes[pos + 8]);
    uint64_t size = Le32(&bytes[pos + 18]);
    size_t name_len = Le16(&bytes[pos + 26]), extra_len = Le16(&bytes[pos + 28]);
    size_t data = pos + 30 + name_len + extra_len;
    if (data > bytes.size()) break;
    std::string name(reinterpret_cast<const char*>(&bytes[pos + 30]), name_len);
    if (size == 0xffffffffu && extra_len >= 20 && Le16(&bytes[pos + 30 + name_len]) == 1)  // zip64 sizes
      size = uint64_t(Le32(&bytes[pos + 30 + name_len + 12])) | uint64_t(Le32(&bytes[pos + 30 + name_len + 16])) << 32;
    if (method != 0 || (flags & 8)) {
      status = Unimplemented("'" + path + "': member '" + name + "' is compressed; save with np.savez, not np.savez_compressed");
      break;
    }
    if (data + size > bytes.size()) {
      status = InvalidArgument("'" + path + "' is truncated");
      break;
    }
    fs::path member = tmp / "member.npy";
    std::ofstream(member, std::ios::binary).write(reinterpret_cast<const char*>(&bytes[data]), std::streamsize(size));
    auto t = ReadNpy(member.string());
    if (!t.ok()) {
      status = t.status().WithContext(path + ": " + name);
      break;
    }
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    s[name] = std::move(*t);
    pos = data + size_t(size);
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  PRECIS_RETURN_IF_ERROR(status);
  if (s.empty()) return InvalidArgument("'" + path + "' holds no arrays (not an .npz file?)");
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
      for (const TensorInfo& info : session.inputs()) s[info.name] = HostTensor{info.name, info.dtype, info.dims, RandomData(info, rng)};
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

double MaxAbs(const TensorData& t) {
  double m = 0;
  int64_t n = t.info.NumElements();
  const uint8_t* p = static_cast<const uint8_t*>(t.data);
  for (int64_t i = 0; i < n; ++i) {
    double v;
    if (t.info.dtype == DataType::kF32) {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      v = f;
    } else {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      v = t.info.dtype == DataType::kF16 ? HalfToFloat(h) : Bf16ToFloat(h);
    }
    v = std::fabs(v);
    if (v > m || std::isnan(v)) m = std::isnan(v) ? INFINITY : v;
  }
  return m;
}

}  // namespace

StatusOr<Calibration> Calibrate(const std::string& model_path, const passes::CompileOptions& options, const std::string& source) {
  passes::CompileOptions fp32 = options;
  fp32.precision = "fp32";
  PRECIS_ASSIGN_OR_RETURN(passes::CompileResult compiled, CompileModelFile(model_path, fp32));
  PRECIS_ASSIGN_OR_RETURN(auto session, Session::FromBuffer(compiled.plan.bytes.data(), compiled.plan.bytes.size()));
  PRECIS_ASSIGN_OR_RETURN(std::vector<Sample> samples, LoadSamples(source, *session));
  Calibration cal;
  session->SetStepObserver([&](const TensorData& t) {
    if (t.info.dtype != DataType::kF32 && t.info.dtype != DataType::kF16 && t.info.dtype != DataType::kBF16) return;
    double m = MaxAbs(t);
    double& r = cal.ranges[t.info.name];
    r = std::max(r, m);
  });
  for (size_t i = 0; i < samples.size(); ++i) {
    for (const TensorInfo& info : session->inputs()) {
      auto it = samples[i].find(info.name);
      if (it == samples[i].end()) return InvalidArgument("calibration sample " + std::to_string(i + 1) + " lacks input '" + info.name + "'");
      const HostTensor& t = it->second;
      Status s = session->SetInput(info.name, t.dtype, t.dims, t.data.data(), t.data.size());
      if (!s.ok()) return s.WithContext("calibration sample " + std::to_string(i + 1));
    }
    for (const TensorInfo& info : session->inputs()) {  // inputs are tensors too: record them
      auto out = samples[i].find(info.name);
      if (info.dtype == DataType::kF32)
        cal.ranges[info.name] = std::max(cal.ranges[info.name], MaxAbs(TensorData{info, out->second.data.data()}));
    }
    PRECIS_RETURN_IF_ERROR(session->Run());
    ++cal.samples;
    std::fprintf(stderr, "\rcalibrating: sample %zu/%zu", i + 1, samples.size());
  }
  std::fprintf(stderr, "\n");
  return cal;
}

}  // namespace precis::tools
