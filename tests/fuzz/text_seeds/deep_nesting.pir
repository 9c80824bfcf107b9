// Regression: types nested past the parser limit (64) are an error, not a stack overflow.
model {ir_version = 8}
graph "deep" {
  input %x: seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<seq<f32[1]>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>>
  output %x
}
