// Memory planner tests on tiny lifetimes: reuse, in-place, peak bytes, and a randomized check
// that no two tensors alive at the same step share bytes.
#include "compiler/emit/memory_planner.h"

#include <set>

#include <random>

#include <gtest/gtest.h>

#include "compiler/ops/op_registry.h"
#include "runtime/exec/in_place.h"

namespace precis::emit {
namespace {

// Independent check: tensors with overlapping lifetimes occupy disjoint byte ranges, unless one
// was planned in place of the other, and everything fits in the arena.
void ExpectValid(const std::vector<PlannedTensor>& t, const MemoryPlan& p) {
  ASSERT_EQ(p.offsets.size(), t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(p.offsets[i] % kArenaAlignment, 0u);
    EXPECT_LE(p.offsets[i] + t[i].bytes, p.arena_bytes) << "tensor " << i;
    for (size_t j = i + 1; j < t.size(); ++j) {
      bool overlap_time = t[i].first <= t[j].last && t[j].first <= t[i].last;
      bool overlap_bytes = p.offsets[i] < p.offsets[j] + t[j].bytes && p.offsets[j] < p.offsets[i] + t[i].bytes;
      bool inplace = t[j].inplace_of == int(i) || t[i].inplace_of == int(j);
      if (overlap_time && overlap_bytes && !inplace) ADD_FAILURE() << "tensors " << i << " and " << j << " collide";
    }
  }
  EXPECT_GE(p.arena_bytes, p.lower_bound);
}

TEST(MemoryPlanner, ChainReusesTwoBuffers) {
  // x0 -> s0 -> x1 -> s1 -> x2 -> s2 -> x3: each tensor lives from its step to the next.
  std::vector<PlannedTensor> t = {{1024, -1, 0, -1}, {1024, 0, 1, -1}, {1024, 1, 2, -1}, {1024, 2, 3, -1}};
  MemoryPlan p = PlanMemory(t);
  ExpectValid(t, p);
  EXPECT_EQ(p.arena_bytes, 2048u);
  EXPECT_EQ(p.lower_bound, 2048u);
}

TEST(MemoryPlanner, InPlaceChainUsesOneBuffer) {
  std::vector<PlannedTensor> t = {{1024, -1, 0, -1}, {1024, 0, 1, 0}, {1024, 1, 2, 1}, {1024, 2, 3, 2}};
  MemoryPlan p = PlanMemory(t);
  ExpectValid(t, p);
  EXPECT_EQ(p.inplace_count, 3);
  EXPECT_EQ(p.arena_bytes, 1024u);
  EXPECT_EQ(p.offsets[0], p.offsets[3]);
}

TEST(MemoryPlanner, NoInPlaceWhenSourceIsReadLater) {
  // Tensor 0 is read by steps 0 and 1, so step 0's output cannot take its storage.
  std::vector<PlannedTensor> t = {{512, -1, 1, -1}, {512, 0, 1, 0}, {512, 1, 2, -1}};
  MemoryPlan p = PlanMemory(t);
  ExpectValid(t, p);
  EXPECT_EQ(p.inplace_count, 0);
  EXPECT_NE(p.offsets[0], p.offsets[1]);
}

TEST(MemoryPlanner, NoInPlaceWhenSizesDiffer) {
  std::vector<PlannedTensor> t = {{512, -1, 0, -1}, {1024, 0, 1, 0}};
  MemoryPlan p = PlanMemory(t);
  ExpectValid(t, p);
  EXPECT_EQ(p.inplace_count, 0);
}

TEST(MemoryPlanner, AllLiveMeansSum) {
  std::vector<PlannedTensor> t = {{100, 0, 5, -1}, {200, 1, 5, -1}, {300, 2, 5, -1}};
  MemoryPlan p = PlanMemory(t);
  ExpectValid(t, p);
  // Sizes round up to 64-byte alignment: 128 + 256 + 320.
  EXPECT_EQ(p.lower_bound, 704u);
  EXPECT_EQ(p.arena_bytes, 704u);
}

TEST(MemoryPlanner, PeakIsTheLargestLiveSet) {
  // Steps 0..3; live sets: {a,b} at 1, {b,c} at 2 with c large.
  std::vector<PlannedTensor> t = {{64, 0, 1, -1}, {64, 1, 2, -1}, {640, 2, 3, -1}, {64, 3, 3, -1}};
  MemoryPlan p = PlanMemory(t);
  ExpectValid(t, p);
  // Live at step 1: {a, b} = 128; step 2: {b, c} = 704; step 3: {c, d} = 704.
  EXPECT_EQ(p.lower_bound, 704u);
}

TEST(MemoryPlanner, ZeroSizedTensors) {
  std::vector<PlannedTensor> t = {{0, 0, 1, -1}, {64, 0, 1, -1}};
  MemoryPlan p = PlanMemory(t);
  ExpectValid(t, p);
  EXPECT_EQ(p.arena_bytes, 64u);
}

TEST(MemoryPlanner, RandomLifetimesNeverCollide) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    int steps = 1 + int(rng() % 20);
    std::vector<PlannedTensor> t;
    for (int i = 0; i < 1 + int(rng() % 30); ++i) {
      int first = int(rng() % unsigned(steps + 1)) - 1;
      int last = first + int(rng() % 5);
      int inplace = t.empty() || rng() % 3 ? -1 : int(rng() % t.size());
      t.push_back({size_t(rng() % 5000), first, last, inplace});
    }
    MemoryPlan p = PlanMemory(t);
    ExpectValid(t, p);
  }
}

// The planner aliases a step's output with its input where the op registry says so; the session
// refuses any alias its table (runtime/exec/in_place.h) does not allow. The two must agree, or
// compiled plans are refused (registry ahead) or hostile aliases accepted (table ahead).
TEST(MemoryPlanner, InPlaceOpsAgreeWithTheRuntimeTable) {
  std::set<std::string> registry_kernels;
  int in_place_ops = 0;
  for (const ops::OpDef* def : ops::OpRegistry::Get().All()) {
    std::string kernel = def->kernel.empty() ? def->op_type : def->kernel;
    if (def->inplace_input >= 0) {
      ++in_place_ops;
      registry_kernels.insert(kernel);
      EXPECT_EQ(rt::InPlaceInput(kernel), def->inplace_input) << def->op_type << " (kernel " << kernel << ")";
    }
  }
  EXPECT_GT(in_place_ops, 50);
  // The other direction: a kernel the table lists is one some op runs in place through.
  for (const ops::OpDef* def : ops::OpRegistry::Get().All()) {
    std::string kernel = def->kernel.empty() ? def->op_type : def->kernel;
    if (rt::InPlaceInput(kernel) >= 0) {
      EXPECT_TRUE(registry_kernels.count(kernel)) << kernel << " is in the runtime table only";
    }
  }
  EXPECT_EQ(rt::InPlaceInput("Transpose"), -1);
  EXPECT_EQ(rt::InPlaceInput(""), -1);
}

}  // namespace
}  // namespace precis::emit
