// CPU kernels: Resize (nearest, linear and cubic interpolation over any dims, every coordinate
// transformation mode) and Upsample, its older form. The interpolation is separable: Init
// computes, per dim and output coordinate, the input indices read and their weights (the taps
// of runtime/kernels/resize_taps.h, shared with the CUDA kernels); Run sums the tensor product
// of the taps of each output element. Nearest copies elements of any dtype; linear and cubic compute in double.
#include <algorithm>
#include <cmath>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/cpu/kernels/tensor_util.h"
#include "runtime/kernels/resize_taps.h"

namespace precis::rt {
namespace {

using resize::Mode;
using resize::Tap;

class ResizeKernel : public Kernel {
 public:
  explicit ResizeKernel(bool upsample = false) : upsample_(upsample) {}

  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *in = args.in(0), *out = args.out(0);
    if (!in || !out || in->dtype != out->dtype || in->rank() != out->rank()) return args.Error("needs matching input and output");
    // Scales given at run time (a dynamic plan's value input), or tf_crop_and_resize's roi: the
    // taps are built when it runs.
    const Tensor* scales = upsample_ ? (args.attrs.Has("scales") ? nullptr : args.in(1)) : args.in(2);
    const Tensor* roi = upsample_ ? nullptr : args.in(1);
    bool crop = args.attrs.String("coordinate_transformation_mode", "") == "tf_crop_and_resize";
    const Tensor* sizes = upsample_ ? nullptr : args.in(3);
    bool policy = args.attrs.String("keep_aspect_ratio_policy", "stretch") != "stretch";
    run_time_ = (scales && scales->numel > 0 && !scales->is_constant) || (crop && roi && roi->numel > 0 && !roi->is_constant) ||
                (policy && sizes && sizes->numel > 0 && !sizes->is_constant);
    if (run_time_) return DispatchAny(in->dtype, [](auto) {}) ? Status::Ok() : args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
    return Prepare(args, false);
  }

  Status Prepare(const KernelArgs& args, bool run_time) {
    const Tensor *in = args.in(0), *out = args.out(0);
    PRECIS_RETURN_IF_ERROR(resize::BuildTaps(args, *in, *out, upsample_, &taps_, run_time));
    if (taps_.mode == Mode::kNearest ? !DispatchAny(in->dtype, [](auto) {}) : !DispatchFloat(in->dtype, [](auto) {}))
      return args.Error(std::string("unsupported dtype ") + DataTypeName(in->dtype));
    size_t rank = in->dims.size();
    out_dims_ = out->dims;
    // Combination buffers: level d holds the (offset, weight) pairs of dims 0..d.
    strides_ = DenseStrides(in->dims);
    levels_.assign(rank, {});
    size_t combos = 1;
    for (size_t d = 0; d < rank; ++d) {
      combos *= size_t(taps_.per_dim[d]);
      levels_[d].resize(combos);
    }
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    if (run_time_) {
      // Taps for these scales and roi (rebuilt only when the values change: bindings round them).
      std::vector<double> now;
      auto append = [&](const Tensor* t) {
        for (int64_t k = 0; t && k < t->numel; ++k) now.push_back(ReadAt(*t, k));
      };
      append(args.in(upsample_ ? 1 : 2));
      if (!upsample_) append(args.in(1));
      if (!upsample_) append(args.in(3));
      if (now != run_scales_) {
        PRECIS_RETURN_IF_ERROR(Prepare(args, true));
        run_scales_ = std::move(now);
      }
    }
    const Tensor& in = *args.in(0);
    Tensor& out = *args.out(0);
    if (out.numel == 0) return Status::Ok();
    if (out.rank() == 0) {
      std::memcpy(out.data, in.data, DataTypeSize(in.dtype));
      return Status::Ok();
    }
    if (taps_.mode == Mode::kNearest) {
      DispatchAny(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        T* dst = out.As<T>();
        Walk<T>(in.As<T>(), 0, 1, false, dst);
      });
    } else {
      DispatchFloat(in.dtype, [&](auto tag) {
        using T = decltype(tag);
        T* dst = out.As<T>();
        Walk<T>(in.As<T>(), 0, 1, false, dst);
      });
    }
    return Status::Ok();
  }

 private:
  struct Combo {
    int64_t offset;
    double weight;
  };

  // Output dims [d, rank) for the combinations of dims < d held in levels_[d - 1] (`count` of
  // them; `outside` when any chosen coordinate is extrapolated).
  template <typename T>
  void Walk(const T* src, size_t d, size_t count, bool outside, T*& dst) {
    const size_t rank = levels_.size();
    const int64_t k = taps_.per_dim[d];
    for (int64_t y = 0; y < out_dims_[d]; ++y) {
      const Tap* taps = &taps_.taps[size_t(taps_.tap_begin[d] + y * k)];
      bool out_here = outside || taps_.outside[size_t(taps_.outside_begin[d] + y)];
      std::vector<Combo>& level = levels_[d];
      size_t n = 0;
      for (size_t c = 0; c < count; ++c) {
        Combo base = d == 0 ? Combo{0, 1.0} : levels_[d - 1][c];
        for (int64_t t = 0; t < k; ++t) level[n++] = {base.offset + taps[t].index * strides_[d], base.weight * taps[t].weight};
      }
      if (d + 1 < rank) {
        Walk<T>(src, d + 1, n, out_here, dst);
        continue;
      }
      if (out_here) {
        *dst++ = SaturatingCast<T>(taps_.extrapolation);
      } else if (taps_.mode == Mode::kNearest) {
        *dst++ = src[level[0].offset];
      } else {
        double acc = 0;
        for (size_t c = 0; c < n; ++c) acc += level[c].weight * double(Load(src[level[c].offset]));
        *dst++ = Store<T>(acc);
      }
    }
  }
  bool upsample_;
  bool run_time_ = false;           // scales read when the kernel runs
  std::vector<double> run_scales_;  // the scales the taps were built for
  resize::Taps taps_;
  std::vector<int64_t> strides_, out_dims_;
  std::vector<std::vector<Combo>> levels_;
};

// Upsample (opsets 7-9): nearest (floor) or linear with asymmetric coordinates.
class UpsampleKernel : public ResizeKernel {
 public:
  UpsampleKernel() : ResizeKernel(true) {}
};

}  // namespace

// Called by RegisterTensorKernels (tensor.cc).
void AddTensorResizeKernels(KernelRegistry& r) {
  r.Register("Resize", Make<ResizeKernel>);
  r.Register("Upsample", Make<UpsampleKernel>);
}

}  // namespace precis::rt
