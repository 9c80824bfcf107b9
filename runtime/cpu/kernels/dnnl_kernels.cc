// oneDNN fast kernels: the shared DnnlKernel machinery (memory bindings, scratch layout, error
// mapping, OpenMP threads) and the registration of the fast MatMul, Gemm, Conv and
// ConvTranspose. The reference kernels stay the oracle; these only take steps they can run
// exactly as specified (f32, or BF16 operands on CPUs with native BF16) and answer
// Unimplemented otherwise.
#include <omp.h>

#include <algorithm>
#include <string>

#include "runtime/base/cpu_features.h"
#include "runtime/base/foreign_call.h"
#include "runtime/cpu/kernels/dnnl_kernel.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt {
namespace {

constexpr size_t kAlign = 64;
size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

OmpThreadScope::OmpThreadScope(int threads) : saved_(omp_get_max_threads()) {
  if (threads > 0 && threads != saved_) omp_set_num_threads(threads);
}

OmpThreadScope::~OmpThreadScope() {
  if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
}

const dnnl::engine& DnnlKernel::Engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

Status CheckDnnlTypes(const char* kernel, std::initializer_list<const Tensor*> operands, std::initializer_list<const Tensor*> others) {
  bool f32 = true, bf16 = true;
  for (const Tensor* t : operands) {
    if (!t) continue;
    f32 = f32 && t->dtype == DataType::kF32;
    bf16 = bf16 && t->dtype == DataType::kBF16;
  }
  for (const Tensor* t : others) {
    if (!t) continue;
    f32 = f32 && t->dtype == DataType::kF32;
    bf16 = bf16 && (t->dtype == DataType::kBF16 || t->dtype == DataType::kF32);
  }
  if (f32) return Status::Ok();
  if (!bf16) return Unimplemented(std::string(kernel) + ": f32, or bf16 operands with bf16/f32 bias and outputs, only");
  // oneDNN 2.6 has no bf16 matmul or convolution below AVX-512 (primitive creation fails with
  // unimplemented; seen on an AVX2 CPU) and emulates the BF16 instructions on AVX-512 CPUs that
  // lack them; on those the step runs widened to f32 instead.
  if (!NativeBf16Enabled())
    return Unimplemented(std::string(kernel) + ": bf16 needs a CPU with AVX512_BF16 or AMX-BF16, and PRECIS_CPU_BF16 not 0");
  return Status::Ok();
}

dnnl::memory::data_type DnnlType(const Tensor& t) {
  return t.dtype == DataType::kBF16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

DnnlKernel::md DnnlKernel::Plain(const dims& d, dt type) {
  dims strides(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) strides[i - 1] = strides[i] * d[i];
  return md(d, type, strides);
}

DnnlKernel::md DnnlKernel::Strided(const dims& d, const dims& strides, dt type) { return md(d, type, strides); }

DnnlKernel::md DnnlKernel::Any(const dims& d, dt type) { return md(d, type, dnnl::memory::format_tag::any); }

bool DnnlKernel::IsReferenceImpl(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

bool DnnlKernel::FastMatMul(const md& a, const md& b, const md& c, dnnl::matmul::primitive_desc* pd) {
  try {
    *pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), Attr(), Engine());
  } catch (const dnnl::error&) {
    return false;
  }
  return !IsReferenceImpl(*pd);
}

dnnl::primitive_attr DnnlKernel::Attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory DnnlKernel::Bind(const md& desc, Source source, size_t index, size_t offset) {
  dnnl::memory m(desc, Engine(), DNNL_MEMORY_NONE);
  bindings_.push_back({m, source, index, nullptr, offset});
  return m;
}

dnnl::memory DnnlKernel::Input(size_t i, const md& desc, size_t byte_offset) { return Bind(desc, Source::kInput, i, byte_offset); }
dnnl::memory DnnlKernel::Output(size_t i, const md& desc, size_t byte_offset) { return Bind(desc, Source::kOutput, i, byte_offset); }

dnnl::memory DnnlKernel::Temporary(const md& desc) {
  dnnl::memory m = Bind(desc, Source::kTemporary, temporary_bytes_);
  temporary_bytes_ += AlignUp(desc.get_size());
  return m;
}

dnnl::memory DnnlKernel::Arrange(const KernelArgs& args, size_t i, const md& given, const md& wanted) {
  if (given == wanted) return Input(i, given);
  const Tensor& t = *args.in(i);
  if (t.is_constant) {
    // Constant data never moves and is readable now: reorder it once into a buffer we keep.
    dnnl::memory from(given, Engine(), const_cast<uint8_t*>(t.data));
    dnnl::memory to(wanted, Engine());
    try {
      dnnl::reorder(from, to).execute(stream_, from, to);
    } catch (const dnnl::error&) {
      // oneDNN reorders into some layouts only from the plain one (Winograd's transformed weights:
      // not from channels-last ohwi): through it, once.
      using tag = dnnl::memory::format_tag;
      const tag plain_tags[] = {tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde, tag::abcdef};
      size_t rank = given.dims().size();
      if (rank < 1 || rank > 6) throw;
      dnnl::memory mid(md(given.dims(), given.data_type(), plain_tags[rank - 1]), Engine());
      dnnl::reorder(from, mid).execute(stream_, from, mid);
      dnnl::reorder(mid, to).execute(stream_, mid, to);
    }
    stream_.wait();
    owned_.push_back(to);
    return to;
  }
  dnnl::memory to = Temporary(wanted);
  AppendReorder(Input(i, given), to);
  return to;
}

void DnnlKernel::Append(const dnnl::primitive& p, const std::vector<std::pair<int, dnnl::memory>>& args, const md& scratchpad) {
  Call call{p, {}, nullptr};
  for (const auto& [arg, m] : args) call.args.push_back({arg, m.get()});
  if (scratchpad.get_size() > 0) {
    call.args.push_back({DNNL_ARG_SCRATCHPAD, Bind(scratchpad, Source::kScratchpad, 0).get()});
    scratchpad_bytes_ = std::max(scratchpad_bytes_, AlignUp(scratchpad.get_size()));
  }
  calls_.push_back(std::move(call));
}

void DnnlKernel::AppendHost(HostStep step) { calls_.push_back(Call{dnnl::primitive(), {}, std::move(step)}); }

dnnl::memory DnnlKernel::TemporaryView(const md& desc, const dnnl::memory& temporary, size_t byte_offset) {
  return Bind(desc, Source::kTemporary, TemporaryOffset(temporary) + byte_offset);
}

size_t DnnlKernel::TemporaryOffset(const dnnl::memory& temporary) const {
  for (const Binding& b : bindings_)
    if (b.source == Source::kTemporary && b.memory.get() == temporary.get()) return b.index;
  return 0;
}

void DnnlKernel::AppendReorder(const dnnl::memory& from, const dnnl::memory& to) {
  dnnl::reorder::primitive_desc pd(Engine(), from.get_desc(), Engine(), to.get_desc(), Attr());
  Append(dnnl::reorder(pd), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}, pd.scratchpad_desc());
}

Status DnnlKernel::Init(const KernelArgs& args, const CpuContext& ctx) {
  OmpThreadScope threads(ctx.threads);
  try {
    stream_ = dnnl::stream(Engine());
    fp32_weights_ = ctx.fp32_weights;
    threads_ = std::max(ctx.threads, 1);
    return Setup(args);
  } catch (const dnnl::error& e) {
    // The descriptor was valid for ONNX but not for oneDNN (or no implementation exists): the
    // reference kernel takes the step. Anything else (e.g. out of memory) fails the load.
    std::string what = args.node + ": oneDNN: " + e.what();
    if (e.status == dnnl_unimplemented || e.status == dnnl_invalid_arguments) return Unimplemented(what);
    return Internal(what);
  }
}

size_t DnnlKernel::ScratchBytes() const { return temporary_bytes_ + scratchpad_bytes_; }

bool DnnlKernel::ReadsConstantInput(size_t i) const {
  for (const Binding& b : bindings_)
    if (b.source == Source::kInput && b.index == i) return true;
  for (const Call& c : calls_)
    if (c.host) return true;  // host steps may read any input
  return std::find(read_at_run_.begin(), read_at_run_.end(), i) != read_at_run_.end();
}

Status DnnlKernel::Run(const KernelArgs& args, CpuContext& ctx) {
  OmpThreadScope threads(ctx.threads);
  for (Binding& b : bindings_) {
    void* ptr = nullptr;
    switch (b.source) {
      case Source::kInput: ptr = args.in(b.index)->data + b.offset; break;
      case Source::kOutput: ptr = args.out(b.index)->data + b.offset; break;
      case Source::kTemporary: ptr = ctx.scratch + b.index; break;
      case Source::kScratchpad: ptr = ctx.scratch + temporary_bytes_; break;
    }
    if (ptr == b.bound) continue;
    if (dnnl_memory_set_data_handle_v2(b.memory.get(), ptr, nullptr) != dnnl_success) return args.Error("oneDNN: cannot bind a buffer");
    b.bound = ptr;
  }
  BeforeExecute(args);
  ForeignCallScope in_onednn;
  for (const Call& c : calls_) {
    if (c.host) {
      // The primitives before it have finished (CPU streams run in order; waiting is cheap).
      if (dnnl_stream_wait(stream_.get()) != dnnl_success) return args.Error("oneDNN: stream wait failed");
      c.host(args, ctx.scratch, ctx.threads);
      continue;
    }
    if (dnnl_primitive_execute(c.primitive.get(), stream_.get(), int(c.args.size()), c.args.data()) != dnnl_success)
      return args.Error("oneDNN: primitive execution failed");
  }
  if (dnnl_stream_wait(stream_.get()) != dnnl_success) return args.Error("oneDNN: stream wait failed");
  return Status::Ok();
}

void RegisterDnnlKernels(KernelRegistry& r) {
  AddDnnlMatMulKernels(r);
  AddDnnlConvKernels(r);
}

}  // namespace precis::rt
