// The base of the oneDNN fast kernels (dnnl_matmul.cc, dnnl_conv.cc).
//
// Contract: a subclass describes its step in Setup (called from Init, may throw dnnl::error):
// it creates memory objects bound to step inputs/outputs, to per-run temporaries in the step's
// scratch or to persistent buffers, and appends primitives in execution order. Init converts a
// oneDNN "unimplemented" or "invalid arguments" into Unimplemented, so the session falls back to
// the reference kernel; Run binds the data pointers of that run (only when they moved), then
// executes the primitives through the C API (no exceptions, no allocation of ours; oneDNN's own
// execute path still builds a small argument map). Primitives use a user scratchpad in the step's
// scratch. Threads: oneDNN here runs on OpenMP; Init and Run set the calling thread's OpenMP
// thread count to CpuContext::threads for their duration and restore it afterwards.
//
// Types: a step runs here in f32, or, on CPUs with native BF16 (AVX512_BF16 or AMX-BF16, see
// runtime/base/cpu_features.h), with BF16 operands, f32 accumulation (oneDNN's only kind for
// bf16) and BF16 or F32 bias and outputs as the step says (CheckDnnlTypes). Elsewhere BF16 steps
// are declined and the session runs them widened to FP32; FP16 steps run widened too, except
// MatMul/Gemm with constant 16-bit weights, which widen one block of weights at a time through
// host steps between the primitives (dnnl_matmul.cc) rather than copying them to FP32 at load.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <functional>
#include <initializer_list>
#include <utility>
#include <vector>

#include "runtime/cpu/kernel.h"

namespace precis::rt {

// Sets the calling thread's OpenMP thread count for the scope (oneDNN reads it when it creates
// and executes primitives).
class OmpThreadScope {
 public:
  explicit OmpThreadScope(int threads);
  ~OmpThreadScope();
  OmpThreadScope(const OmpThreadScope&) = delete;
  OmpThreadScope& operator=(const OmpThreadScope&) = delete;

 private:
  int saved_;
};

class DnnlKernel : public Kernel {
 public:
  static const dnnl::engine& Engine();
  // oneDNN's own reference implementation (plain loops) was the best it had for `pd`: such
  // steps are left to our reference kernel.
  static bool IsReferenceImpl(const dnnl::primitive_desc_base& pd);
  // Primitive attributes with a user scratchpad (the step's scratch); add post-ops to it.
  static dnnl::primitive_attr Attr();
  Status Init(const KernelArgs& args, const CpuContext& ctx) final;
  Status Run(const KernelArgs& args, CpuContext& ctx) final;
  size_t ScratchBytes() const final;
  bool ReadsConstantInput(size_t i) const final;

 protected:
  using dims = dnnl::memory::dims;
  using md = dnnl::memory::desc;
  using dt = dnnl::memory::data_type;

  // Describes the step; returns Unimplemented when the fast path does not apply.
  virtual Status Setup(const KernelArgs& args) = 0;
  // Runs before the primitives with this run's tensors (e.g. Gemm broadcasting C into Y); a
  // subclass whose BeforeExecute reads input i says so with ReadAtRun(i).
  virtual void BeforeExecute(const KernelArgs& args) { (void)args; }
  void ReadAtRun(size_t i) { read_at_run_.push_back(i); }

  bool fp32_weights_ = false;  // CpuContext::fp32_weights of the Init call
  int threads_ = 1;            // CpuContext::threads of the Init call (at least 1)
  // Row-major descriptor of `d`; `strides` overrides the element strides.
  static md Plain(const dims& d, dt type = dt::f32);
  static md Strided(const dims& d, const dims& strides, dt type = dt::f32);
  static md Any(const dims& d, dt type = dt::f32);
  // The matmul a x b -> c (attributes Attr()) in `pd`; false when oneDNN has none for it or only
  // its reference (for paths that try a product first and fall back to another primitive).
  static bool FastMatMul(const md& a, const md& b, const md& c, dnnl::matmul::primitive_desc* pd);

  // Input/output `i` from `byte_offset` on (e.g. a block of columns).
  dnnl::memory Input(size_t i, const md& desc, size_t byte_offset = 0);
  dnnl::memory Output(size_t i, const md& desc, size_t byte_offset = 0);
  dnnl::memory Temporary(const md& desc);  // lives in the step's scratch during a run
  // Another view of (part of) a temporary: `desc` over its bytes from `byte_offset` on.
  dnnl::memory TemporaryView(const md& desc, const dnnl::memory& temporary, size_t byte_offset);
  // Input `i` (layout `given`) in the layout `wanted`: the input itself when they are equal;
  // a reorder into a persistent buffer now when the input is constant; else a reorder into a
  // temporary appended to the run (call it where that reorder belongs in execution order).
  dnnl::memory Arrange(const KernelArgs& args, size_t i, const md& given, const md& wanted);
  // Appends a primitive; `scratchpad` is its primitive descriptor's scratchpad_desc().
  void Append(const dnnl::primitive& p, const std::vector<std::pair<int, dnnl::memory>>& args, const md& scratchpad);
  // Appends work of ours between primitives (e.g. converting a block of 16-bit weights into a
  // temporary): called with the run's tensors and the step's scratch (temporaries at the offsets
  // TemporaryOffset gave). It must not allocate.
  using HostStep = std::function<void(const KernelArgs& args, uint8_t* scratch, int threads)>;
  void AppendHost(HostStep step);
  // The byte offset in the step's scratch of a temporary made by Temporary (for host steps).
  size_t TemporaryOffset(const dnnl::memory& temporary) const;
  void AppendReorder(const dnnl::memory& from, const dnnl::memory& to);

 private:
  enum class Source { kInput, kOutput, kTemporary, kScratchpad };
  struct Binding {
    dnnl::memory memory;
    Source source;
    size_t index;  // input/output index, or byte offset into the temporaries
    void* bound = nullptr;
    size_t offset = 0;  // inputs and outputs: bytes from the tensor's start
  };
  struct Call {
    dnnl::primitive primitive;  // or, when empty, `host`
    std::vector<dnnl_exec_arg_t> args;
    HostStep host;
  };
  dnnl::memory Bind(const md& desc, Source source, size_t index, size_t offset = 0);

  dnnl::stream stream_;
  std::vector<Binding> bindings_;
  std::vector<dnnl::memory> owned_;  // persistent buffers (reordered constant weights)
  std::vector<Call> calls_;
  size_t temporary_bytes_ = 0, scratchpad_bytes_ = 0;
  std::vector<size_t> read_at_run_;  // inputs BeforeExecute reads
};

// Whether oneDNN runs a step with these tensors (nullptr: omitted) as they are: all f32; or the
// `operands` (matrix/convolution inputs) BF16 and the `others` (bias, C, outputs) BF16 or F32,
// where NativeBf16Enabled(). Unimplemented otherwise (the session widens the step); `kernel`
// names the kernel in the message.
Status CheckDnnlTypes(const char* kernel, std::initializer_list<const Tensor*> operands, std::initializer_list<const Tensor*> others);
// The oneDNN type of a tensor that CheckDnnlTypes accepted (f32 or bf16).
dnnl::memory::data_type DnnlType(const Tensor& t);

// A convolution's window in oneDNN's terms (dilations count the gaps, pads may be asymmetric) and
// its output size per spatial dim, from the step's attributes (auto_pad included) and the spatial
// dims of X and W; Unimplemented when the window does not fit (dnnl_conv.cc).
struct ConvWindowGeometry {
  dnnl::memory::dims strides, dilations, pad_l, pad_r, out;
};
Status ConvWindow(const KernelArgs& args, const dnnl::memory::dims& in, const dnnl::memory::dims& kernel, ConvWindowGeometry* g);
// The step's fused Relu or Clip (its `activation` attribute) as an eltwise post-op of `attr`;
// *applied becomes true when there is one (dnnl_conv.cc).
Status ConvActivationPostOps(const KernelArgs& args, dnnl::primitive_attr* attr, bool* applied);

// Registration helpers of the two oneDNN kernel files (called by RegisterDnnlKernels).
void AddDnnlMatMulKernels(KernelRegistry& r);
void AddDnnlConvKernels(KernelRegistry& r);

}  // namespace precis::rt
