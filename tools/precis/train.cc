// `precis train TRAIN.plan --data TRAIN.npz ...`: runs a training plan's train_step over the
// data for some epochs or steps, with progress on the terminal, optional evaluation per epoch
// and a JSON-lines metrics log; the trained state is saved with --checkpoint.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include "precis/session.h"
#include "tools/precis/commands.h"
#include "tools/precis/options.h"
#include "tools/precis/tensor_io.h"

namespace precis::tools {
namespace {

constexpr const char* kTrainUsage =
    "usage: precis train TRAIN.plan --data TRAIN.npz [--eval EVAL.npz] [--epochs N | --steps N] [--no-shuffle]\n"
    "                    [--seed S] [--checkpoint DIR] [--log METRICS.jsonl]\n";

using Data = std::map<std::string, HostTensor>;

// Checks that `data` has every input of `program` with its dtype and per-sample shape, all with one
// sample count; returns that count.
StatusOr<int64_t> CheckData(const Data& data, const std::vector<TensorInfo>& inputs, const std::string& path) {
  int64_t samples = -1;
  for (const TensorInfo& in : inputs) {
    auto it = data.find(in.name);
    if (it == data.end()) return InvalidArgument("'" + path + "' has no array '" + in.name + "' (the plan's inputs are needed, each with samples first)");
    const HostTensor& t = it->second;
    if (t.dtype != in.dtype)
      return InvalidArgument("'" + path + "': array '" + in.name + "' is " + DataTypeName(t.dtype) + ", the plan wants " + DataTypeName(in.dtype));
    std::vector<int64_t> per(in.dims.begin() + (in.dims.empty() ? 0 : 1), in.dims.end());
    if (in.dims.empty() || t.dims.empty() || std::vector<int64_t>(t.dims.begin() + 1, t.dims.end()) != per)
      return InvalidArgument("'" + path + "': array '" + in.name + "' has shape " + DimsToString(t.dims) + ", the plan wants N x " + DimsToString(per) +
                             " (a batch is " + DimsToString(in.dims) + ")");
    if (samples >= 0 && t.dims[0] != samples)
      return InvalidArgument("'" + path + "': arrays hold different sample counts (" + std::to_string(samples) + " and " + std::to_string(t.dims[0]) + ")");
    samples = t.dims[0];
  }
  return samples;
}

// Copies the samples order[first, first + batch) of every input into the session.
Status SetBatch(Session& s, const Data& data, const std::vector<TensorInfo>& inputs, const std::vector<int64_t>& order, size_t first,
                std::vector<std::vector<uint8_t>>& buffers) {
  buffers.resize(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const TensorInfo& in = inputs[k];
    const HostTensor& t = data.at(in.name);
    size_t row = in.ByteSize() / size_t(in.dims[0]);
    buffers[k].resize(in.ByteSize());
    for (int64_t b = 0; b < in.dims[0]; ++b) std::memcpy(buffers[k].data() + size_t(b) * row, t.data.data() + size_t(order[first + size_t(b)]) * row, row);
    PRECIS_RETURN_IF_ERROR(s.SetInput(in.name, in.dtype, in.dims, buffers[k].data(), buffers[k].size()));
  }
  return Status::Ok();
}

float ReadScalar(Session& s, const std::string& name) {
  auto t = s.Output(name);
  return t.ok() ? *static_cast<const float*>(t->data) : NAN;
}

struct EvalResult {
  double loss = 0;
  double accuracy = -1;  // -1: no classifier output to score
};

// Mean loss over the eval batches, and accuracy when an output holds [B, C] scores for an integer
// label [B].
StatusOr<EvalResult> Evaluate(Session& s, const Data& data, const std::string& path) {
  PRECIS_ASSIGN_OR_RETURN(std::vector<TensorInfo> inputs, s.ProgramInputs("eval_step"));
  PRECIS_ASSIGN_OR_RETURN(std::vector<TensorInfo> outputs, s.ProgramOutputs("eval_step"));
  PRECIS_ASSIGN_OR_RETURN(int64_t n, CheckData(data, inputs, path));
  int64_t batch = inputs[0].dims[0];
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const TensorInfo* label = nullptr;
  for (const TensorInfo& in : inputs)
    if (in.dtype == DataType::kI64 && in.dims.size() == 1) label = &in;
  const TensorInfo* scores = nullptr;
  for (const TensorInfo& out : outputs)
    if (out.dtype == DataType::kF32 && out.dims.size() == 2 && label && out.dims[0] == batch) scores = &out;
  std::vector<std::vector<uint8_t>> buffers;
  EvalResult r;
  int64_t batches = n / batch, correct = 0;
  for (int64_t b = 0; b < batches; ++b) {
    PRECIS_RETURN_IF_ERROR(SetBatch(s, data, inputs, order, size_t(b * batch), buffers));
    PRECIS_RETURN_IF_ERROR(s.Run("eval_step"));
    r.loss += ReadScalar(s, "loss");
    if (scores) {
      const float* p = static_cast<const float*>(s.Output(scores->name)->data);
      const int64_t* y = reinterpret_cast<const int64_t*>(data.at(label->name).data.data()) + b * batch;
      int64_t c = scores->dims[1];
      for (int64_t i = 0; i < batch; ++i) correct += std::max_element(p + i * c, p + (i + 1) * c) - (p + i * c) == y[i];
    }
  }
  if (batches == 0) return InvalidArgument("'" + path + "' holds " + std::to_string(n) + " samples, fewer than one batch (" + std::to_string(batch) + ")");
  r.loss /= double(batches);
  if (scores) r.accuracy = double(correct) / double(batches * batch);
  return r;
}

}  // namespace

int TrainCommand(const std::vector<std::string>& args) {
  std::string plan, data_path, eval_path, checkpoint, log_path;
  int64_t epochs = 0, steps = 0;
  uint64_t seed = 0;
  bool shuffle = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    const std::string* v = nullptr;
    if (a == "--data" && (v = value())) data_path = *v;
    else if (a == "--eval" && (v = value())) eval_path = *v;
    else if (a == "--epochs" && (v = value())) epochs = std::atoll(v->c_str());
    else if (a == "--steps" && (v = value())) steps = std::atoll(v->c_str());
    else if (a == "--seed" && (v = value())) seed = std::strtoull(v->c_str(), nullptr, 10);
    else if (a == "--no-shuffle") shuffle = false;
    else if (a == "--checkpoint" && (v = value())) checkpoint = *v;
    else if (a == "--log" && (v = value())) log_path = *v;
    else if (a == "--resume" || a == "--checkpoint-every")
      return ReportError("train", Unimplemented(a + " is not implemented yet (a checkpoint is saved at the end with --checkpoint)"));
    else if (a == "--help" || a == "-h") {
      std::fputs(kTrainUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') return UsageError("train", "unknown option or missing value '" + a + "'", kTrainUsage);
    else if (plan.empty()) plan = a;
    else return UsageError("train", "more than one plan given", kTrainUsage);
  }
  if (plan.empty() || data_path.empty()) return UsageError("train", "a plan and --data are required", kTrainUsage);
  if (epochs < 0 || steps < 0 || (epochs && steps)) return UsageError("train", "give --epochs N or --steps N (positive), not both", kTrainUsage);
  if (!epochs && !steps) epochs = 1;
  auto session = Session::Open(plan);
  if (!session.ok()) return ReportError("train", session.status());
  Session& s = **session;
  const auto& programs = s.programs();
  if (std::find(programs.begin(), programs.end(), "train_step") == programs.end())
    return ReportError("train", InvalidArgument("'" + plan + "' is not a training plan (no train_step program): compile it with precis compile --train"));
  auto inputs = s.ProgramInputs("train_step");
  auto data = ReadNpz(data_path);
  if (!data.ok()) return ReportError("train", data.status());
  auto samples = CheckData(*data, *inputs, data_path);
  if (!samples.ok()) return ReportError("train", samples.status());
  Data eval_data;
  if (!eval_path.empty()) {
    auto e = ReadNpz(eval_path);
    if (!e.ok()) return ReportError("train", e.status());
    eval_data = std::move(*e);
  }
  int64_t batch = (*inputs)[0].dims[0], per_epoch = *samples / batch;
  if (per_epoch == 0) return ReportError("train", InvalidArgument("'" + data_path + "' holds fewer samples than one batch (" + std::to_string(batch) + ")"));
  if (*samples % batch) std::printf("note: the last %lld of %lld samples do not fill a batch of %lld and are dropped each epoch\n",
                                    (long long)(*samples % batch), (long long)*samples, (long long)batch);
  int64_t total = steps ? steps : epochs * per_epoch;
  int64_t epoch_count = (total + per_epoch - 1) / per_epoch;
  std::ofstream log;
  if (!log_path.empty()) {
    log.open(log_path);
    if (!log) return ReportError("train", NotFound("cannot write '" + log_path + "'"));
  }
  float lr = 0;
  for (const TensorInfo& t : s.state())
    if (t.name == "optimizer.lr") (void)s.ReadState(t.name, &lr, 4);
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<int64_t> order(static_cast<size_t>(*samples));
  auto start = std::chrono::steady_clock::now();
  auto last_print = start;
  int64_t step = 0;
  for (int64_t epoch = 1; epoch <= epoch_count; ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    if (shuffle) std::shuffle(order.begin(), order.end(), std::mt19937_64(seed * 1000003u + uint64_t(epoch)));
    for (int64_t b = 0; b < per_epoch && step < total; ++b) {
      Status st = SetBatch(s, *data, *inputs, order, size_t(b * batch), buffers);
      if (st.ok()) st = s.Run("train_step");
      if (!st.ok()) return ReportError("train", st.WithContext("step " + std::to_string(step + 1)));
      ++step;
      float loss = ReadScalar(s, "loss");
      auto now = std::chrono::steady_clock::now();
      double secs = std::chrono::duration<double>(now - start).count();
      double rate = double(step * batch) / std::max(secs, 1e-9);
      if (log.is_open())
        log << "{\"epoch\": " << epoch << ", \"step\": " << step << ", \"loss\": " << loss << ", \"lr\": " << lr << ", \"samples_per_s\": " << rate
            << "}\n";
      if (std::chrono::duration<double>(now - last_print).count() >= 1.0 || step == total || b == per_epoch - 1) {
        double eta = double(total - step) * batch / std::max(rate, 1e-9);
        std::printf("epoch %lld/%lld step %lld/%lld loss %.5f lr %g %.0f samples/s ETA %.0fs\n", (long long)epoch, (long long)epoch_count,
                    (long long)step, (long long)total, loss, lr, rate, eta);
        std::fflush(stdout);
        last_print = now;
      }
    }
    if (!eval_data.empty()) {
      auto r = Evaluate(s, eval_data, eval_path);
      if (!r.ok()) return ReportError("train", r.status());
      if (r->accuracy >= 0) std::printf("epoch %lld eval loss %.5f accuracy %.4f\n", (long long)epoch, r->loss, r->accuracy);
      else std::printf("epoch %lld eval loss %.5f\n", (long long)epoch, r->loss);
      if (log.is_open()) {
        log << "{\"epoch\": " << epoch << ", \"eval_loss\": " << r->loss;
        if (r->accuracy >= 0) log << ", \"eval_accuracy\": " << r->accuracy;
        log << "}\n";
      }
    }
  }
  if (!checkpoint.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(checkpoint, ec);
    Status st = s.SaveState(checkpoint + "/state.bin");
    if (!st.ok()) return ReportError("train", st);
    std::ofstream manifest(checkpoint + "/manifest.json.tmp");
    manifest << "{\"format\": 1, \"plan\": \"" << plan << "\", \"step\": " << step << ", \"epoch\": " << epoch_count << ", \"seed\": " << seed
             << ", \"state\": \"state.bin\"}\n";
    manifest.close();
    std::filesystem::rename(checkpoint + "/manifest.json.tmp", checkpoint + "/manifest.json", ec);
    if (!manifest || ec) return ReportError("train", Internal("cannot write the checkpoint manifest in '" + checkpoint + "'"));
    std::printf("checkpoint: %s (step %lld)\n", checkpoint.c_str(), (long long)step);
  }
  return 0;
}

}  // namespace precis::tools
