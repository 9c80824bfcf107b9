// PlanMemory (see memory_plan.h): in-place groups by union-find, then greedy-by-size
// placement of the groups.
#include "runtime/plan/memory_plan.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace precis::plan {
namespace {

size_t Align(size_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

struct Group {
  size_t bytes = 0;
  int first = 0, last = 0;
  std::vector<int> members;
  size_t offset = 0;
};

int Find(std::vector<int>& parent, int x) {
  while (parent[size_t(x)] != x) x = parent[size_t(x)] = parent[size_t(parent[size_t(x)])];
  return x;
}

}  // namespace

MemoryPlan PlanMemory(const std::vector<PlannedTensor>& tensors) {
  MemoryPlan plan;
  size_t n = tensors.size();
  plan.offsets.assign(n, 0);
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  // An in-place candidate joins the group of its source when the source group's lifetime ends
  // exactly where this tensor is defined.
  std::vector<int> group_last(n);
  for (size_t i = 0; i < n; ++i) group_last[i] = tensors[i].last;
  for (size_t i = 0; i < n; ++i) {
    const PlannedTensor& t = tensors[i];
    if (t.inplace_of < 0) continue;
    int src = Find(parent, t.inplace_of);
    if (group_last[size_t(src)] == t.first && tensors[size_t(t.inplace_of)].bytes == t.bytes && t.bytes > 0) {
      parent[i] = src;
      group_last[size_t(src)] = t.last;
      ++plan.inplace_count;
      plan.trace.push_back("tensor " + std::to_string(i) + " in place of tensor " + std::to_string(t.inplace_of));
    }
  }
  std::map<int, Group> groups;
  for (size_t i = 0; i < n; ++i) {
    int root = Find(parent, int(i));
    auto [it, inserted] = groups.try_emplace(root);
    Group& g = it->second;
    if (inserted) {
      g.first = tensors[i].first;
      g.last = tensors[i].last;
    }
    g.bytes = std::max(g.bytes, Align(tensors[i].bytes));
    g.first = std::min(g.first, tensors[i].first);
    g.last = std::max(g.last, tensors[i].last);
    g.members.push_back(int(i));
  }
  std::vector<Group*> order;
  for (auto& [root, g] : groups)
    if (g.bytes > 0) order.push_back(&g);
  std::stable_sort(order.begin(), order.end(), [](const Group* a, const Group* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->first < b->first;
  });
  std::vector<Group*> placed;
  for (Group* g : order) {
    std::vector<std::pair<size_t, size_t>> busy;  // [offset, end) of overlapping placed groups
    for (const Group* p : placed)
      if (p->first <= g->last && g->first <= p->last) busy.push_back({p->offset, p->offset + p->bytes});
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [b, e] : busy) {
      if (offset + g->bytes <= b) break;
      offset = std::max(offset, e);
    }
    g->offset = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + g->bytes);
    placed.push_back(g);
    plan.trace.push_back("group of tensor " + std::to_string(g->members[0]) + ": " + std::to_string(g->bytes) + " bytes, steps [" +
                         std::to_string(g->first) + ", " + std::to_string(g->last) + "] at offset " + std::to_string(offset));
  }
  for (auto& [root, g] : groups)
    for (int m : g.members) plan.offsets[size_t(m)] = g.offset;
  // Lower bound: the most bytes live at once (group sizes, since in-place members share), swept
  // over the groups' start and end events (not step by step: a dynamic plan's live ranges come
  // from the plan file and may span any int range).
  std::vector<std::pair<int64_t, int64_t>> events;  // (step, +bytes at first / -bytes after last)
  for (auto& [root, g] : groups) {
    if (g.first > g.last || g.bytes == 0) continue;
    events.push_back({g.first, int64_t(g.bytes)});
    events.push_back({int64_t(g.last) + 1, -int64_t(g.bytes)});
  }
  std::sort(events.begin(), events.end());  // at one step the ends (negative) come first
  int64_t live = 0;
  for (const auto& [step, delta] : events) {
    live += delta;
    plan.lower_bound = std::max(plan.lower_bound, size_t(std::max<int64_t>(live, 0)));
  }
  return plan;
}

}  // namespace precis::plan
