// Quoted names, omitted inputs and outputs, domains, sequence and optional types, inputs
// with default values and nodes without outputs.
model {ir_version = 10, producer_name = "a \"quoted\" producer", producer_version = "\n", domain = "", model_version = -1, opsets = {"" = 21, "ai.onnx.ml" = 3}}
graph "names \x01" {
  input %"a value": seq<f32[2,?]>
  input %opt: opt<seq<i64[*]>>
  input %with_default: f32[2] = [1.0, 2.0]
  input %untyped
  input %x.y/z-1: undefined[N, "sym bol", 3]
  %"out 1", _, %o3: ? = "ai.onnx.ml"::"Odd Op"(_, %"a value", _, %opt)
  _ = Print(%untyped)
  SideEffect(%with_default) {"quoted attr" = 1}
  %big: f64[4096] = ConstantOfShape(%x.y/z-1) name "\xe2\x9c\x93"
  output %"out 1"
  output %big
}
