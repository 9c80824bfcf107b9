// Learning-rate schedules as IR (see lr_schedule.h): closed forms of torch.optim.lr_scheduler's
// CosineAnnealingLR, StepLR and LinearLR warmup in f64 over the plan's step counter.
#include "compiler/driver/lr_schedule.h"

#include <numbers>

namespace precis::driver {
namespace {

constexpr ir::DType kF64 = ir::DType::kF64;

ir::Value* ToF64(ops::IrBuilder& b, ir::Value* v) { return b.Op("Cast", {v}, {ops::GradAttr::Int("to", int64_t(ir::DTypeToOnnx(kF64)))}); }

// The schedule after warmup at step t (counted from its own start), horizon `horizon` (cosine).
ir::Value* MainSchedule(ops::IrBuilder& b, const LrSchedule& s, ir::Value* base, ir::Value* t, ir::Value* horizon) {
  if (s.kind == "cosine") {
    // eta_min + (base - eta_min) * (1 + cos(pi * t / T)) / 2
    ir::Value* angle = b.Op("Div", {b.Op("Mul", {t, b.Scalar(std::numbers::pi, kF64)}), horizon});
    ir::Value* half = b.Op("Mul", {b.Op("Add", {b.Op("Cos", {angle}), b.Scalar(1.0, kF64)}), b.Scalar(0.5, kF64)});
    return b.Op("Add", {b.Scalar(s.eta_min, kF64), b.Op("Mul", {b.Op("Sub", {base, b.Scalar(s.eta_min, kF64)}), half})});
  }
  if (s.kind == "step") {
    // base * gamma^floor(t / step_size)
    ir::Value* k = b.Op("Floor", {b.Op("Div", {t, b.Scalar(double(s.step_size), kF64)})});
    return b.Op("Mul", {base, b.Op("Pow", {b.Scalar(s.gamma, kF64), k})});
  }
  return base;
}

}  // namespace

Status CheckLrSchedule(const LrSchedule& s) {
  if (s.kind != "constant" && s.kind != "cosine" && s.kind != "step")
    return InvalidArgument("unknown learning-rate schedule '" + s.kind + "' (constant, cosine or step)");
  if (s.warmup_steps < 0) return InvalidArgument("--warmup-steps must be 0 or more");
  if (s.warmup_steps > 0 && !(s.warmup_start_factor > 0 && s.warmup_start_factor <= 1))
    return InvalidArgument("--warmup-start-factor must be in (0, 1] (torch's LinearLR)");
  if (s.kind == "step" && s.step_size <= 0) return InvalidArgument("--lr-schedule step needs --lr-step-size N (N > 0)");
  if (s.total_steps < 0) return InvalidArgument("--lr-total-steps must be 0 (set by precis train) or more");
  if (s.kind == "cosine" && s.total_steps > 0 && s.total_steps <= s.warmup_steps)
    return InvalidArgument("--lr-total-steps " + std::to_string(s.total_steps) + " leaves no step after " + std::to_string(s.warmup_steps) +
                           " warmup steps for the cosine schedule");
  return Status::Ok();
}

bool NeedsTotalSteps(const LrSchedule& s) { return s.kind == "cosine"; }

ir::Value* ScheduledLr(ops::IrBuilder& b, const LrSchedule& s, ir::Value* base_lr, ir::Value* step, ir::Value* total_steps) {
  ir::Value* base = ToF64(b, base_lr);
  if (s.kind == "constant" && s.warmup_steps == 0) return base;
  ir::Value* t = ToF64(b, step);
  ir::Value* warmup = b.Scalar(double(s.warmup_steps), kF64);
  ir::Value* horizon = total_steps ? b.Op("Sub", {ToF64(b, total_steps), warmup}) : nullptr;
  if (s.warmup_steps == 0) return MainSchedule(b, s, base, t, horizon);
  ir::Value* after = MainSchedule(b, s, base, b.Op("Max", {b.Op("Sub", {t, warmup}), b.Scalar(0.0, kF64)}), horizon);
  // LinearLR: base * (f + (1 - f) * min(t, W) / W)
  double f = s.warmup_start_factor;
  ir::Value* ramp = b.Op("Add", {b.Scalar(f, kF64), b.Op("Mul", {b.Op("Div", {t, warmup}), b.Scalar(1 - f, kF64)})});
  return b.Op("Where", {b.Op("Less", {t, warmup}), b.Op("Mul", {base, ramp}), after});
}

}  // namespace precis::driver
