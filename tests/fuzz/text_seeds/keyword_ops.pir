// Operators spelled like statement keywords, on nodes without outputs: the printer must quote
// them or the text does not parse back.
model {ir_version = 8, opsets = {"" = 17}}
graph "keywords" {
  input %x: f32[1]
  "input"(%x)
  "output"(%x) name "n1"
  "const"(%x)
  "name"(%x)
  %y = "name"(%x)
  output %y
}
