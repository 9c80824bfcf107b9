// Cast folding and fusion (precis opt --passes fold-casts / fuse-casts).

// RUN: --passes infer,fold-casts
// Round trip through a wider type: removed.
// CHECK-LABEL: graph "roundtrip"
// CHECK-NOT: Cast
// CHECK: %y: f16[4] = Relu(%x)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "roundtrip" {
  input %x: f16[4]
  %a = Cast(%x) {to = 1}
  %b = Cast(%a) {to = 10}
  %y = Relu(%b)
  output %y
}
// -----
// RUN: --passes infer,fold-casts
// A lossy first step rounds, so f32 -> f16 -> f32 stays (no change).
// CHECK-LABEL: graph "lossy"
// CHECK: %a: f16[4] = Cast(%x) {to = 10}
// CHECK-NEXT: %b: f32[4] = Cast(%a) {to = 1}
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "lossy" {
  input %x: f32[4]
  %a = Cast(%x) {to = 10}
  %b = Cast(%a) {to = 1}
  output %b
}
// -----
// RUN: --passes infer,fold-casts
// An exact first step: f16 -> f32 -> f64 becomes one cast; a same-type cast disappears.
// CHECK-LABEL: graph "chain"
// CHECK-NOT: %a
// CHECK: %b: f64[4] = Cast(%x) {to = 11}
// CHECK-NEXT: %d: f64[4] = Abs(%b)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "chain" {
  input %x: f16[4]
  %a = Cast(%x) {to = 1}
  %b = Cast(%a) {to = 11}
  %c = Cast(%b) {to = 11}
  %d = Abs(%c)
  output %d
}
// -----
// RUN: --passes infer,fold-casts
// Integer casts are folded only when exact: i32 -> i64 -> i32 is a round trip; i64 -> i8 -> i64 is not.
// CHECK-LABEL: graph "ints"
// CHECK: %y: i32[2] = Neg(%x)
// CHECK: %n: i8[2] = Cast(%w) {to = 3}
// CHECK-NEXT: %m: i64[2] = Cast(%n) {to = 7}
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "ints" {
  input %x: i32[2]
  input %w: i64[2]
  %a = Cast(%x) {to = 7}
  %b = Cast(%a) {to = 6}
  %y = Neg(%b)
  %n = Cast(%w) {to = 3}
  %m = Cast(%n) {to = 7}
  output %y
  output %m
}
// -----
// RUN: --passes infer,fuse-casts
// A cast right after a computing node folds into it: the Softmax writes f16 itself.
// CHECK-LABEL: graph "fuse"
// CHECK: %p: f16[2,2] = Softmax(%x) {axis = -1} precision {reason = "", evidence = "writes f16 directly (cast fused)"}
// CHECK-NEXT: %y: f16[2,2] = Relu(%p)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "fuse" {
  input %x: f32[2,2]
  %p = Softmax(%x) {axis = -1}
  %h = Cast(%p) {to = 10}
  %y = Relu(%h)
  output %y
}
// -----
// RUN: --passes infer,fuse-casts
// No fusion: the producer's value has another use, and a data-movement producer.
// CHECK-LABEL: graph "nofuse"
// CHECK: %h: f16[2,2] = Cast(%p) {to = 10}
// CHECK: %u: f16[4] = Cast(%t) {to = 10}
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "nofuse" {
  input %x: f32[2,2]
  const %shape: i64[1] = [4]
  %p = Softmax(%x) {axis = -1}
  %h = Cast(%p) {to = 10}
  %t = Reshape(%x, %shape)
  %u = Cast(%t) {to = 10}
  %y = Relu(%h)
  output %y
  output %p
  output %u
}
// -----
// RUN: --passes infer,fuse-casts
// A cast after a Transpose that feeds it alone moves in front of it: the Transpose moves f16.
// A Transpose read by another node too keeps its cast behind it.
// CHECK-LABEL: graph "hoist"
// CHECK: %x.f16: f16[2,3] = Cast(%x) {to = 10}
// CHECK-NEXT: %t: f16[3,2] = Transpose(%x.f16) {perm = [1, 0]} precision {reason = "follows-input", evidence = "the cast to f16 after it moved before it"}
// CHECK-NEXT: %y: f16[3,2] = Relu(%t)
// CHECK: %v: f16[3,2] = Cast(%u) {to = 10}
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "hoist" {
  input %x: f32[2,3]
  input %w: f32[2,3]
  %t = Transpose(%x) {perm = [1, 0]}
  %c = Cast(%t) {to = 10}
  %y = Relu(%c)
  %u = Transpose(%w) {perm = [1, 0]}
  %v = Cast(%u) {to = 10}
  %z = Neg(%u)
  output %y
  output %v
  output %z
}
