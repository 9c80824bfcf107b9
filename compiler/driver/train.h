// Training plans: from an ONNX forward model, a plan with programs `train_step` (inputs + label ->
// loss and the lr the step used; weights, optimizer moments and the step counter updated in place) and `eval_step` (loss
// and the model's outputs, nothing updated), sharing the weights as state.
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
// Mixed precision (--precision fp16|bf16): the graphs are assembled and differentiated in FP32,
// then the precision pass paints the whole training graph (forward and backward) and the
// evaluation graph with the inference rules, while the optimizer, the loss scaler and gradient
// unscaling/clipping are pinned to FP32 (reason optimizer-fp32). The weights stay FP32 masters in
// the state; each step casts them once to 16-bit working copies for the forward and backward
// products, and weight gradients come out of their products in FP32. Loss scaling follows
// PyTorch's GradScaler: loss x scale before the backward pass, one UnscaleGradients over all
// gradients (x 1/scale, non-finite check), the optimizer's state updates predicated on a finite
// step (a skipped step leaves weights, moments and the step counter bitwise unchanged), then the
// scale backs off (x backoff, tracker reset) or grows (x growth after growth_interval clean steps,
// kept when the product is not finite). train_step then also outputs loss_scale (the scale the
// step used) and skipped (bool); with clipping, grad_norm (the unscaled total norm).
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
  std::string target = "cpu";          // cpu | cuda: the plan's backend (cuda: every step must have a CUDA kernel)
  double lr = 0.01, momentum = 0, weight_decay = 0;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  LrSchedule schedule;                 // the lr of each step from the base lr (lr_schedule.h)
  std::string freeze;                  // regex: weights it matches are not trained
  bool gradient_outputs = false;       // train_step also outputs each weight's gradient as "<weight>.grad"
  std::map<std::string, std::vector<int64_t>> shapes;  // --shape
  std::string precision = "fp32";      // fp32 | fp16 | bf16
  // Loss scaling: dynamic | none | a positive number (a static scale); empty: dynamic for fp16,
  // none otherwise. init_scale and growth_interval apply to dynamic scaling.
  std::string loss_scale;
  double init_scale = 65536, growth_factor = 2, backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool init_scale_given = false, growth_interval_given = false;
  double clip_grad_norm = 0;           // > 0: the gradients' total L2 norm (unscaled) is clipped to it
  // CPU plans: fuse elementwise chains of both programs and generate their code (compile.h
  // FuseAndGenerate; program outputs and state updates stay tensors); `--no-codegen`.
  bool codegen = true;
  // With code generation: reductions over rows (forward Softmax/LayerNormalization and their
  // gradients' ReduceSums) fuse too; `--no-row-fusion` keeps them apart.
  bool fuse_rows = true;
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
  int fused_kernels = 0, fused_nodes = 0;  // generated elementwise kernels and the nodes they replaced
  std::string loss_scaling;           // "none", "dynamic" or "static"
  // Mixed precision: the precision report of the training graph and the FP32 plan's arena.
  std::string report_json, report_text;
  size_t fp32_arena_bytes = 0;
};

StatusOr<TrainPlan> CompileTraining(ir::Model& model, const TrainOptions& options);

}  // namespace precis::driver
