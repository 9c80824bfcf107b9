// Plan format 2: programs sharing state, predicated steps, state files, modules and refusal of
// format-1 plans. The plans are emitted from small text-IR graphs; expected values are computed
// here by hand (plain float sums), never by the code under test.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "compiler/emit/plan_emitter.h"
#include "compiler/ir/text.h"
#include "passes/infer_shapes.h"
#include "precis/c_api.h"
#include "precis/session.h"
#include "tests/runtime/plan_test_util.h"
#include "runtime/base/hash.h"
#include "runtime/kernels/fused_program.h"
#include "runtime/plan/plan_format.h"

namespace precis {
namespace {

using testing::Reseal;
using testing::RewritePlan;

// "step": acc <- acc + x (only when %go), y = 2 * (acc + x), z = 3 * x (only when %go).
constexpr const char* kStep = R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "step" {
  input %acc: f32[4] = [1.0, 2.0, 3.0, 4.0]
  input %x: f32[4]
  input %go: bool[]
  const %two: f32[] = [2.0]
  const %three: f32[] = [3.0]
  %sum = Add(%acc, %x) precision {reason = "compute-op", accumulate = f32}
  %y = Mul(%sum, %two)
  %z = Mul(%x, %three) name "triple"
  output %y
  output %z
  output %sum
}
)";

// "read": out = acc * 1 (the state as the other program sees it).
constexpr const char* kRead = R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "read" {
  input %acc: f32[4] = [1.0, 2.0, 3.0, 4.0]
  const %one: f32[] = [1.0]
  %out = Mul(%acc, %one)
  output %out
}
)";

std::unique_ptr<ir::Model> Parse(const char* text) {
  auto model = ir::ParseModel(text);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  passes::InferOptions infer;
  auto inferred = passes::InferShapesAndFold(**model, infer);
  EXPECT_TRUE(inferred.ok()) << inferred.status().ToString();
  return std::move(*model);
}

struct Emitted {
  std::unique_ptr<ir::Model> step, read;
  std::vector<uint8_t> bytes;
};

Emitted EmitTwoPrograms() {
  Emitted e{Parse(kStep), Parse(kRead), {}};
  std::vector<emit::ProgramSource> programs(2);
  programs[0].name = "step";
  programs[0].graph = e.step->graph.get();
  programs[0].state_updates["sum"] = "acc";
  programs[0].update_predicates["acc"] = "go";
  programs[0].predicates["triple"] = "go";
  programs[1].name = "read";
  programs[1].graph = e.read->graph.get();
  emit::EmitOptions options;
  options.state = {"acc"};
  auto plan = emit::EmitPrograms(*e.step, programs, options);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (plan.ok()) e.bytes = plan->bytes;
  return e;
}

std::vector<float> ReadAcc(Session& s) {
  std::vector<float> acc(4);
  EXPECT_TRUE(s.ReadState("acc", acc.data(), 16).ok());
  return acc;
}

Status Step(Session& s, std::vector<float> x, bool go) {
  uint8_t flag = go;
  PRECIS_RETURN_IF_ERROR(s.SetInput("x", DataType::kF32, {4}, x.data(), 16));
  PRECIS_RETURN_IF_ERROR(s.SetInput("go", DataType::kBool, {}, &flag, 1));
  return s.Run("step");
}

std::vector<float> Out(Session& s, const std::string& name) {
  auto t = s.Output(name);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  const float* p = static_cast<const float*>(t->data);
  return std::vector<float>(p, p + t->info.NumElements());
}

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/" + name + "." + std::to_string(::getpid()); }

TEST(PlanPrograms, TwoProgramsShareState) {
  Emitted e = EmitTwoPrograms();
  auto s = Session::FromBuffer(e.bytes.data(), e.bytes.size());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session& session = **s;
  EXPECT_EQ(session.programs(), (std::vector<std::string>{"step", "read"}));
  ASSERT_EQ(session.state().size(), 1u);
  EXPECT_EQ(session.state()[0].name, "acc");
  auto step_inputs = session.ProgramInputs("step");
  ASSERT_TRUE(step_inputs.ok());
  ASSERT_EQ(step_inputs->size(), 2u);  // x and go: the state is not an input
  EXPECT_EQ((*step_inputs)[0].name, "x");
  EXPECT_EQ(ReadAcc(session), (std::vector<float>{1, 2, 3, 4}));
  ASSERT_TRUE(Step(session, {0.5f, 1, -2, 8}, true).ok());
  EXPECT_EQ(Out(session, "y"), (std::vector<float>{3, 6, 2, 24}));  // 2 * (acc + x)
  EXPECT_EQ(ReadAcc(session), (std::vector<float>{1.5f, 3, 1, 12}));
  ASSERT_TRUE(Step(session, {1, 1, 1, 1}, true).ok());
  ASSERT_TRUE(session.Run("read").ok());
  EXPECT_EQ(Out(session, "out"), (std::vector<float>{2.5f, 4, 2, 13}));
  auto missing = session.Run("train");
  EXPECT_NE(missing.message().find("no program 'train' (programs: step, read)"), std::string::npos) << missing.ToString();
}

TEST(PlanPrograms, PredicatedStepsRunOrAreSkippedByTheFlag) {
  Emitted e = EmitTwoPrograms();
  auto s = Session::FromBuffer(e.bytes.data(), e.bytes.size());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session& session = **s;
  ASSERT_TRUE(Step(session, {1, 2, 3, 4}, true).ok());
  EXPECT_EQ(Out(session, "z"), (std::vector<float>{3, 6, 9, 12}));
  EXPECT_EQ(ReadAcc(session), (std::vector<float>{2, 4, 6, 8}));
  // go false: the predicated Mul and the state update do not run; the unpredicated steps do.
  ASSERT_TRUE(Step(session, {10, 10, 10, 10}, false).ok());
  EXPECT_EQ(Out(session, "z"), (std::vector<float>{3, 6, 9, 12}));
  EXPECT_EQ(Out(session, "y"), (std::vector<float>{24, 28, 32, 36}));
  EXPECT_EQ(ReadAcc(session), (std::vector<float>{2, 4, 6, 8}));
  ASSERT_TRUE(Step(session, {10, 10, 10, 10}, true).ok());
  EXPECT_EQ(Out(session, "z"), (std::vector<float>{30, 30, 30, 30}));
  EXPECT_EQ(ReadAcc(session), (std::vector<float>{12, 14, 16, 18}));
}

TEST(PlanPrograms, StateSaveLoadRoundTripsBitwise) {
  Emitted e = EmitTwoPrograms();
  auto a = Session::FromBuffer(e.bytes.data(), e.bytes.size());
  auto b = Session::FromBuffer(e.bytes.data(), e.bytes.size());
  ASSERT_TRUE(a.ok() && b.ok());
  // Values with full mantissas, a NaN payload and a negative zero: bitwise, not approximately.
  std::vector<float> v = {0.1f, -0.0f, std::nanf("0x123"), 3.4e38f};
  ASSERT_TRUE((*a)->WriteState("acc", DataType::kF32, {4}, v.data(), 16).ok());
  std::string path = TempPath("state");
  ASSERT_TRUE((*a)->SaveState(path).ok());
  ASSERT_TRUE((*b)->LoadState(path).ok());
  std::vector<float> back = ReadAcc(**b);
  EXPECT_EQ(std::memcmp(back.data(), v.data(), 16), 0);
  std::ifstream tmp(path + ".tmp." + std::to_string(::getpid()));
  EXPECT_FALSE(tmp.good()) << "the temporary file of the atomic save is left behind";
  std::remove(path.c_str());
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

TEST(PlanPrograms, BadStateFilesAreRefusedAndChangeNothing) {
  Emitted e = EmitTwoPrograms();
  auto s = Session::FromBuffer(e.bytes.data(), e.bytes.size());
  ASSERT_TRUE(s.ok());
  Session& session = **s;
  std::string path = TempPath("state_bad");
  ASSERT_TRUE(session.SaveState(path).ok());
  std::vector<uint8_t> good = ReadFile(path);
  std::vector<float> marker = {9, 9, 9, 9};
  ASSERT_TRUE(session.WriteState("acc", DataType::kF32, {4}, marker.data(), 16).ok());
  auto expect_refused = [&](const std::vector<uint8_t>& bytes, const std::string& why) {
    WriteFile(path, bytes);
    Status st = session.LoadState(path);
    EXPECT_FALSE(st.ok()) << why;
    EXPECT_NE(st.message().find(why), std::string::npos) << st.ToString();
    EXPECT_EQ(ReadAcc(session), marker) << "a refused file changed the state";
  };
  expect_refused(std::vector<uint8_t>(good.begin(), good.begin() + long(good.size() / 2)), "checksum");
  expect_refused(std::vector<uint8_t>(good.begin(), good.begin() + 10), "truncated");
  auto corrupt = good;
  corrupt[corrupt.size() - 20] ^= 0x40;
  expect_refused(corrupt, "checksum");
  auto magic = good;
  magic[0] = 'X';
  expect_refused(magic, "magic");
  EXPECT_NE(session.LoadState(path + ".missing").message().find("cannot open"), std::string::npos);

  // A state file of another plan (a state tensor of another shape) is refused by name.
  auto other_model = ir::ParseModel(R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "other" {
  input %acc: f32[2] = [1.0, 2.0]
  const %one: f32[] = [1.0]
  %out = Mul(%acc, %one)
  output %out
}
)");
  ASSERT_TRUE(other_model.ok());
  ASSERT_TRUE(passes::InferShapesAndFold(**other_model, passes::InferOptions{}).ok());
  emit::EmitOptions options;
  options.state = {"acc"};
  auto other_plan = emit::EmitPlan(**other_model, options);
  ASSERT_TRUE(other_plan.ok()) << other_plan.status().ToString();
  auto other = Session::FromBuffer(other_plan->bytes.data(), other_plan->bytes.size());
  ASSERT_TRUE(other.ok());
  std::string other_path = TempPath("state_other");
  ASSERT_TRUE((*other)->SaveState(other_path).ok());
  Status st = session.LoadState(other_path);
  EXPECT_NE(st.message().find("different plan"), std::string::npos) << st.ToString();
  EXPECT_EQ(ReadAcc(session), marker);
  std::remove(path.c_str());
  std::remove(other_path.c_str());
}

TEST(PlanPrograms, StateAccessErrorsNameTheProblem) {
  Emitted e = EmitTwoPrograms();
  auto s = Session::FromBuffer(e.bytes.data(), e.bytes.size());
  ASSERT_TRUE(s.ok());
  std::vector<float> v(4);
  std::vector<double> d(4);
  EXPECT_NE((*s)->ReadState("w", v.data(), 16).message().find("no state tensor 'w' (state: acc)"), std::string::npos);
  EXPECT_NE((*s)->ReadState("acc", v.data(), 12).message().find("16 bytes"), std::string::npos);
  EXPECT_NE((*s)->WriteState("acc", DataType::kF64, {4}, d.data(), 32).message().find("is f32, got f64"), std::string::npos);
  EXPECT_NE((*s)->WriteState("acc", DataType::kF32, {2, 2}, v.data(), 16).message().find("has shape 4, got 2x2"), std::string::npos);
}

// The fused program w - d over inputs (d, w): output 0 may take input 1's bytes.
const std::vector<int64_t> kSubCode = {0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 3, 1, 0, 0, 0, 17, 0, 2, 1, 0};

std::string SubEntry() {
  auto p = rt::fused::Decode(kSubCode, {});
  EXPECT_TRUE(p.ok());
  return p.ok() ? p->EntryName() : "";
}

// SGD with momentum over a state weight %w and moment %buf: buf <- 0.5 * buf + g;
// w <- w - 0.25 * buf. %late reads buf's old value after the new one exists (variant "late"),
// %fused computes w - d in a fused step that reads w (input 1) and may write it in place.
std::string SgdGraph(bool late, bool fused) {
  std::string g = R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "sgd" {
  input %w: f32[4] = [1.0, 2.0, 3.0, 4.0]
  input %buf: f32[4] = [0.5, 0.5, 0.5, 0.5]
  input %g: f32[4]
  input %go: bool[]
  const %m: f32[] = [0.5]
  const %lr: f32[] = [0.25]
  %decayed = Mul(%buf, %m)
  %buf_next = Add(%decayed, %g) name "accumulate"
  %d = Mul(%buf_next, %lr)
)";
  std::string code;
  for (int64_t c : kSubCode) code += (code.empty() ? "" : ", ") + std::to_string(c);
  g += fused ? "  %w_next = FusedElementwise(%d, %w) {code = [" + code + "], entry = \"" + SubEntry() + "\"}\n" : "  %w_next = Sub(%w, %d)\n";
  if (late) g += "  %late = Mul(%buf, %lr)\n  output %late\n";
  g += "  output %buf_next\n  output %w_next\n}\n";
  return g;
}

struct SgdRun {
  std::vector<std::string> steps;  // the step names of one run of "sgd"
  std::vector<float> w, buf, late;
};

// Emits the graph as program "sgd" (state w and buf, updated from w_next and buf_next; `predicated`:
// the updates and the node "accumulate" run only when %go; `aliased`: the fused kernel has a body
// for outputs over other inputs, as code generation gives a training plan's optimizer steps) and
// runs it once with g = 1 and %go.
SgdRun RunSgd(bool late, bool fused, bool predicated, bool go, bool aliased = true) {
  SgdRun r;
  std::string text = SgdGraph(late, fused);
  std::unique_ptr<ir::Model> model = Parse(text.c_str());
  std::vector<emit::ProgramSource> programs(1);
  programs[0].name = "sgd";
  programs[0].graph = model->graph.get();
  programs[0].state_updates = {{"buf_next", "buf"}, {"w_next", "w"}};
  if (predicated) {
    programs[0].update_predicates = {{"buf", "go"}, {"w", "go"}};
    programs[0].predicates["accumulate"] = "go";
  }
  emit::EmitOptions options;
  options.state = {"w", "buf"};
  if (aliased) options.aliased_entries = {SubEntry()};
  auto plan = emit::EmitPrograms(*model, programs, options);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return r;
  SessionOptions so;
  so.profile = true;
  auto s = Session::FromBuffer(plan->bytes.data(), plan->bytes.size(), so);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return r;
  std::vector<float> g = {1, 1, 1, 1};
  uint8_t flag = go;
  EXPECT_TRUE((*s)->SetInput("g", DataType::kF32, {4}, g.data(), 16).ok());
  EXPECT_TRUE((*s)->SetInput("go", DataType::kBool, {}, &flag, 1).ok());
  Status run = (*s)->Run("sgd");
  EXPECT_TRUE(run.ok()) << run.ToString();
  for (const StepProfile& p : (*s)->profile()) r.steps.push_back(p.node);
  r.w.resize(4);
  r.buf.resize(4);
  EXPECT_TRUE((*s)->ReadState("w", r.w.data(), 16).ok());
  EXPECT_TRUE((*s)->ReadState("buf", r.buf.data(), 16).ok());
  if (late) r.late = Out(**s, "late");
  return r;
}

bool Has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The step computing a state's new value writes it into the state (no copy when the program
// ends) where that is safe; the results are those of the copying plan either way.
TEST(PlanPrograms, StateUpdatesRunInPlaceWhereSafe) {
  // By hand: buf = 0.5 * 0.5 + 1 = 1.25; w = w - 0.25 * 1.25 = w - 0.3125.
  const std::vector<float> buf = {1.25f, 1.25f, 1.25f, 1.25f}, w = {0.6875f, 1.6875f, 2.6875f, 3.6875f};
  // The Add of buf's update reads only buf's decayed copy: it writes buf itself. The Sub reads
  // w, which a plain Sub may not overwrite: w is copied at the end.
  SgdRun plain = RunSgd(false, false, false, true);
  EXPECT_FALSE(Has(plain.steps, "update buf"));
  EXPECT_TRUE(Has(plain.steps, "update w"));
  EXPECT_EQ(plain.buf, buf);
  EXPECT_EQ(plain.w, w);
  // A fused step whose program reads w element for element before writing: w in place too.
  SgdRun fused = RunSgd(false, true, false, true);
  EXPECT_FALSE(Has(fused.steps, "update buf"));
  EXPECT_FALSE(Has(fused.steps, "update w"));
  EXPECT_EQ(fused.buf, buf);
  EXPECT_EQ(fused.w, w);
  // The same fused step whose code has no body for it: w is copied.
  SgdRun no_body = RunSgd(false, true, false, true, false);
  EXPECT_TRUE(Has(no_body.steps, "update w"));
  EXPECT_EQ(no_body.w, w);
  // buf's old value read after the Add: buf is copied at the end, and %late sees the old value.
  SgdRun late = RunSgd(true, true, false, true);
  EXPECT_TRUE(Has(late.steps, "update buf"));
  EXPECT_EQ(late.buf, buf);
  EXPECT_EQ(late.late, (std::vector<float>{0.125f, 0.125f, 0.125f, 0.125f}));
  // Predicated updates: buf's Add has the same predicate (in place); w's fused step has none
  // (copied under the predicate). A skipped step leaves both unchanged.
  for (bool go : {true, false}) {
    SgdRun p = RunSgd(false, true, true, go);
    EXPECT_FALSE(Has(p.steps, "update buf"));
    EXPECT_TRUE(Has(p.steps, "update w"));
    const std::vector<float> buf0 = {0.5f, 0.5f, 0.5f, 0.5f}, w0 = {1, 2, 3, 4};
    EXPECT_EQ(p.buf, go ? buf : buf0);
    EXPECT_EQ(p.w, go ? w : w0);
  }
}

// A derive program (plan.fbs Program.derives_state): "twice" keeps acc2 = 2 * acc. The session
// runs it when the plan loads and after state is written or loaded; acc2 is not the caller's state.
TEST(PlanPrograms, DerivedStateFollowsWritesAndIsNotTheCallersState) {
  std::unique_ptr<ir::Model> step = Parse(kStep), twice = Parse(R"(
model {ir_version = 8, producer_name = "test", producer_version = "", domain = "", model_version = 0, opsets = {"" = 17}}
graph "twice" {
  input %acc: f32[4] = [1.0, 2.0, 3.0, 4.0]
  input %acc2: f32[4] = [0.0, 0.0, 0.0, 0.0]
  const %two: f32[] = [2.0]
  %doubled = Mul(%acc, %two)
  output %doubled
}
)");
  std::vector<emit::ProgramSource> programs(2);
  programs[0].name = "step";
  programs[0].graph = step->graph.get();
  programs[0].state_updates["sum"] = "acc";
  programs[1].name = "twice";
  programs[1].graph = twice->graph.get();
  programs[1].state_updates["doubled"] = "acc2";
  programs[1].derives_state = true;
  emit::EmitOptions options;
  options.state = {"acc", "acc2"};
  auto plan = emit::EmitPrograms(*step, programs, options);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto s = Session::FromBuffer(plan->bytes.data(), plan->bytes.size());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Session& session = **s;
  EXPECT_EQ(session.programs(), (std::vector<std::string>{"step"}));
  ASSERT_EQ(session.state().size(), 1u);
  EXPECT_EQ(session.state()[0].name, "acc");
  auto read2 = [&] {
    std::vector<float> v(4);
    EXPECT_TRUE(session.ReadState("acc2", v.data(), 16).ok());
    return v;
  };
  EXPECT_EQ(read2(), (std::vector<float>{2, 4, 6, 8})) << "derived when the plan loads";
  std::vector<float> acc = {0.5f, -1, 10, 0};
  ASSERT_TRUE(session.WriteState("acc", DataType::kF32, {4}, acc.data(), 16).ok());
  EXPECT_EQ(read2(), (std::vector<float>{1, -2, 20, 0})) << "derived again after a write";
  Status refused = session.WriteState("acc2", DataType::kF32, {4}, acc.data(), 16);
  EXPECT_NE(refused.message().find("derived"), std::string::npos) << refused.ToString();
  Status direct = session.Run("twice");
  EXPECT_NE(direct.message().find("derives state"), std::string::npos) << "not an entry program: " << direct.ToString();
  // A derive program that is a body, or a second one, is refused at load.
  for (int edit = 0; edit < 2; ++edit) {
    std::vector<uint8_t> b = RewritePlan(plan->bytes, [&](plan::PlanT& p, auto&) {
      if (edit == 0) p.programs[1]->body = true;
      else p.programs[0]->derives_state = true;
    });
    auto bad = Session::FromBuffer(b.data(), b.size());
    ASSERT_FALSE(bad.ok()) << edit;
    EXPECT_NE(bad.status().message().find("derives state"), std::string::npos) << bad.status().ToString();
  }
}

TEST(PlanPrograms, EmitterRefusesInconsistentPrograms) {
  auto step = Parse(kStep);
  std::vector<emit::ProgramSource> programs(1);
  programs[0].name = "step";
  programs[0].graph = step->graph.get();
  emit::EmitOptions options;
  options.state = {"acc"};
  programs[0].state_updates["sum"] = "nosuch";
  auto r = emit::EmitPrograms(*step, programs, options);
  EXPECT_NE(r.status().message().find("updates 'nosuch', which is not a state tensor"), std::string::npos) << r.status().ToString();
  programs[0].state_updates = {{"y", "acc"}};
  programs[0].predicates["triple"] = "x";
  r = emit::EmitPrograms(*step, programs, options);
  EXPECT_NE(r.status().message().find("predicate 'x' is not a bool scalar"), std::string::npos) << r.status().ToString();
  programs[0].predicates.clear();
  options.state = {"x"};
  r = emit::EmitPrograms(*step, programs, options);
  EXPECT_NE(r.status().message().find("state 'x' must be a constant or a graph input with a default"), std::string::npos) << r.status().ToString();
}

TEST(PlanPrograms, CApiRunsProgramsAndState) {
  Emitted e = EmitTwoPrograms();
  precis_session* s = nullptr;
  ASSERT_EQ(precis_session_from_buffer(e.bytes.data(), e.bytes.size(), 1, &s), 0) << precis_last_error();
  const char* name = nullptr;
  ASSERT_EQ(precis_num_programs(s), 2);
  ASSERT_EQ(precis_program_name(s, 1, &name), 0);
  EXPECT_STREQ(name, "read");
  ASSERT_EQ(precis_num_state(s), 1);
  int dtype = 0, rank = 0;
  const int64_t* dims = nullptr;
  ASSERT_EQ(precis_state_info(s, 0, &name, &dtype, &dims, &rank), 0);
  EXPECT_STREQ(name, "acc");
  EXPECT_EQ(rank, 1);
  float x[4] = {1, 1, 1, 1}, acc[4];
  uint8_t go = 1;
  int64_t four = 4;
  ASSERT_EQ(precis_set_input(s, "x", 1, &four, 1, x, 16), 0) << precis_last_error();
  ASSERT_EQ(precis_set_input(s, "go", 9, nullptr, 0, &go, 1), 0) << precis_last_error();
  ASSERT_EQ(precis_run_program(s, "step"), 0) << precis_last_error();
  ASSERT_EQ(precis_read_state(s, "acc", acc, 16), 0);
  EXPECT_EQ(std::vector<float>(acc, acc + 4), (std::vector<float>{2, 3, 4, 5}));
  std::string path = TempPath("c_state");
  ASSERT_EQ(precis_save_state(s, path.c_str()), 0) << precis_last_error();
  float zeros[4] = {0, 0, 0, 0};
  ASSERT_EQ(precis_write_state(s, "acc", zeros, 16), 0);
  EXPECT_NE(precis_write_state(s, "acc", zeros, 8), 0);
  ASSERT_EQ(precis_load_state(s, path.c_str()), 0) << precis_last_error();
  ASSERT_EQ(precis_read_state(s, "acc", acc, 16), 0);
  EXPECT_EQ(std::vector<float>(acc, acc + 4), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_NE(precis_run_program(s, "nope"), 0);
  precis_session_free(s);
  std::remove(path.c_str());
}

// Versions 1 (one step list, no state) and 2 (steps with the ONNX opset, not kernel form).
TEST(PlanPrograms, OlderFormatsAskForARecompile) {
  for (uint32_t version : {1u, 2u, 3u}) {
    Emitted e = EmitTwoPrograms();
    plan::FileHeader h;
    std::memcpy(&h, e.bytes.data(), sizeof h);
    EXPECT_EQ(h.version, 4u);
    h.version = version;
    std::memcpy(e.bytes.data(), &h, sizeof h);
    Reseal(e.bytes);
    auto s = Session::FromBuffer(e.bytes.data(), e.bytes.size());
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("recompile"), std::string::npos) << s.status().ToString();
    EXPECT_NE(s.status().message().find("version " + std::to_string(version)), std::string::npos) << s.status().ToString();
  }
}

TEST(PlanPrograms, StepsCarryAccumulationDtypeAndLayout) {
  Emitted e = EmitTwoPrograms();
  auto view = plan::ValidatePlan(e.bytes.data(), e.bytes.size());
  ASSERT_TRUE(view.ok());
  const plan::Program* step = view->meta->programs()->Get(0);
  ASSERT_EQ(step->steps()->size(), 4u);  // Add, Mul, Mul, the state update
  EXPECT_EQ(step->steps()->Get(0)->compute_dtype(), uint8_t(DataType::kF32));
  EXPECT_EQ(step->steps()->Get(0)->accumulation_dtype(), uint8_t(DataType::kF32));
  EXPECT_EQ(step->steps()->Get(1)->accumulation_dtype(), 0);
  EXPECT_EQ(step->steps()->Get(2)->predicate(), step->steps()->Get(3)->predicate());
  EXPECT_NE(step->steps()->Get(2)->predicate(), -1);
  EXPECT_EQ(step->steps()->Get(0)->predicate(), -1);
}

}  // namespace
}  // namespace precis
