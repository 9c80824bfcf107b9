// Elementwise fusion (precis opt --passes fuse-elementwise): single-output groups grown along
// values read by one node only. Program encoding (runtime/kernels/fused_program.h): four ints per
// instruction (op, a, b, c); 0 load, 1 const, 2 add, 3 sub, 4 mul, 12 relu, 16 round, 17 store;
// dtype 10 = f16, 1 = f32.

// RUN: --passes infer,fuse-elementwise,dce
// %d is read by two nodes (the Cast and the Neg): the chain mul..scale is one group ending there.
// The scalar constant becomes a program constant, the one-element input %s is a broadcast load
// (flag 1), and each f16 intermediate is rounded to f16 (op 16) as the unfused steps store it.
// The Cast to f32 and the Sub that reads it twice form the second group; the Neg stays alone.
// CHECK-LABEL: graph "chain"
// CHECK: %d: f16[2,3] = FusedElementwise(%x, %y, %s) {code = [0, 0, 10, 0, 1, 0, 0, 0, 4, 0, 1, 0, 16, 2, 10, 0, 0, 1, 10, 0, 2, 3, 4, 0, 16, 5, 10, 0, 12, 6, 0, 0, 16, 7, 10, 0, 0, 2, 10, 1, 4, 8, 9, 0, 17, 0, 10, 10], consts = [0.5], entry = "fused_{{[0-9a-f]+}}", nodes = ["mul", "add", "relu", "scale"]} name "fused:scale"
// CHECK-NEXT: %f: f32[2,3] = FusedElementwise(%d) {code = [0, 0, 10, 0, 3, 0, 0, 0, 17, 0, 1, 1], {{.*}} nodes = ["up", "twice"]} name "fused:twice"
// CHECK-NEXT: %g: f16[2,3] = Neg(%d) name "branch"
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
// Not fused: a single node; inputs of other shapes (a per-channel bias broadcast); a value that is
// a graph output (%t is kept, so the Relu after it stays a step of its own); integer tensors.
// CHECK-LABEL: graph "unfused"
// CHECK-NOT: FusedElementwise
// CHECK: %u: f32[1,2,2] = Add(%x, %bias)
// CHECK: %v: f32[1,2,2] = Relu(%u)
// CHECK: %t: f32[1,2,2] = Neg(%x)
// CHECK: %w: f32[1,2,2] = Relu(%t)
// CHECK: %k: i64[3] = Add(%i, %i)
// CHECK: %m: i64[3] = Mul(%k, %i)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "unfused" {
  input %x: f32[1,2,2]
  input %i: i64[3]
  const %bias: f32[1,2,1] = [1.0, 2.0]
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
