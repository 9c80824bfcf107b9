// CPU kernels that generate or mask values: ConstantOfShape, Range, EyeLike, Trilu, and Pad
// (constant, reflect, edge and wrap modes; negative pads crop). Pad maps each output
// coordinate to an input coordinate (or "use the constant") per dim, once in Init.
#include <algorithm>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/kernels/tensor_util.h"
#include "runtime/kernels/strided_views.h"

namespace precis::rt {
namespace {

// Writes `n` copies of the `esize`-byte pattern.
void FillPattern(uint8_t* dst, int64_t n, const uint8_t* pattern, size_t esize) {
  DispatchBySize(esize, [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, pattern, sizeof v);
    std::fill(reinterpret_cast<T*>(dst), reinterpret_cast<T*>(dst) + n, v);
  });
}

// ConstantOfShape: the 'value' tensor attribute (default float 0) repeated.
class ConstantOfShapeKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor* out = args.out(0);
    if (!out) return args.Error("needs an output");
    size_t esize = DataTypeSize(out->dtype);
    value_.assign(esize, 0);
    const plan::Attr* a = args.attrs.Find("value");
    if (!a) {
      if (out->dtype != DataType::kF32) return args.Error("without 'value' the output must be float");
      return Status::Ok();
    }
    if (a->kind() != plan::AttrKind_Tensor || DataType(a->tensor_dtype()) != out->dtype || !a->tensor_data() ||
        a->tensor_data()->size() != esize)
      return args.Error("'value' must be one element of the output dtype");
    std::memcpy(value_.data(), a->tensor_data()->data(), esize);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    Tensor& out = *args.out(0);
    FillPattern(out.data, out.numel, value_.data(), value_.size());
    return Status::Ok();
  }

 private:
  std::vector<uint8_t> value_;
};

// Range: out[i] = start + i * delta (integers exactly, floats in double).
class RangeKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor* out = args.out(0);
    if (!out || !args.in(0) || !args.in(2)) return args.Error("needs start, limit, delta and an output");
    if (args.in(0)->dtype != out->dtype || args.in(2)->dtype != out->dtype || args.in(0)->numel != 1 || args.in(2)->numel != 1)
      return args.Error("start and delta must be scalars of the output dtype");
    if (!DispatchNumeric(out->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(out->dtype));
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    Tensor& out = *args.out(0);
    // The length the values give must be the one planned (bounds computed at run time: value
    // symbols and value expressions, docs/dynamic-shapes.md).
    if (args.in(1) && args.in(1)->dtype == out.dtype && args.in(1)->numel == 1) {
      int64_t count = -1;
      DispatchNumeric(out.dtype, [&](auto tag) {
        using T = decltype(tag);
        auto start = Load(args.in(0)->As<T>()[0]), limit = Load(args.in(1)->As<T>()[0]), delta = Load(args.in(2)->As<T>()[0]);
        if constexpr (std::is_integral_v<decltype(start)>) {
          __int128 span = __int128(limit) - __int128(start), step = delta;
          if (step != 0) count = int64_t(std::max<__int128>((step > 0 ? span > 0 : span < 0) ? (span - (step > 0 ? 1 : -1)) / step + 1 : 0, 0));
        } else {
          double n = std::ceil((double(limit) - double(start)) / double(delta));
          if (std::isfinite(n)) count = n > 0 ? int64_t(std::min(n, 9.0e18)) : 0;
        }
      });
      if (count != out.numel)
        return args.Error("start, limit and delta give " + (count < 0 ? std::string("no valid length") : std::to_string(count) + " elements") +
                          ", but the output was planned for " + std::to_string(out.numel));
    }
    DispatchNumeric(out.dtype, [&](auto tag) {
      using T = decltype(tag);
      auto start = Load(args.in(0)->As<T>()[0]), delta = Load(args.in(2)->As<T>()[0]);
      T* y = out.As<T>();
      if constexpr (std::is_integral_v<decltype(start)>) {
        for (int64_t i = 0; i < out.numel; ++i) y[i] = T(int64_t(start) + i * int64_t(delta));
      } else {
        for (int64_t i = 0; i < out.numel; ++i) y[i] = Store<T>(double(start) + double(i) * double(delta));
      }
    });
    return Status::Ok();
  }
};

// EyeLike: ones on diagonal k of a 2-D output, zeros elsewhere.
class EyeLikeKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor* out = args.out(0);
    if (!out || out->rank() != 2) return args.Error("needs a 2-D output");
    if (!DispatchAny(out->dtype, [](auto) {})) return args.Error(std::string("unsupported dtype ") + DataTypeName(out->dtype));
    k_ = args.attrs.Int("k", 0);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    Tensor& out = *args.out(0);
    if (out.bytes) std::memset(out.data, 0, out.bytes);
    int64_t rows = out.dims[0], cols = out.dims[1];
    DispatchAny(out.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* y = out.As<T>();
      for (int64_t i = 0; i < rows; ++i) {
        if (k_ < -i || k_ >= cols - i) continue;  // j = i + k outside [0, cols)
        y[i * cols + i + k_] = Store<T>(1);
      }
    });
    return Status::Ok();
  }

 private:
  int64_t k_ = 0;
};

// Trilu: keeps the upper (j >= i + k) or lower (j <= i + k) triangle of each matrix, zeroing
// the rest; runs in place when the planner allows.
class TriluKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *in = args.in(0), *out = args.out(0);
    if (!in || !out || in->dtype != out->dtype || in->dims != out->dims || in->rank() < 2) return args.Error("needs matching input and output of rank >= 2");
    if (DataTypeSize(in->dtype) == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
    if (args.in(1) && (!IsIndexType(args.in(1)->dtype) || args.in(1)->numel != 1)) return args.Error("k must be an integer scalar");
    upper_ = args.attrs.Int("upper", 1) != 0;
    rows_ = in->dims[in->dims.size() - 2];
    cols_ = in->dims.back();
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& in = *args.in(0);
    Tensor& out = *args.out(0);
    int64_t k = args.in(1) ? IndexAt(*args.in(1), 0) : 0;
    k = std::clamp<int64_t>(k, -rows_ - 1, cols_ + 1);  // beyond the matrix all k act alike
    CopyIfDistinct(in, out);
    size_t esize = DataTypeSize(out.dtype);
    int64_t matrices = rows_ * cols_ != 0 ? out.numel / (rows_ * cols_) : 0;
    for (int64_t m = 0; m < matrices; ++m)
      for (int64_t i = 0; i < rows_; ++i) {
        // Zeroed columns: upper -> [0, i + k), lower -> (i + k, cols).
        int64_t lo = upper_ ? 0 : std::clamp<int64_t>(i + k + 1, 0, cols_);
        int64_t hi = upper_ ? std::clamp<int64_t>(i + k, 0, cols_) : cols_;
        if (hi > lo) std::memset(out.data + size_t((m * rows_ + i) * cols_ + lo) * esize, 0, size_t(hi - lo) * esize);
      }
    return Status::Ok();
  }

 private:
  bool upper_ = true;
  int64_t rows_ = 0, cols_ = 0;
};

// Pad: per dim, maps_[d][o] is the input coordinate read at output coordinate o, or -1 for
// the constant. As onnxruntime does, negative pads crop before the other side pads, so that
// reflect/edge/wrap read only the kept part.
class PadKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *in = args.in(0), *out = args.out(0);
    if (!in || !out || in->dtype != out->dtype || in->rank() != out->rank()) return args.Error("needs matching input and output");
    esize_ = DataTypeSize(in->dtype);
    if (esize_ == 0) return args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
    attr_form_ = args.attrs.Has("pads");
    // Pads given as a run-time value (a dynamic plan): the maps are built when the kernel runs.
    run_time_ = !attr_form_ && ((args.in(1) && !args.in(1)->is_constant) || (args.in(3) && !args.in(3)->is_constant));
    if (!run_time_) PRECIS_RETURN_IF_ERROR(PadIndexMaps(args, *in, *out, &maps_));
    strides_ = DenseStrides(in->dims);
    constant_.assign(esize_, 0);
    if (attr_form_) {
      float value = args.attrs.Float("value", 0.f);
      DispatchAny(in->dtype, [&](auto tag) {
        using T = decltype(tag);
        T v = SaturatingCast<T>(value);
        // Integral T only: clang 14 has no C++20 T(x) for the 16-bit float structs.
        if constexpr (std::is_integral_v<T>)
          if (in->dtype == DataType::kBool) v = T(value != 0);
        std::memcpy(constant_.data(), &v, esize_);
      });
    } else if (const Tensor* c = args.in(2); c && c->numel > 0 && (c->dtype != in->dtype || c->numel != 1)) {
      return args.Error("constant_value must be a scalar of the data dtype");
    }
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    if (run_time_) {
      maps_.clear();
      PRECIS_RETURN_IF_ERROR(PadIndexMaps(args, *args.in(0), *args.out(0), &maps_, true));
    }
    const Tensor* c = attr_form_ ? nullptr : args.in(2);
    if (c && c->numel == 1) std::memcpy(constant_.data(), c->data, esize_);
    Tensor& out = *args.out(0);
    if (out.numel == 0) return Status::Ok();
    if (out.rank() == 0) {
      std::memcpy(out.data, args.in(0)->data, esize_);
      return Status::Ok();
    }
    DispatchBySize(esize_, [&](auto tag) {
      using T = decltype(tag);
      T value;
      std::memcpy(&value, constant_.data(), sizeof value);
      T* dst = out.As<T>();
      FillDims<T>(args.in(0)->As<T>(), 0, 0, true, dst, value);
    });
    return Status::Ok();
  }

 private:
  template <typename T>
  T* FillDims(const T* src, size_t d, int64_t src_off, bool inside, T* dst, T value) {
    const std::vector<int64_t>& map = maps_[d];
    if (d + 1 == maps_.size()) {
      for (int64_t m : map) *dst++ = inside && m >= 0 ? src[src_off + m] : value;
      return dst;
    }
    for (int64_t m : map) dst = FillDims(src, d + 1, src_off + (m >= 0 ? m : 0) * strides_[d], inside && m >= 0, dst, value);
    return dst;
  }

  size_t esize_ = 0;
  bool attr_form_ = false;  // pads and value as attributes (versions before 11)
  bool run_time_ = false;   // pads computed at run time
  std::vector<std::vector<int64_t>> maps_;
  std::vector<int64_t> strides_;
  std::vector<uint8_t> constant_;
};

}  // namespace

// Called by RegisterTensorKernels (tensor.cc).
void AddTensorFillKernels(KernelRegistry& r) {
  r.Register("ConstantOfShape", Make<ConstantOfShapeKernel>);
  r.Register("Range", Make<RangeKernel>);
  r.Register("EyeLike", Make<EyeLikeKernel>);
  r.Register("Trilu", Make<TriluKernel>);
  r.Register("Pad", Make<PadKernel>);
}

}  // namespace precis::rt
