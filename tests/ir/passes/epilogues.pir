// Epilogue fusion for GPU plans (precis opt --passes fuse-epilogues).

// RUN: --passes infer,patterns,precision,fold-casts,fuse-casts,fuse-epilogues --precision fp16
// A 3-D activation times a weight matrix, plus a bias, then the Erf GELU exporters write: one
// Gemm with the bias as C and the GELU as its epilogue; Reshapes view A as rows and give back
// the 3-D shape. No Erf is left.
// CHECK-LABEL: graph "bias_gelu"
// CHECK: %x.f16.2d: f16[6,4] = Reshape(%x.f16, %x.f16.2d_shape) name "mm.view_a" precision {reason = "fusion"
// CHECK-NEXT: %g.gemm: f16[6,8] = Gemm(%x.f16.2d, %w.f16, %b.f16) {activation = "Gelu"} name "mm" precision {reason = "compute-op", accumulate = f32, evidence = "epilogue: bias 'b.f16' and Gelu fused (MatMul + Add + Gelu -> Gemm)"}
// CHECK-NEXT: %g.view: f16[2,3,8] = Reshape(%g.gemm, %g.shape) name "mm.view_y"
// CHECK-NEXT: MatMul(%g.view,
// CHECK-NOT: Erf
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "bias_gelu" {
  input %x: f32[2,3,4]
  const %w: f32[4,8] = [-0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25]
  const %b: f32[8] = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]
  const %w2: f32[8,4] = [-0.5, 0.0, 0.5, -0.25, 0.25, -0.5, 0.0, 0.5, -0.25, 0.25, -0.5, 0.0, 0.5, -0.25, 0.25, -0.5, 0.0, 0.5, -0.25, 0.25, -0.5, 0.0, 0.5, -0.25, 0.25, -0.5, 0.0, 0.5, -0.25, 0.25, -0.5, 0.0]
  const %sqrt2: f32[] = [1.4142135]
  const %one: f32[] = [1.0]
  const %half: f32[] = [0.5]
  %h0 = MatMul(%x, %w) name "mm"
  %h = Add(%h0, %b) name "bias"
  %a = Div(%h, %sqrt2) name "div"
  %e = Erf(%a) name "erf"
  %p = Add(%e, %one) name "add"
  %m = Mul(%h, %p) name "mul"
  %g = Mul(%m, %half) name "half"
  %y = MatMul(%g, %w2) name "mm2"
  output %y
}
// -----
// RUN: --passes infer,fuse-epilogues
// 2-D product with a [1, N] bias and a Relu: one Gemm, nothing around it.
// CHECK-LABEL: graph "bias_relu_2d"
// CHECK: %r.gemm: f32[2,8] = Gemm(%x, %w, %b) {activation = "Relu"} name "mm"
// CHECK-NEXT: %y: f32[2,4] = MatMul(%r.gemm, %w2)
// CHECK-NOT: Reshape
// CHECK-NOT: Relu(
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "bias_relu_2d" {
  input %x: f32[2,4]
  const %w: f32[4,8] = [-0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25]
  const %b: f32[1,8] = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]
  const %w2: f32[8,4] = [-0.5, 0.0, 0.5, -0.25, 0.25, -0.5, 0.0, 0.5, -0.25, 0.25, -0.5, 0.0, 0.5, -0.25, 0.25, -0.5, 0.0, 0.5, -0.25, 0.25, -0.5, 0.0, 0.5, -0.25, 0.25, -0.5, 0.0, 0.5, -0.25, 0.25, -0.5, 0.0]
  %h0 = MatMul(%x, %w) name "mm"
  %h = Add(%b, %h0) name "bias"
  %r = Relu(%h) name "relu"
  %y = MatMul(%r, %w2) name "mm2"
  output %y
}
// -----
// RUN: --passes infer,fuse-epilogues
// Not fused: the product is read twice, the bias is not a row of N values, and a Relu that
// writes a graph output stays (the output keeps its name). The Gemm before the tanh GELU takes
// it as its epilogue.
// CHECK-LABEL: graph "left_alone"
// CHECK: %h0: f32[2,8] = MatMul(%x, %w) name "shared"
// CHECK-NEXT: %h: f32[2,8] = Add(%h0, %b)
// CHECK-NEXT: %s: f32[2,8] = Add(%h, %h0)
// CHECK-NEXT: %k0: f32[2,8] = MatMul(%x, %w) name "column"
// CHECK-NEXT: %k: f32[2,8] = Add(%k0, %col)
// CHECK-NEXT: %q0: f32[2,8] = Gemm(%x, %w) {activation = "GeluTanh"} name "gemm"
// CHECK-NEXT: %o: f32[2,8] = MatMul(%x, %w) name "out_mm"
// CHECK-NEXT: %o2: f32[2,8] = Relu(%o)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 20}}
graph "left_alone" {
  input %x: f32[2,4]
  const %w: f32[4,8] = [-0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25]
  const %b: f32[8] = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]
  const %col: f32[2,1] = [1.0, 2.0]
  const %cw: f32[8,8,1] = [-0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625]
  %h0 = MatMul(%x, %w) name "shared"
  %h = Add(%h0, %b) name "bias"
  %s = Add(%h, %h0) name "reuse"
  %k0 = MatMul(%x, %w) name "column"
  %k = Add(%k0, %col) name "colbias"
  %q0 = Gemm(%x, %w) name "gemm"
  %q = Gelu(%q0) {approximate = "tanh"} name "gelu"
  %o = MatMul(%x, %w) name "out_mm"
  %o2 = Relu(%o) name "relu_out"
  %z = Add(%s, %k) name "z"
  %z2 = Add(%z, %q) name "z2"
  output %z2
  output %o2
}
// -----
// RUN: --passes infer,fuse-epilogues
// Conv -> Relu: the Relu becomes the convolution's activation.
// CHECK-LABEL: graph "conv_relu"
// CHECK: %c0: f32[1,8,3] = Conv(%x, %cw, %cb) {kernel_shape = [1], activation = "Relu"} name "conv" precision {reason = "", evidence = "epilogue: Relu fused"}
// CHECK-NEXT: %y: f32[1,8,3] = Conv(%c0, %cw)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "conv_relu" {
  input %x: f32[1,8,3]
  const %cw: f32[8,8,1] = [-0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625, -0.25, 0.25, -0.625, -0.125, 0.375, -0.5, 0.0, 0.5, -0.375, 0.125, 0.625]
  const %cb: f32[8] = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]
  %c0 = Conv(%x, %cw, %cb) {kernel_shape = [1]} name "conv"
  %c = Relu(%c0) name "relu"
  %y = Conv(%c, %cw) {kernel_shape = [1]} name "conv2"
  output %y
}
