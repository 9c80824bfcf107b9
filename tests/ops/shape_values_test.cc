// Dims of operators whose attributes are run-time values (ops/shape_values.h): each helper's
// expression evaluated for every value against the dims the ONNX rules give, written out by hand
// or computed here by plain loops (not by the expressions under test).
#include "compiler/ops/shape_values.h"

#include <gtest/gtest.h>

namespace precis::ops {
namespace {

using E = ir::DimExpr;

int64_t Eval(const std::optional<E>& e, std::map<std::string, int64_t> b) {
  EXPECT_TRUE(e.has_value());
  auto v = e ? e->Evaluate(b) : std::nullopt;
  EXPECT_TRUE(v.has_value()) << (e ? e->ToString() : "");
  return v.value_or(-999);
}

TEST(ShapeValues, AxesAmongAndBelow) {
  E a = E::Symbol("$0_0");
  auto n = AxisValue(a, 5);
  for (int64_t v = -5; v < 5; ++v) EXPECT_EQ(Eval(n, {{"$0_0", v}}), v < 0 ? v + 5 : v) << v;
  DimExprs axes{*AxisValue(E::Symbol("$0_0"), 5), *AxisValue(E::Symbol("$0_1"), 5)};
  for (int64_t x = -5; x < 5; ++x)
    for (int64_t y = -5; y < 5; ++y)
      for (int64_t j = 0; j < 5; ++j) {
        int64_t nx = x < 0 ? x + 5 : x, ny = y < 0 ? y + 5 : y;
        std::map<std::string, int64_t> b{{"$0_0", x}, {"$0_1", y}};
        EXPECT_EQ(Eval(IsAmong(axes, j), b), nx == j || ny == j) << x << " " << y << " " << j;
        EXPECT_EQ(Eval(CountBelow(axes, j), b), (nx < j) + (ny < j)) << x << " " << y << " " << j;
      }
}

TEST(ShapeValues, DimAtAndDropAxes) {
  DimExprs dims{E::Constant(2), E::Constant(3), E::Symbol("H"), E::Constant(7)};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(Eval(DimAt(dims, E::Symbol("$1_0")), {{"$1_0", i}, {"H", 11}}), i == 2 ? 11 : dims[size_t(i)].constant());
  // Drop two axes given as values: what is left, in order.
  DimExprs axes{*AxisValue(E::Symbol("$0_0"), 4), *AxisValue(E::Symbol("$0_1"), 4)};
  auto out = DropAxes(dims, axes);
  ASSERT_TRUE(out.has_value());
  ASSERT_EQ(out->size(), 2u);
  std::vector<int64_t> values{2, 3, 11, 7};
  for (int64_t x = -4; x < 4; ++x)
    for (int64_t y = -4; y < 4; ++y) {
      int64_t nx = x < 0 ? x + 4 : x, ny = y < 0 ? y + 4 : y;
      if (nx == ny) continue;
      std::vector<int64_t> kept;
      for (int64_t m = 0; m < 4; ++m)
        if (m != nx && m != ny) kept.push_back(values[size_t(m)]);
      std::map<std::string, int64_t> b{{"$0_0", x}, {"$0_1", y}, {"H", 11}};
      EXPECT_EQ(Eval((*out)[0], b), kept[0]) << x << " " << y;
      EXPECT_EQ(Eval((*out)[1], b), kept[1]) << x << " " << y;
    }
}

// SliceLength against a plain loop over the indices ONNX Slice visits.
TEST(ShapeValues, SliceLengthMatchesALoop) {
  auto expr = SliceLength(E::Symbol("$0_0"), E::Symbol("$0_1"), E::Symbol("$0_2"), E::Symbol("D"));
  for (int64_t d : {0, 1, 5})
    for (int64_t s = -8; s <= 8; ++s)
      for (int64_t e = -8; e <= 8; ++e)
        for (int64_t t : {-3, -2, -1, 1, 2, 3}) {
          int64_t st = s < 0 ? s + d : s, en = e < 0 ? e + d : e, n = 0;
          if (t > 0) {
            st = std::clamp<int64_t>(st, 0, d), en = std::clamp<int64_t>(en, 0, d);
            for (int64_t i = st; i < en; i += t) ++n;
          } else {
            st = std::clamp<int64_t>(st, 0, d - 1), en = std::clamp<int64_t>(en, -1, d - 1);
            for (int64_t i = st; i > en; i += t) ++n;
          }
          if (d == 0) n = 0;
          EXPECT_EQ(Eval(expr, {{"$0_0", s}, {"$0_1", e}, {"$0_2", t}, {"D", d}}), n) << d << " " << s << " " << e << " " << t;
        }
}

// Slices of slices with run-time bounds nest atoms; each query re-reads them, so without the
// memo this chain took exponential time. Each level's length is checked against a loop.
TEST(ShapeValues, ChainedSlicesStayCheap) {
  std::optional<E> dim = E::Symbol("D");
  std::map<std::string, int64_t> b{{"D", 40}};
  int64_t want = 40;
  for (int level = 0; level < 6 && dim; ++level) {
    std::string s = "$" + std::to_string(level) + "_0", e = "$" + std::to_string(level) + "_1";
    dim = SliceLength(E::Symbol(s), E::Symbol(e), E::Constant(1), *dim);
    b[s] = 1;
    b[e] = -1;  // [1, -1): two fewer each level
    want = std::max<int64_t>(want - 2, 0);
    if (dim) {
      EXPECT_EQ(Eval(dim, b), want) << level;
    }
  }
}

}  // namespace
}  // namespace precis::ops
