model {ir_version = 6, producer_name = "backend-test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 11}}
graph "test_loop11" {
  input %trip_count: i64[]
  input %cond: bool[]
  input %y: f32[1]
  %res_y: f32[1], %res_scan: f32[5,1] = Loop(%trip_count, %cond, %y) {body = graph "loop_body" {
      input %iter_count: i64[]
      input %cond_in: bool[]
      input %y_in: f32[1]
      const %x: f32[5] = [1.0, 2.0, 3.0, 4.0, 5.0]
      const %one: i64[] = [1]
      %cond_out: bool[] = Identity(%cond_in)
      %end = Add(%iter_count, %one)
      %slice_start = Unsqueeze(%iter_count) {axes = [0]}
      %slice_end = Unsqueeze(%end) {axes = [0]}
      %slice_out = Slice(%x, %slice_start, %slice_end)
      %y_out: f32[1] = Add(%y_in, %slice_out)
      %scan_out: f32[1] = Identity(%y_out)
      output %cond_out
      output %y_out
      output %scan_out
    }}
  output %res_y
  output %res_scan
}
