// If and Loop with subgraphs that read values of the enclosing graph.
model {ir_version = 9, producer_name = "fuzz", producer_version = "", domain = "", model_version = 1, opsets = {"" = 18}}
graph "cf" {
  input %cond: bool[]
  input %x: f32[2]
  const %trip: i64[] = [3]
  %a = Add(%x, %x)
  %r: f32[2] = If(%cond) {then_branch = graph "then" {
      %t = Mul(%a, %x)
      output %t
    }, else_branch = graph "else" {
      const %k: f32[2] = [1.0, 2.0]
      %e = Sub(%a, %k)
      output %e
    }}
  %final, %scan = Loop(%trip, _, %r) {body = graph "body" {
      input %i: i64[]
      input %c: bool[]
      input %acc: f32[2]
      %next = Add(%acc, %x)
      %c2 = Identity(%c)
      output %c2
      output %next
      output %next
    }}
  output %final
  output %scan
}
