// Every attribute kind, including empty lists and tensor, type and graph attributes.
model {ir_version = 8, producer_name = "fuzz", producer_version = "0", domain = "", model_version = 0, opsets = {"" = 17}}
graph "attrs" {
  input %x: f32[?,3]
  %y = Custom(%x, _) {f = 0.25, i = -7, s = "text", t = tensor<i64[2]> [1, 2], ty = type<seq<f32[*]>>, floats = [1.5, inf, -2e-45], ints = [1, -2, 3], strings = ["a", "b"], tensors = [tensor<f16[1]> [0.5], tensor<string[]> ["s"]], types = [type<f32[2]>, type<opt<i64[?]>>], no_floats = [] : floats, no_ints = [] : ints, no_strings = [] : strings, no_tensors = [] : tensors, no_graphs = [] : graphs, no_types = [] : types, graphs = [graph "g0" {
      output %x
    }, graph "g1" {
      %g1out = Neg(%x)
      output %g1out
    }]} name "custom"
  output %y
}
