// If, Loop and Scan on the CPU. Their bodies are programs of the plan (plan.fbs Program.body) that
// the backend runs through CpuContext::programs; these kernels copy values into a body's input
// tensors, run it and copy its outputs out, so every body step is an ordinary step with its own
// kernel, precision and arena bytes. A Loop's scan outputs have the length planned when the run
// starts (static, or from input values), and a run that ends after another number of iterations
// is an error; a Loop whose body computes its condition has scan outputs of a data dim
// (data_dim_axis 0): planned for the trip count M, shrunk to the iterations that ran.
// Run allocates nothing (loop-carried values that trade places go through a buffer made at Init).
#include <algorithm>
#include <cstring>

#include "runtime/cpu/kernel.h"
#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt {
namespace {

std::string Describe(const Tensor* t) {
  if (!t) return "missing";
  std::string s = "'" + t->name + "' " + DataTypeName(t->dtype) + "[";
  for (size_t i = 0; i < t->dims.size(); ++i) s += (i ? "," : "") + std::to_string(t->dims[i]);
  return s + "]";
}

// Two tensors of one dtype and shape, or an error naming both.
Status Same(const KernelArgs& a, const std::string& what, const Tensor* x, const Tensor* y) {
  if (x && y && x->dtype == y->dtype && x->dims == y->dims) return Status::Ok();
  return a.Error(what + ": " + Describe(x) + " and " + Describe(y) + " must have one dtype and shape");
}

Status Scalar(const KernelArgs& a, const std::string& what, const Tensor* t, DataType dtype) {
  if (t && t->dtype == dtype && t->numel == 1) return Status::Ok();
  return a.Error(what + " must be a " + DataTypeName(dtype) + " scalar (it is " + Describe(t) + ")");
}

void Copy(const Tensor* from, Tensor* to) {
  if (to && from && from->data != to->data && to->bytes) std::memmove(to->data, from->data, to->bytes);
}

const ProgramRunner::Io* FindBody(const KernelArgs& a, const CpuContext& ctx, const char* attr, int64_t* id, Status* error) {
  *id = a.attrs.Int(attr, -1);
  const ProgramRunner::Io* io = ctx.programs ? ctx.programs->Body(*id, ctx.program) : nullptr;
  if (!io)
    *error = a.Error(std::string(attr) + " " + std::to_string(*id) +
                     (ctx.programs ? " is not a body program after this step's own program" : ": control-flow steps run only in a session"));
  return io;
}

// Values carried from one iteration to the next: body outputs copied to body inputs. When an
// output is another carried input (a body that swaps two values), all go through `stage`.
class Carry {
 public:
  void Init(std::vector<Tensor*> from, std::vector<Tensor*> to) {
    from_ = std::move(from), to_ = std::move(to);
    size_t bytes = 0;
    for (const Tensor* t : to_) bytes += t->bytes;
    if (to_.size() > 1) stage_.resize(bytes);
  }
  void Run() {
    bool crossed = false;
    for (size_t i = 0; i < from_.size(); ++i)
      for (size_t j = 0; j < to_.size(); ++j)
        crossed |= i != j && to_[j]->bytes && from_[i]->data < to_[j]->data + to_[j]->bytes && to_[j]->data < from_[i]->data + from_[i]->bytes;
    if (!crossed) {
      for (size_t i = 0; i < from_.size(); ++i) Copy(from_[i], to_[i]);
      return;
    }
    size_t offset = 0;
    for (const Tensor* t : from_) {
      if (t->bytes) std::memcpy(stage_.data() + offset, t->data, t->bytes);
      offset += t->bytes;
    }
    offset = 0;
    for (Tensor* t : to_) {
      if (t->bytes) std::memcpy(t->data, stage_.data() + offset, t->bytes);
      offset += t->bytes;
    }
  }

 private:
  std::vector<Tensor*> from_, to_;
  std::vector<uint8_t> stage_;
};

class IfKernel final : public Kernel {
 public:
  Status Init(const KernelArgs& a, const CpuContext& ctx) override {
    PRECIS_RETURN_IF_ERROR(Scalar(a, "the condition", a.in(0), DataType::kBool));
    Status error;
    for (int b = 0; b < 2; ++b) {
      const ProgramRunner::Io* io = FindBody(a, ctx, b == 0 ? "then_program" : "else_program", &program_[b], &error);
      if (!io) return error;
      if (!io->inputs.empty() || io->outputs.size() != a.outputs.size())
        return a.Error("a branch must take no inputs and give the step's " + std::to_string(a.outputs.size()) + " outputs");
      for (size_t i = 0; i < a.outputs.size(); ++i)
        if (a.out(i)) PRECIS_RETURN_IF_ERROR(Same(a, "output " + std::to_string(i), io->outputs[i], a.out(i)));
      io_[b] = io;
    }
    return Status::Ok();
  }
  Status Run(const KernelArgs& a, CpuContext& ctx) override {
    int b = a.in(0)->data[0] != 0 ? 0 : 1;
    PRECIS_RETURN_IF_ERROR(ctx.programs->RunBody(program_[b]));
    for (size_t i = 0; i < a.outputs.size(); ++i) Copy(io_[b]->outputs[i], a.out(i));
    return Status::Ok();
  }

 private:
  int64_t program_[2] = {-1, -1};
  const ProgramRunner::Io* io_[2] = {nullptr, nullptr};
};

// Inputs (M, cond, carried...); outputs (carried..., scan..., element dims...). Body inputs
// (iteration, cond, carried...); body outputs (cond, carried..., scan slices...). A scan output
// listed in the attribute scan_dims_outputs stacks slices whose dims follow the iteration number
// (plan.fbs Plan.iteration_symbols; the session sets the body's dims before each iteration): each
// slice is written at the start of its row, padded with zeros to the row's shape (the last
// iteration's, the largest), and its dims go to the output scan_dims_outputs names ([length, rank]).
class LoopKernel final : public Kernel {
 public:
  Status Init(const KernelArgs& a, const CpuContext& ctx) override {
    if (a.inputs.size() < 2) return a.Error("needs the inputs M and cond (either may be omitted)");
    if (a.in(0)) PRECIS_RETURN_IF_ERROR(Scalar(a, "the trip count M", a.in(0), DataType::kI64));
    if (a.in(1)) PRECIS_RETURN_IF_ERROR(Scalar(a, "the condition", a.in(1), DataType::kBool));
    Status error;
    io_ = FindBody(a, ctx, "body_program", &program_, &error);
    if (!io_) return error;
    n_ = a.inputs.size() - 2;
    size_t scans = io_->outputs.size() < n_ + 1 ? 0 : io_->outputs.size() - n_ - 1;
    dims_out_ = a.attrs.Ints("scan_dims_outputs", std::vector<int64_t>(scans, -1));
    size_t companions = size_t(std::count_if(dims_out_.begin(), dims_out_.end(), [](int64_t o) { return o >= 0; }));
    if (dims_out_.size() != scans) return a.Error("scan_dims_outputs needs one entry per scan output");
    for (int64_t o : dims_out_)
      if (o >= 0 && (size_t(o) < n_ + scans || size_t(o) >= a.outputs.size()))
        return a.Error("scan_dims_outputs names output " + std::to_string(o) + ", which is not after the scan outputs");
    if (a.outputs.size() != n_ + scans + companions || io_->inputs.size() != n_ + 2)
      return a.Error("the body must take the iteration number, the condition and " + std::to_string(n_) +
                     " carried values, and give the condition, the carried values and one slice per scan output");
    scans_ = scans;
    PRECIS_RETURN_IF_ERROR(Scalar(a, "the body's iteration number", io_->inputs[0], DataType::kI64));
    PRECIS_RETURN_IF_ERROR(Scalar(a, "the body's condition input", io_->inputs[1], DataType::kBool));
    PRECIS_RETURN_IF_ERROR(Scalar(a, "the body's condition output", io_->outputs[0], DataType::kBool));
    std::vector<Tensor*> from, to;
    for (size_t j = 0; j < n_; ++j) {
      std::string what = "loop-carried value " + std::to_string(j);
      PRECIS_RETURN_IF_ERROR(Same(a, what, a.in(j + 2), io_->inputs[j + 2]));
      PRECIS_RETURN_IF_ERROR(Same(a, what, io_->outputs[j + 1], io_->inputs[j + 2]));
      if (a.out(j)) PRECIS_RETURN_IF_ERROR(Same(a, what, a.out(j), io_->inputs[j + 2]));
      from.push_back(io_->outputs[j + 1]);
      to.push_back(io_->inputs[j + 2]);
    }
    carry_.Init(std::move(from), std::move(to));
    row_bytes_.assign(scans_, 0);
    for (size_t s = n_; s < n_ + scans_; ++s) {
      const Tensor* out = a.out(s);
      const Tensor* slice = io_->outputs[s + 1];
      row_bytes_[s - n_] = slice->bytes;  // the last iteration's: the largest
      if (!out) continue;
      std::vector<int64_t> dims = slice->dims;
      if (out->dims.empty()) return a.Error("scan output " + Describe(out) + " has no iteration axis");
      dims.insert(dims.begin(), out->dims[0]);
      if (out->dtype != slice->dtype || out->dims != dims || (trips_ >= 0 && out->dims[0] != trips_))
        return a.Error("scan output " + Describe(out) + " does not stack the body's slices " + Describe(slice));
      trips_ = out->dims[0];
      if (int64_t o = dims_out_[s - n_]; o >= 0 && a.out(size_t(o))) {
        const Tensor* d = a.out(size_t(o));
        if (d->dtype != DataType::kI64 || d->dims != std::vector<int64_t>{out->dims[0], slice->rank()})
          return a.Error("the element dims " + Describe(d) + " of scan output " + Describe(out) + " must be int64 [" + std::to_string(out->dims[0]) +
                         "," + std::to_string(slice->rank()) + "]");
      }
    }
    row_dims_.clear();
    for (size_t s = n_; s < n_ + scans_; ++s) row_dims_.push_back(io_->outputs[s + 1]->dims);
    return Status::Ok();
  }

  Status Run(const KernelArgs& a, CpuContext& ctx) override {
    int64_t limit = a.in(0) ? std::max<int64_t>(*a.in(0)->As<int64_t>(), 0) : INT64_MAX;
    bool cond = a.in(1) ? a.in(1)->data[0] != 0 : true;
    for (size_t j = 0; j < n_; ++j) Copy(a.in(j + 2), io_->inputs[j + 2]);
    int64_t i = 0;
    for (; i < limit && cond; ++i) {
      if (ctx.max_loop_iterations > 0 && i >= ctx.max_loop_iterations)
        return a.Error("would run more than " + std::to_string(ctx.max_loop_iterations) + " iterations (SessionOptions::max_loop_iterations)");
      if (trips_ >= 0 && i >= trips_)
        return a.Error("runs more than the " + std::to_string(trips_) + " iterations its scan outputs were planned for");
      PRECIS_RETURN_IF_ERROR(ctx.programs->BindIteration(program_, i));
      *io_->inputs[0]->As<int64_t>() = i;
      io_->inputs[1]->data[0] = cond ? 1 : 0;
      PRECIS_RETURN_IF_ERROR(ctx.programs->RunBody(program_));
      cond = io_->outputs[0]->data[0] != 0;
      for (size_t s = 0; s < scans_; ++s) {
        Tensor* out = a.out(n_ + s);
        const Tensor* slice = io_->outputs[n_ + 1 + s];
        if (out) PRECIS_RETURN_IF_ERROR(WriteRow(a, s, *slice, out->data + size_t(i) * row_bytes_[s]));
        if (int64_t o = dims_out_[s]; o >= 0 && a.out(size_t(o)))
          std::memcpy(a.out(size_t(o))->data + size_t(i) * slice->dims.size() * 8, slice->dims.data(), slice->dims.size() * 8);
      }
      carry_.Run();
    }
    if (DataDimAxis(a) == 0) {
      // Scan outputs of a data-dependent length (plan.fbs Plan.data_symbols): the iterations run.
      for (size_t s = n_; s < a.outputs.size(); ++s)
        if (Tensor* out = a.out(s)) PRECIS_RETURN_IF_ERROR(SetDataDim(a, *out, 0, i));
    } else if (trips_ >= 0 && i != trips_) {
      return a.Error("ended after " + std::to_string(i) + " iterations; its scan outputs were planned for " + std::to_string(trips_) +
                     " (plans have static shapes)");
    }
    for (size_t j = 0; j < n_; ++j) Copy(io_->inputs[j + 2], a.out(j));
    return Status::Ok();
  }

 private:
  // Scan output s's row for one iteration: the slice, or the slice at the start of a row of the
  // largest slice's shape, zeros elsewhere.
  Status WriteRow(const KernelArgs& a, size_t s, const Tensor& slice, uint8_t* row) const {
    const std::vector<int64_t>& full = row_dims_[s];
    if (slice.dims == full) {
      if (slice.bytes) std::memcpy(row, slice.data, slice.bytes);
      return Status::Ok();
    }
    if (slice.dims.size() != full.size() || dims_out_[s] < 0) return a.Error("scan output " + std::to_string(s) + ": slice " + Describe(&slice) + " does not fit its row");
    for (size_t d = 0; d < full.size(); ++d)
      if (slice.dims[d] > full[d]) return a.Error("scan output " + std::to_string(s) + ": slice " + Describe(&slice) + " does not fit its row");
    std::memset(row, 0, row_bytes_[s]);
    if (slice.numel == 0) return Status::Ok();
    // Runs of the innermost dim, one per index of the outer dims (rank >= 1: scalars have one shape).
    size_t esize = DataTypeSize(slice.dtype), rank = full.size();
    size_t run = size_t(slice.dims[rank - 1]) * esize, runs = size_t(slice.numel / slice.dims[rank - 1]);
    std::vector<int64_t> index(rank - 1, 0);
    for (size_t r = 0; r < runs; ++r) {
      size_t to = 0;  // row-major offset of (index..., 0) in the padded row
      for (size_t d = 0; d + 1 < rank; ++d) to = to * size_t(full[d]) + size_t(index[d]);
      to *= size_t(full[rank - 1]);
      std::memcpy(row + to * esize, slice.data + r * run, run);
      for (size_t d = rank - 1; d-- > 0;) {  // the next outer index
        if (++index[d] < slice.dims[d]) break;
        index[d] = 0;
      }
    }
    return Status::Ok();
  }

  int64_t program_ = -1, trips_ = -1;
  size_t n_ = 0, scans_ = 0;
  std::vector<int64_t> dims_out_;               // per scan output: the output of its elements' dims, or -1
  std::vector<size_t> row_bytes_;                // per scan output: one row of it (the largest slice)
  std::vector<std::vector<int64_t>> row_dims_;   // per scan output: the largest slice's dims
  const ProgramRunner::Io* io_ = nullptr;
  Carry carry_;
};

// Scan (opset 9 on): inputs (state..., scan inputs...); outputs (state..., scan outputs...).
class ScanKernel final : public Kernel {
 public:
  Status Init(const KernelArgs& a, const CpuContext& ctx) override {
    int64_t m = a.attrs.Int("num_scan_inputs", -1);
    if (m < 1 || size_t(m) > a.inputs.size()) return a.Error("num_scan_inputs must be between 1 and the number of inputs");
    m_ = size_t(m);
    n_ = a.inputs.size() - m_;
    if (a.outputs.size() < n_) return a.Error("has fewer outputs than state values");
    k_ = a.outputs.size() - n_;
    Status error;
    io_ = FindBody(a, ctx, "body_program", &program_, &error);
    if (!io_) return error;
    if (io_->inputs.size() != n_ + m_ || io_->outputs.size() != n_ + k_)
      return a.Error("the body must take the state values and one slice per scan input, and give the state values and one slice per scan output");
    for (size_t j = 0; j < m_; ++j)
      if (!a.in(n_ + j) || a.in(n_ + j)->dims.empty()) return a.Error("scan input " + std::to_string(j) + " is missing or a scalar");
    for (size_t j = 0; j < k_; ++j)
      if (!a.out(n_ + j) || a.out(n_ + j)->dims.empty()) return a.Error("scan output " + std::to_string(j) + " is missing or a scalar");
    PRECIS_RETURN_IF_ERROR(Axes(a, "scan_input_axes", "scan_input_directions", m_, [&](size_t j) { return a.in(n_ + j)->rank(); }, in_));
    PRECIS_RETURN_IF_ERROR(Axes(a, "scan_output_axes", "scan_output_directions", k_, [&](size_t j) { return a.out(n_ + j)->rank(); }, out_));
    length_ = a.in(n_)->dims[size_t(in_[0].axis)];
    std::vector<Tensor*> from, to;
    for (size_t s = 0; s < n_; ++s) {
      std::string what = "state value " + std::to_string(s);
      PRECIS_RETURN_IF_ERROR(Same(a, what, a.in(s), io_->inputs[s]));
      PRECIS_RETURN_IF_ERROR(Same(a, what, io_->outputs[s], io_->inputs[s]));
      if (a.out(s)) PRECIS_RETURN_IF_ERROR(Same(a, what, a.out(s), io_->inputs[s]));
      from.push_back(io_->outputs[s]);
      to.push_back(io_->inputs[s]);
    }
    carry_.Init(std::move(from), std::move(to));
    for (size_t j = 0; j < m_; ++j) {
      const Tensor* x = a.in(n_ + j);
      const Tensor* slice = io_->inputs[n_ + j];
      std::vector<int64_t> dims = x->dims;
      if (dims[size_t(in_[j].axis)] != length_) return a.Error("scan inputs have different lengths");
      dims.erase(dims.begin() + in_[j].axis);
      if (slice->dtype != x->dtype || slice->dims != dims) return a.Error("scan input " + Describe(x) + " does not slice into " + Describe(slice));
      Geometry(x, in_[j]);
    }
    for (size_t j = 0; j < k_; ++j) {
      const Tensor* y = a.out(n_ + j);
      const Tensor* slice = io_->outputs[n_ + j];
      std::vector<int64_t> dims = slice->dims;
      if (out_[j].axis > int64_t(dims.size())) return a.Error("scan_output_axes is out of range");
      dims.insert(dims.begin() + out_[j].axis, length_);
      if (slice->dtype != y->dtype || y->dims != dims) return a.Error("scan output " + Describe(y) + " does not stack the body's slices " + Describe(slice));
      Geometry(y, out_[j]);
    }
    return Status::Ok();
  }

  Status Run(const KernelArgs& a, CpuContext& ctx) override {
    for (size_t s = 0; s < n_; ++s) Copy(a.in(s), io_->inputs[s]);
    for (int64_t t = 0; t < length_; ++t) {
      for (size_t j = 0; j < m_; ++j) {
        const Axis& ax = in_[j];
        int64_t at = ax.reverse ? length_ - 1 - t : t;
        const uint8_t* src = a.in(n_ + j)->data;
        uint8_t* dst = io_->inputs[n_ + j]->data;
        for (int64_t o = 0; o < ax.outer; ++o) std::memcpy(dst + size_t(o * ax.inner), src + size_t((o * length_ + at) * ax.inner), size_t(ax.inner));
      }
      PRECIS_RETURN_IF_ERROR(ctx.programs->RunBody(program_));
      for (size_t j = 0; j < k_; ++j) {
        const Axis& ax = out_[j];
        int64_t at = ax.reverse ? length_ - 1 - t : t;
        const uint8_t* src = io_->outputs[n_ + j]->data;
        uint8_t* dst = a.out(n_ + j)->data;
        for (int64_t o = 0; o < ax.outer; ++o) std::memcpy(dst + size_t((o * length_ + at) * ax.inner), src + size_t(o * ax.inner), size_t(ax.inner));
      }
      carry_.Run();
    }
    for (size_t s = 0; s < n_; ++s) Copy(io_->inputs[s], a.out(s));
    return Status::Ok();
  }

 private:
  struct Axis {
    int64_t axis = 0;
    bool reverse = false;
    int64_t outer = 1, inner = 0;  // slices before the axis; bytes of one slice row after it
  };
  template <typename RankOf>
  static Status Axes(const KernelArgs& a, const char* axes_name, const char* dirs_name, size_t count, RankOf rank_of, std::vector<Axis>& out) {
    std::vector<int64_t> axes = a.attrs.Ints(axes_name, std::vector<int64_t>(count, 0));
    std::vector<int64_t> dirs = a.attrs.Ints(dirs_name, std::vector<int64_t>(count, 0));
    if (axes.size() != count || dirs.size() != count) return a.Error(std::string(axes_name) + " and " + dirs_name + " need one value per tensor");
    for (size_t j = 0; j < count; ++j) {
      int64_t rank = rank_of(j), axis = axes[j];
      if (axis < -rank || axis >= rank) return a.Error(std::string(axes_name) + " value " + std::to_string(axis) + " is out of range");
      if (dirs[j] != 0 && dirs[j] != 1) return a.Error(std::string(dirs_name) + " values must be 0 or 1");
      out.push_back({axis < 0 ? axis + rank : axis, dirs[j] == 1});
    }
    return Status::Ok();
  }
  // `t`: the whole scanned or stacked tensor (its axis holds the sequence).
  static void Geometry(const Tensor* t, Axis& ax) {
    ax.outer = 1;
    ax.inner = int64_t(DataTypeSize(t->dtype));
    for (int64_t d = 0; d < t->rank(); ++d) {
      if (d < ax.axis) ax.outer *= t->dims[size_t(d)];
      if (d > ax.axis) ax.inner *= t->dims[size_t(d)];
    }
  }

  int64_t program_ = -1, length_ = 0;
  size_t n_ = 0, m_ = 0, k_ = 0;
  std::vector<Axis> in_, out_;
  const ProgramRunner::Io* io_ = nullptr;
  Carry carry_;
};

}  // namespace

void RegisterControlFlowKernels(KernelRegistry& r) {
  r.Register("If", Make<IfKernel>);
  r.Register("Loop", Make<LoopKernel>);
  r.Register("Scan", Make<ScanKernel>);
}

}  // namespace precis::rt
