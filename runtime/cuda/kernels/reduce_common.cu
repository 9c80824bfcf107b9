// Host side of reduce_common.cuh: the slice view of a tensor and the choice of thread layout.
#include "runtime/cuda/kernels/reduce_common.cuh"

#include <algorithm>

namespace precis::rt::cuda::reduce {

bool MakeSlices(const std::vector<int64_t>& dims, const std::vector<bool>& reduced, Slices* out) {
  // As reduce.cc's BuildGroups: drop size-1 axes, merge neighbours of the same kind.
  std::vector<int64_t> strides = DenseStrides(dims), kept_sizes, kept_strides, red_sizes, red_strides;
  int last_kind = -1;
  int64_t count = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    int kind = reduced[d] ? 1 : 0;
    if (!kind) count *= dims[d];
    if (dims[d] == 1) continue;
    auto& sizes = kind ? red_sizes : kept_sizes;
    auto& strs = kind ? red_strides : kept_strides;
    if (kind == last_kind) {
      sizes.back() *= dims[d];
      strs.back() = strides[d];
    } else {
      sizes.push_back(dims[d]);
      strs.push_back(strides[d]);
    }
    last_kind = kind;
  }
  Slices s;
  s.count = count;
  if (!red_sizes.empty()) {
    s.run = red_sizes.back();
    s.step = red_strides.back();
    red_sizes.pop_back();
    red_strides.pop_back();
  }
  s.runs = 1;
  for (int64_t n : red_sizes) s.runs *= n;
  if (!Indexer::Make(kept_sizes, kept_strides, 0, &s.kept) || !Indexer::Make(red_sizes, red_strides, 0, &s.outer)) return false;
  *out = s;
  return true;
}

bool MakeAxisSlices(int64_t outer, int64_t n, int64_t inner, Slices* out) {
  return MakeSlices({outer, n, inner}, {false, true, false}, out);
}

Layout ChooseLayout(const Slices& s, const cudaDeviceProp* prop) {
  int64_t sms = prop ? prop->multiProcessorCount : 132;
  int64_t fill = sms * (prop ? prop->maxThreadsPerMultiProcessor : 2048);  // threads that fill the GPU
  Layout l;
  if (s.step == 1 && s.run >= 32) {
    // Contiguous runs: one warp, a few warps or a whole block per slice; large blocks only when
    // there are too few slices to fill the GPU otherwise.
    int cap = s.count >= 4 * sms ? 256 : 1024;
    int y = 32;
    while (y < cap && y < s.run) y *= 2;
    l.Y = y;
    l.X = y >= 256 ? 1 : 256 / y;
    return l;
  }
  // The innermost axis is kept (or the runs are short): a thread per slice, neighbouring slices
  // on neighbouring threads; split each slice over up to 32 threads when slices are few and long.
  l.x_fast = true;
  while (l.Y < 32 && s.count * l.Y * 2 <= fill && s.size() >= int64_t(64) * l.Y) l.Y *= 2;
  l.X = std::max(32, 256 / l.Y);
  l.by_runs = s.runs >= l.Y && s.run < l.Y;
  return l;
}

unsigned GridFor(const Slices& s, const Layout& l) {
  int64_t tiles = (s.count + l.X - 1) / l.X;
  return unsigned(std::clamp<int64_t>(tiles, 1, int64_t(1) << 20));
}

size_t SharedBytes(const Layout& l, size_t acc_bytes) {
  if (l.x_fast) return l.Y > 1 ? size_t(l.X) * size_t(l.Y) * acc_bytes : 0;
  return l.Y > 32 ? 32 * acc_bytes : 0;
}

bool NormalizeAxis(int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= rank) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

bool HasHalfTensors(const KernelArgs& args) {
  for (const auto* list : {&args.inputs, &args.outputs})
    for (const Tensor* t : *list)
      if (t && (t->dtype == DataType::kF16 || t->dtype == DataType::kBF16)) return true;
  return false;
}

Status DtypeError(const KernelArgs& args, const std::string& message) {
  if (HasHalfTensors(args)) return Unimplemented(args.node + ": " + message + " (runs widened to FP32)");
  return args.Error(message);
}

std::vector<int64_t> ReadHostInts(const Tensor& t) {
  std::vector<int64_t> v(size_t(t.numel));
  for (int64_t i = 0; i < t.numel; ++i) {
    switch (t.dtype) {
      case DataType::kI64: v[size_t(i)] = t.As<int64_t>()[i]; break;
      case DataType::kI32: v[size_t(i)] = t.As<int32_t>()[i]; break;
      case DataType::kI16: v[size_t(i)] = t.As<int16_t>()[i]; break;
      case DataType::kI8: v[size_t(i)] = t.As<int8_t>()[i]; break;
      case DataType::kU64: v[size_t(i)] = int64_t(t.As<uint64_t>()[i]); break;
      case DataType::kU32: v[size_t(i)] = t.As<uint32_t>()[i]; break;
      case DataType::kU16: v[size_t(i)] = t.As<uint16_t>()[i]; break;
      default: v[size_t(i)] = t.As<uint8_t>()[i]; break;  // u8, bool
    }
  }
  return v;
}

}  // namespace precis::rt::cuda::reduce
