// Data layout and activation epilogues for CPU plans (precis opt --passes fuse-epilogues-cpu,layout-cpu).

// RUN: --passes infer,fuse-epilogues-cpu,layout-cpu
// An FP32 block with a symbolic batch: every convolution with a constant W runs NHWC, whatever
// its group, pads or channel count (the 3-channel stem, the depthwise one with asymmetric pads);
// the stem's Relu and the depthwise Clip(0, 6) become post-ops (activation attributes); the
// MaxPool, the residual Add and the global pool join the region. One Transpose brings X in; the
// pooled [N, 1, 1, 8] result leaves by a Reshape that keeps the batch as 0, and the pool read
// outside the region by a Transpose. A Conv whose W is a graph input stays NCHW and says why, and
// so does a 1-D convolution.
// CHECK-LABEL: graph "block"
// CHECK: const %p.to_nchw.shape: i64[4] = [0, 8, 1, 1]
// CHECK: %img.nhwc: f32[N,8,8,3] = Transpose(%img) {perm = [0, 2, 3, 1]} name "img.to_nhwc" precision {reason = "layout", evidence = "NCHW -> NHWC into a channels-last convolution region"}
// CHECK-NEXT: %s0.nhwc: f32[N,8,8,8] = Conv(%img.nhwc, %w0.ohwi) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], activation = "Relu", layout = "NHWC"} name "stem" precision {reason = "", evidence = "epilogue: Relu fused; layout NHWC (oneDNN convolution on channels-last activations, channels 3 -> 8: no reorders around it)"}
// CHECK-NEXT: %m.nhwc: f32[N,4,4,8] = MaxPool(%s0.nhwc) {kernel_shape = [2, 2], strides = [2, 2], layout = "NHWC"} name "pool1"
// CHECK-NEXT: %m: f32[N,8,4,4] = Transpose(%m.nhwc) {perm = [0, 3, 1, 2]} name "m.to_nchw"
// CHECK-NEXT: %d0.nhwc: f32[N,4,4,8] = Conv(%m.nhwc, %dw.ohwi) {group = 8, kernel_shape = [2, 2], pads = [0, 0, 1, 1], activation = "Clip", activation_min = 0.0, activation_max = 6.0, layout = "NHWC"} name "depthwise" precision {reason = "", evidence = "epilogue: Clip [0, 6] fused; layout NHWC
// CHECK-NEXT: %sum.nhwc: f32[N,4,4,8] = Add(%d0.nhwc, %m.nhwc) name "add"
// CHECK-NEXT: %p.nhwc: f32[N,1,1,8] = GlobalAveragePool(%sum.nhwc) {layout = "NHWC"} name "gap"
// CHECK-NEXT: %p: f32[N,8,1,1] = Reshape(%p.nhwc, %p.to_nchw.shape) name "p.to_nchw"
// CHECK-NEXT: %v: f32[N,8,4,4] = Conv(%m, %wv)
// CHECK-SAME: evidence = "layout NCHW: W is not a constant"
// CHECK: %o: f32[N,4,6] = Conv(%seq, %w1d)
// CHECK-SAME: evidence = "layout NCHW: not a 2-D convolution"
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "block" {
  input %img: f32[N,3,8,8]
  input %wv: f32[8,8,1,1]
  input %seq: f32[N,2,8]
  const %w0: f32[8,3,3,3] = [-0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25]
  const %dw: f32[8,1,2,2] = [0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25]
  const %w1d: f32[4,2,3] = [-0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25]
  const %zero: f32[] = [0.0]
  const %six: f32[] = [6.0]
  %s0 = Conv(%img, %w0) {kernel_shape = [3, 3], pads = [1, 1, 1, 1]} name "stem"
  %s = Relu(%s0) name "relu"
  %m = MaxPool(%s) {kernel_shape = [2, 2], strides = [2, 2]} name "pool1"
  %d0 = Conv(%m, %dw) {group = 8, kernel_shape = [2, 2], pads = [0, 0, 1, 1]} name "depthwise"
  %d = Clip(%d0, %zero, %six) name "relu6"
  %sum = Add(%d, %m) name "add"
  %p = GlobalAveragePool(%sum) name "gap"
  %v = Conv(%m, %wv) {kernel_shape = [1, 1]} name "weights_in"
  %o = Conv(%seq, %w1d) {kernel_shape = [3]} name "conv1d"
  output %p
  output %v
  output %o
}
// -----
// RUN: --passes infer,fuse-epilogues-cpu
// FP16: Clip(0, 6) fuses; a Clip with a bound computed at run time stays a node, and so does a Relu whose input has a second reader or that is a graph
// output.
// CHECK-LABEL: graph "bounds"
// CHECK: %a0: f16[1,8,4,4] = Conv(%x, %w) {kernel_shape = [1, 1], activation = "Clip", activation_min = 0.0, activation_max = 6.0} name "exact"
// CHECK-NEXT: %b0: f16[1,8,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} name "runtime_bound"
// CHECK-NEXT: %b: f16[1,8,4,4] = Clip(%b0, %zero, %hi) name "clip_hi"
// CHECK-NEXT: %c0: f16[1,8,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} name "shared"
// CHECK-NEXT: %c: f16[1,8,4,4] = Relu(%c0) name "relu_shared"
// CHECK-NEXT: %e0: f16[1,8,4,4] = Conv(%x, %w) {kernel_shape = [1, 1]} name "to_output"
// CHECK-NEXT: %e: f16[1,8,4,4] = Relu(%e0) name "relu_out"
// CHECK-NEXT: %y: f16[1,8,4,4] = Sum(%a0, %b, %c, %c0)
model {ir_version = 8, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "bounds" {
  input %x: f16[1,8,4,4]
  input %hi: f16[]
  const %w: f16[8,8,1,1] = [0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5]
  const %zero: f16[] = [0.0]
  const %six: f16[] = [6.0]
  %a0 = Conv(%x, %w) {kernel_shape = [1, 1]} name "exact"
  %a = Clip(%a0, %zero, %six) name "clip6"
  %b0 = Conv(%x, %w) {kernel_shape = [1, 1]} name "runtime_bound"
  %b = Clip(%b0, %zero, %hi) name "clip_hi"
  %c0 = Conv(%x, %w) {kernel_shape = [1, 1]} name "shared"
  %c = Relu(%c0) name "relu_shared"
  %e0 = Conv(%x, %w) {kernel_shape = [1, 1]} name "to_output"
  %e = Relu(%e0) name "relu_out"
  %y = Sum(%a, %b, %c, %c0) name "sum"
  output %y
  output %e
}
// -----
// RUN: --passes infer,fuse-epilogues-cpu
// Opset 6: Clip's bounds are attributes.
// CHECK-LABEL: graph "attrs"
// CHECK: %a0: f16[1,8,4,4] = Conv(%x, %w) {kernel_shape = [1, 1], activation = "Clip", activation_min = -1.0, activation_max = 6.0} name "conv"
// CHECK-NEXT: %y: f16[1,8,4,4] = Add(%a0, %x) name "add"
model {ir_version = 3, producer_name = "t", producer_version = "1", domain = "", model_version = 0, opsets = {"" = 6}}
graph "attrs" {
  input %x: f16[1,8,4,4]
  const %w: f16[8,8,1,1] = [0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5, -0.125, 0.625, 0.0, -0.625, 0.125, -0.5, 0.25, -0.375, 0.375, -0.25, 0.5]
  %a0 = Conv(%x, %w) {kernel_shape = [1, 1]} name "conv"
  %a = Clip(%a0) {min = -1.0, max = 6.0} name "clip"
  %y = Add(%a, %x) name "add"
  output %y
}
