// The fiber scheduler of fiber_cuda.h: each block's threads are fibers with their own stacks,
// switched by emu_switch (callee-saved registers and the stack pointer: the System V x86-64 ABI),
// run round-robin in a random order until each blocks at a barrier; a barrier is released when
// every thread it concerns (the warp's lanes, the block's threads) has reached it.
#include "fiber_cuda.h"
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

extern "C" void emu_switch(void** from_sp, void* to_sp);
asm(R"(
.text
.globl emu_switch
emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
)");

dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace emu {
cudaError_t last_error = cudaSuccess;
namespace {
constexpr size_t kStack = 128 * 1024;
enum State { kRunnable, kAtWarpBarrier, kAtBlockBarrier, kDone };
struct Fiber {
  void* sp = nullptr;
  State state = kRunnable;
};
std::vector<Fiber> fibers;
std::vector<std::vector<char>> stacks;
void* sched_sp = nullptr;
int current = -1;
int nthreads = 0;
std::vector<unsigned char> shared_mem;
std::vector<uint64_t> slots;  // [warp][lane]
void (*g_body)(void*);
void* g_arg;

void Entry() {
  g_body(g_arg);
  fibers[size_t(current)].state = kDone;
  void* unused;
  emu_switch(&unused, sched_sp);
  std::abort();  // a finished fiber is never resumed
}
void Yield(State state) {
  fibers[size_t(current)].state = state;
  emu_switch(&fibers[size_t(current)].sp, sched_sp);
}
}  // namespace

unsigned char* DynamicShared() { return shared_mem.data(); }

void BlockBarrier() { Yield(kAtBlockBarrier); }
void WarpBarrier() { Yield(kAtWarpBarrier); }

// A shuffle: every lane posts its value, then reads lane `src`'s; the second barrier keeps the
// slots until all have read.
void Exchange(uint64_t v, int src, uint64_t* out) {
  int lane = current & 31, warp = current >> 5;
  slots[size_t(warp * 32 + lane)] = v;
  WarpBarrier();
  *out = slots[size_t(warp * 32 + src)];
  WarpBarrier();
}

void RunBlock(dim3 grid, dim3 block, dim3 bidx, size_t smem, void (*body)(void*), void* arg) {
  nthreads = int(block.x);
  fibers.assign(size_t(nthreads), Fiber{});
  if (stacks.size() < size_t(nthreads)) stacks.resize(size_t(nthreads), std::vector<char>(kStack));
  shared_mem.assign(smem + 16, 0xCD);  // garbage, like real shared memory
  slots.assign(size_t((nthreads + 31) / 32 * 32), 0);
  g_body = body;
  g_arg = arg;
  gridDim = grid;
  blockDim = block;
  blockIdx = bidx;
  for (int i = 0; i < nthreads; ++i) {
#ifdef __SANITIZE_ADDRESS__
    __asan_unpoison_memory_region(stacks[size_t(i)].data(), kStack);
#endif
    uintptr_t top = (reinterpret_cast<uintptr_t>(stacks[size_t(i)].data()) + kStack) & ~uintptr_t(15);
    void** sp = reinterpret_cast<void**>(top);
    *--sp = nullptr;                                   // alignment: Entry starts as if called
    *--sp = reinterpret_cast<void*>(&Entry);           // emu_switch's ret goes here
    for (int r = 0; r < 6; ++r) *--sp = nullptr;       // callee-saved registers
    fibers[size_t(i)].sp = sp;
  }
  static std::vector<int> order;
  static uint64_t seed = 88172645463325252ull;
  order.resize(size_t(nthreads));
  for (int i = 0; i < nthreads; ++i) order[size_t(i)] = i;
  for (;;) {
    bool progressed = false;
    // A random order each round: results must not depend on which thread runs first.
    for (int i = nthreads - 1; i > 0; --i) {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      std::swap(order[size_t(i)], order[seed % uint64_t(i + 1)]);
    }
    for (int oi = 0; oi < nthreads; ++oi) {
      int i = order[size_t(oi)];
      if (fibers[size_t(i)].state != kRunnable) continue;
      current = i;
      threadIdx = dim3(unsigned(i));
      emu_switch(&sched_sp, fibers[size_t(i)].sp);
      progressed = true;
    }
    // Release barriers that everyone reached.
    int done = 0, at_block = 0;
    for (auto& f : fibers) done += f.state == kDone, at_block += f.state == kAtBlockBarrier;
    if (done == nthreads) break;
    for (int w = 0; w * 32 < nthreads; ++w) {
      int lanes = std::min(32, nthreads - w * 32), at = 0, wdone = 0;
      for (int l = 0; l < lanes; ++l) {
        at += fibers[size_t(w * 32 + l)].state == kAtWarpBarrier;
        wdone += fibers[size_t(w * 32 + l)].state == kDone;
      }
      if (at == lanes) {
        for (int l = 0; l < lanes; ++l) fibers[size_t(w * 32 + l)].state = kRunnable;
        progressed = true;
      } else if (at > 0 && at + wdone == lanes) {
        std::fprintf(stderr, "emu: warp %d: shuffle with exited lanes\n", w);
        std::abort();
      }
    }
    if (at_block + done == nthreads && at_block > 0) {
      if (done) {
        std::fprintf(stderr, "emu: __syncthreads with exited threads\n");
        std::abort();
      }
      for (auto& f : fibers) f.state = kRunnable;
      progressed = true;
    }
    if (!progressed) {
      int at_warp = 0;
      for (auto& f : fibers) at_warp += f.state == kAtWarpBarrier;
      std::fprintf(stderr, "emu: deadlock in block %u: %d at warp barriers, %d at block barriers, %d done of %d\n", bidx.x, at_warp,
                   at_block, done, nthreads);
      std::abort();
    }
  }
}
}  // namespace emu
