// BatchNormalization folding into the Conv before it (precis opt --passes fold-batchnorm).
// Expected constants are worked by hand: s = scale / sqrt(var + epsilon), W' = W * s,
// B' = (B - mean) * s + beta; the inputs are chosen so that every value is exact in FP32.

// RUN: --passes infer,fold-batchnorm,dce
// No bias: s = [2 / sqrt(3 + 1), 0.5 / sqrt(15 + 1)] = [1, 0.125]; W' = [1, 0.25];
// B' = [(0 - 0.5) * 1 + 1, (0 - 1) * 0.125 - 1] = [0.5, -1.125]. The Conv writes %y, the graph
// output, under its own name; the BatchNormalization is gone.
// CHECK-LABEL: graph "no_bias"
// CHECK: const %w.folded: f32[2,1,1,1] = [1.0, 0.25]
// CHECK-NEXT: const %bn.bias: f32[2] = [0.5, -1.125]
// CHECK-NEXT: %y: f32[1,2,3,3] = Conv(%x, %w.folded, %bn.bias) {pads = [0, 0, 0, 0]} name "conv" precision {reason = "", evidence = "BatchNormalization 'bn' folded into W and B"}
// CHECK-NOT: BatchNormalization(
// CHECK: output %y
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "no_bias" {
  input %x: f32[1,1,3,3]
  const %w: f32[2,1,1,1] = [1.0, 2.0]
  const %scale: f32[2] = [2.0, 0.5]
  const %beta: f32[2] = [1.0, -1.0]
  const %mean: f32[2] = [0.5, 1.0]
  const %var: f32[2] = [3.0, 15.0]
  %c = Conv(%x, %w) {pads = [0, 0, 0, 0]} name "conv"
  %y = BatchNormalization(%c, %scale, %beta, %mean, %var) {epsilon = 1.0} name "bn"
  output %y
}
// -----
// RUN: --passes infer,fold-batchnorm,dce
// With a bias and a W that another Conv also reads: new constants, the shared W stays for the
// other Conv. Default epsilon 1e-5 with var = 1 - 1e-5 makes sqrt exact: s = scale = [4, -0.5];
// W' = [[1, 2] * 4, [3, 4] * -0.5] = [4, 8, -1.5, -2]; B' = [(1 - 2) * 4 + 0.5, (2 + 2) * -0.5 + 0]
// = [-3.5, -2]. Then the Relu after it is untouched.
// CHECK-LABEL: graph "bias_shared_w"
// CHECK-DAG: const %w.folded: f32[2,2,1,1] = [4.0, 8.0, -1.5, -2.0]
// CHECK-DAG: const %bn.bias: f32[2] = [-3.5, -2.0]
// CHECK: %z: f32[1,2,2,2] = Conv(%x, %w, %b) name "other"
// CHECK: %y: f32[1,2,2,2] = Conv(%x, %w.folded, %bn.bias) name "conv"
// CHECK-NEXT: Relu(%y)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "bias_shared_w" {
  input %x: f32[1,2,2,2]
  const %w: f32[2,2,1,1] = [1.0, 2.0, 3.0, 4.0]
  const %b: f32[2] = [1.0, 2.0]
  const %scale: f32[2] = [4.0, -0.5]
  const %beta: f32[2] = [0.5, 0.0]
  const %mean: f32[2] = [2.0, -2.0]
  const %var: f32[2] = [0.99999, 0.99999]
  %z = Conv(%x, %w, %b) name "other"
  %c = Conv(%x, %w, %b) name "conv"
  %y = BatchNormalization(%c, %scale, %beta, %mean, %var) name "bn"
  %r = Relu(%y) name "relu"
  output %r
  output %z
}
// -----
// RUN: --passes infer,fold-batchnorm,dce
// Not folded: the Conv's output has another reader; the statistics are an input; and folding
// would give a weight of 2 / sqrt(1e-10 + 1e-5) ~ 632 * 100 = 63246 > 32752 (half of FP16's
// largest value), so that BatchNormalization stays too.
// CHECK-LABEL: graph "kept"
// CHECK-COUNT-3: BatchNormalization(
// CHECK-NOT: folded
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "kept" {
  input %x: f32[1,1,2,2]
  input %m: f32[1]
  const %w: f32[1,1,1,1] = [1.0]
  const %big: f32[1,1,1,1] = [100.0]
  const %one: f32[1] = [1.0]
  const %zero: f32[1] = [0.0]
  const %two: f32[1] = [2.0]
  const %tiny: f32[1] = [1e-10]
  %c1 = Conv(%x, %w) name "shared"
  %y1 = BatchNormalization(%c1, %one, %zero, %zero, %one) name "bn_shared"
  %s1 = Add(%c1, %y1) name "also_reads"
  %c2 = Conv(%x, %w) name "input_stats"
  %y2 = BatchNormalization(%c2, %one, %zero, %m, %one) name "bn_input"
  %c3 = Conv(%x, %big) name "overflow"
  %y3 = BatchNormalization(%c3, %two, %zero, %zero, %tiny) name "bn_overflow"
  output %s1
  output %y2
  output %y3
}
// -----
// RUN: --passes infer,fold-batchnorm,dce
// A Caffe-style scale layer: Mul by k = [3, -1] (dims [2, 1, 1]) then Add of t = [0.5, 0.25]
// (dims [1, 2, 1, 1]) fold in two rounds: W' = [1 * 3, 2 * -1] = [3, -2], B' = [0.5, 0.25]. A
// Mul by a spatial constant ([1, 1, 2, 2]) is not per-channel and stays; a scalar Mul (0.5)
// after the second Conv folds in the first round: W = [0.5, 1], B = [0, 0].
// CHECK-LABEL: graph "scale_layer"
// CHECK-DAG: const %w.folded.folded: f32[2,1,1,1] = [3.0, -2.0]
// CHECK-DAG: const %add.bias: f32[2] = [0.5, 0.25]
// CHECK-DAG: const %w.folded.2: f32[2,1,1,1] = [0.5, 1.0]
// CHECK-DAG: const %half.bias: f32[2] = [0.0, 0.0]
// CHECK: %a: f32[1,2,2,2] = Conv(%x, %w.folded.folded, %add.bias) name "conv" precision {reason = "", evidence = "Mul 'mul' (per-channel scale) folded into W and B; Add 'add' (per-channel shift) folded into W and B"}
// CHECK-NEXT: %s: f32[1,2,2,2] = Mul(%a, %spatial) name "spatial_mul"
// CHECK-NEXT: %h: f32[1,2,2,2] = Conv(%x, %w.folded.2, %half.bias) name "conv2"
// CHECK-NEXT: %h2: f32[1,2,2,2] = Add(%a, %h) name "sum"
// CHECK-NOT: name "add"
// CHECK-NOT: name "half"
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "scale_layer" {
  input %x: f32[1,1,2,2]
  const %w: f32[2,1,1,1] = [1.0, 2.0]
  const %k: f32[2,1,1] = [3.0, -1.0]
  const %t: f32[1,2,1,1] = [0.5, 0.25]
  const %spatial: f32[1,1,2,2] = [1.0, 2.0, 3.0, 4.0]
  const %half: f32[] = [0.5]
  %m = Conv(%x, %w) name "conv"
  %p = Mul(%m, %k) name "mul"
  %a = Add(%t, %p) name "add"
  %s = Mul(%a, %spatial) name "spatial_mul"
  %m2 = Conv(%x, %w) name "conv2"
  %h = Mul(%half, %m2) name "half"
  %h2 = Add(%a, %h) name "sum"
  output %s
  output %h2
}
// -----
// RUN: --passes infer,fold-batchnorm,dce
// Caffe2's BatchNormalization then scale layer (Mul and Add by [C, 1, 1] constants) with no
// Conv before it: the Mul and Add fold into the BatchNormalization's scale and B, in two rounds.
// BN's y = x * s + t, so Mul by k gives scale' = scale * k = [2 * 3, 0.5 * -2] = [6, -1] and
// B' = B * k = [1 * 3, -1 * -2] = [3, 2]; then Add of [0.5, 0.25] gives B'' = [3.5, 2.25]. mean,
// var and epsilon are untouched; the Relu reads the BatchNormalization's result.
// CHECK-LABEL: graph "bn_scale"
// CHECK-DAG: const %mul.scale: f32[2] = [6.0, -1.0]
// CHECK-DAG: const %add.bias: f32[2] = [3.5, 2.25]
// CHECK: %s: f32[1,2,2,2] = BatchNormalization(%x, %mul.scale, %add.bias, %mean, %var) {epsilon = 0.5} name "bn" precision {reason = "", evidence = "Mul 'mul' (per-channel scale) folded into scale and B; Add 'add' (per-channel shift) folded into scale and B"}
// CHECK-NEXT: Relu(%s)
// CHECK-NOT: Mul(
// CHECK-NOT: Add(
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "bn_scale" {
  input %x: f32[1,2,2,2]
  const %scale: f32[2] = [2.0, 0.5]
  const %beta: f32[2] = [1.0, -1.0]
  const %mean: f32[2] = [0.25, -0.75]
  const %var: f32[2] = [1.5, 3.5]
  const %k: f32[2,1,1] = [3.0, -2.0]
  const %t: f32[2,1,1] = [0.5, 0.25]
  %n = BatchNormalization(%x, %scale, %beta, %mean, %var) {epsilon = 0.5} name "bn"
  %m = Mul(%n, %k) name "mul"
  %s = Add(%m, %t) name "add"
  %r = Relu(%s) name "relu"
  output %r
}
// -----
// RUN: --passes infer,fold-batchnorm,dce
// Not folded into the BatchNormalization: its scale and B are FP16 while X is FP32 (ONNX allows
// narrower parameters), so scale * k would be rounded to FP16 (1.0003 -> 1.0).
// CHECK-LABEL: graph "narrow_params"
// CHECK: BatchNormalization(%x, %scale, %beta, %mean, %var)
// CHECK-NEXT: Mul(%n, %k)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "narrow_params" {
  input %x: f32[1,2,2,2]
  const %scale: f16[2] = [1.0, 1.0]
  const %beta: f16[2] = [0.0, 0.0]
  const %mean: f16[2] = [0.0, 0.0]
  const %var: f16[2] = [1.0, 1.0]
  const %k: f32[2,1,1] = [1.0003, 3.14159265]
  %n = BatchNormalization(%x, %scale, %beta, %mean, %var) name "bn"
  %m = Mul(%n, %k) name "mul"
  output %m
}
