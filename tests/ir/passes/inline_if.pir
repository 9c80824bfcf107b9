// If with a condition known at compile time is replaced by the branch it takes.

// RUN: --passes inline-if,infer
// CHECK-LABEL: graph "const_if"
// CHECK-NOT: If(
// CHECK: %choice/t: f32[2] = Mul(%x, %two)
// CHECK-NEXT: %y: f32[2] = Identity(%choice/t) name "y.inlined"
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "const_if" {
  input %x: f32[2]
  const %cond: bool[] = [true]
  const %two: f32[] = [2.0]
  %y = If(%cond) {then_branch = graph "then" {
    %t = Mul(%x, %two)
    output %t
  }, else_branch = graph "else" {
    %e = Neg(%x)
    output %e
  }} name "choice"
  output %y
}
// -----
// RUN: --passes inline-if
// No change: the condition is an input (computed at run time).
// CHECK-LABEL: graph "runtime_if"
// CHECK: %y = If(%cond)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "runtime_if" {
  input %x: f32[2]
  input %cond: bool[]
  %y = If(%cond) {then_branch = graph "then" {
    %t = Neg(%x)
    output %t
  }, else_branch = graph "else" {
    %e = Abs(%x)
    output %e
  }} name "choice"
  output %y
}
