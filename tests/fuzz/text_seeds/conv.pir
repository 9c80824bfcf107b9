// A small convnet: inputs with symbolic dims, inline and by-reference constants, node names.
model {ir_version = 8, producer_name = "pytorch", producer_version = "1.13.1", domain = "", model_version = 0, opsets = {"" = 17}}
graph "main_graph" {
  input %x: f32[N,3,8,8]
  const %w: f32[4,3,3,3] = ref 0x1f2e3d4c5b6a7988
  const %b: f32[4] = [0.5, -1.25, 0.0, 3e+10]
  %y: f32[N,4,8,8] = Conv(%x, %w, %b) {pads = [1, 1, 1, 1], strides = [1, 1], group = 1} name "conv1"
  %z = Relu(%y) name "relu1"
  %p: f32[N,4,1,1] = GlobalAveragePool(%z)
  output %p
}
