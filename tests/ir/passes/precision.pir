// Precision assignment (precis opt --passes infer,precision): which nodes run in 16 bits, where
// the casts go, and the reason recorded on each node.

// RUN: --passes infer,precision --precision fp16
// No float tensors: nothing changes, no casts, every node says why.
// CHECK-LABEL: graph "integers"
// CHECK-NOT: Cast
// CHECK: %y: i64[4] = Add(%a, %b) precision {reason = "no-fp32-tensors"}
// CHECK-NOT: Cast
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "integers" {
  input %a: i64[4]
  input %b: i64[4]
  %y = Add(%a, %b)
  output %y
}
// -----
// RUN: --passes infer,precision --precision fp16
// A CNN block: weights converted at compile time, one cast in (the FP32 model input), Relu
// follows the Conv, and the last Conv writes FP32 itself for the FP32 model output.
// CHECK-LABEL: graph "cnn"
// CHECK-DAG: const %w1.f16: f16[2,1,1,1] = [
// CHECK-DAG: const %w2.f16: f16[1,2,1,1] = [
// CHECK: %x.f16: f16[1,1,2,2] = Cast(%x) {to = 10}
// CHECK-NEXT: %c1: f16[1,2,2,2] = Conv(%x.f16, %w1.f16) name "c1" precision {reason = "compute-op", accumulate = f32}
// CHECK-NEXT: %r1: f16[1,2,2,2] = Relu(%c1) name "r1" precision {reason = "follows-input", accumulate = f32}
// CHECK-NEXT: %y: f32[1,1,2,2] = Conv(%r1, %w2.f16) name "c2" precision {reason = "compute-op", accumulate = f32, evidence = "writes FP32 directly: every consumer needs FP32"}
// CHECK-NOT: Cast
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "cnn" {
  input %x: f32[1,1,2,2]
  const %w1: f32[2,1,1,1] = [0.5, -0.25]
  const %w2: f32[1,2,1,1] = [1.5, 2.0]
  %c1 = Conv(%x, %w1) name "c1"
  %r1 = Relu(%c1) name "r1"
  %y = Conv(%r1, %w2) name "c2"
  output %y
}
// -----
// RUN: --passes infer,precision --precision fp16
// Attention: the score MatMul writes FP32 for the scale and the softmax (never stored in 16
// bits); the softmax output is cast down once for the second MatMul.
// CHECK-LABEL: graph "attention"
// CHECK: %s: f32[1,2,2] = MatMul(%q.f16, %k.f16) name "scores" precision {reason = "compute-op", accumulate = f32, evidence = "writes FP32 directly: every consumer needs FP32"}
// CHECK-NEXT: %sd: f32[1,2,2] = Div(%s, %scale) name "scale" precision {reason = "softmax-input", accumulate = f32, evidence = "feeds Softmax 'softmax'
// CHECK-NEXT: %p: f32[1,2,2] = Softmax(%sd) {axis = -1} name "softmax" precision {reason = "keep-fp32-policy", accumulate = f32}
// CHECK-NEXT: %p.f16: f16[1,2,2] = Cast(%p) {to = 10}
// CHECK-NEXT: %v.f16: f16[1,2,2] = Cast(%v) {to = 10}
// CHECK-NEXT: %o: f32[1,2,2] = MatMul(%p.f16, %v.f16)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "attention" {
  input %q: f32[1,2,2]
  input %k: f32[1,2,2]
  input %v: f32[1,2,2]
  const %scale: f32[] = [1.4142135]
  %s = MatMul(%q, %k) name "scores"
  %sd = Div(%s, %scale) name "scale"
  %p = Softmax(%sd) {axis = -1} name "softmax"
  %o = MatMul(%p, %v) name "context"
  output %o
}
// -----
// RUN: --passes infer,precision --precision bf16
// A residual stream feeding a normalization stays FP32: the Add reads the MatMul's FP32 output,
// and only the MatMul's operands are 16-bit.
// CHECK-LABEL: graph "residual"
// CHECK: %m: f32[2,4] = MatMul(%x.bf16, %w.bf16) name "mm" precision {reason = "compute-op", accumulate = f32
// CHECK-NEXT: %r: f32[2,4] = Add(%x, %m) name "residual" precision {reason = "keep-fp32-consumer", accumulate = f32, evidence = "feeds ReduceMean 'mean'
// CHECK-NEXT: %y: f32[2,1] = ReduceMean(%r) {axes = [1]} name "mean" precision {reason = "keep-fp32-policy", accumulate = f32}
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "residual" {
  input %x: f32[2,4]
  const %w: f32[4,4] = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
  %m = MatMul(%x, %w) name "mm"
  %r = Add(%x, %m) name "residual"
  %y = ReduceMean(%r) {axes = [1]} name "mean"
  output %y
}
// -----
// RUN: --passes infer,precision --precision fp16
// Resize runs in 16 bits but its scales stay FP32 (a classic converter type error); integer
// Shape plumbing is untouched.
// CHECK-LABEL: graph "resize"
// CHECK: %u: f16[1,1,4,4] = Resize(%c, _, %scales) {mode = "nearest"} name "up" precision {reason = "follows-input"}
// CHECK-NOT: scales.f16
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "resize" {
  input %x: f32[1,1,2,2]
  const %w: f32[1,1,1,1] = [2.0]
  const %scales: f32[4] = [1.0, 1.0, 2.0, 2.0]
  %c = Conv(%x, %w) name "conv"
  %u = Resize(%c, _, %scales) {mode = "nearest"} name "up"
  %y = Conv(%u, %w) name "conv2"
  output %y
}
// -----
// RUN: --passes infer,precision --precision fp16 --keep-fp32 Relu
// User override: Relu kept in FP32, recorded as such; the Conv before it writes FP32 directly
// and the Conv after it reads a cast.
// CHECK-LABEL: graph "override"
// CHECK: %c: f32[1,1,2,2] = Conv(%x.f16, %w.f16)
// CHECK-NEXT: %r: f32[1,1,2,2] = Relu(%c) name "relu" precision {reason = "user-override", accumulate = f32, evidence = "kept in FP32 by --keep-fp32/--keep-fp32-nodes"}
// CHECK-NEXT: %r.f16: f16[1,1,2,2] = Cast(%r) {to = 10}
// CHECK-NEXT: %y: f32[1,1,2,2] = Conv(%r.f16, %w.f16)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "override" {
  input %x: f32[1,1,2,2]
  const %w: f32[1,1,1,1] = [2.0]
  %c = Conv(%x, %w) name "conv"
  %r = Relu(%c) name "relu"
  %y = Conv(%r, %w) name "conv2"
  output %y
}
// -----
// RUN-ERROR: --passes infer,precision --precision fp16 --keep-fp32-nodes relu --force-low relu
// Contradictory overrides are an error naming the node.
// CHECK: Relu 'relu' (node 1): both kept in FP32 and forced low by the overrides
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "contradiction" {
  input %x: f32[1,1,2,2]
  const %w: f32[1,1,1,1] = [2.0]
  %c = Conv(%x, %w) name "conv"
  %r = Relu(%c) name "relu"
  output %r
}
// -----
// RUN: --passes infer,precision --precision fp16 --no-keep-io-types
// Without --keep-io-types the model output stays in 16 bits (no final cast).
// CHECK-LABEL: graph "noio"
// CHECK: %r: f16[1,1,2,2] = Relu(%c)
// CHECK-NOT: Cast(%r)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "noio" {
  input %x: f32[1,1,2,2]
  const %w: f32[1,1,1,1] = [2.0]
  %c = Conv(%x, %w) name "conv"
  %r = Relu(%c) name "relu"
  output %r
}
