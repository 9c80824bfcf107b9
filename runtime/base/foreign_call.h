// Calls into third-party libraries in progress (oneDNN primitive execution), counted process-wide.
// Only tests read the count: the no-allocation test attributes the allocations it sees while one
// is in progress to the library (whose internals Precis cannot change) and requires zero from
// everything else. One relaxed atomic increment and decrement per library call.
#pragma once

#include <atomic>

namespace precis::rt {

inline std::atomic<int> g_foreign_calls{0};

class ForeignCallScope {
 public:
  ForeignCallScope() { g_foreign_calls.fetch_add(1, std::memory_order_relaxed); }
  ~ForeignCallScope() { g_foreign_calls.fetch_sub(1, std::memory_order_relaxed); }
  ForeignCallScope(const ForeignCallScope&) = delete;
  ForeignCallScope& operator=(const ForeignCallScope&) = delete;
};

}  // namespace precis::rt
