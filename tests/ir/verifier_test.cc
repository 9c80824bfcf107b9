// Tests of the IR verifier (compiler/ir/verifier.h): well-formed graphs pass, and each broken
// invariant is rejected with InvalidArgument naming the offending value. Every rejection test
// first verifies the same graph without the fault, so that it fails for the stated reason only.
#include "compiler/ir/verifier.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace precis::ir {
namespace {

Type F32Type(std::vector<int64_t> dims) {
  return Type::Tensor(DType::kF32, Shape::FromStatic(dims));
}

Tensor F32(std::vector<int64_t> dims, const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * 4);
  if (!bytes.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  return Tensor(DType::kF32, std::move(dims), Buffer::Own(std::move(bytes)));
}

Attribute GraphAttr(std::string name, std::unique_ptr<Graph> g) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Attribute::Kind::kGraph;
  a.graphs.push_back(std::move(g));
  return a;
}

std::vector<Attribute> Branches(std::unique_ptr<Graph> then_g, std::unique_ptr<Graph> else_g) {
  std::vector<Attribute> v;
  v.push_back(GraphAttr("then_branch", std::move(then_g)));
  v.push_back(GraphAttr("else_branch", std::move(else_g)));
  return v;
}

// An unary node `out = op(in)` producing a new value.
Value* Unary(Graph& g, const std::string& op, Value* in, const std::string& out_name) {
  Value* out = g.NewValue(out_name);
  g.AddNode("", op, "", {in}, {out}, {});
  return out;
}

// Expects InvalidArgument whose message contains every one of `parts`.
void ExpectRejected(const Status& s, const std::vector<std::string>& parts) {
  ASSERT_FALSE(s.ok()) << "verifier accepted a broken graph";
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  for (const std::string& p : parts)
    EXPECT_NE(s.message().find(p), std::string::npos) << "missing " << p << " in: " << s.message();
}

void ExpectOk(const Status& s) { EXPECT_TRUE(s.ok()) << s.ToString(); }

TEST(VerifierTest, AcceptsAGraphWithConstantsDefaultsAndSubgraphs) {
  Model m;
  m.ir_version = 8;
  Graph& g = *m.graph;
  g.set_name("main");
  Value* x = g.AddInput("x", F32Type({2}));
  Value* cond = g.AddInput("cond", Type::Tensor(DType::kBool, Shape::FromStatic({})));
  Value* d = g.AddInputWithDefault("d", F32Type({2}), F32({2}, {1.0f, 2.0f}));
  Value* w = g.AddConstant("w", F32({2}, {0.5f, -0.5f}));
  Value* y = g.NewValue("y");
  g.AddNode("", "Add", "add", {x, w, nullptr}, {y, nullptr}, {});
  // Branches use outer values defined before the If, at one and two levels of nesting.
  auto then_g = std::make_unique<Graph>("then");
  Value* t = then_g->NewValue("t");
  auto inner = std::make_unique<Graph>("inner");
  inner->AddOutput(Unary(*inner, "Neg", d, "i"));
  inner->AddOutput(y);
  std::vector<Attribute> body;
  body.push_back(GraphAttr("body", std::move(inner)));
  then_g->AddNode("", "Scope", "", {y}, {t}, std::move(body));
  then_g->AddOutput(t);
  auto else_g = std::make_unique<Graph>("else");
  else_g->AddOutput(x);
  Value* r = g.NewValue("r");
  g.AddNode("", "If", "if", {cond}, {r}, Branches(std::move(then_g), std::move(else_g)));
  g.AddOutput(r);
  g.AddOutput(d);
  ExpectOk(Verify(m));
}

TEST(VerifierTest, RejectsANodeUsingAValueDefinedLater) {
  Graph g("main");
  Value* x = g.AddInput("x", F32Type({2}));
  Value* a = Unary(g, "Relu", x, "a");
  Value* b = Unary(g, "Neg", a, "b");
  g.AddOutput(b);
  ExpectOk(VerifyGraph(g));
  Node* relu = g.nodes()[0].get();
  Node* neg = g.nodes()[1].get();
  g.SetNodeOrder({neg, relu});
  ExpectRejected(VerifyGraph(g), {"graph 'main'", "Neg (node 0)", "'a'", "not defined before"});
}

TEST(VerifierTest, RejectsASubgraphUsingAnOuterValueDefinedAfterItsNode) {
  // late is produced by node 1; the If at node 0 has a branch that reads it.
  auto build = [](bool use_late) {
    auto g = std::make_unique<Graph>("main");
    Value* x = g->AddInput("x", F32Type({2}));
    Value* cond = g->AddInput("cond", Type::Tensor(DType::kBool, Shape::FromStatic({})));
    Value* early = Unary(*g, "Relu", x, "early");
    Value* late = g->NewValue("late");
    auto then_g = std::make_unique<Graph>("then");
    then_g->AddOutput(Unary(*then_g, "Neg", use_late ? late : early, "t"));
    auto else_g = std::make_unique<Graph>("else");
    else_g->AddOutput(x);
    Value* r = g->NewValue("r");
    g->AddNode("", "If", "if", {cond}, {r}, Branches(std::move(then_g), std::move(else_g)));
    g->AddNode("", "Abs", "", {x}, {late}, {});
    g->AddOutput(r);
    g->AddOutput(late);
    return g;
  };
  ExpectOk(VerifyGraph(*build(false)));
  ExpectRejected(VerifyGraph(*build(true)), {"If 'if'", "then_branch", "graph 'then'", "'late'"});
}

TEST(VerifierTest, RejectsASubgraphOutputDefinedAfterItsNode) {
  Graph g("main");
  Value* x = g.AddInput("x", F32Type({2}));
  Value* cond = g.AddInput("cond", Type::Tensor(DType::kBool, Shape::FromStatic({})));
  Value* late = g.NewValue("late");
  auto then_g = std::make_unique<Graph>("then");
  then_g->AddOutput(late);
  auto else_g = std::make_unique<Graph>("else");
  else_g->AddOutput(x);
  Value* r = g.NewValue("r");
  g.AddNode("", "If", "if", {cond}, {r}, Branches(std::move(then_g), std::move(else_g)));
  g.AddNode("", "Abs", "", {x}, {late}, {});
  g.AddOutput(r);
  ExpectRejected(VerifyGraph(g), {"graph 'then'", "output 'late'"});
}

TEST(VerifierTest, RejectsASubgraphUsingItsOwnNodesOutput) {
  Graph g("main");
  Value* cond = g.AddInput("cond", Type::Tensor(DType::kBool, Shape::FromStatic({})));
  Value* r = g.NewValue("r");
  auto then_g = std::make_unique<Graph>("then");
  then_g->AddOutput(Unary(*then_g, "Neg", r, "t"));
  auto else_g = std::make_unique<Graph>("else");
  else_g->AddOutput(cond);
  g.AddNode("", "If", "if", {cond}, {r}, Branches(std::move(then_g), std::move(else_g)));
  g.AddOutput(r);
  ExpectRejected(VerifyGraph(g), {"then_branch", "'r'"});
}

TEST(VerifierTest, RejectsAConstantWhoseTypeDisagreesWithItsData) {
  Graph g("main");
  Value* w = g.AddConstant("w", F32({2, 3}, {1, 2, 3, 4, 5, 6}));
  g.AddOutput(w);
  ExpectOk(VerifyGraph(g));
  w->set_type(F32Type({3, 2}));
  ExpectRejected(VerifyGraph(g), {"'w'", "f32[3,2]", "f32[2,3]"});
  w->set_type(Type::Tensor(DType::kF16, Shape::FromStatic({2, 3})));
  ExpectRejected(VerifyGraph(g), {"'w'", "f16[2,3]"});
  w->set_type(Type::Tensor(DType::kF32, Shape()));  // less precise is still a disagreement
  ExpectRejected(VerifyGraph(g), {"'w'", "f32[*]"});
}

TEST(VerifierTest, RejectsAnInputDefaultWhoseTypeDisagreesWithItsData) {
  Graph g("main");
  Value* d = g.AddInputWithDefault("d", F32Type({2}), F32({2}, {1, 2}));
  g.AddOutput(d);
  ExpectOk(VerifyGraph(g));
  d->set_type(F32Type({3}));
  ExpectRejected(VerifyGraph(g), {"'d'", "f32[3]"});
}

TEST(VerifierTest, RejectsAGraphOutputThatIsNotDefined) {
  Graph g("main");
  Value* x = g.AddInput("x", F32Type({2}));
  Value* y = Unary(g, "Relu", x, "y");
  g.AddOutput(y);
  ExpectOk(VerifyGraph(g));
  Value* ghost = g.NewValue("ghost");
  g.AddOutput(ghost);
  ExpectRejected(VerifyGraph(g), {"graph 'main'", "output 'ghost'"});
}

TEST(VerifierTest, RejectsAnOutputOfAnotherGraph) {
  Graph other("other");
  Value* stranger = other.AddInput("stranger", F32Type({2}));
  Graph g("main");
  g.AddInput("x", F32Type({2}));
  g.AddOutput(stranger);
  ExpectRejected(VerifyGraph(g), {"output 'stranger'"});
}

TEST(VerifierTest, RejectsAnOmittedGraphOutput) {
  Graph g("main");
  g.AddInput("x", F32Type({2}));
  g.AddOutput(nullptr);
  ExpectRejected(VerifyGraph(g), {"graph 'main'", "output is missing"});
}

TEST(VerifierTest, RejectsAValueThatIsNeverProduced) {
  Graph g("main");
  Value* x = g.AddInput("x", F32Type({2}));
  g.AddOutput(Unary(g, "Relu", x, "y"));
  ExpectOk(VerifyGraph(g));
  g.NewValue("orphan");
  ExpectRejected(VerifyGraph(g), {"graph 'main'", "'orphan'", "no producer"});
}

TEST(VerifierTest, RejectsAUseOfAValueThatIsNeverProduced) {
  Graph g("main");
  Value* orphan = g.NewValue("orphan");
  g.AddOutput(Unary(g, "Relu", orphan, "y"));
  ExpectRejected(VerifyGraph(g), {"Relu (node 0)", "'orphan'"});
}

TEST(VerifierTest, RejectsShadowingOfAnOuterName) {
  // A subgraph value named like an outer value, whether that outer value is defined before the
  // owning node (x) or after it (later), whether it is a subgraph input, constant or node output.
  enum class Kind { kNone, kInput, kConstant, kNodeOutput, kLaterOuter, kDeep };
  auto build = [](Kind kind) {
    auto g = std::make_unique<Graph>("main");
    Value* x = g->AddInput("x", F32Type({2}));
    Value* cond = g->AddInput("cond", Type::Tensor(DType::kBool, Shape::FromStatic({})));
    auto then_g = std::make_unique<Graph>("then");
    std::string name = kind == Kind::kLaterOuter ? "later" : kind == Kind::kNone ? "fresh" : "x";
    Value* local;
    if (kind == Kind::kInput) {
      local = then_g->AddInput(name, F32Type({2}));
    } else if (kind == Kind::kConstant) {
      local = then_g->AddConstant(name, F32({2}, {1, 2}));
    } else if (kind == Kind::kDeep) {
      // Two levels down: the innermost graph shadows the top-level x.
      auto inner = std::make_unique<Graph>("inner");
      inner->AddOutput(Unary(*inner, "Neg", cond, "x"));
      local = then_g->NewValue("mid");
      std::vector<Attribute> attrs;
      attrs.push_back(GraphAttr("body", std::move(inner)));
      then_g->AddNode("", "Scope", "", {}, {local}, std::move(attrs));
    } else {
      local = Unary(*then_g, "Neg", cond, name);
    }
    then_g->AddOutput(local);
    auto else_g = std::make_unique<Graph>("else");
    else_g->AddOutput(x);
    Value* r = g->NewValue("r");
    g->AddNode("", "If", "if", {cond}, {r}, Branches(std::move(then_g), std::move(else_g)));
    g->AddOutput(Unary(*g, "Abs", x, "later"));
    g->AddOutput(r);
    return g;
  };
  ExpectOk(VerifyGraph(*build(Kind::kNone)));
  ExpectRejected(VerifyGraph(*build(Kind::kInput)), {"graph 'then'", "'x'", "shadows"});
  ExpectRejected(VerifyGraph(*build(Kind::kConstant)), {"graph 'then'", "'x'", "shadows"});
  ExpectRejected(VerifyGraph(*build(Kind::kNodeOutput)), {"graph 'then'", "'x'", "shadows"});
  ExpectRejected(VerifyGraph(*build(Kind::kLaterOuter)), {"graph 'then'", "'later'", "shadows"});
  ExpectRejected(VerifyGraph(*build(Kind::kDeep)), {"graph 'inner'", "'x'", "shadows"});
}

TEST(VerifierTest, SiblingSubgraphsMayReuseNamesButNotSeeEachOther) {
  // Each branch has its own scope: the same local name twice is fine, a reference across is not.
  auto build = [](bool cross) {
    auto g = std::make_unique<Graph>("main");
    Value* cond = g->AddInput("cond", Type::Tensor(DType::kBool, Shape::FromStatic({})));
    auto then_g = std::make_unique<Graph>("then");
    Value* t = Unary(*then_g, "Neg", cond, "t");
    then_g->AddOutput(t);
    auto else_g = std::make_unique<Graph>("else");
    else_g->AddOutput(cross ? t : Unary(*else_g, "Neg", cond, "t"));
    Value* r = g->NewValue("r");
    g->AddNode("", "If", "if", {cond}, {r}, Branches(std::move(then_g), std::move(else_g)));
    g->AddOutput(r);
    return g;
  };
  ExpectOk(VerifyGraph(*build(false)));
  ExpectRejected(VerifyGraph(*build(true)), {"graph 'else'", "output 't'"});
}

TEST(VerifierTest, RejectsASubgraphWithTheWrongParent) {
  Graph g("main");
  Value* cond = g.AddInput("cond", Type::Tensor(DType::kBool, Shape::FromStatic({})));
  auto then_g = std::make_unique<Graph>("then");
  then_g->AddOutput(cond);
  auto else_g = std::make_unique<Graph>("else");
  else_g->AddOutput(cond);
  Value* r = g.NewValue("r");
  Node* n = g.AddNode("", "If", "if", {cond}, {r}, Branches(std::move(then_g), std::move(else_g)));
  g.AddOutput(r);
  ExpectOk(VerifyGraph(g));
  n->attributes()[1].graphs[0]->set_parent_node(nullptr);
  ExpectRejected(VerifyGraph(g), {"If 'if'", "'else'", "wrong parent"});
}

// Graph::RemoveNode must drop the uses made from inside the removed node's subgraphs at every
// depth; a stale Use would point at a freed node. The graph must verify afterwards and the
// removed output's name must be free again.
TEST(GraphEditTest, RemoveNodeDropsUsesFromNestedSubgraphs) {
  Graph g("main");
  Value* x = g.AddInput("x", F32Type({2}));
  Value* cond = g.AddInput("cond", Type::Tensor(DType::kBool, Shape::FromStatic({})));
  auto inner = std::make_unique<Graph>("inner");
  inner->AddOutput(Unary(*inner, "Neg", x, "i1"));  // two levels below g
  auto then_g = std::make_unique<Graph>("then");
  Value* t = then_g->NewValue("t");
  std::vector<Attribute> body;
  body.push_back(GraphAttr("body", std::move(inner)));
  then_g->AddNode("", "Scope", "", {x}, {t}, std::move(body));
  then_g->AddOutput(t);
  auto else_g = std::make_unique<Graph>("else");
  else_g->AddOutput(x);
  Value* r = g.NewValue("r");
  Node* if_node =
      g.AddNode("", "If", "if", {cond}, {r}, Branches(std::move(then_g), std::move(else_g)));
  g.AddOutput(Unary(g, "Abs", x, "kept"));
  ExpectOk(VerifyGraph(g));
  ASSERT_EQ(x->uses().size(), 3u);  // Neg (depth 2), Scope (depth 1), Abs
  g.RemoveNode(if_node);
  ASSERT_EQ(x->uses().size(), 1u);
  EXPECT_EQ(x->uses()[0].node->op_type(), "Abs");
  EXPECT_TRUE(cond->uses().empty());
  EXPECT_EQ(g.FindLocal("r"), nullptr);
  ExpectOk(VerifyGraph(g));
  EXPECT_NE(g.NewValue("r"), nullptr);  // the name is free again
}

TEST(VerifierTest, ModelNeedsIrVersionThree) {
  Model m;
  m.graph->AddOutput(m.graph->AddInput("x", F32Type({1})));
  m.ir_version = 3;
  ExpectOk(Verify(m));
  m.ir_version = 2;
  ExpectRejected(Verify(m), {"ir_version 2"});
}

// CloneGraph (compiler/ir/graph.h) copies a body with its nested subgraphs: values of the copied
// graph map to their copies at every depth, values from outside go through the outer map, and the
// copy spliced into another graph verifies.
TEST(CloneGraphTest, CopiesNestedSubgraphsAndMapsOuterValues) {
  Model m;
  m.ir_version = 8;
  Graph& g = *m.graph;
  g.set_name("main");
  Value* x = g.AddInput("x", F32Type({2}));
  Value* x2 = g.AddInput("x2", F32Type({2}));
  Value* cond = g.AddInput("cond", Type::Tensor(DType::kBool, Shape::FromStatic({})));
  // The body: n = Neg(x); an If whose then-branch reads n (one level up) and x (two levels up).
  Graph body("body");
  Value* n = Unary(body, "Neg", x, "n");
  auto then_g = std::make_unique<Graph>("then");
  Value* s = then_g->NewValue("s");
  then_g->AddNode("", "Add", "", {n, x}, {s}, {});
  then_g->AddOutput(s);
  auto else_g = std::make_unique<Graph>("else");
  else_g->AddOutput(n);
  Value* r = body.NewValue("r");
  body.AddNode("", "If", "if", {cond}, {r}, Branches(std::move(then_g), std::move(else_g)));
  body.AddOutput(r);
  // Copy it under a Scope node of main, with x replaced by x2.
  std::unique_ptr<Graph> copy = CloneGraph(body, [&](Value* v) { return v == x ? x2 : v; });
  ASSERT_EQ(copy->nodes().size(), 2u);
  const Node& neg = *copy->nodes()[0];
  EXPECT_EQ(neg.inputs()[0], x2);
  const Node& if_node = *copy->nodes()[1];
  const Graph& then_copy = *if_node.FindAttribute("then_branch")->graphs[0];
  ASSERT_EQ(then_copy.nodes().size(), 1u);
  EXPECT_EQ(then_copy.nodes()[0]->inputs()[0], neg.outputs()[0]) << "a value of the copied graph maps to its copy in a nested graph";
  EXPECT_EQ(then_copy.nodes()[0]->inputs()[1], x2) << "an outer value maps through the outer map in a nested graph";
  EXPECT_EQ(if_node.FindAttribute("else_branch")->graphs[0]->outputs()[0], neg.outputs()[0]);
  EXPECT_EQ(copy->outputs()[0], if_node.outputs()[0]);
  bool x_used = false;
  for (const Use& u : x->uses()) x_used |= u.node->owner() != &body && u.node->owner() != body.nodes()[1]->FindAttribute("then_branch")->graphs[0].get();
  EXPECT_FALSE(x_used) << "the copy does not read x";
  std::vector<Attribute> attrs;
  attrs.push_back(GraphAttr("body", std::move(copy)));
  Value* y = g.NewValue("y");
  g.AddNode("", "Scope", "scope", {}, {y}, std::move(attrs));
  g.AddOutput(y);
  ExpectOk(Verify(m));
}

}  // namespace
}  // namespace precis::ir
