// libFuzzer target for the plan loader: bytes -> Session::FromBuffer -> every program run once on
// zero-filled inputs. Any bytes must give an error Status or a session whose programs run (or
// fail with a Status); a crash or a sanitizer report is a bug: in plan validation, the session's
// tensor table checks, or a CPU kernel's Init, which must refuse a step whose tensors do not match
// what the kernel assumes instead of reading or writing out of bounds.
//
// Plans carry their own size and a checksum of everything after the 64-byte header: the target
// writes both after mutation, so that mutations reach the FlatBuffers verifier and what lies
// behind it (the size and checksum checks themselves are covered by runtime_plan_file_test).
// The fuzzer's first byte of the checksum field, overwritten anyway, picks session options.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "precis/session.h"
#include "runtime/base/hash.h"
#include "runtime/plan/plan_format.h"

namespace {

// A plan may legitimately ask for gigabytes of arena and state; the session then allocates them
// (or fails cleanly where the allocator says no). Under ASan an allocation past the fuzzer's
// -rss_limit_mb / -malloc_limit_mb is reported as a crash, and large buffers only slow the run
// without reaching new code: skip plans whose metadata asks for more than this in all.
constexpr uint64_t kMaxPlanMemory = uint64_t(64) << 20;

// Arena + state + the weights a --strip-weights plan synthesizes at load, as the metadata says.
uint64_t RequestedMemory(const precis::plan::PlanView& view) {
  const precis::plan::Plan* p = view.meta;
  uint64_t total = p->arena_bytes();
  if (p->state_bytes() > kMaxPlanMemory) return p->state_bytes();
  total += p->state_bytes();
  if (p->tensors())
    for (const precis::plan::TensorDesc* d : *p->tensors())
      if (d->placement() == precis::plan::Placement_Constant && d->synthetic()) {
        if (d->bytes() > kMaxPlanMemory) return d->bytes();
        total += d->bytes();
      }
  return total;
}

// Sets file_size and the checksum of a mutated plan; returns the options byte the fuzzer put in
// the checksum field.
uint8_t Reseal(std::vector<uint8_t>& bytes) {
  precis::plan::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  uint8_t options = uint8_t(h.checksum & 0xff);
  h.file_size = bytes.size();
  h.checksum = precis::HashBytes(bytes.data() + sizeof h, bytes.size() - sizeof h);
  std::memcpy(bytes.data(), &h, sizeof h);
  return options;
}

// PLAN_FUZZ_VERBOSE=1: say what became of each input (to check seeds and reproducers).
bool Verbose() {
  static const bool verbose = std::getenv("PLAN_FUZZ_VERBOSE") != nullptr;
  return verbose;
}

void Say(const std::string& what, const precis::Status& status) {
  if (Verbose()) std::fprintf(stderr, "plan_fuzz: %s: %s\n", what.c_str(), status.ok() ? "ok" : status.ToString().c_str());
}

void RunPrograms(precis::Session& session) {
  for (const std::string& program : session.programs()) {
    auto inputs = session.ProgramInputs(program);
    if (!inputs.ok()) continue;
    for (precis::TensorInfo input : *inputs) {
      // A dynamic plan's symbolic dims are 2; its static dims are the plan's (up to 2^40 each,
      // unchecked before the symbols are bound): inputs past the memory cap are not set.
      double bytes = double(precis::DataTypeSize(input.dtype));
      for (int64_t& d : input.dims) {
        if (d < 0) d = 2;
        bytes *= double(d);
      }
      if (bytes > double(kMaxPlanMemory)) continue;
      std::vector<uint8_t> zeros(input.ByteSize());
      (void)session.SetInput(input.name, input.dtype, input.dims, zeros.data(), zeros.size());
    }
    precis::Status run = session.Run(program);
    Say("run " + program, run);
    if (!run.ok()) continue;
    auto outputs = session.ProgramOutputs(program);
    if (!outputs.ok()) continue;
    for (const precis::TensorInfo& output : *outputs) (void)session.Output(output.name);
  }
}

// Why the target does not open a plan that passes ValidatePlan, or nullptr: too much memory. (The
// misaligned vectors and tensors and the huge zero-size tensors the first runs found are refused
// by ValidatePlan and the session now; their reproducers stay in plan_seeds/.)
const char* SkipReason(const precis::plan::PlanView& view) {
  if (RequestedMemory(view) > kMaxPlanMemory) return "asks for more than 64 MiB of arena, state and synthetic weights";
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  uint8_t flags = 0;
  if (bytes.size() >= sizeof(precis::plan::FileHeader)) flags = Reseal(bytes);
  auto view = precis::plan::ValidatePlan(bytes.data(), bytes.size());
  if (view.ok())
    if (const char* why = SkipReason(*view)) {
      Say("skipped", precis::InvalidArgument(why));
      return 0;
    }

  precis::SessionOptions options;
  options.threads = 1;
  options.reference_kernels = (flags & 1) != 0;  // the fast kernels' Init, or the references'
  options.profile = (flags & 2) != 0;
  options.synthetic_weights = true;  // seeds compiled with --strip-weights stay small
  options.max_loop_iterations = 1000;  // a mutated trip count must not hang the fuzzer
  options.max_arena_bytes = kMaxPlanMemory;  // nor a mutated dynamic plan's dims exhaust memory
  auto session = precis::Session::FromBuffer(bytes.data(), bytes.size(), options);
  Say("open", session.status());
  if (!session.ok()) return 0;
  RunPrograms(**session);
  return 0;
}
