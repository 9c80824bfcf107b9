// Sessions on several threads at once: 8 threads, each with a session of its own on one shared
// plan file (mapped once per session), run distinct inputs and must give outputs bitwise equal to
// the same inputs run on one thread. Two of the threads go through the C API. Run under
// ThreadSanitizer by tests/runtime/tsan_concurrency.sh, which makes data races fatal.
//
// usage: concurrency_test PLAN... (plans whose inputs are all float tensors; the main build
// compiles them with precis compile, see tests/CMakeLists.txt)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "precis/c_api.h"
#include "precis/session.h"
#include "runtime/base/half.h"

namespace {

constexpr int kThreads = 8;
constexpr int kInputsPerThread = 3;
constexpr int kRounds = 4;

using Bytes = std::vector<uint8_t>;
struct Sample {
  std::vector<Bytes> inputs;   // one per plan input
  std::vector<Bytes> outputs;  // the single-thread result
};

// Uniform [-1, 1) values for every input, from a seed of the sample's own.
std::vector<Bytes> MakeInputs(const std::vector<precis::TensorInfo>& infos, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<Bytes> out;
  for (const auto& info : infos) {
    Bytes b(info.ByteSize());
    for (size_t i = 0; i < size_t(info.NumElements()); ++i) {
      float v = u(rng);
      if (info.dtype == precis::DataType::kF32) std::memcpy(&b[i * 4], &v, 4);
      else if (info.dtype == precis::DataType::kF16) { uint16_t h = precis::FloatToHalf(v); std::memcpy(&b[i * 2], &h, 2); }
      else if (info.dtype == precis::DataType::kBF16) { uint16_t h = precis::FloatToBf16(v); std::memcpy(&b[i * 2], &h, 2); }
    }
    out.push_back(std::move(b));
  }
  return out;
}

bool RunCpp(precis::Session& s, const Sample& in, std::vector<Bytes>* out, std::string* error) {
  for (size_t i = 0; i < s.inputs().size(); ++i) {
    const auto& info = s.inputs()[i];
    auto st = s.SetInput(info.name, info.dtype, info.dims, in.inputs[i].data(), in.inputs[i].size());
    if (!st.ok()) return *error = st.ToString(), false;
  }
  auto st = s.Run();
  if (!st.ok()) return *error = st.ToString(), false;
  out->clear();
  for (const auto& info : s.outputs()) {
    auto t = s.Output(info.name);
    if (!t.ok()) return *error = t.status().ToString(), false;
    const uint8_t* p = static_cast<const uint8_t*>(t->data);
    out->emplace_back(p, p + t->info.ByteSize());
  }
  return true;
}

bool RunC(precis_session* s, const Sample& in, std::vector<Bytes>* out, std::string* error) {
  for (int i = 0; i < precis_num_inputs(s); ++i) {
    const char* name;
    int dtype, rank;
    const int64_t* dims;
    if (precis_input_info(s, i, &name, &dtype, &dims, &rank) != 0 ||
        precis_set_input(s, name, dtype, dims, rank, in.inputs[size_t(i)].data(), in.inputs[size_t(i)].size()) != 0)
      return *error = precis_last_error(), false;
  }
  if (precis_run(s) != 0) return *error = precis_last_error(), false;
  out->clear();
  for (int i = 0; i < precis_num_outputs(s); ++i) {
    const char* name;
    int dtype, rank;
    const int64_t* dims;
    const void* data;
    size_t bytes;
    if (precis_output_info(s, i, &name, &dtype, &dims, &rank) != 0 || precis_output(s, name, &data, &bytes) != 0)
      return *error = precis_last_error(), false;
    out->emplace_back(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
  }
  return true;
}

int CheckPlan(const std::string& path) {
  precis::SessionOptions one_thread;
  one_thread.threads = 1;
  auto ref = precis::Session::Open(path, one_thread);
  if (!ref.ok()) return std::fprintf(stderr, "%s\n", ref.status().ToString().c_str()), 1;
  // Every thread's samples, run first on this thread alone: the expected outputs.
  std::vector<std::vector<Sample>> samples(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int k = 0; k < kInputsPerThread; ++k) {
      Sample s{MakeInputs((*ref)->inputs(), uint64_t(1000 * t + k + 1)), {}};
      std::string error;
      if (!RunCpp(**ref, s, &s.outputs, &error)) return std::fprintf(stderr, "%s: %s\n", path.c_str(), error.c_str()), 1;
      samples[size_t(t)].push_back(std::move(s));
    }
  // Distinct inputs must give distinct outputs, or equality below would prove little.
  if (samples[0][0].outputs == samples[1][0].outputs) return std::fprintf(stderr, "%s: outputs do not depend on the inputs\n", path.c_str()), 1;

  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::string& failure = failures[size_t(t)];
      bool c_api = t >= kThreads - 2;
      std::unique_ptr<precis::Session> session;
      precis_session* handle = nullptr;
      if (c_api) {
        if (precis_session_open(path.c_str(), 1, &handle) != 0) return void(failure = precis_last_error());
      } else {
        auto s = precis::Session::Open(path, one_thread);
        if (!s.ok()) return void(failure = s.status().ToString());
        session = std::move(*s);
      }
      std::vector<Bytes> got;
      for (int round = 0; round < kRounds && failure.empty(); ++round)
        for (int k = 0; k < kInputsPerThread && failure.empty(); ++k) {
          const Sample& s = samples[size_t(t)][size_t((k + round) % kInputsPerThread)];
          bool ok = c_api ? RunC(handle, s, &got, &failure) : RunCpp(*session, s, &got, &failure);
          if (ok && got != s.outputs)
            failure = "round " + std::to_string(round) + ": outputs differ from the single-thread run";
        }
      if (handle) precis_session_free(handle);
    });
  for (auto& th : threads) th.join();
  int failed = 0;
  for (int t = 0; t < kThreads; ++t)
    if (!failures[size_t(t)].empty()) {
      std::fprintf(stderr, "FAIL %s thread %d%s: %s\n", path.c_str(), t, t >= kThreads - 2 ? " (C API)" : "", failures[size_t(t)].c_str());
      ++failed;
    }
  std::printf("%s %s: %d threads x %d runs, outputs %s the single-thread run\n", failed ? "FAIL" : "ok  ", path.c_str(), kThreads,
              kRounds * kInputsPerThread, failed ? "differ from" : "bitwise equal to");
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return std::fprintf(stderr, "usage: %s PLAN...\n", argv[0]), 2;
  int status = 0;
  for (int i = 1; i < argc; ++i) status |= CheckPlan(argv[i]);
  return status;
}
