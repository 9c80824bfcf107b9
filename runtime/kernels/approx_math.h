// The float approximations of exp, erf, tanh, sigmoid and GELU written once over an operation
// policy, so that every place computing them performs the same IEEE operations in the same
// order: FloatOps (below) evaluates them on floats (the fused-kernel interpreter,
// runtime/kernels/fused_program.cc), and the code generator instantiates them with a policy that
// emits LLVM IR (compiler/codegen/cpu_codegen.cc), and the CPU fast kernels evaluate them too
// (runtime/cpu/kernels/fast_math.h, whose comment states the accuracy); tests check that generated
// code and the float evaluation agree bit for bit on every FP16 and BF16 value.
//
// A policy O provides value types O::V (float), O::B (bool), O::I (int32) and:
//   V c(float); V add(V, V), sub, mul, div; V neg(V); B lt(V, V), gt(V, V); B isnan(V);
//   V sel(B, V, V); I bits(V); V from_bits(I); I ci(int32_t); I iadd(I, I), isub(I, I);
//   I ashr(I, int), shl(I, int).
#pragma once

#include <bit>
#include <cstdint>

// Always inlined: the fast kernels' loops vectorize only when the whole function is in them.
#if defined(__GNUC__) || defined(__clang__)
#define PRECIS_APPROX_INLINE inline __attribute__((always_inline))
#else
#define PRECIS_APPROX_INLINE inline
#endif

namespace precis::rt::approx {

template <class O>
PRECIS_APPROX_INLINE typename O::V Exp(O& o, typename O::V hi, typename O::V lo) {
  using V = typename O::V;
  V x = o.sel(o.gt(hi, o.c(-104.0f)), hi, o.c(-104.0f));
  x = o.sel(o.lt(x, o.c(89.0f)), x, o.c(89.0f));
  const float kShift = 12582912.0f;
  V shifted = o.add(o.mul(x, o.c(1.44269504088896341f)), o.c(kShift));
  V n = o.sub(shifted, o.c(kShift));
  auto ni = o.isub(o.bits(shifted), o.ci(std::bit_cast<int32_t>(kShift)));
  V r = o.add(o.sub(o.sub(x, o.mul(n, o.c(0.693359375f))), o.mul(n, o.c(-2.12194440e-4f))), lo);
  V p = o.c(1.9875691500e-4f);
  p = o.add(o.mul(p, r), o.c(1.3981999507e-3f));
  p = o.add(o.mul(p, r), o.c(8.3334519073e-3f));
  p = o.add(o.mul(p, r), o.c(4.1665795894e-2f));
  p = o.add(o.mul(p, r), o.c(1.6666665459e-1f));
  p = o.add(o.mul(p, r), o.c(5.0000001201e-1f));
  p = o.add(o.add(o.mul(p, o.mul(r, r)), r), o.c(1.0f));
  auto n1 = o.ashr(ni, 1);
  auto n2 = o.isub(ni, n1);
  V y = o.mul(o.mul(p, o.from_bits(o.shl(o.iadd(n1, o.ci(127)), 23))), o.from_bits(o.shl(o.iadd(n2, o.ci(127)), 23)));
  return o.sel(o.isnan(hi), hi, y);
}

template <class O>
PRECIS_APPROX_INLINE typename O::V Exp(O& o, typename O::V x) {
  return Exp(o, x, o.c(0.0f));
}

template <class O>
PRECIS_APPROX_INLINE typename O::V Erf(O& o, typename O::V x) {
  using V = typename O::V;
  V t = o.sel(o.lt(x, o.c(0.0f)), o.neg(x), x), s = o.mul(x, x);
  V q = o.c(-6.013395613990724e-4f);
  q = o.add(o.mul(q, s), o.c(4.998001269996166e-3f));
  q = o.add(o.mul(q, s), o.c(-2.6770232245326042e-2f));
  q = o.add(o.mul(q, s), o.c(1.1281926929950714e-1f));
  q = o.add(o.mul(q, s), o.c(-3.761250674724579e-1f));
  q = o.add(o.mul(q, s), o.c(1.2837915122509003e-1f));
  V small = o.add(x, o.mul(x, q));
  V r = o.c(1.6306565839840914e-6f);
  r = o.add(o.mul(r, t), o.c(-4.589370291796513e-5f));
  r = o.add(o.mul(r, t), o.c(5.951123312115669e-4f));
  r = o.add(o.mul(r, t), o.c(-4.750201478600502e-3f));
  r = o.add(o.mul(r, t), o.c(2.639024518430233e-2f));
  r = o.add(o.mul(r, t), o.c(-1.1001826077699661e-1f));
  r = o.add(o.mul(r, t), o.c(-6.318997144699097e-1f));
  r = o.add(o.mul(r, t), o.c(-1.1301857233047485f));
  r = o.add(o.mul(r, t), o.c(3.0721063376404345e-4f));
  V big = o.sub(o.c(1.0f), Exp(o, o.sel(o.lt(r, o.c(0.0f)), r, o.c(0.0f))));
  big = o.sel(o.lt(t, o.c(3.925f)), big, o.c(1.0f));
  big = o.sel(o.lt(x, o.c(0.0f)), o.neg(big), big);
  V y = o.sel(o.lt(t, o.c(0.921875f)), small, big);
  return o.sel(o.isnan(x), x, y);
}

template <class O>
PRECIS_APPROX_INLINE typename O::V Tanh(O& o, typename O::V x) {
  using V = typename O::V;
  V t = o.sel(o.lt(x, o.c(0.0f)), o.neg(x), x), s = o.mul(x, x);
  V q = o.c(2.299918094649911e-3f);
  q = o.add(o.mul(q, s), o.c(-8.351053111255169e-3f));
  q = o.add(o.mul(q, s), o.c(2.1771403029561043e-2f));
  q = o.add(o.mul(q, s), o.c(-5.3959619253873825e-2f));
  q = o.add(o.mul(q, s), o.c(1.3333305716514587e-1f));
  q = o.add(o.mul(q, s), o.c(-3.333333432674408e-1f));
  V small = o.add(x, o.mul(o.mul(x, s), q));
  V big = o.sub(o.c(1.0f), o.div(o.c(2.0f), o.add(Exp(o, o.mul(o.c(2.0f), t)), o.c(1.0f))));
  big = o.sel(o.lt(x, o.c(0.0f)), o.neg(big), big);
  V y = o.sel(o.lt(t, o.c(0.625f)), small, big);
  return o.sel(o.isnan(x), x, y);
}

template <class O>
PRECIS_APPROX_INLINE typename O::V Sigmoid(O& o, typename O::V x) {
  using V = typename O::V;
  V e = Exp(o, o.sel(o.lt(x, o.c(0.0f)), x, o.neg(x)));
  V inv = o.div(o.c(1.0f), o.add(o.c(1.0f), e));
  return o.sel(o.lt(x, o.c(0.0f)), o.mul(e, inv), inv);
}

template <class O>
PRECIS_APPROX_INLINE typename O::V GeluErf(O& o, typename O::V v) {
  return o.mul(o.mul(o.c(0.5f), v), o.add(o.c(1.0f), Erf(o, o.mul(v, o.c(0.7071067811865476f)))));
}

template <class O>
PRECIS_APPROX_INLINE typename O::V GeluTanh(O& o, typename O::V v) {
  auto cube = o.mul(o.mul(o.mul(o.c(0.044715f), v), v), v);
  return o.mul(o.mul(o.c(0.5f), v), o.add(o.c(1.0f), Tanh(o, o.mul(o.c(0.7978845608028654f), o.add(v, cube)))));
}

// Evaluation on floats.
struct FloatOps {
  using V = float;
  using B = bool;
  using I = int32_t;
  static V c(float f) { return f; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V neg(V a) { return -a; }
  static B lt(V a, V b) { return a < b; }
  static B gt(V a, V b) { return a > b; }
  static B isnan(V a) { return a != a; }
  static V sel(B b, V x, V y) { return b ? x : y; }
  static I bits(V a) { return std::bit_cast<int32_t>(a); }
  static V from_bits(I i) { return std::bit_cast<float>(i); }
  static I ci(int32_t i) { return i; }
  static I iadd(I a, I b) { return a + b; }
  static I isub(I a, I b) { return a - b; }
  static I ashr(I a, int k) { return a >> k; }
  static I shl(I a, int k) { return a << k; }
};

}  // namespace precis::rt::approx
