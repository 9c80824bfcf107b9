// Shared kernel helpers.
#include "runtime/cpu/kernels/common.h"

namespace precis::rt {

BroadcastMap::BroadcastMap(const std::vector<int64_t>& out, const std::vector<int64_t>& in) : out_dims_(out) {
  size_t pad = out.size() - in.size();
  strides_.assign(out.size(), 0);
  int64_t stride = 1;
  for (size_t d = in.size(); d-- > 0;) {
    strides_[d + pad] = in[d] == 1 ? 0 : stride;
    stride *= in[d];
  }
  identity_ = in == out;
}

std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> v(size_t(t.numel));
  // Any integer or bool type; kernels validate in Init that such inputs are integers.
  bool bool_type = t.dtype == DataType::kBool;
  for (int64_t i = 0; i < t.numel; ++i) {
    if (bool_type) {
      v[size_t(i)] = t.As<uint8_t>()[i];
      continue;
    }
    DispatchInteger(t.dtype, [&](auto tag) { v[size_t(i)] = int64_t(t.As<decltype(tag)>()[i]); });
  }
  return v;
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

int64_t DataDimAxis(const KernelArgs& args) { return args.attrs.Int("data_dim_axis", -1); }

Status SetDataDim(const KernelArgs& args, Tensor& out, int64_t axis, int64_t size) {
  if (axis < 0 || axis >= out.rank() || size < 0 || size > out.dims[size_t(axis)])
    return args.Error("found " + std::to_string(size) + " entries, more than the " + std::to_string(axis >= 0 && axis < out.rank() ? out.dims[size_t(axis)] : 0) +
                      " its output was planned for");
  out.dims[size_t(axis)] = size;
  out.numel = 1;
  for (int64_t d : out.dims) out.numel *= d;
  out.bytes = size_t(out.numel) * DataTypeSize(out.dtype);
  return Status::Ok();
}

Status CheckDataDimOutput(const KernelArgs& args, const Tensor& out, int64_t axis, const std::vector<int64_t>& expected) {
  if (DataDimAxis(args) != axis) return args.Error("data_dim_axis " + std::to_string(DataDimAxis(args)) + " is not this step's axis " + std::to_string(axis));
  bool ok = out.dims.size() == expected.size();
  for (size_t d = 0; ok && d < expected.size(); ++d) ok = int64_t(d) == axis || out.dims[d] == expected[d];
  if (!ok) return args.Error("output shape " + DimsToString(out.dims) + " does not fit its input");
  return Status::Ok();
}

double ReadAt(const Tensor& t, int64_t i) {
  double v = 0;
  DispatchNumeric(t.dtype, [&](auto tag) { v = double(Load(t.As<decltype(tag)>()[i])); });
  return v;
}

void WriteAt(Tensor& t, int64_t i, double v) {
  DispatchNumeric(t.dtype, [&](auto tag) {
    using T = decltype(tag);
    t.As<T>()[i] = Store<T>(typename ComputeOf<T>::type(v));
  });
}

}  // namespace precis::rt
