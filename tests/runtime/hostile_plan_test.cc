// Plans with a valid checksum that say something hostile: out-of-range tensor ids, offsets and
// sizes outside their sections, negative and overflowing dims, unknown kernels, dtypes and
// attribute kinds, attributes of the wrong kind, an arena larger than the machine, steps whose
// tensors do not fit their kernel, and operands that overlap other than in place. Each must be
// refused at load with a clear message that names the problem, through Session::FromBuffer and
// through `precis run`; none may crash.
// The plans are rewritten through the FlatBuffers object API (plan_test_util.h) and resealed,
// so only the check under test can notice.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "compiler/driver/compile.h"
#include "compiler/ir/text.h"
#include "precis/session.h"
#include "runtime/kernels/fused_program.h"
#include "tests/runtime/plan_test_util.h"

namespace precis {
namespace {

using testing::RewritePlan;

// x: f32[2,4] -> MatMul W[4,3] -> Softmax(axis 1) -> Transpose -> Relu -> y: f32[3,2].
constexpr const char* kModel = R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "hostile" {
  input %x: f32[2,4]
  const %W: f32[4,3] = [1.0, -1.0, 0.5, 2.0, -0.25, 0.75, 0.5, 0.5, -2.0, 1.5, 0.25, -0.5]
  %h = MatMul(%x, %W)
  %s = Softmax(%h) {axis = 1}
  %t = Transpose(%s) {perm = [1, 0]}
  %y = Relu(%t)
  output %y
}
)";

const std::vector<uint8_t>& Plan() {
  static const std::vector<uint8_t> bytes = [] {
    auto model = ir::ParseModel(kModel);
    EXPECT_TRUE(model.ok()) << model.status().ToString();
    driver::CompileOptions options;
    options.fuse_rows = false;  // the Softmax stays a step of its own (its attributes are tampered with)
    auto result = driver::Compile(**model, options);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result->plan.bytes;
  }();
  return bytes;
}

using Edit = std::function<void(plan::PlanT&, std::vector<uint8_t>&)>;

plan::StepT& StepOf(plan::PlanT& p, const std::string& kernel) {
  for (auto& s : p.programs[0]->steps)
    if (s->kernel == kernel) return *s;
  ADD_FAILURE() << "no step with kernel " << kernel;
  return *p.programs[0]->steps[0];
}

plan::AttrT& AttrOf(plan::StepT& s, const char* name) {
  for (auto& a : s.attrs)
    if (a->name == name) return *a;
  ADD_FAILURE() << "no attribute " << name;
  return *s.attrs[0];
}

int TensorId(const plan::PlanT& p, const std::string& name) {
  for (size_t i = 0; i < p.tensors.size(); ++i)
    if (p.tensors[i]->name == name) return int(i);
  ADD_FAILURE() << "no tensor " << name;
  return 0;
}

// Runs the plan once with x = 1..8; the error if loading or running fails.
Status OpenAndRun(const std::vector<uint8_t>& bytes, std::vector<float>* y = nullptr) {
  PRECIS_ASSIGN_OR_RETURN(auto session, Session::FromBuffer(bytes.data(), bytes.size()));
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  PRECIS_RETURN_IF_ERROR(session->SetInput("x", DataType::kF32, {2, 4}, x.data(), x.size() * 4));
  PRECIS_RETURN_IF_ERROR(session->Run());
  PRECIS_ASSIGN_OR_RETURN(TensorData out, session->Output("y"));
  if (y) y->assign(static_cast<const float*>(out.data), static_cast<const float*>(out.data) + out.info.NumElements());
  return Status::Ok();
}

void ExpectRefused(const Edit& edit, const std::string& message) {
  std::vector<uint8_t> bytes = RewritePlan(Plan(), edit);
  Status s = OpenAndRun(bytes);
  ASSERT_FALSE(s.ok()) << "a hostile plan was accepted; expected: " << message;
  EXPECT_NE(s.ToString().find(message), std::string::npos) << s.ToString();
  std::printf("  refused: %s\n", s.ToString().c_str());
}

TEST(HostilePlan, RewrittenUnchangedPlanStillRuns) {
  // The rewriting itself must keep a plan valid: otherwise every refusal below proves nothing.
  std::vector<float> want, got;
  ASSERT_TRUE(OpenAndRun(Plan(), &want).ok());
  Status s = OpenAndRun(RewritePlan(Plan(), [](plan::PlanT&, std::vector<uint8_t>&) {}), &got);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(want, got);
  EXPECT_EQ(want.size(), 6u);
}

TEST(HostilePlan, TensorIdsOutOfRange) {
  ExpectRefused([](plan::PlanT& p, auto&) { StepOf(p, "Relu").inputs[0] = int(p.tensors.size()); }, "tensor id out of range");
  ExpectRefused([](plan::PlanT& p, auto&) { StepOf(p, "MatMul").outputs[0] = -7; }, "tensor id out of range");
  ExpectRefused([](plan::PlanT& p, auto&) { p.programs[0]->outputs[0] = 1 << 30; }, "input/output id out of range");
  ExpectRefused([](plan::PlanT& p, auto&) { StepOf(p, "Relu").predicate = int(p.tensors.size()) + 3; }, "predicate id out of range");
  ExpectRefused([](plan::PlanT& p, auto&) { StepOf(p, "Relu").predicate = TensorId(p, "x"); }, "is not a bool scalar");
}

TEST(HostilePlan, OffsetsAndSizesOutsideTheirSections) {
  ExpectRefused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "y"))]->offset = p.arena_bytes; }, "lies outside its section");
  ExpectRefused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "y"))]->offset = ~uint64_t(0) - 63; }, "lies outside its section");
  // Kernels access elements as their type: an offset that is not a multiple of it is refused.
  ExpectRefused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "y"))]->offset += 2; }, "is misaligned for its element type");
  // Constants are read-only (a mapped file): a step writing one is refused.
  ExpectRefused([](plan::PlanT& p, auto&) { StepOf(p, "MatMul").outputs[0] = TensorId(p, "W"); }, "writes the constant 'W'");
  ExpectRefused([](plan::PlanT& p, auto& c) { p.tensors[size_t(TensorId(p, "W"))]->offset = c.size() - 4; }, "lies outside its section");
  ExpectRefused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "W"))]->bytes += 4; }, "byte size does not match its shape");
  ExpectRefused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "W"))]->bytes = ~uint64_t(0); }, "byte size does not match its shape");
}

TEST(HostilePlan, NegativeAndOverflowingDims) {
  ExpectRefused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "h"))]->dims[0] = -2; }, "has bad dims");
  // 2^31 x 2^31 x 2^31 elements: the element count overflows int64, the byte count 2^63.
  ExpectRefused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "h"))]->dims = {1LL << 31, 1LL << 31, 1LL << 31}; }, "has bad dims");
  ExpectRefused([](plan::PlanT& p, auto&) {
    auto& t = *p.tensors[size_t(TensorId(p, "h"))];
    t.dims = {1LL << 61};
    t.bytes = uint64_t(1) << 63;  // what 2^61 f32 elements would take
  }, "has bad dims");
  // No element, but index arithmetic over dims like these would overflow.
  ExpectRefused([](plan::PlanT& p, auto&) {
    auto& t = *p.tensors[size_t(TensorId(p, "h"))];
    t.dims = {0, 1LL << 40, 1LL << 40};
    t.bytes = 0;
  }, "has bad dims");
}

TEST(HostilePlan, UnknownKernelsDtypesAndPlacements) {
  ExpectRefused([](plan::PlanT& p, auto&) { StepOf(p, "Relu").kernel = "NoSuchKernel"; }, "has no kernel 'NoSuchKernel'");
  ExpectRefused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "h"))]->dtype = 99; }, "has an invalid dtype");
  ExpectRefused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "h"))]->placement = plan::Placement(7); }, "unknown placement");
  ExpectRefused([](plan::PlanT& p, auto&) { p.target = "tpu"; }, "targets 'tpu'");
}

TEST(HostilePlan, AttributesOfTheWrongKind) {
  auto attr = [](plan::PlanT& p, const std::string& kernel, const std::string& name) -> plan::AttrT& {
    for (auto& a : StepOf(p, kernel).attrs)
      if (a->name == name) return *a;
    ADD_FAILURE() << kernel << " has no attribute " << name;
    return *StepOf(p, kernel).attrs[0];
  };
  ExpectRefused([&](plan::PlanT& p, auto&) { attr(p, "Softmax", "axis").kind = plan::AttrKind_Float; },
                "attribute 'axis' is of kind Float, the kernel reads Int");
  ExpectRefused([&](plan::PlanT& p, auto&) { attr(p, "Transpose", "perm").kind = plan::AttrKind_String; },
                "attribute 'perm' is of kind String, the kernel reads Ints");
  ExpectRefused([&](plan::PlanT& p, auto&) { attr(p, "Softmax", "axis").kind = plan::AttrKind(200); }, "has an unknown kind 200");
}

TEST(HostilePlan, ArenaLargerThanTheMachineIsRefusedBeforeAllocating) {
  ExpectRefused([](plan::PlanT& p, auto&) { p.arena_bytes = uint64_t(1) << 62; }, "more than this machine's");
  ExpectRefused([](plan::PlanT& p, auto&) { p.state_bytes = ~uint64_t(0); }, "more than this machine's");
}

TEST(HostilePlan, StepTensorsThatDoNotFitTheirKernel) {
  // Relu reading x (8 elements) into y (6): a kernel trusting the plan would write past y.
  ExpectRefused([](plan::PlanT& p, auto&) { StepOf(p, "Relu").inputs[0] = TensorId(p, "x"); }, "Relu");
  // MatMul writing its [2,3] product into the [3,2]-shaped... same count, wrong shape: y.
  ExpectRefused([](plan::PlanT& p, auto&) { StepOf(p, "MatMul").outputs[0] = TensorId(p, "x"); }, "MatMul");
  // Transpose whose perm does not match the ranks.
  ExpectRefused([](plan::PlanT& p, auto&) {
    for (auto& a : StepOf(p, "Transpose").attrs)
      if (a->name == "perm") a->ints = {0, 1, 2};
  }, "Transpose");
}

// Output 0 may take exactly the bytes of input 0 where the kernel runs in place (Relu); any other
// overlap would let a kernel read bytes it already overwrote (Transpose copying over its input).
TEST(HostilePlan, OverlappingOperandsOnlyWhereTheKernelRunsInPlace) {
  std::vector<float> want, got;
  ASSERT_TRUE(OpenAndRun(Plan(), &want).ok());
  auto offset = [](plan::PlanT& p, const char* name) -> uint64_t& { return p.tensors[size_t(TensorId(p, name))]->offset; };
  Status s = OpenAndRun(RewritePlan(Plan(), [&](plan::PlanT& p, auto&) { offset(p, "y") = offset(p, "t"); }), &got);
  ASSERT_TRUE(s.ok()) << "Relu in place of its input: " << s.ToString();
  EXPECT_EQ(want, got);
  ExpectRefused([&](plan::PlanT& p, auto&) { offset(p, "y") = offset(p, "t") + 4; },
                "output 'y' overlaps its input 't' (only output 0 may take exactly the bytes of input 0)");
  ExpectRefused([&](plan::PlanT& p, auto&) { offset(p, "t") = offset(p, "s"); }, "output 't' overlaps its input 's' (Transpose does not run in place)");
  ExpectRefused([&](plan::PlanT& p, auto&) { offset(p, "t") = offset(p, "s") + 4; }, "output 't' overlaps its input 's' (Transpose does not run in place)");
  ExpectRefused([&](plan::PlanT& p, auto&) { offset(p, "s") = offset(p, "h") + 8; }, "output 's' overlaps its input 'h'");
}

TEST(HostilePlan, OverlappingOutputsOfOneStep) {
  auto model = ir::ParseModel(R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "split" {
  input %x: f32[2,4]
  %a, %b = Split(%x) {axis = 1}
  %y = Sub(%a, %b)
  output %y
}
)");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto compiled = driver::Compile(**model, driver::CompileOptions{});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  std::vector<uint8_t> bytes = RewritePlan(compiled->plan.bytes, [](plan::PlanT& p, auto&) {
    p.tensors[size_t(TensorId(p, "b"))]->offset = p.tensors[size_t(TensorId(p, "a"))]->offset + 4;
  });
  auto session = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().ToString().find("outputs 'a' and 'b' overlap"), std::string::npos) << session.status().ToString();
}

// FusedElementwise steps (generated code): a changed program no longer matches its function and is
// refused; an output over a broadcast input 0 is refused (only element-for-element input 0 may be
// overwritten in place); a broadcast input of the wrong size is refused.
TEST(HostilePlan, FusedStepsThatDoNotMatchTheirProgram) {
  auto model = ir::ParseModel(R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "fused" {
  input %x: f32[2,4]
  input %b: f32[4]
  %s = Softmax(%x) {axis = 1}
  %a = Add(%b, %s)
  %m = Mul(%a, %a)
  %y = Softmax(%m) {axis = 1}
  output %y
}
)");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  driver::CompileOptions options;
  options.fuse_rows = false;  // an elementwise program between the Softmax steps, b its input 0
  auto compiled = driver::Compile(**model, options);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  const std::vector<uint8_t>& bytes = compiled->plan.bytes;
  auto refused = [&](const Edit& edit, const std::string& message) {
    std::vector<uint8_t> b = RewritePlan(bytes, edit);
    auto session = Session::FromBuffer(b.data(), b.size());
    ASSERT_FALSE(session.ok()) << "expected: " << message;
    EXPECT_NE(session.status().ToString().find(message), std::string::npos) << session.status().ToString();
  };
  auto attr = [](plan::PlanT& p, const char* name) -> plan::AttrT& { return AttrOf(StepOf(p, "FusedElementwise"), name); };
  auto session = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  // A program changed after compilation (an Add turned into a Sub) names another function.
  refused([&](plan::PlanT& p, auto&) {
    auto& code = attr(p, "code").ints;
    for (size_t k = 0; k < code.size(); k += 5)
      if (code[k] == 2) code[k] = 3;
  }, "does not name this program");
  // Input 0 is the broadcast bias (b comes first in the Add): the output may not take its bytes.
  refused([&](plan::PlanT& p, auto&) {
    auto& step = StepOf(p, "FusedElementwise");
    p.tensors[size_t(step.outputs[0])]->offset = p.tensors[size_t(step.inputs[0])]->offset;
  }, "overlaps");
  // A broadcast input whose element count is not the program's period.
  refused([&](plan::PlanT& p, auto&) {
    auto& step = StepOf(p, "FusedElementwise");
    step.inputs[0] = step.inputs[1];
  }, "has dims");
}

// Row programs (reductions over rows): a program changed after compilation whose entry was
// updated to match (so only the tensors can refuse it) fails against its step's tensors: a row
// length that does not divide the frame, rows that do not match a row output, a row output
// stored as an element output.
TEST(HostilePlan, RowProgramsThatDoNotMatchTheirTensors) {
  auto model = ir::ParseModel(R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "rows" {
  input %x: f32[2,4,8]
  const %axes: i64[1] = [2]
  %e = Exp(%x)
  %s = ReduceSum(%e, %axes) {keepdims = 0}
  output %s
}
)");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto compiled = driver::Compile(**model, driver::CompileOptions{});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  const std::vector<uint8_t>& bytes = compiled->plan.bytes;
  auto session = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  // Rewrites the fused step's program with `change` and names the function of the new program.
  auto reprogram = [&](const std::function<void(std::vector<int64_t>&)>& change, const std::string& message) {
    std::vector<uint8_t> b = RewritePlan(bytes, [&](plan::PlanT& p, auto&) {
      plan::StepT& step = StepOf(p, "FusedElementwise");
      std::vector<int64_t>& code = AttrOf(step, "code").ints;
      ASSERT_EQ(code[0], 25) << "not a row program";
      change(code);
      auto decoded = rt::fused::Decode(code, AttrOf(step, "consts").floats);
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      AttrOf(step, "entry").s = decoded->EntryName();
    });
    auto s = Session::FromBuffer(b.data(), b.size());
    ASSERT_FALSE(s.ok()) << "expected: " << message;
    EXPECT_NE(s.status().ToString().find(message), std::string::npos) << s.status().ToString();
  };
  reprogram([](std::vector<int64_t>& code) { code[1] = 7; }, "not rows of 7");
  reprogram([](std::vector<int64_t>& code) { code[1] = 16; }, "its rows (4)");
  reprogram([](std::vector<int64_t>& code) {
    for (size_t k = 0; k < code.size(); k += 5)
      if (code[k] == 17) code[k + 4] = 0;  // the row store becomes an element store
  }, "the dims 2x4x8");
}

// Control flow: bodies are programs that only their step runs, always later programs (so no body
// can run itself); a body whose tensors do not match its step, and a trip count beyond
// SessionOptions::max_loop_iterations, are errors that name the step.
// Container outputs (plan.fbs Container) over the plan's output y (f32[3,2]) and input x.
std::unique_ptr<plan::ContainerT> Container(uint8_t kind, int stack, int dims = -1, int present = -1, std::vector<int> elements = {}) {
  auto c = std::make_unique<plan::ContainerT>();
  c->name = "c";
  c->kind = kind;
  c->stack = stack;
  c->dims = dims;
  c->present = present;
  c->elements = std::move(elements);
  return c;
}

TEST(HostilePlan, ContainerOutputs) {
  // Well formed: y as a stack of 3 elements of [2].
  std::vector<uint8_t> bytes = RewritePlan(Plan(), [](plan::PlanT& p, auto&) { p.programs[0]->containers.push_back(Container(0, TensorId(p, "y"))); });
  auto session = Session::FromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  ASSERT_EQ((*session)->containers().size(), 1u);
  EXPECT_EQ((*session)->containers()[0].parts, std::vector<std::string>{"y"});
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE((*session)->SetInput("x", DataType::kF32, {2, 4}, x.data(), x.size() * 4).ok());
  ASSERT_TRUE((*session)->Run().ok());
  auto y = (*session)->Output("y");
  auto c = (*session)->OutputContainer("c");
  ASSERT_TRUE(y.ok() && c.ok());
  ASSERT_TRUE(c->present);
  ASSERT_EQ(c->elements.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(c->elements[i].info.dims, (std::vector<int64_t>{2}));
    EXPECT_EQ(std::memcmp(c->elements[i].data, static_cast<const float*>(y->data) + 2 * i, 8), 0) << "element " << i;
  }
  EXPECT_FALSE((*session)->OutputContainer("d").ok());
  // Hostile: parts that are not outputs, of the wrong type, or missing.
  ExpectRefused([](plan::PlanT& p, auto&) { p.programs[0]->containers.push_back(Container(0, TensorId(p, "x"))); }, "that is not an output of the program");
  ExpectRefused([](plan::PlanT& p, auto&) { p.programs[0]->containers.push_back(Container(0, 1 << 20)); }, "that is not an output of the program");
  ExpectRefused([](plan::PlanT& p, auto&) { p.programs[0]->containers.push_back(Container(0, TensorId(p, "y"), TensorId(p, "y"))); }, "not an int64 matrix");
  ExpectRefused([](plan::PlanT& p, auto&) { p.programs[0]->containers.push_back(Container(0, -1, TensorId(p, "y"))); }, "dims without a stack");
  ExpectRefused([](plan::PlanT& p, auto&) { p.programs[0]->containers.push_back(Container(2, TensorId(p, "y"), -1, TensorId(p, "y"))); }, "not a bool scalar");
  ExpectRefused([](plan::PlanT& p, auto&) { p.programs[0]->containers.push_back(Container(1, TensorId(p, "y"))); }, "without a presence");
  ExpectRefused([](plan::PlanT& p, auto&) { p.programs[0]->containers.push_back(Container(7, TensorId(p, "y"))); }, "unknown kind");
}

TEST(HostilePlan, ControlFlowBodies) {
  auto model = ir::ParseModel(R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "cf" {
  input %cond: bool[]
  input %x: f32[2]
  input %trip: i64[]
  %a = Add(%x, %x)
  %r: f32[2] = If(%cond) {then_branch = graph "then" {
      %t = Mul(%a, %x)
      output %t
    }, else_branch = graph "else" {
      const %k: f32[2] = [1.0, 2.0]
      %e = Sub(%a, %k)
      output %e
    }}
  %final = Loop(%trip, _, %r) {body = graph "body" {
      input %i: i64[]
      input %c: bool[]
      input %acc: f32[2]
      %next = Add(%acc, %x)
      %c2 = Identity(%c)
      output %c2
      output %next
    }}
  output %final
}
)");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto compiled = driver::Compile(**model, driver::CompileOptions{});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  const std::vector<uint8_t>& bytes = compiled->plan.bytes;
  auto run = [](const std::vector<uint8_t>& b, bool cond, int64_t trip, std::vector<float>* y, int64_t max_iterations = 0) -> Status {
    SessionOptions options;
    options.max_loop_iterations = max_iterations;
    PRECIS_ASSIGN_OR_RETURN(auto session, Session::FromBuffer(b.data(), b.size(), options));
    std::vector<float> x = {1.5f, -2.0f};
    uint8_t c = cond;
    PRECIS_RETURN_IF_ERROR(session->SetInput("x", DataType::kF32, {2}, x.data(), 8));
    PRECIS_RETURN_IF_ERROR(session->SetInput("cond", DataType::kBool, {}, &c, 1));
    PRECIS_RETURN_IF_ERROR(session->SetInput("trip", DataType::kI64, {}, &trip, 8));
    PRECIS_RETURN_IF_ERROR(session->Run());
    PRECIS_ASSIGN_OR_RETURN(TensorData out, session->Output("final"));
    y->assign(static_cast<const float*>(out.data), static_cast<const float*>(out.data) + 2);
    return Status::Ok();
  };
  // The valid plan: then (a*x = 2x^2) or else (2x - k), then `trip` additions of x.
  std::vector<float> y;
  ASSERT_TRUE(run(bytes, true, 3, &y).ok());
  EXPECT_EQ(y, (std::vector<float>{2 * 1.5f * 1.5f + 3 * 1.5f, 2 * 4.0f - 6.0f}));
  ASSERT_TRUE(run(bytes, false, 0, &y).ok());
  EXPECT_EQ(y, (std::vector<float>{3.0f - 1.0f, -4.0f - 2.0f}));
  {
    auto session = Session::FromBuffer(bytes.data(), bytes.size());
    ASSERT_TRUE(session.ok());
    EXPECT_EQ((*session)->programs(), std::vector<std::string>{"infer"});  // bodies are not entry points
    Status s = (*session)->Run("infer/Loop#2/body");
    EXPECT_NE(s.ToString().find("is the body of a control-flow step"), std::string::npos) << s.ToString();
  }
  Status limited = run(bytes, true, 50, &y, 10);
  EXPECT_NE(limited.ToString().find("would run more than 10 iterations"), std::string::npos) << limited.ToString();
  auto refused = [&](const Edit& edit, const std::string& message) {
    std::vector<uint8_t> b = RewritePlan(bytes, edit);
    Status s = run(b, true, 3, &y);
    ASSERT_FALSE(s.ok()) << "expected: " << message;
    EXPECT_NE(s.ToString().find(message), std::string::npos) << s.ToString();
    std::printf("  refused: %s\n", s.ToString().c_str());
  };
  // A body naming its own program, or an earlier one (a cycle), or none.
  refused([&](plan::PlanT& p, auto&) { AttrOf(StepOf(p, "Loop"), "body_program").i = 0; }, "is not a body program after this step's own program");
  refused([&](plan::PlanT& p, auto&) { AttrOf(StepOf(p, "If"), "then_program").i = 99; }, "is not a body program after this step's own program");
  // The Loop's body given as the If's branch: its inputs and outputs do not fit an If.
  refused([&](plan::PlanT& p, auto&) { AttrOf(StepOf(p, "If"), "else_program").i = AttrOf(StepOf(p, "Loop"), "body_program").i; }, "a branch must take no inputs");
  // A body input that is a constant: the Loop would write the mapped plan file.
  refused([&](plan::PlanT& p, auto&) {
    for (auto& prog : p.programs)
      if (prog->name == "infer/Loop#2/body") {
        for (size_t i = 0; i < p.tensors.size(); ++i)
          if (p.tensors[i]->placement == plan::Placement_Constant) prog->inputs[0] = int(i);
      }
  }, "is not an arena tensor");
  // A program that is not marked as a body (an entry point) cannot be a step's body.
  refused([&](plan::PlanT& p, auto&) {
    for (auto& prog : p.programs)
      if (prog->name == "infer/Loop#2/body") prog->body = false;
  }, "is not a body program");
}

// A Loop whose body's dims follow the iteration number (plan.fbs Plan.iteration_symbols): the
// pairs of symbol and body program, and bounds that would let an iteration outgrow its bytes.
TEST(HostilePlan, IterationSymbols) {
  static const std::vector<uint8_t> growing = [] {
    auto model = ir::ParseModel(R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "grow" {
  input %x: f32[6]
  input %trip: i64[]
  const %start: i64[1] = [0]
  const %one: i64[] = [1]
  const %ax: i64[1] = [0]
  const %acc0: f32[1] = [0.0]
  %total = Loop(%trip, _, %acc0) {body = graph "body" {
      input %i: i64[]
      input %c: bool[]
      input %acc: f32[1]
      %end = Add(%i, %one)
      %endu = Unsqueeze(%end, %ax)
      %head = Slice(%x, %start, %endu)
      %part = ReduceSum(%head, %ax) {keepdims = 1}
      %next = Add(%acc, %part)
      %c2 = Identity(%c)
      output %c2
      output %next
    }}
  output %total
}
)");
    EXPECT_TRUE(model.ok()) << model.status().ToString();
    auto result = driver::Compile(**model, driver::CompileOptions{});
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result->plan.bytes;
  }();
  auto run = [](const std::vector<uint8_t>& bytes, float* total) -> Status {
    PRECIS_ASSIGN_OR_RETURN(auto session, Session::FromBuffer(bytes.data(), bytes.size()));
    std::vector<float> x = {1, 2, 3, 4, 5, 6};
    int64_t trip = 4;
    PRECIS_RETURN_IF_ERROR(session->SetInput("x", DataType::kF32, {6}, x.data(), 24));
    PRECIS_RETURN_IF_ERROR(session->SetInput("trip", DataType::kI64, {}, &trip, 8));
    PRECIS_RETURN_IF_ERROR(session->Run());
    PRECIS_ASSIGN_OR_RETURN(TensorData out, session->Output("total"));
    *total = *static_cast<const float*>(out.data);
    return Status::Ok();
  };
  float total = 0;
  Status valid = run(growing, &total);
  ASSERT_TRUE(valid.ok()) << valid.ToString();
  EXPECT_EQ(total, 1.0f + 3.0f + 6.0f + 10.0f);
  auto refused = [&](const Edit& edit, const std::string& message) {
    Status s = run(RewritePlan(growing, edit), &total);
    ASSERT_FALSE(s.ok()) << "a hostile plan was accepted; expected: " << message;
    EXPECT_NE(s.ToString().find(message), std::string::npos) << s.ToString();
    std::printf("  refused: %s\n", s.ToString().c_str());
  };
  auto body = [](const plan::PlanT& p) {
    for (size_t k = 0; k < p.programs.size(); ++k)
      if (p.programs[k]->body) return int64_t(k);
    return int64_t(-1);
  };
  auto iteration = [](const plan::PlanT& p) { return p.iteration_symbols.empty() ? int64_t(-1) : p.iteration_symbols[0]; };
  refused([&](plan::PlanT& p, auto&) { p.iteration_symbols.push_back(0); }, "bad iteration symbols");
  refused([&](plan::PlanT& p, auto&) { p.iteration_symbols[1] = 0; }, "bad iteration symbol");  // program 0 is no body
  refused([&](plan::PlanT& p, auto&) { p.iteration_symbols[0] = 1 - iteration(p); }, "is also bound otherwise");  // the trip count's value symbol
  refused([&](plan::PlanT& p, auto&) {
    p.iteration_symbols.insert(p.iteration_symbols.end(), {iteration(p), body(p)});
    p.iteration_symbol_bounds.insert(p.iteration_symbol_bounds.end(), {1, 1, 0});
  }, "is also bound otherwise");
  refused([&](plan::PlanT& p, auto&) { p.iteration_symbol_bounds.push_back(0); }, "bad iteration symbol bound");
  refused([&](plan::PlanT& p, auto&) { p.iteration_symbol_bounds = {1, 1, 1, iteration(p)}; }, "reads a size known only while the plan runs");
  refused([&](plan::PlanT& p, auto&) { p.iteration_symbols.clear(); }, "iteration symbol bounds without iteration symbols");
  // A bound of 0: the arena is planned for one row of x, and the second iteration needs two.
  refused([&](plan::PlanT& p, auto&) { p.iteration_symbol_bounds = {0}; }, "past the last iteration");
}

// `precis run` on hostile plans: exit 1 (not a signal), one line naming the problem.
// A dynamic plan (x: f32[batch,4]): symbolic dims whose code is truncated or names no symbol, a
// constant with a symbolic dim, a bad in-place source, and a dim that overflows once bound.
TEST(HostilePlan, DynamicPlans) {
  static const std::vector<uint8_t> dynamic = [] {
    std::string text = kModel;
    text.replace(text.find("%x: f32[2,4]"), 12, "%x: f32[batch,4]");
    auto model = ir::ParseModel(text);
    EXPECT_TRUE(model.ok()) << model.status().ToString();
    driver::CompileOptions options;
    options.fuse_rows = false;  // the Softmax stays a step of its own (its attributes are tampered with)
    auto result = driver::Compile(**model, options);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result->plan.bytes;
  }();
  auto refused = [&](const Edit& edit, const std::string& message) {
    std::vector<uint8_t> bytes = RewritePlan(dynamic, edit);
    Status s = [&]() -> Status {
      PRECIS_ASSIGN_OR_RETURN(auto session, Session::FromBuffer(bytes.data(), bytes.size()));
      std::vector<float> x(12, 1.0f);
      PRECIS_RETURN_IF_ERROR(session->SetInput("x", DataType::kF32, {3, 4}, x.data(), x.size() * 4));
      return session->Run();
    }();
    ASSERT_FALSE(s.ok()) << "a hostile plan was accepted; expected: " << message;
    EXPECT_NE(s.ToString().find(message), std::string::npos) << s.ToString();
    std::printf("  refused: %s\n", s.ToString().c_str());
  };
  // Unchanged, the plan runs (else the refusals prove nothing).
  {
    std::vector<uint8_t> bytes = RewritePlan(dynamic, [](plan::PlanT&, auto&) {});
    auto session = Session::FromBuffer(bytes.data(), bytes.size());
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    std::vector<float> x(12, 1.0f);
    ASSERT_TRUE((*session)->SetInput("x", DataType::kF32, {3, 4}, x.data(), x.size() * 4).ok());
    Status run = (*session)->Run();
    ASSERT_TRUE(run.ok()) << run.ToString();
  }
  refused([](plan::PlanT& p, auto&) { p.symbols.push_back("batch"); }, "names symbolic dim 'batch' twice");
  refused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "h"))]->dim_code = {1, 1, 1, 5}; }, "has a bad symbolic dim");
  refused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "h"))]->dim_code = {1, 1}; }, "has a bad symbolic dim");
  refused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "h"))]->dim_code.push_back(0); }, "has a bad symbolic dim");
  refused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "h"))]->dims[1] = -5; }, "has bad dims");
  refused([](plan::PlanT& p, auto&) {
    auto& w = *p.tensors[size_t(TensorId(p, "W"))];
    w.dims[0] = -1;
    w.dim_code = {1, 1, 1, 0};
  }, "is not an arena tensor");
  refused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "h"))]->inplace_of = 1 << 20; }, "bad in-place source");
  // Atoms: a divisor of 0, an atom that refers to itself, an unknown kind, a two-operand kind
  // without its second operand, a factor naming no atom.
  refused([](plan::PlanT& p, auto&) { p.dim_atoms = {0, 1, 1, 1, 0}; }, "bad atom");
  refused([](plan::PlanT& p, auto&) { p.dim_atoms = {2, 1, 1, 1, -1}; }, "bad atom");
  refused([](plan::PlanT& p, auto&) { p.dim_atoms = {-6, 1, 1, 1, 0}; }, "bad atom");
  refused([](plan::PlanT& p, auto&) { p.dim_atoms = {-3, 1, 1, 1, 0}; }, "bad atom");
  // Value symbols: a symbol read from a tensor that is no input, from past an input's end, twice.
  // (h and x are float: as integers they have no scale; with one, h is no input and x's dims are symbolic.)
  refused([](plan::PlanT& p, auto&) { p.value_symbols = {0, TensorId(p, "h"), 0}; }, "has a bad value scale");
  refused([](plan::PlanT& p, auto&) {
    p.value_symbols = {0, TensorId(p, "h"), 0};
    p.value_symbol_scale = {1};
  }, "reads a value no input of static shape holds");
  refused([](plan::PlanT& p, auto&) {
    p.value_symbols = {0, TensorId(p, "x"), 0};
    p.value_symbol_scale = {1};
  }, "reads a value no input of static shape holds");
  refused([](plan::PlanT& p, auto&) { p.value_symbols = {0, 1 << 20, 0}; }, "bad value symbol");
  refused([](plan::PlanT& p, auto&) { p.value_symbols = {0, 0}; }, "bad value symbols");
  refused([](plan::PlanT& p, auto&) {
    p.value_symbols = {0, TensorId(p, "x"), 0};
    p.value_symbol_scale = {1, 2};
  }, "bad value symbol scales");
  refused([](plan::PlanT& p, auto&) {
    p.value_symbols = {0, TensorId(p, "x"), 0};
    p.value_symbol_scale = {-3};
  }, "has a bad value scale");
  // Value expressions (runtime/base/value_expr.h): code that does not parse (an unknown
  // operation, a missing operand, no conversion to an integer), a leaf that is no input, one
  // past an input's end, one of symbolic dims, lists of different lengths, two expressions for
  // one symbol, an expression and a value symbol for one symbol.
  auto expr = [](const std::string& code) {
    return [code](plan::PlanT& p, auto&) {
      p.symbols.push_back("n");
      p.expr_symbols = {1};
      p.expr_symbol_code = {code};
    };
  };
  refused(expr("$x_int_bogus_t0e0"), "has a bad value expression");
  refused(expr("$x_rlen_t0e0_t0e0"), "has a bad value expression");
  refused(expr("$x_add_c3ff0000000000000_c3ff0000000000000"), "has a bad value expression");
  refused(expr("$x_int_t1048576e0"), "reads a value no input of static shape holds");
  refused([&](plan::PlanT& p, auto& self) {
    expr("$x_int_t" + std::to_string(TensorId(p, "h")) + "e0")(p, self);
  }, "reads a value no input of static shape holds");
  refused([&](plan::PlanT& p, auto& self) { expr("$x_int_t" + std::to_string(TensorId(p, "x")) + "e0")(p, self); },
          "reads a value no input of static shape holds");
  refused([](plan::PlanT& p, auto&) {
    p.expr_symbols = {0};
    p.expr_symbol_code = {};
  }, "bad value expression symbols");
  refused([](plan::PlanT& p, auto&) {
    p.symbols.push_back("n");
    p.expr_symbols = {1, 1};
    p.expr_symbol_code = {"$x_int_c3ff0000000000000", "$x_int_c3ff0000000000000"};
  }, "has two value expressions");
  refused([](plan::PlanT& p, auto&) {
    p.expr_symbols = {0};
    p.expr_symbol_code = {"$x_int_c3ff0000000000000"};
  }, "is both an input dim and a value expression");
  // Deeply nested code is refused by its length, never parsed recursively without end.
  {
    std::string deep = "$x_int";
    for (int k = 0; k < 5000; ++k) deep += "_neg";
    refused(expr(deep + "_c3ff0000000000000"), "has a bad value expression");
  }
  // Data dims: no bounds, an axis past the tensor's rank, a static axis, a symbol the input binds,
  // a bound cut short.
  refused([](plan::PlanT& p, auto&) { p.data_symbols = {0, TensorId(p, "h"), 0}; }, "bad data symbols");
  refused([](plan::PlanT& p, auto&) {
    p.data_symbols = {0, TensorId(p, "h"), 5};
    p.data_symbol_bounds = {1, 7, 0};
  }, "bad data symbol");
  refused([](plan::PlanT& p, auto&) {
    p.data_symbols = {0, TensorId(p, "h"), 1};
    p.data_symbol_bounds = {1, 7, 0};
  }, "is not the dim its tensor holds");
  refused([](plan::PlanT& p, auto&) {
    p.data_symbols = {0, TensorId(p, "h"), 0};
    p.data_symbol_bounds = {1, 7, 0};
  }, "is both an input dim and a data dim");
  refused([](plan::PlanT& p, auto&) {
    p.symbols.push_back("count");
    p.tensors[size_t(TensorId(p, "h"))]->dim_code = {1, 1, 1, 1};
    p.data_symbols = {1, TensorId(p, "h"), 0};
    p.data_symbol_bounds = {1, 7};
  }, "bad data symbol bound");
  // A step claiming a data dim the plan does not list; a data symbol whose step has no
  // data_dim_axis (its kernel would not record the size).
  refused([](plan::PlanT& p, auto&) {
    auto a = std::make_unique<plan::AttrT>();
    a->name = "data_dim_axis";
    a->kind = plan::AttrKind_Int;
    a->i = 0;
    p.programs[0]->steps[0]->attrs.push_back(std::move(a));
  }, "has data_dim_axis, but the plan lists no data symbol");
  refused([](plan::PlanT& p, auto&) {
    p.symbols.push_back("count");
    p.tensors[size_t(TensorId(p, "h"))]->dim_code = {1, 1, 1, 1};
    p.data_symbols = {1, TensorId(p, "h"), 0};
    p.data_symbol_bounds = {1, 7, 0};
  }, "is not bound by exactly one entry-program step with data_dim_axis 0");
  refused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "h"))]->dim_code = {1, 1, 1, -1}; }, "has a bad symbolic dim");
  refused([](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "h"))]->dim_code = {1, int64_t(1) << 62, 1, 0}; }, "out of range");
  // Two tensors live at once made to look disjoint: they share bytes, and the step reading one
  // and writing the other is refused.
  refused([](plan::PlanT& p, auto&) {
    auto& h = *p.tensors[size_t(TensorId(p, "h"))];
    auto& s = *p.tensors[size_t(TensorId(p, "s"))];
    auto& t = *p.tensors[size_t(TensorId(p, "t"))];
    h.live_last = 1000;  // h keeps its bytes: t's lowest free slot is s's
    s.live_last = s.live_first;
    t.live_first = s.live_first + 1;
  }, "overlaps its input 's'");
}

TEST(HostilePlan, PrecisRunRefusesThem) {
  std::string dir = ::testing::TempDir() + "/hostile_plans";
  std::filesystem::create_directories(dir);
  std::vector<std::pair<Edit, std::string>> cases = {
      {[](plan::PlanT& p, auto&) { StepOf(p, "Relu").inputs[0] = int(p.tensors.size()); }, "tensor id out of range"},
      {[](plan::PlanT& p, auto&) { p.tensors[size_t(TensorId(p, "h"))]->dims[0] = -2; }, "has bad dims"},
      {[](plan::PlanT& p, auto&) { StepOf(p, "Relu").kernel = "NoSuchKernel"; }, "has no kernel"},
      {[](plan::PlanT& p, auto&) { p.arena_bytes = uint64_t(1) << 62; }, "more than this machine's"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string path = dir + "/case" + std::to_string(i) + ".plan", log = path + ".log";
    std::vector<uint8_t> bytes = RewritePlan(Plan(), cases[i].first);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    std::string command = std::string(PRECIS_BINARY) + " run " + path + " --random >" + log + " 2>&1";
    int rc = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(rc)) << command;
    EXPECT_EQ(WEXITSTATUS(rc), 1) << command;
    std::stringstream text;
    text << std::ifstream(log).rdbuf();
    EXPECT_EQ(text.str().rfind("precis run: ", 0), 0u) << text.str();
    EXPECT_NE(text.str().find(cases[i].second), std::string::npos) << text.str();
    EXPECT_NE(text.str().find(path), std::string::npos) << "the message names the file: " << text.str();
  }
}

}  // namespace
}  // namespace precis
