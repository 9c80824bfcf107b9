// Pattern recognition before precision assignment (precis opt --passes infer,patterns,precision).

// RUN: --passes infer,patterns,precision --precision fp16
// Decomposed LayerNorm (as PyTorch exports it): every statistics node is keep-fp32 with the
// pattern as its reason and reads FP32; the MatMul before it writes FP32 directly; the affine
// Mul after it is an ordinary follow op (FP32 here: it writes the FP32 model output).
// CHECK-LABEL: graph "layernorm"
// CHECK: %h: f32[2,4] = MatMul(%x.f16, %w.f16) name "mm" precision {reason = "compute-op", accumulate = f32, evidence = "writes FP32 directly
// CHECK: %mu: f32[2,1] = ReduceMean(%h) {axes = [-1]} name "mean" precision {reason = "layernorm-pattern", accumulate = f32, evidence = "decomposed LayerNorm of 'h'"}
// CHECK-NEXT: %d: f32[2,4] = Sub(%h, %mu) name "sub" precision {reason = "layernorm-pattern"
// CHECK-NEXT: %sq: f32[2,4] = Pow(%d, %two) name "pow" precision {reason = "layernorm-pattern"
// CHECK-NEXT: %var: f32[2,1] = ReduceMean(%sq) {axes = [-1]} name "var" precision {reason = "layernorm-pattern"
// CHECK-NEXT: %ve: f32[2,1] = Add(%var, %eps) name "add_eps" precision {reason = "layernorm-pattern"
// CHECK-NEXT: %sd: f32[2,1] = Sqrt(%ve) name "sqrt" precision {reason = "layernorm-pattern"
// CHECK-NEXT: %n: f32[2,4] = Div(%d, %sd) name "div" precision {reason = "layernorm-pattern"
// CHECK-NEXT: %g: f32[2,4] = Mul(%n, %gamma) name "scale" precision {reason = "fp32-consumers"
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "layernorm" {
  input %x: f32[2,4]
  const %w: f32[4,4] = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
  const %two: f32[] = [2.0]
  const %eps: f32[] = [1e-05]
  const %gamma: f32[4] = [1.0, 2.0, 3.0, 4.0]
  %h = MatMul(%x, %w) name "mm"
  %mu = ReduceMean(%h) {axes = [-1]} name "mean"
  %d = Sub(%h, %mu) name "sub"
  %sq = Pow(%d, %two) name "pow"
  %var = ReduceMean(%sq) {axes = [-1]} name "var"
  %ve = Add(%var, %eps) name "add_eps"
  %sd = Sqrt(%ve) name "sqrt"
  %n = Div(%d, %sd) name "div"
  %g = Mul(%n, %gamma) name "scale"
  output %g
}
// -----
// RUN: --passes infer,patterns,precision --precision fp16
// Erf-based GELU between two MatMuls runs in 16 bits as one operation.
// CHECK-LABEL: graph "gelu"
// CHECK: %a: f16[2,4] = Div(%h, %sqrt2.f16) name "div" precision {reason = "gelu-pattern", accumulate = f32, evidence = "Erf-based GELU of 'h'"}
// CHECK-NEXT: %e: f16[2,4] = Erf(%a) name "erf" precision {reason = "gelu-pattern"
// CHECK-NEXT: %p: f16[2,4] = Add(%e, %one.f16) name "add" precision {reason = "gelu-pattern"
// CHECK-NEXT: %m: f16[2,4] = Mul(%h, %p) name "mul" precision {reason = "gelu-pattern"
// CHECK-NEXT: %g: f16[2,4] = Mul(%m, %half.f16) name "half" precision {reason = "gelu-pattern"
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "gelu" {
  input %x: f32[2,4]
  const %w: f32[4,4] = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
  const %sqrt2: f32[] = [1.4142135]
  const %one: f32[] = [1.0]
  const %half: f32[] = [0.5]
  %h = MatMul(%x, %w) name "mm"
  %a = Div(%h, %sqrt2) name "div"
  %e = Erf(%a) name "erf"
  %p = Add(%e, %one) name "add"
  %m = Mul(%h, %p) name "mul"
  %g = Mul(%m, %half) name "half"
  %y = MatMul(%g, %w) name "mm2"
  output %y
}
// -----
// RUN: --passes infer,patterns,precision --precision fp16
// Tanh-based GELU: the cube (a Pow, keep-fp32 on its own) runs in 16 bits with the pattern.
// CHECK-LABEL: graph "tanh_gelu"
// CHECK: %c: f16[4] = Pow(%h, %three.f16) name "cube" precision {reason = "gelu-pattern", accumulate = f32, evidence = "Tanh-based GELU of 'h'"}
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "tanh_gelu" {
  input %x: f32[1,4]
  const %w: f32[4,4] = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
  const %three: f32[] = [3.0]
  const %k: f32[] = [0.044715]
  const %s: f32[] = [0.7978846]
  const %shape: i64[1] = [4]
  const %shape2: i64[2] = [1, 4]
  %h0 = MatMul(%x, %w) name "mm"
  %h = Reshape(%h0, %shape) name "flat"
  %c = Pow(%h, %three) name "cube"
  %kc = Mul(%c, %k) name "kc"
  %in = Add(%h, %kc) name "inner"
  %sc = Mul(%in, %s) name "scaled"
  %t = Tanh(%sc) name "tanh"
  %t2 = Reshape(%t, %shape2) name "row"
  %y = MatMul(%t2, %w) name "mm2"
  output %y
}
// -----
// RUN: --passes infer,patterns,precision --precision fp16
// No pattern: a lone Pow keeps the keep-fp32 policy.
// CHECK-LABEL: graph "plain_pow"
// CHECK: %c: f32[4] = Pow(%x, %three) name "pow" precision {reason = "keep-fp32-policy", accumulate = f32}
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "plain_pow" {
  input %x: f32[4]
  const %three: f32[] = [3.0]
  %c = Pow(%x, %three) name "pow"
  output %c
}
// -----
// RUN: --passes infer,patterns,precision --precision fp16
// Squeeze-excitation gate (MobileNetV3 form): the pool reads the 16-bit feature map and writes
// FP32; both 1x1 convolutions, the Relu and the HardSigmoid run FP32; the Mul over the feature
// map stays in 16 bits, reading the gate through one cast of its [1,4,1,1] values.
// CHECK-LABEL: graph "squeeze_excite"
// CHECK: %f: f16[1,4,2,2] = Conv(%x.f16, %w.f16) name "conv" precision {reason = "compute-op"
// CHECK: %s: f32[1,4,1,1] = GlobalAveragePool(%f) name "pool" precision {reason = "squeeze-excite-pattern", accumulate = f32, evidence = "squeeze-excitation gate over 'f'"}
// CHECK-NEXT: %s1: f32[1,2,1,1] = Conv(%s, %w1) name "fc1" precision {reason = "squeeze-excite-pattern"
// CHECK-NEXT: %a: f32[1,2,1,1] = Relu(%s1) name "act" precision {reason = "squeeze-excite-pattern"
// CHECK-NEXT: %s2: f32[1,4,1,1] = Conv(%a, %w2) name "fc2" precision {reason = "squeeze-excite-pattern"
// CHECK-NEXT: %g: f32[1,4,1,1] = HardSigmoid(%s2) name "gate" precision {reason = "squeeze-excite-pattern"
// CHECK-NEXT: %g.f16: f16[1,4,1,1] = Cast(%g) {to = 10}
// CHECK-NEXT: %y: f16[1,4,2,2] = Mul(%f, %g.f16) name "scale" precision {reason = "follows-input"
// CHECK-NOT: Cast(%f)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "squeeze_excite" {
  input %x: f32[1,4,2,2]
  const %w: f32[4,4,1,1] = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
  const %w1: f32[2,4,1,1] = [0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5]
  const %w2: f32[4,2,1,1] = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, -1.0, 1.0]
  %f = Conv(%x, %w) name "conv"
  %s = GlobalAveragePool(%f) name "pool"
  %s1 = Conv(%s, %w1) name "fc1"
  %a = Relu(%s1) name "act"
  %s2 = Conv(%a, %w2) name "fc2"
  %g = HardSigmoid(%s2) name "gate"
  %y = Mul(%f, %g) name "scale"
  %z = Conv(%y, %w) name "conv2"
  output %z
}
// -----
// RUN: --passes infer,patterns,precision --precision fp16
// No pattern: a gate whose Mul scales another tensor than the pooled one is an ordinary Sigmoid.
// CHECK-LABEL: graph "not_squeeze_excite"
// CHECK: %g: f16[1,4,1,1] = Sigmoid(%s2) name "gate" precision {reason = "follows-input"
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "not_squeeze_excite" {
  input %x: f32[1,4,2,2]
  input %other: f32[1,4,2,2]
  const %w: f32[4,4,1,1] = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
  const %w1: f32[2,4,1,1] = [0.5, 0.5, 0.0, 0.0, 0.0, 0.0, 0.5, 0.5]
  const %w2: f32[4,2,1,1] = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, -1.0, 1.0]
  %f = Conv(%x, %w) name "conv"
  %s = GlobalAveragePool(%f) name "pool"
  %s1 = Conv(%s, %w1) name "fc1"
  %a = Relu(%s1) name "act"
  %s2 = Conv(%a, %w2) name "fc2"
  %g = Sigmoid(%s2) name "gate"
  %y = Mul(%other, %g) name "scale"
  %z = Conv(%y, %w) name "conv2"
  output %z
}
