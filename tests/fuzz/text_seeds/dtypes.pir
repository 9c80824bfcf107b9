// One constant of every element type, with the special float spellings.
model {ir_version = 7, producer_name = "", producer_version = "", domain = "ai.test", model_version = 0, opsets = {"" = 13, "com.microsoft" = 1}}
graph "dtypes" {
  const %f32: f32[6] = [1.0, -0.0, inf, -inf, nan, nan(0x7fc00001)]
  const %f64: f64[3] = [1e-300, 2.5, nan(0x7ff8000000000001)]
  const %f16: f16[4] = [1.0, 6.1035156e-05, nan, nan(0x7e01)]
  const %bf16: bf16[3] = [1.0, -2.5, nan(0x7fc1)]
  const %i8: i8[2] = [-128, 127]
  const %i16: i16[2] = [-32768, 32767]
  const %i32: i32[2] = [-2147483648, 2147483647]
  const %i64: i64[2] = [-9223372036854775808, 9223372036854775807]
  const %u8: u8[2] = [0, 255]
  const %u16: u16[1] = [65535]
  const %u32: u32[1] = [4294967295]
  const %u64: u64[1] = [18446744073709551615]
  const %bool: bool[2, 1] = [true, false]
  const %str: string[2] = ["a\tb", "\x00\xff\"\\"]
  const %empty: f32[0, 5] = []
  const %scalar: i64[] = [42]
  %s = "com.microsoft"::Sum(%f32, %f16, %bf16)
  output %s
  output %str
}
