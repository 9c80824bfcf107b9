// Elementwise fusion (precis opt --passes fuse-elementwise): single-output groups grown along
// values read by one node only. Program encoding (runtime/kernels/fused_program.h): five ints per
// instruction (op, a, b, c, d); 0 load (input, dtype, inner, count: element (i / inner) % count, or
// element i when both are 0), 1 const, 2 add, 3 sub, 4 mul, 12 relu, 16 round, 17 store;
// dtype 10 = f16, 1 = f32.

// RUN: --passes infer,fuse-elementwise,dce
// %d is read by two nodes (the Cast and the Neg): the chain mul..scale is one group ending there.
// The scalar constant becomes a program constant, the one-element input %s is a broadcast load
// (inner 1, count 1), and each f16 intermediate is rounded to f16 (op 16) as the unfused steps store it.
// The Cast to f32 and the Sub that reads it twice form the second group; the Neg is a group of
// one, fused anyway because it reads and writes f16 (generated code converts in vectors).
// CHECK-LABEL: graph "chain"
// CHECK: %d: f16[2,3] = FusedElementwise(%x, %y, %s) {code = [0, 0, 10, 0, 0, 1, 0, 0, 0, 0, 4, 0, 1, 0, 0, 16, 2, 10, 0, 0, 0, 1, 10, 0, 0, 2, 3, 4, 0, 0, 16, 5, 10, 0, 0, 12, 6, 0, 0, 0, 16, 7, 10, 0, 0, 0, 2, 10, 1, 1, 4, 8, 9, 0, 0, 17, 0, 10, 10, 0], consts = [0.5], entry = "fused_{{[0-9a-f]+}}", nodes = ["mul", "add", "relu", "scale"]} name "fused:scale"
// CHECK-NEXT: %f: f32[2,3] = FusedElementwise(%d) {code = [0, 0, 10, 0, 0, 3, 0, 0, 0, 0, 17, 0, 1, 1, 0], {{.*}} nodes = ["up", "twice"]} name "fused:twice"
// CHECK-NEXT: %g: f16[2,3] = FusedElementwise(%d) {code = [0, 0, 10, 0, 0, 8, 0, 0, 0, 0, 17, 0, 1, 10, 0], {{.*}} nodes = ["branch"]} name "fused:branch" precision {reason = "fused", accumulate = f32, evidence = "fuses 1 elementwise node"}
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "chain" {
  input %x: f16[2,3]
  input %y: f16[2,3]
  input %s: f16[1]
  const %half: f16[] = [0.5]
  %a = Mul(%x, %half) name "mul"
  %b = Add(%a, %y) name "add"
  %c = Relu(%b) name "relu"
  %d = Mul(%c, %s) name "scale"
  %e = Cast(%d) {to = 1} name "up"
  %f = Sub(%e, %e) name "twice"
  %g = Neg(%d) name "branch"
  output %f
  output %g
}
// -----
// RUN: --passes infer,fuse-elementwise,dce
// Periodic broadcasts: a per-channel bias [3,1] of a [2,3,4] output is read at (i / 4) % 3, a
// last-axis vector [4] at i % 4 (inner 1), a [2,1,1] one at i / 12 (count 2).
// CHECK-LABEL: graph "broadcast"
// CHECK: %y: f32[2,3,4] = FusedElementwise(%x, %b, %w, %r) {code = [0, 0, 1, 0, 0, 0, 1, 1, 4, 3, 2, 0, 1, 0, 0, 12, 2, 0, 0, 0, 0, 2, 1, 1, 4, 4, 3, 4, 0, 0, 0, 3, 1, 12, 2, 3, 5, 6, 0, 0, 17, 0, 7, 1, 0]
// CHECK-SAME: nodes = ["bias", "relu", "scale", "shift"]
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "broadcast" {
  input %x: f32[2,3,4]
  input %b: f32[3,1]
  input %w: f32[4]
  input %r: f32[2,1,1]
  %u = Add(%x, %b) name "bias"
  %v = Relu(%u) name "relu"
  %m = Mul(%v, %w) name "scale"
  %y = Sub(%m, %r) name "shift"
  output %y
}
// -----
// RUN: --passes infer,fuse-elementwise,dce
// Not fused: an input keeping two blocks of the output's dims ([2,1,4] of a [2,3,4] output);
// integer tensors. A value that is a graph output (%t) joins the group of its only reader as a
// second output, stored after output 0 (op 17 with output index 1).
// CHECK-LABEL: graph "unfused"
// CHECK: %u: f32[2,3,4] = Add(%x, %bias)
// CHECK: %v: f32[2,3,4] = Relu(%u)
// CHECK: %w: f32[2,3,4], %t: f32[2,3,4] = FusedElementwise(%x) {code = [0, 0, 1, 0, 0, 8, 0, 0, 0, 0, 12, 1, 0, 0, 0, 17, 1, 1, 1, 0, 17, 0, 2, 1, 0]
// CHECK-SAME: nodes = ["neg", "r2"]
// CHECK: %k: i64[3] = Add(%i, %i)
// CHECK: %m: i64[3] = Mul(%k, %i)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "unfused" {
  input %x: f32[2,3,4]
  input %i: i64[3]
  input %bias: f32[2,1,4]
  %u = Add(%x, %bias) name "bias"
  %v = Relu(%u) name "r1"
  %t = Neg(%x) name "neg"
  %w = Relu(%t) name "r2"
  %k = Add(%i, %i) name "iadd"
  %m = Mul(%k, %i) name "imul"
  output %v
  output %t
  output %w
  output %m
}

// -----

// RUN: --passes infer,fuse-elementwise,dce
// A lone FP32 node stays as it is (generated code gains nothing over the fast kernel); the lone
// BF16 one is fused.
// CHECK-LABEL: graph "lone"
// CHECK: %a: f32[4,8] = Relu(%x) name "r32"
// CHECK: %b: bf16[4,8] = FusedElementwise(%y) {{.*}} nodes = ["r16"]} name "fused:r16"
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "lone" {
  input %x: f32[4,8]
  input %y: bf16[4,8]
  %a = Relu(%x) name "r32"
  %b = Relu(%y) name "r16"
  output %a
  output %b
}
// -----
// RUN: --passes infer,fuse-elementwise,dce
// Values read by several members of a group: %p is read by "q1" and "q2", both in the group of
// "join", which becomes a DAG reading %p's inputs (p is a graph output too: the group's second
// output, stored before output 0). %a is read inside a group ("div", "gate") and outside it
// ("outside"): it stays the output of its own node and the group's input; the erf chain reads
// the register of %a twice (load 0: div's and gate's operand).
// CHECK-LABEL: graph "dag"
// CHECK: %a: f32[2,3] = Add(%x, %b) name "bias"
// CHECK-NEXT: %g: f32[2,3] = FusedElementwise(%a) {code = [0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 5, 0, 1, 0, 0, 19, 2, 0, 0, 0, 2, 3, 1, 0, 0, 4, 0, 4, 0, 0, 17, 0, 5, 1, 0]
// CHECK-SAME: nodes = ["div", "erf", "add", "gate"]
// CHECK-NEXT: %h: f32[2,3] = Neg(%a) name "outside"
// CHECK-NEXT: %s: f32[2,3], %p: f32[2,3] = FusedElementwise(%x, %b) {code = [0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 4, 0, 1, 0, 0, 8, 2, 0, 0, 0, 9, 2, 0, 0, 0, 2, 3, 4, 0, 0, 17, 1, 2, 1, 0, 17, 0, 5, 1, 0]
// CHECK-SAME: nodes = ["p", "q1", "q2", "join"]
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "dag" {
  input %x: f32[2,3]
  input %b: f32[2,3]
  const %c: f32[] = [1.5]
  %a = Add(%x, %b) name "bias"
  %d = Div(%a, %c) name "div"
  %e = Erf(%d) name "erf"
  %f = Add(%e, %c) name "add"
  %g = Mul(%a, %f) name "gate"
  %h = Neg(%a) name "outside"
  %p = Mul(%x, %b) name "p"
  %q = Neg(%p) name "q1"
  %r = Abs(%p) name "q2"
  %s = Add(%q, %r) name "join"
  output %g
  output %h
  output %s
  output %p
}
