// Learning-rate schedules of training plans, computed inside the plan from its step counter (the
// number of optimizer steps applied so far, state "optimizer.step") so that a schedule follows
// the applied steps, survives a checkpoint and needs nothing from the host per step.
//
// With t the steps applied before the current one, base the state "optimizer.lr" and W the
// warmup steps, the lr of the current step is, as torch.optim.lr_scheduler stepped once after
// every optimizer.step():
//   constant: base
//   cosine:   eta_min + (base - eta_min) * (1 + cos(pi * t / T)) / 2     CosineAnnealingLR(T_max=T)
//   step:     base * gamma^floor(t / step_size)                          StepLR(step_size, gamma)
// and with W > 0, SequentialLR([LinearLR(start_factor=f, end_factor=1, total_iters=W), S],
// milestones=[W]): base * (f + (1 - f) * t / W) for t < W, then S at t - W; the cosine's T is then
// total - W. T (the total steps) comes from the state "optimizer.total_steps", set at compile time
// (--lr-total-steps) or by `precis train` from its --epochs/--steps when it is still 0. The scalar
// arithmetic runs in f64, as torch's Python floats do, and the lr is rounded to f32 once.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/ops/gradient.h"

namespace precis::driver {

struct LrSchedule {
  std::string kind = "constant";  // constant | cosine | step
  int64_t warmup_steps = 0;
  double warmup_start_factor = 1.0 / 3;  // LinearLR's default
  int64_t total_steps = 0;               // cosine's horizon, warmup included; 0: set by precis train
  double eta_min = 0;                    // cosine's floor
  int64_t step_size = 0;                 // step: decay every step_size steps (required)
  double gamma = 0.1;                    // step: StepLR's default factor
};

// Errors: an unknown kind, a step schedule without a step size, factors out of range.
Status CheckLrSchedule(const LrSchedule& s);

// Whether the schedule reads "optimizer.total_steps" (cosine).
bool NeedsTotalSteps(const LrSchedule& s);

// The f64 lr of the current step from the f32 states base lr, step (applied steps) and, when
// NeedsTotalSteps, total steps (nullptr otherwise).
ir::Value* ScheduledLr(ops::IrBuilder& b, const LrSchedule& s, ir::Value* base_lr, ir::Value* step, ir::Value* total_steps);

}  // namespace precis::driver
