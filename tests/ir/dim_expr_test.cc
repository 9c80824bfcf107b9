// DimExpr: canonical text (equal expressions print equal), arithmetic, exact division, evaluation,
// and the nullopt cases (inexact division, overflow, text that is no expression). Expected texts
// and values are written out by hand.
#include "compiler/ir/dim_expr.h"

#include <gtest/gtest.h>

namespace precis::ir {
namespace {

DimExpr P(const std::string& text) {
  auto e = DimExpr::Parse(text);
  EXPECT_TRUE(e.has_value()) << text;
  return e ? *e : DimExpr();
}

TEST(DimExpr, CanonicalText) {
  EXPECT_EQ(P("batch").ToString(), "batch");
  EXPECT_EQ(P("seq * batch").ToString(), "batch*seq");
  EXPECT_EQ(P("1 + seq").ToString(), "seq+1");
  EXPECT_EQ(P("seq + seq").ToString(), "2*seq");
  EXPECT_EQ(P("(batch + 1) * (batch - 1)").ToString(), "batch*batch-1");
  EXPECT_EQ(P("3 - seq*2").ToString(), "-2*seq+3");
  EXPECT_EQ(P("n - n").ToString(), "0");
  EXPECT_EQ(P("-(a)").ToString(), "-a");
  // Equal expressions written differently have one text.
  EXPECT_EQ(P("b*(s+1)").ToString(), P("s*b + b").ToString());
  EXPECT_EQ(P("b*(s+1)"), P("b + b*s"));
}

TEST(DimExpr, RoundTripsThroughDim) {
  EXPECT_EQ(P("12").ToDim(), Dim::Static(12));
  EXPECT_TRUE(P("0 - 3").ToDim().is_unknown());  // a negative size is no dim
  Dim d = P("batch*seq").ToDim();
  ASSERT_TRUE(d.is_symbolic());
  EXPECT_EQ(d.symbol(), "batch*seq");
  EXPECT_EQ(*DimExpr::FromDim(d), P("seq*batch"));
  EXPECT_FALSE(DimExpr::FromDim(Dim()).has_value());
}

TEST(DimExpr, ArithmeticAndExactDivision) {
  EXPECT_EQ(P("batch*seq*768").DivExact(P("12*seq"))->ToString(), "64*batch");
  EXPECT_EQ(P("2*b*s + 4*b").DivExact(P("2*b"))->ToString(), "s+2");
  EXPECT_FALSE(P("b*s + 1").DivExact(P("b")).has_value());  // the constant term is not divisible
  EXPECT_FALSE(P("3*b").DivExact(P("2")).has_value());
  EXPECT_FALSE(P("b").DivExact(P("b + 1")).has_value());     // only by a single term
  EXPECT_EQ(DimProduct({Dim::Symbolic("batch"), Dim::Static(3), Dim::Symbolic("seq")})->ToString(), "3*batch*seq");
  EXPECT_FALSE(DimProduct({Dim::Symbolic("batch"), Dim()}).has_value());
}

TEST(DimExpr, Evaluate) {
  EXPECT_EQ(P("2*batch*seq - seq + 7").Evaluate({{"batch", 3}, {"seq", 5}}), 2 * 3 * 5 - 5 + 7);
  EXPECT_FALSE(P("batch*seq").Evaluate({{"batch", 3}}).has_value());  // seq unbound
  EXPECT_FALSE(P("a*a*a").Evaluate({{"a", int64_t(1) << 30}}).has_value());  // 2^90 overflows
}

// Floor division (convolution output sizes): multiples of k come out of the atom, exact
// divisions are no atom, atoms nest, evaluate with floor semantics and count as factors.
TEST(DimExpr, FloorDivision) {
  EXPECT_EQ(P("(H+3)/2").ToString(), "(H+1)/2+1");
  EXPECT_EQ(P("(2*H+4)/2").ToString(), "H+2");
  EXPECT_EQ(P("(H-1)/2+1").ToString(), P("(H+1)/2").ToString());  // floor((H-1)/2)+1 == floor((H+1)/2)
  EXPECT_EQ(*P("H").FloorDiv(1), P("H"));
  EXPECT_EQ(P("(H+1)/2").Evaluate({{"H", 5}}), 3);
  EXPECT_EQ(P("(H+1)/2").Evaluate({{"H", 6}}), 3);
  EXPECT_EQ(P("(H+1)/2").Evaluate({{"H", -4}}), -2);  // floor(-3/2)
  DimExpr nested = P("((H+1)/2+1)/2");
  EXPECT_EQ(nested.ToString(), "((H+1)/2+1)/2");
  EXPECT_EQ(nested.Evaluate({{"H", 33}}), 9);  // (33+1)/2 = 17, (17+1)/2 = 9
  EXPECT_EQ(nested.Atoms(), (std::vector<std::string>{"(H+1)/2", "((H+1)/2+1)/2"}));
  EXPECT_EQ(P("16*(H+1)/2*(W+1)/2").Symbols(), (std::set<std::string>{"H", "W"}));
  EXPECT_EQ(P("16*(H+1)/2*(W+1)/2").DivExact(P("(W+1)/2"))->ToString(), "16*(H+1)/2");
  auto atom = DimExpr::ParseAtom("((H+1)/2+1)/2");
  ASSERT_TRUE(atom.has_value());
  EXPECT_EQ(atom->first.ToString(), "(H+1)/2+1");
  EXPECT_EQ(atom->second, 2);
  for (const char* text : {"(H)/0", "(H)/", "(H)/-2", "H/2"}) EXPECT_FALSE(DimExpr::Parse(text).has_value()) << text;
}

// Value symbols ("$I_E") and the atoms of run-time values: eq, neg, div; selects, min and max as
// arithmetic over them; folding where the sign is known (dims >= 0, value symbols unsigned).
TEST(DimExpr, ValueAtoms) {
  EXPECT_EQ(P("eq($0_1)").ToString(), "eq($0_1)");
  EXPECT_EQ(P("eq(-2*$0_1+4)").ToString(), "eq($0_1-2)");  // one text for d, 2d and -d
  EXPECT_EQ(P("neg(2*$0_1)").ToString(), "neg($0_1)");
  EXPECT_EQ(P("eq(H+1)").ToString(), "0");   // a dim plus 1 is never 0
  EXPECT_EQ(P("neg(H)").ToString(), "0");    // dims are >= 0
  EXPECT_EQ(P("neg(-H-1)").ToString(), "1");
  EXPECT_EQ(P("eq(3-3)").ToString(), "1");
  EXPECT_EQ(P("eq(a)*eq(a)").ToString(), "eq(a)");  // an indicator is its own square
  EXPECT_TRUE(P("$0_0").HasValueSymbols());
  EXPECT_FALSE(P("(H+1)/2").HasValueSymbols());
  EXPECT_TRUE(P("H*(H+1)/2").KnownNonNegative());
  EXPECT_FALSE(P("H-1").KnownNonNegative());
  EXPECT_FALSE(P("$1_0").KnownNonNegative());
  // Reshape's entry: 0 copies the input dim (7), -1 is what is left (42 / 6), else the value.
  DimExpr v = P("$0_0");
  DimExpr entry = *DimExpr::Select(*DimExpr::Eq(v, P("0")), P("7"),
                                   *DimExpr::Select(*DimExpr::Eq(v, P("-1")), P("42").FloorDivBy(P("6")).value(), v));
  EXPECT_EQ(entry.Evaluate({{"$0_0", 0}}), 7);
  EXPECT_EQ(entry.Evaluate({{"$0_0", -1}}), 7);
  EXPECT_EQ(entry.Evaluate({{"$0_0", 5}}), 5);
  EXPECT_EQ(*DimExpr::Parse(entry.ToString()), entry);  // the text parses back to the same expression
  DimExpr clamp = *DimExpr::Min(*DimExpr::Max(P("$2_0"), P("0")), P("H"));
  EXPECT_EQ(clamp.Evaluate({{"$2_0", -4}, {"H", 10}}), 0);
  EXPECT_EQ(clamp.Evaluate({{"$2_0", 4}, {"H", 10}}), 4);
  EXPECT_EQ(clamp.Evaluate({{"$2_0", 40}, {"H", 10}}), 10);
  DimExpr q = *P("H+$0_0").FloorDivBy(P("$0_1"));
  EXPECT_EQ(q.ToString(), "div($0_0+H,$0_1)");
  EXPECT_EQ(q.Evaluate({{"H", 7}, {"$0_0", 0}, {"$0_1", 2}}), 3);
  EXPECT_EQ(q.Evaluate({{"H", 7}, {"$0_0", 0}, {"$0_1", -2}}), -4);  // floor(-3.5)
  EXPECT_EQ(q.Evaluate({{"H", 7}, {"$0_0", 0}, {"$0_1", 0}}), 0);    // 0 where the divisor is 0
  EXPECT_EQ(*P("H").FloorDivBy(P("-2")), *P("-H").FloorDiv(2));
  EXPECT_EQ(q.Atoms(), (std::vector<std::string>{"div($0_0+H,$0_1)"}));
  EXPECT_EQ(P("eq($0_0)*(H+1)/2").Atoms(), (std::vector<std::string>{"(H+1)/2", "eq($0_0)"}));
  EXPECT_EQ(P("div(eq($0_0),H)").Symbols(), (std::set<std::string>{"$0_0", "H"}));
  size_t input = 9, element = 9;
  EXPECT_TRUE(DimExpr::ParseValueSymbol(DimExpr::ValueSymbol(3, 12), &input, &element));
  EXPECT_EQ(input, 3u);
  EXPECT_EQ(element, 12u);
  for (const char* name : {"$", "$3", "$_1", "$3_", "$a_1", "H"}) EXPECT_FALSE(DimExpr::ParseValueSymbol(name, &input, &element)) << name;
  for (const char* text : {"eq()", "div(a)", "div(a,)", "neg(a", "$"}) EXPECT_FALSE(DimExpr::Parse(text).has_value()) << text;
}

TEST(DimExpr, RefusesWhatIsNoExpression) {
  for (const char* text : {"", "batch size", "2*", "(a", "a)", "a/b", "99999999999999999999", "a+*b"})
    EXPECT_FALSE(DimExpr::Parse(text).has_value()) << text;
  // Deep nesting is refused, not a stack overflow.
  EXPECT_FALSE(DimExpr::Parse(std::string(10000, '(') + "a" + std::string(10000, ')')).has_value());
  // Coefficients that overflow.
  EXPECT_FALSE(DimExpr::Parse("9223372036854775807 + 1").has_value());
  EXPECT_FALSE(DimExpr::Parse("4294967296 * 4294967296 * a").has_value());
  EXPECT_EQ(SymbolName("batch size"), "batch_size");
  EXPECT_EQ(SymbolName("2d"), "_2d");
}

}  // namespace
}  // namespace precis::ir
