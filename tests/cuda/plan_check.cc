// cuda_plan_check: runs the cases of test bundles (tests/cuda/make_bundle.sh) on a device and
// compares every output with the CPU backend's output on the same plan, stored in the bundle.
// Links only the runtime, so that it builds on GPU machines without the compiler's dependencies.
//
// usage: cuda_plan_check [--device cuda|cpu] [--filter TEXT] [--verbose] [--no-graphs] [--cases FILE] BUNDLE_DIR ...
// (--cases: read BUNDLE_DIR/FILE instead of cases.txt, e.g. one kernel family's cases-nn.txt)
//
// A bundle holds cases.txt, one case per line, tab-separated:
//   KIND  NAME  PRECISION  OPS  PLAN  INPUTS  OUTPUTS
// KIND is "op" (a one-operator conformance case) or "model"; OPS the operator types of the case
// (comma-separated); INPUTS and OUTPUTS comma-separated NAME=FILE pairs of raw little-endian
// tensors with the plan's dtypes and shapes (OUTPUTS: the CPU backend's results). An input of a
// dynamic plan gives its shape after the file: NAME=FILE:2x64x256 (the outputs' shapes follow).
//
// Error measure: for float outputs, e = max|got - cpu| / max(max|cpu|, 1e-30) (NaN must meet NaN,
// an infinity the same infinity); the case passes when e <= the tolerance below. Integer and bool
// outputs, and every output of a data-movement operator, must match bit for bit.
// Tolerances (normalized max error), by precision and operator class, and why:
// - exact (data movement, indexing, comparisons, integer ops, Cast): 0 — both backends copy or
//   compute exactly the same values (Cast rounds to nearest even on both).
// - fp32 elementwise math: 1e-5 — CUDA's libdevice and the CPU's functions each stay within a
//   few ulp (2^-23 = 1.2e-7 relative) of the exact result; 1e-5 leaves room for ops that amplify
//   an ulp (Pow, Tan near poles are normalized by the largest output).
// - fp32 reductions, products, convolutions, normalizations, softmax: 1e-5 — FP32 sums in a
//   different order: a sum of K terms differs by about K * 2^-24 * max term in the worst case,
//   and by sqrt(K) times that typically; the operator tests have K <= a few thousand.
// - fp16 plans: 4e-3 (2^-8): outputs are stored in 16 bits, so an FP32 difference of a few ulp
//   can flip the rounding of a stored value by one fp16 ulp (2^-11 relative = 4.9e-4); a few such
//   flips feeding later steps stay within 8 ulp.
// - bf16 plans: 3.2e-2 (2^-5): the same with bf16's 2^-8 ulp.
// - model cases: relative L2 error over each output instead of the max, <= 1e-4 (fp32),
//   1e-2 (fp16), 4e-2 (bf16): the bounds the model tests hold each plan to against onnxruntime;
//   tens of layers compound the per-step differences above.
// Exit status: 0 when every case passes, 1 otherwise, 77 when no CUDA device is usable (the
// reason is printed: the run is skipped).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "precis/session.h"
#include "runtime/base/half.h"

using namespace precis;

namespace {

struct Case {
  std::string kind, name, precision, plan;
  std::vector<std::string> ops;
  std::vector<std::pair<std::string, std::string>> inputs, outputs;
};

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) parts.push_back(cur);
  return parts;
}

std::vector<std::pair<std::string, std::string>> Pairs(const std::string& s) {
  std::vector<std::pair<std::string, std::string>> out;
  if (s.empty() || s == "-") return out;
  for (const std::string& p : Split(s, ',')) {
    size_t eq = p.rfind('=');
    out.push_back({p.substr(0, eq), eq == std::string::npos ? "" : p.substr(eq + 1)});
  }
  return out;
}

bool ReadFile(const std::string& path, std::vector<uint8_t>& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

const std::set<std::string>& ExactOps() {
  static const std::set<std::string> ops = {
      "Cast", "Compress", "Concat", "ConstantOfShape", "DepthToSpace", "Dropout", "Expand", "EyeLike", "Gather",
      "GatherElements", "GatherND", "Identity", "NonZero", "OneHot", "Pad", "Reshape", "ReverseSequence", "ScatterElements",
      "ScatterND", "Shape", "Size", "Slice", "SpaceToDepth", "Split", "Tile", "Transpose", "Trilu", "Equal", "Greater",
      "GreaterOrEqual", "Less", "LessOrEqual", "And", "Or", "Xor", "Not", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
      "BitwiseNot", "IsInf", "IsNaN", "ArgMax", "ArgMin", "Abs", "Neg", "Relu", "Max", "Min", "Sign", "Ceil", "Floor", "Round",
      "Where", "MaxPool", "GlobalMaxPool", "ReduceMax", "ReduceMin", "TopK", "Hardmax"};
  return ops;
}

double Tolerance(const Case& c) {
  bool exact = !c.ops.empty() && std::all_of(c.ops.begin(), c.ops.end(), [](const std::string& op) { return ExactOps().count(op) > 0; });
  if (c.kind == "model") return c.precision == "fp16" ? 1e-2 : c.precision == "bf16" ? 4e-2 : 1e-4;
  if (exact && c.precision == "fp32") return 0;
  return c.precision == "fp16" ? 4e-3 : c.precision == "bf16" ? 3.2e-2 : 1e-5;
}

double ToDouble(DataType t, const uint8_t* p) {
  switch (t) {
    case DataType::kF32: { float v; std::memcpy(&v, p, 4); return v; }
    case DataType::kF64: { double v; std::memcpy(&v, p, 8); return v; }
    case DataType::kF16: { uint16_t v; std::memcpy(&v, p, 2); return HalfToFloat(v); }
    case DataType::kBF16: { uint16_t v; std::memcpy(&v, p, 2); return Bf16ToFloat(v); }
    default: return 0;
  }
}

struct Compare {
  bool ok = true;
  double error = 0;  // normalized max error or relative L2 (model cases)
  std::string detail;
};

// got vs want for one output of dtype t with n elements.
Compare CompareOutput(const Case& c, DataType t, const uint8_t* got, const uint8_t* want, size_t bytes, double tol) {
  Compare r;
  bool is_float = t == DataType::kF32 || t == DataType::kF64 || t == DataType::kF16 || t == DataType::kBF16;
  if (!is_float || tol == 0) {
    if (std::memcmp(got, want, bytes) != 0) {
      size_t i = 0;
      while (i < bytes && got[i] == want[i]) ++i;
      r.ok = false;
      r.error = 1;
      r.detail = "differs at byte " + std::to_string(i);
    }
    return r;
  }
  size_t size = DataTypeSize(t), n = bytes / size;
  double max_ref = 0, max_diff = 0, sum_sq = 0, sum_ref_sq = 0;
  for (size_t i = 0; i < n; ++i) {
    double g = ToDouble(t, got + i * size), w = ToDouble(t, want + i * size);
    if (std::isnan(w) || std::isnan(g) || std::isinf(w) || std::isinf(g)) {
      bool same = (std::isnan(w) && std::isnan(g)) || (std::isinf(w) && g == w);
      if (!same) {
        r.ok = false;
        r.error = INFINITY;
        r.detail = "element " + std::to_string(i) + ": got " + std::to_string(g) + ", cpu " + std::to_string(w);
        return r;
      }
      continue;
    }
    max_ref = std::max(max_ref, std::fabs(w));
    max_diff = std::max(max_diff, std::fabs(g - w));
    sum_sq += (g - w) * (g - w);
    sum_ref_sq += w * w;
  }
  r.error = c.kind == "model" ? std::sqrt(sum_sq / std::max(sum_ref_sq, 1e-300)) : max_diff / std::max(max_ref, 1e-30);
  if (c.kind == "model" && sum_ref_sq == 0) r.error = max_diff;
  r.ok = r.error <= tol;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  SessionOptions options;
  options.device = Device::kCuda;
  std::string filter, cases_file = "cases.txt";
  bool verbose = false;
  std::vector<std::string> bundles;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      Status s = ParseDevice(argv[++i], &options.device, &options.device_id);
      if (!s.ok()) {
        std::fprintf(stderr, "cuda_plan_check: %s\n", s.message().c_str());
        return 2;
      }
    } else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--verbose") verbose = true;
    else if (a == "--no-graphs") options.cuda_graphs = false;
    else if (a == "--cases" && i + 1 < argc) cases_file = argv[++i];
    else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "usage: cuda_plan_check [--device cuda|cpu] [--filter TEXT] [--verbose] [--no-graphs] [--cases FILE] BUNDLE_DIR ...\n");
      return 2;
    } else bundles.push_back(a);
  }
  if (bundles.empty()) {
    std::fprintf(stderr, "cuda_plan_check: no bundle given\n");
    return 2;
  }
  struct Tally {
    int cases = 0, pass = 0;
    double worst = 0;
    std::string worst_case;
  };
  std::map<std::string, Tally> by_op;  // "fp16 Conv" -> tally
  int total = 0, passed = 0, load_errors = 0;
  std::vector<std::string> failures;
  auto start = std::chrono::steady_clock::now();
  for (const std::string& dir : bundles) {
    std::ifstream list(dir + "/" + cases_file);
    if (!list) {
      std::fprintf(stderr, "cuda_plan_check: %s/%s cannot be read\n", dir.c_str(), cases_file.c_str());
      return 2;
    }
    std::string line;
    while (std::getline(list, line)) {
      if (line.empty() || line[0] == '#') continue;
      auto f = Split(line, '\t');
      if (f.size() < 7) {
        std::fprintf(stderr, "cuda_plan_check: %s/cases.txt: bad line: %s\n", dir.c_str(), line.c_str());
        return 2;
      }
      Case c{f[0], f[1], f[2], dir + "/" + f[4], Split(f[3], ','), Pairs(f[5]), Pairs(f[6])};
      if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
      ++total;
      std::string key = c.precision + " " + (c.kind == "model" ? "model:" + c.name : c.ops.empty() ? "?" : c.ops[0]);
      Tally& tally = by_op[key];
      ++tally.cases;
      auto fail = [&](const std::string& why) {
        failures.push_back(c.precision + " " + c.name + ": " + why);
        if (verbose) std::printf("FAIL %s %s: %s\n", c.precision.c_str(), c.name.c_str(), why.c_str());
      };
      auto session = Session::Open(c.plan, options);
      if (!session.ok()) {
        if (session.status().code() == StatusCode::kUnavailable) {
          std::printf("SKIPPED: %s: GPU execution not checked\n", session.status().message().c_str());
          return 77;
        }
        ++load_errors;
        fail("load: " + session.status().ToString());
        continue;
      }
      Session& s = **session;
      // Inputs are set before each of two runs (the second replays the CUDA graph): on the CPU a
      // plan may compute in place over its input tensors, so a run can consume them.
      bool ok = true;
      std::vector<std::pair<std::string, std::vector<uint8_t>>> inputs;
      std::map<std::string, std::vector<int64_t>> shapes;  // NAME=FILE:DIMS (dynamic plans)
      for (const auto& [name, given_file] : c.inputs) {
        std::string file = given_file;
        if (size_t colon = file.find(':'); colon != std::string::npos) {
          for (const std::string& d : Split(file.substr(colon + 1), 'x')) shapes[name].push_back(std::atoll(d.c_str()));
          file = file.substr(0, colon);
        }
        std::vector<uint8_t> data;
        if (!ReadFile(dir + "/" + file, data)) {
          fail("cannot read " + file);
          ok = false;
          break;
        }
        inputs.push_back({name, std::move(data)});
      }
      // Three runs: the case's inputs (eager), the same inputs with their elements in reverse
      // order (captured into a CUDA graph and replayed), the case's inputs again (replayed). The
      // outputs checked are the third run's: a replay that wrote nothing would leave the second
      // run's results in the staging buffers. Reversed inputs keep every value (indices stay
      // valid) but usually change the outputs; when they are no valid input, that run's error is
      // ignored and the replay is checked no better than before. Inputs are set before every run: on the CPU a plan
      // may compute in place over its input tensors, so a run can consume them.
      Status st;
      for (int run = 0; run < 3 && ok && st.ok(); ++run) {
        for (const auto& [name, data] : inputs) {
          auto it = std::find_if(s.inputs().begin(), s.inputs().end(), [&](const TensorInfo& t) { return t.name == name; });
          if (it == s.inputs().end()) {
            st = InvalidArgument("plan has no input " + name);
            break;
          }
          std::vector<uint8_t> given = data;
          size_t width = DataTypeSize(it->dtype);
          if (run == 1 && width)
            for (size_t i = 0, n = given.size() / width; i < n / 2; ++i)
              std::swap_ranges(given.begin() + std::ptrdiff_t(i * width), given.begin() + std::ptrdiff_t((i + 1) * width),
                               given.begin() + std::ptrdiff_t((n - 1 - i) * width));
          st = s.SetInput(name, it->dtype, shapes.count(name) ? shapes[name] : it->dims, given.data(), given.size());
          if (!st.ok()) break;
        }
        if (st.ok()) st = s.Run();
        // Reversed inputs need not be valid for every operator (a shape given as an input): such
        // a run's error is not the case's; the third run is checked as always.
        if (run == 1 && !st.ok()) st = Status::Ok();
      }
      if (!ok) continue;
      if (!st.ok()) {
        fail("run: " + st.ToString());
        continue;
      }
      double worst = 0;
      for (const auto& [name, file] : c.outputs) {
        std::vector<uint8_t> want;
        auto out = s.Output(name);
        if (!out.ok() || !ReadFile(dir + "/" + file, want) || want.size() != out->info.ByteSize()) {
          fail("output " + name + ": missing or of the wrong size");
          ok = false;
          break;
        }
        Compare r = CompareOutput(c, out->info.dtype, static_cast<const uint8_t*>(out->data), want.data(), want.size(), Tolerance(c));
        worst = std::max(worst, r.error);
        if (!r.ok) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "output %s: error %.3g > %.3g %s", name.c_str(), r.error, Tolerance(c), r.detail.c_str());
          fail(buf);
          ok = false;
          break;
        }
      }
      if (worst >= tally.worst) {
        tally.worst = worst;
        tally.worst_case = c.name;
      }
      if (!ok) continue;
      ++tally.pass;
      ++passed;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-12s %-34s %6s %6s %10s  %s\n", "precision", "operator / model", "cases", "pass", "worst err", "worst case");
  for (const auto& [key, t] : by_op) {
    size_t sp = key.find(' ');
    std::printf("%-12s %-34s %6d %6d %10.3g  %s\n", key.substr(0, sp).c_str(), key.substr(sp + 1).c_str(), t.cases, t.pass, t.worst,
                t.worst_case.c_str());
  }
  for (const std::string& f : failures) std::printf("FAIL %s\n", f.c_str());
  std::printf("cuda_plan_check: %d/%d cases pass (%d failed to load) in %.1f s on %s\n", passed, total, load_errors, seconds,
              options.device == Device::kCuda ? "cuda" : "cpu");
  return passed == total ? 0 : 1;
}
