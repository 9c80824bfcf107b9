// Training plans: from an ONNX forward model, a plan with programs `train_step` (inputs + label ->
// loss and the lr the step used; weights, optimizer moments and the step counter updated in place) and `eval_step` (loss
// and the model's outputs, nothing updated), sharing the weights as state. FP32 for now.
//
// Assembly: trainable weights (float initializers, minus --freeze matches) become state inputs so
// nothing folds them away; the loss is added (cross-entropy over logits [N, C] or [N, C, d...]
// against an integer label, mean reduction; mse against a float label; or a model output that is
// already a scalar loss); shapes are inferred; reverse-mode autodiff (passes/autodiff.h) builds
// the gradients; an optimizer subgraph with the formulas of torch.optim (SGD with momentum,
// nesterov and weight decay; AdamW with decoupled decay and bias correction) computes the new
// weights and moments, which overwrite their state at the end of train_step. BatchNormalization
// and Dropout take their training form in train_step and their inference form in eval_step
// (compiler/driver/train_forward.h); the running statistics are state under their ONNX names.
// Errors: unknown loss/optimizer, label or loss-output names that clash or are missing, a loss
// output that is not a scalar (loss "output"), no trainable weights, ops without gradient rules
// (all listed at once).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/driver/lr_schedule.h"
#include "compiler/emit/plan_emitter.h"
#include "compiler/ir/graph.h"

namespace precis::driver {

struct TrainOptions {
  std::string loss = "cross-entropy";  // cross-entropy | mse | output
  std::string label = "label";         // the label input added to the training plan
  std::string loss_output;             // the model output the loss reads; empty: the only one
  bool has_ignore_index = false;
  int64_t ignore_index = -100;
  std::string optimizer = "sgd";       // sgd | adamw
  double lr = 0.01, momentum = 0, weight_decay = 0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  LrSchedule schedule;                 // the lr of each step from the base lr (lr_schedule.h)
  std::string freeze;                  // regex: weights it matches are not trained
  bool gradient_outputs = false;       // train_step also outputs each weight's gradient as "<weight>.grad"
  std::map<std::string, std::vector<int64_t>> shapes;  // --shape
  // The source model kept in the plan for precis export: given the names of the plan's state
  // tensors, the model's bytes, self-contained (the caller may leave out the initializers' data
  // that the state holds anyway; external data of the others inlined). Unset: no source model.
  std::function<StatusOr<std::vector<uint8_t>>(const std::set<std::string>& state)> source_model;
};

// The options as one JSON object (the plan's training_config, copied into checkpoint manifests).
std::string TrainingConfigJson(const TrainOptions& o);

struct TrainPlan {
  emit::EmittedPlan plan;
  std::vector<std::string> weights;   // trained weights (state), in plan order
  std::vector<std::string> frozen;    // float initializers left constant
  std::vector<std::string> running_statistics;  // BatchNormalization running mean/var (state, not trained)
  int forward_nodes = 0, backward_nodes = 0, optimizer_nodes = 0;
};

StatusOr<TrainPlan> CompileTraining(ir::Model& model, const TrainOptions& options);

}  // namespace precis::driver
