// `precis train TRAIN.plan --data TRAIN.npz ...`: runs a training plan's train_step over the
// data for some epochs or steps, with progress on the terminal, optional evaluation per epoch
// and a JSON-lines metrics log; checkpoints (checkpoint.h) are saved with --checkpoint (every N
// steps with --checkpoint-every, and at the end) and resumed with --resume, bitwise identically
// to an uninterrupted run: the data order of an epoch derives from the seed and the epoch only.
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
#include "tools/precis/checkpoint.h"
#include "tools/precis/commands.h"
#include "tools/precis/options.h"
#include "tools/precis/tensor_io.h"

namespace precis::tools {
namespace {

constexpr const char* kTrainUsage =
    "usage: precis train TRAIN.plan --data TRAIN.npz [--eval EVAL.npz] [--epochs N | --steps N] [--no-shuffle]\n"
    "                    [--seed S] [--checkpoint DIR] [--checkpoint-every N] [--resume DIR] [--log METRICS.jsonl]\n"
    "                    [--device cpu|cuda[:N]]\n"
    "  --device cuda runs a plan compiled with --train --device cuda on the GPU (never run on a GPU yet).\n"
    "  --epochs/--steps count from the start of training: a resumed run continues up to them.\n"
    "  --checkpoint DIR saves the state and a manifest at the end (and every N steps with --checkpoint-every);\n"
    "  --resume DIR continues from a checkpoint of the same plan, with its seed and data order.\n";

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

// The data order of epoch `epoch` (1-based): shuffled from the seed and the epoch alone, so a
// resumed run replays it.
void EpochOrder(std::vector<int64_t>& order, bool shuffle, uint64_t seed, int64_t epoch) {
  std::iota(order.begin(), order.end(), 0);
  if (shuffle) std::shuffle(order.begin(), order.end(), std::mt19937_64(seed * 1000003u + uint64_t(epoch)));
}

// "warmup_steps" of a plan's training options (compiler/driver/train.h TrainingConfigJson).
int64_t WarmupSteps(const std::string& config) {
  size_t at = config.find("\"warmup_steps\": ");
  return at == std::string::npos ? 0 : std::atoll(config.c_str() + at + 16);
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

struct TrainArgs {
  std::string plan, data_path, eval_path, checkpoint, resume, log_path;
  int64_t epochs = 0, steps = 0, every = 0;
  uint64_t seed = 0;
  bool seed_given = false, shuffle = true;
  SessionOptions session;  // --device
};

// Where a run starts: the step count and the epoch and batch of the next step.
struct StartPoint {
  int64_t step = 0, epoch = 1, batch = 0;
};

// Loads --resume's checkpoint and checks that the run continues the same training.
StatusOr<StartPoint> Resume(Session& s, TrainArgs& a, uint64_t plan_hash, int64_t samples, int64_t batch, int64_t per_epoch) {
  PRECIS_ASSIGN_OR_RETURN(CheckpointPosition p, LoadCheckpoint(s, a.resume, plan_hash));
  auto differs = [&](const std::string& what) {
    return InvalidArgument("--resume '" + a.resume + "': " + what + " differ from the checkpoint's; a resumed run continues the same training");
  };
  if (p.samples != samples || p.batch_size != batch || p.batches_per_epoch != per_epoch) return differs("the data's sample count or the batch size");
  if (a.seed_given && a.seed != p.seed) return differs("--seed " + std::to_string(a.seed) + " and seed " + std::to_string(p.seed));
  if (!a.shuffle && p.shuffle) return differs("--no-shuffle and a shuffled data order");
  a.seed = p.seed;
  a.shuffle = p.shuffle;
  StartPoint start{p.step, std::max<int64_t>(p.epoch, 1), p.batch_in_epoch};
  if (start.batch >= per_epoch) {
    ++start.epoch;
    start.batch = 0;
  }
  std::printf("resumed from %s: step %lld, epoch %lld, batch %lld of %lld\n", a.resume.c_str(), (long long)p.step, (long long)start.epoch,
              (long long)start.batch, (long long)per_epoch);
  return start;
}

Status ParseTrainArgs(const std::vector<std::string>& args, TrainArgs& t, bool* help) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    auto count = [&](int64_t* out) -> Status {
      const std::string* v = value();
      char* end = nullptr;
      if (v) *out = std::strtoll(v->c_str(), &end, 10);
      if (!v || v->empty() || *end || *out < 0) return InvalidArgument(a + " needs a whole number, 0 or more");
      return Status::Ok();
    };
    const std::string* v = nullptr;
    if (a == "--data" && (v = value())) t.data_path = *v;
    else if (a == "--eval" && (v = value())) t.eval_path = *v;
    else if (a == "--epochs") PRECIS_RETURN_IF_ERROR(count(&t.epochs));
    else if (a == "--steps") PRECIS_RETURN_IF_ERROR(count(&t.steps));
    else if (a == "--checkpoint-every") PRECIS_RETURN_IF_ERROR(count(&t.every));
    else if (a == "--seed" && (v = value())) {
      t.seed = std::strtoull(v->c_str(), nullptr, 10);
      t.seed_given = true;
    } else if (a == "--no-shuffle") t.shuffle = false;
    else if (a == "--checkpoint" && (v = value())) t.checkpoint = *v;
    else if (a == "--resume" && (v = value())) t.resume = *v;
    else if (a == "--log" && (v = value())) t.log_path = *v;
    else if (a == "--device" && (v = value())) PRECIS_RETURN_IF_ERROR(ParseDevice(*v, &t.session.device, &t.session.device_id));
    else if (a == "--help" || a == "-h") *help = true;
    else if (!a.empty() && a[0] == '-') return InvalidArgument("unknown option or missing value '" + a + "'");
    else if (t.plan.empty()) t.plan = a;
    else return InvalidArgument("more than one plan given");
  }
  if (*help) return Status::Ok();
  if (t.plan.empty() || t.data_path.empty()) return InvalidArgument("a plan and --data are required");
  if (t.epochs && t.steps) return InvalidArgument("give --epochs N or --steps N, not both");
  if (t.every && t.checkpoint.empty()) return InvalidArgument("--checkpoint-every needs --checkpoint DIR");
  if (!t.epochs && !t.steps) t.epochs = 1;
  return Status::Ok();
}

}  // namespace

int TrainCommand(const std::vector<std::string>& args) {
  TrainArgs a;
  bool help = false;
  if (Status st = ParseTrainArgs(args, a, &help); !st.ok()) return UsageError("train", st.message(), kTrainUsage);
  if (help) {
    std::fputs(kTrainUsage, stdout);
    return 0;
  }
  auto session = Session::Open(a.plan, a.session);
  if (!session.ok()) return ReportError("train", session.status());
  Session& s = **session;
  const auto& programs = s.programs();
  if (std::find(programs.begin(), programs.end(), "train_step") == programs.end())
    return ReportError("train", InvalidArgument("'" + a.plan + "' is not a training plan (no train_step program): compile it with precis compile --train"));
  auto plan_info = ReadPlanFileInfo(a.plan);
  if (!plan_info.ok()) return ReportError("train", plan_info.status());
  auto inputs = s.ProgramInputs("train_step");
  auto outputs = s.ProgramOutputs("train_step");
  auto data = ReadNpz(a.data_path);
  if (!data.ok()) return ReportError("train", data.status());
  auto samples = CheckData(*data, *inputs, a.data_path);
  if (!samples.ok()) return ReportError("train", samples.status());
  Data eval_data;
  if (!a.eval_path.empty()) {
    auto e = ReadNpz(a.eval_path);
    if (!e.ok()) return ReportError("train", e.status());
    eval_data = std::move(*e);
  }
  int64_t batch = (*inputs)[0].dims[0], per_epoch = *samples / batch;
  if (per_epoch == 0) return ReportError("train", InvalidArgument("'" + a.data_path + "' holds fewer samples than one batch (" + std::to_string(batch) + ")"));
  if (*samples % batch) std::printf("note: the last %lld of %lld samples do not fill a batch of %lld and are dropped each epoch\n",
                                    (long long)(*samples % batch), (long long)*samples, (long long)batch);
  int64_t total = a.steps ? a.steps : a.epochs * per_epoch;
  int64_t epoch_count = (total + per_epoch - 1) / per_epoch;
  StartPoint start;
  if (!a.resume.empty()) {
    auto r = Resume(s, a, plan_info->hash, *samples, batch, per_epoch);
    if (!r.ok()) return ReportError("train", r.status());
    start = *r;
  } else {
    // A schedule over the whole run (cosine) whose horizon was left to precis train.
    for (const TensorInfo& t : s.state()) {
      float horizon = 0;
      if (t.name == "optimizer.total_steps" && s.ReadState(t.name, &horizon, 4).ok() && horizon == 0) {
        int64_t warmup = WarmupSteps(plan_info->training_config);
        if (total <= warmup)
          return ReportError("train", InvalidArgument("the cosine schedule runs over the whole training, " + std::to_string(total) + " steps, which leaves none after its " +
                                                      std::to_string(warmup) + " warmup steps: train longer or compile with --lr-total-steps"));
        horizon = float(total);
        (void)s.WriteState(t.name, DataType::kF32, {}, &horizon, 4);
        std::printf("lr schedule horizon: %lld steps\n", (long long)total);
      }
      // Dropout masks follow the seed too (the counter starts at 0; a resume restores both).
      if (t.name == "dropout.seed" && t.dtype == DataType::kI64) {
        int64_t dropout_seed = int64_t(a.seed);
        Status ws = s.WriteState(t.name, DataType::kI64, {}, &dropout_seed, 8);
        if (!ws.ok()) return ReportError("train", ws);
      }
    }
  }
  std::ofstream log;
  if (!a.log_path.empty()) {
    log.open(a.log_path);
    if (!log) return ReportError("train", NotFound("cannot write '" + a.log_path + "'"));
    log.precision(9);  // f32 values round-trip
  }
  std::string lr_name = outputs->size() > 1 ? (*outputs)[1].name : "";
  // Mixed-precision plans with loss scaling report the scale each step used and whether it skipped
  // the update (Inf/NaN gradients); plans that clip report the gradients' total norm.
  bool scaled = false, clipped = false;
  for (const TensorInfo& t : *outputs) {
    scaled |= t.name == "skipped";
    clipped |= t.name == "grad_norm";
  }
  int64_t skipped_steps = 0;
  float lr = 0;
  CheckpointPosition position{start.step, start.epoch, start.batch, per_epoch, batch, *samples, a.seed, a.shuffle, 0};
  auto save = [&]() -> Status {
    position.lr = lr;
    PRECIS_RETURN_IF_ERROR(SaveCheckpoint(s, a.checkpoint, a.plan, plan_info->hash, plan_info->training_config, position));
    std::printf("checkpoint: %s (step %lld)\n", a.checkpoint.c_str(), (long long)position.step);
    return Status::Ok();
  };
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<int64_t> order(static_cast<size_t>(*samples));
  auto begin = std::chrono::steady_clock::now();
  auto last_print = begin;
  int64_t step = start.step, saved_step = -1;
  for (int64_t epoch = start.epoch; epoch <= epoch_count && step < total; ++epoch) {
    EpochOrder(order, a.shuffle, a.seed, epoch);
    for (int64_t b = epoch == start.epoch ? start.batch : 0; b < per_epoch && step < total; ++b) {
      Status st = SetBatch(s, *data, *inputs, order, size_t(b * batch), buffers);
      if (st.ok()) st = s.Run("train_step");
      if (!st.ok()) return ReportError("train", st.WithContext("step " + std::to_string(step + 1)));
      ++step;
      position = {step, epoch, b + 1, per_epoch, batch, *samples, a.seed, a.shuffle, 0};
      float loss = ReadScalar(s, "loss");
      if (!lr_name.empty()) lr = ReadScalar(s, lr_name);
      float loss_scale = scaled ? ReadScalar(s, "loss_scale") : 0, grad_norm = clipped ? ReadScalar(s, "grad_norm") : 0;
      bool skipped = false;
      if (scaled) {
        auto t = s.Output("skipped");
        skipped = t.ok() && *static_cast<const bool*>(t->data);
        if (skipped) ++skipped_steps;
      }
      auto now = std::chrono::steady_clock::now();
      double secs = std::chrono::duration<double>(now - begin).count();
      double rate = double((step - start.step) * batch) / std::max(secs, 1e-9);
      if (log.is_open())
      {
        log << "{\"epoch\": " << epoch << ", \"step\": " << step << ", \"loss\": " << loss << ", \"lr\": " << lr;
        if (scaled) log << ", \"loss_scale\": " << loss_scale << ", \"skipped\": " << (skipped ? "true" : "false");
        if (clipped) log << ", \"grad_norm\": " << grad_norm;
        log << ", \"samples_per_s\": " << rate << "}\n";
      }
      if (std::chrono::duration<double>(now - last_print).count() >= 1.0 || step == total || b == per_epoch - 1) {
        double eta = double(total - step) * batch / std::max(rate, 1e-9);
        std::printf("epoch %lld/%lld step %lld/%lld loss %.5f lr %g", (long long)epoch, (long long)epoch_count, (long long)step, (long long)total, loss, lr);
        if (scaled) std::printf(" scale %g skipped %lld", loss_scale, (long long)skipped_steps);
        std::printf(" %.0f samples/s ETA %.0fs\n", rate, eta);
        std::fflush(stdout);
        last_print = now;
      }
      if (a.every && step % a.every == 0) {
        if (Status st = save(); !st.ok()) return ReportError("train", st);
        saved_step = step;
      }
    }
    if (!eval_data.empty() && (position.batch_in_epoch == per_epoch || step == total)) {
      auto r = Evaluate(s, eval_data, a.eval_path);
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
  if (step == start.step) std::printf("nothing to train: the run is at step %lld of %lld\n", (long long)step, (long long)total);
  else if (scaled)
    std::printf("loss scaling: %lld of %lld steps skipped (Inf/NaN gradients)\n", (long long)skipped_steps, (long long)(step - start.step));
  if (!a.checkpoint.empty() && saved_step != step) {
    if (Status st = save(); !st.ok()) return ReportError("train", st);
  }
  return 0;
}

}  // namespace precis::tools
