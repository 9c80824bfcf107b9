// Row programs (precis opt --passes fuse-elementwise; CPU plans): reductions over the trailing
// dims fused with their elementwise neighbours. Encoding (runtime/kernels/fused_program.h): five
// ints per instruction; 25 row (length), 26 reduce_sum, 27 reduce_max; 0 load (input, dtype,
// inner, count), 1 const, 2 add, 3 sub, 4 mul, 5 div, 8 neg, 10 sqrt, 11 reciprocal, 17 store
// (output, register, dtype, row dims), 18 exp; dtype 10 = f16, 1 = f32.

// RUN: --passes infer,fuse-elementwise,dce
// Residual Add -> LayerNormalization -> Cast to f16: one program over rows of 8. Scale and bias
// are read along the row (inner 1, count 8); mean = sum / 8, variance = sum((x - mean)^2) / 8,
// then (x - mean) * 1/sqrt(var + eps) * scale + bias, stored as f16.
// CHECK-LABEL: graph "layernorm"
// CHECK: %z: f16[2,4,8] = FusedElementwise(%x, %r, %g, %b) {code = [25, 8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 2, 1, 2, 0, 0, 0, 2, 1, 1, 8, 0, 3, 1, 1, 8, 1, 0, 0, 0, 0, 26, 3, 0, 0, 0, 5, 7, 6, 0, 0, 3, 3, 8, 0, 0, 4, 9, 9, 0, 0, 26, 10, 0, 0, 0, 5, 11, 6, 0, 0, 1, 1, 0, 0, 0, 2, 12, 13, 0, 0, 10, 14, 0, 0, 0, 11, 15, 0, 0, 0, 4, 9, 16, 0, 0, 4, 17, 4, 0, 0, 2, 18, 5, 0, 0, 17, 0, 19, 10, 0], consts = [8.0, 0.001]
// CHECK-SAME: nodes = ["residual", "ln", "down"]} name "fused:down" precision {reason = "fused", accumulate = f32, evidence = "fuses 3 nodes (1 over rows of 8)"}
// CHECK-NOT: LayerNormalization
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "layernorm" {
  input %x: f32[2,4,8]
  input %r: f32[2,4,8]
  const %g: f32[8] = [1, 2, 3, 4, 5, 6, 7, 8]
  const %b: f32[8] = [0, 0, 0, 0, 1, 1, 1, 1]
  %s = Add(%x, %r) name "residual"
  %y = LayerNormalization(%s, %g, %b) {axis = -1, epsilon = 0.001} name "ln"
  %z = Cast(%y) {to = 10} name "down"
  output %z
}

// -----

// RUN: --passes infer,fuse-elementwise,dce
// Attention scores: f16 -> f32, scale, an additive [4,4] mask read along the rows (inner 1, count
// 16), Softmax as exp(x - max) / sum, stored as f16.
// CHECK-LABEL: graph "attention"
// CHECK: %h: f16[2,3,4,4] = FusedElementwise(%q, %mask) {code = [25, 4, 0, 0, 0, 0, 0, 10, 0, 0, 1, 0, 0, 0, 0, 4, 1, 2, 0, 0, 0, 1, 1, 1, 16, 2, 3, 4, 0, 0, 27, 5, 0, 0, 0, 3, 5, 6, 0, 0, 18, 7, 0, 0, 0, 26, 8, 0, 0, 0, 5, 8, 9, 0, 0, 17, 0, 10, 10, 0], consts = [0.5]
// CHECK-SAME: nodes = ["up", "scale", "mask", "softmax", "down"]
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "attention" {
  input %q: f16[2,3,4,4]
  input %mask: f32[4,4]
  const %k: f32[] = [0.5]
  %w = Cast(%q) {to = 1} name "up"
  %a = Mul(%w, %k) name "scale"
  %m = Add(%a, %mask) name "mask"
  %p = Softmax(%m) {axis = -1} name "softmax"
  %h = Cast(%p) {to = 10} name "down"
  output %h
}

// -----

// RUN: --passes infer,fuse-elementwise,dce
// A decomposed RMSNorm (as RMSNormalization expands): the row values mean, + eps, sqrt and
// reciprocal are computed once per row and feed x * inv, which writes the frame again.
// CHECK-LABEL: graph "rmsnorm"
// CHECK: %y: f32[3,16] = FusedElementwise(%x, %g) {code = [25, 16, 0, 0, 0, 0, 0, 1, 0, 0, 4, 1, 1, 0, 0, 26, 2, 0, 0, 0, 1, 0, 0, 0, 0, 5, 3, 4, 0, 0, 1, 1, 0, 0, 0, 2, 5, 6, 0, 0, 10, 7, 0, 0, 0, 11, 8, 0, 0, 0, 4, 1, 9, 0, 0, 0, 1, 1, 1, 16, 4, 10, 11, 0, 0, 17, 0, 12, 1, 0]
// CHECK-SAME: nodes = ["square", "mean", "eps", "sqrt", "inv", "normalize", "gain"]
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 18}}
graph "rmsnorm" {
  input %x: f32[3,16]
  const %axes: i64[1] = [-1]
  const %eps: f32[] = [1e-06]
  const %g: f32[16] = [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8]
  %x2 = Mul(%x, %x) name "square"
  %ms = ReduceMean(%x2, %axes) {keepdims = 1} name "mean"
  %v = Add(%ms, %eps) name "eps"
  %rms = Sqrt(%v) name "sqrt"
  %inv = Reciprocal(%rms) name "inv"
  %n = Mul(%x, %inv) name "normalize"
  %y = Mul(%n, %g) name "gain"
  output %y
}

// -----

// RUN: --passes infer,fuse-elementwise,dce
// A sum over the two trailing axes without keepdims: a row store dropping 2 dims (d = -2), f32[2].
// Not fused: a reduction over a middle axis, a Softmax over a middle axis (opset 13).
// CHECK-LABEL: graph "reductions"
// CHECK: %s: f32[2] = FusedElementwise(%x) {code = [25, 15, 0, 0, 0, 0, 0, 1, 0, 0, 18, 1, 0, 0, 0, 26, 2, 0, 0, 0, 17, 0, 3, 1, -2]
// CHECK: ReduceMax(%t) {axes = [1], keepdims = 1} name "max_middle"
// CHECK: Softmax(%l) {axis = 1} name "softmax_middle"
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 13}}
graph "reductions" {
  input %x: f32[2,3,5]
  input %y: f32[2,3,5]
  input %z: f32[2,3,5]
  const %axes: i64[2] = [1, 2]
  %e = Exp(%x) name "exp"
  %s = ReduceSum(%e, %axes) {keepdims = 0} name "sum"
  %t = Abs(%y) name "abs"
  %u = ReduceMax(%t) {axes = [1], keepdims = 1} name "max_middle"
  %l = Neg(%z) name "neg"
  %o = Softmax(%l) {axis = 1} name "softmax_middle"
  output %s
  output %u
  output %o
}

// -----

// RUN: --passes infer,fuse-elementwise,dce
// Not fused: a LayerNormalization whose Mean output is read (the Neg after it is a lone FP32 node).
// CHECK-LABEL: graph "layernorm_mean"
// CHECK: LayerNormalization(%x, %g, %b) {axis = -1} name "ln_mean"
// CHECK-NOT: FusedElementwise
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "layernorm_mean" {
  input %x: f32[2,3,5]
  const %g: f32[5] = [1, 2, 3, 4, 5]
  const %b: f32[5] = [0, 0, 0, 0, 1]
  %ln, %mean = LayerNormalization(%x, %g, %b) {axis = -1} name "ln_mean"
  %lm = Neg(%ln) name "after_ln"
  output %lm
  output %mean
}

// -----

// RUN: --passes infer,fuse-elementwise,dce
// Before opset 13 Softmax flattens its input to 2-D at its axis: rows of 3 x 5 = 15.
// CHECK-LABEL: graph "legacy_softmax"
// CHECK: %o: f32[2,3,5] = FusedElementwise(%x) {code = [25, 15, 0, 0, 0, 0, 0, 1, 0, 0, 8, 1, 0, 0, 0, 27, 2, 0, 0, 0, 3, 2, 3, 0, 0, 18, 4, 0, 0, 0, 26, 5, 0, 0, 0, 5, 5, 6, 0, 0, 17, 0, 7, 1, 0]
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 12}}
graph "legacy_softmax" {
  input %x: f32[2,3,5]
  %n = Neg(%x) name "neg"
  %o = Softmax(%n) {axis = 1} name "softmax"
  output %o
}

// -----

// RUN: --passes infer,fuse-elementwise,dce
// An expensive producer (GELU) of a layer norm stays out of the row program, where it would be
// evaluated in each of the 3 passes: GELU and the residual Add after it are one elementwise
// kernel, the layer norm reads their result.
// CHECK-LABEL: graph "expensive_producer"
// CHECK: %a: f32[2,8] = FusedElementwise(%x, %r) {code = [0, 0, 1, 0, 0, 22, 0, 0, 0, 0, 0, 1, 1, 0, 0, 2, 1, 2, 0, 0, 17, 0, 3, 1, 0]
// CHECK-SAME: nodes = ["gelu", "residual"]
// CHECK: %y: f32[2,8] = FusedElementwise(%a, %s) {code = [25, 8,
// CHECK-SAME: nodes = ["ln"]
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 20}}
graph "expensive_producer" {
  input %x: f32[2,8]
  input %r: f32[2,8]
  const %s: f32[8] = [1, 2, 3, 4, 5, 6, 7, 8]
  %g = Gelu(%x) name "gelu"
  %a = Add(%g, %r) name "residual"
  %y = LayerNormalization(%a, %s) {axis = -1} name "ln"
  output %y
}

// -----

// RUN: --passes infer,fuse-elementwise,dce
// InstanceNormalization: a row per (n, c) over the spatial dims (4 x 5 = 20); scale and bias [3]
// are per channel, read once per row (inner 20, count 3), not broadcast as numpy would [3].
// CHECK-LABEL: graph "instance_norm"
// CHECK: %y: f32[2,3,4,5] = FusedElementwise(%x, %s, %b) {code = [25, 20, 0, 0, 0, 0, 0, 1, 0, 0, 12, 1, 0, 0, 0, 0, 1, 1, 20, 3, 0, 2, 1, 20, 3,
// CHECK-SAME: nodes = ["relu", "in"]
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "instance_norm" {
  input %x: f32[2,3,4,5]
  const %s: f32[3] = [1, 2, 3]
  const %b: f32[3] = [0, 1, 0]
  %r = Relu(%x) name "relu"
  %y = InstanceNormalization(%r, %s, %b) {epsilon = 0.001} name "in"
  output %y
}
