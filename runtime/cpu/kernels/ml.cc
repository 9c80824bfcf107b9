// ai.onnx.ml kernels (see compiler/ops/ml.cc): Binarizer, ArrayFeatureExtractor and TreeEnsemble,
// following ONNX's reference implementation (onnx/reference/ops/aionnxml), in the input's dtype.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/base/half.h"
#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"

namespace precis::rt {
namespace {

class BinarizerKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    if (!args.in(0) || !args.out(0) || args.in(0)->dtype != args.out(0)->dtype || args.in(0)->dims != args.out(0)->dims)
      return args.Error("needs X and an output of its type");
    threshold_ = args.attrs.Float("threshold", 0.0f);
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    for (int64_t i = 0; i < x.numel; ++i) WriteAt(y, i, ReadAt(x, i) > double(threshold_) ? 1.0 : 0.0);
    return Status::Ok();
  }

 private:
  float threshold_ = 0;
};

// Z[..., j] = X[..., Y[j]] (negative indices count from the end).
class ArrayFeatureExtractorKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.in(1), *z = args.out(0);
    if (!x || !y || !z || x->dtype != z->dtype || y->dtype != DataType::kI64 || x->rank() < 1 || z->numel != (x->numel / std::max<int64_t>(x->dims.back(), 1)) * y->numel)
      return args.Error("needs X, int64 indices Y and an output of X's rows by the indices");
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &x = *args.in(0), &y = *args.in(1);
    Tensor& z = *args.out(0);
    int64_t n = x.dims.back(), k = y.numel, rows = n ? x.numel / n : 0;
    size_t esize = DataTypeSize(x.dtype);
    for (int64_t j = 0; j < k; ++j) {
      int64_t idx = y.As<int64_t>()[j];
      if (idx < -n || idx >= n) return args.Error("index " + std::to_string(idx) + " is outside the last dim of " + std::to_string(n));
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j) {
        int64_t idx = y.As<int64_t>()[j];
        if (idx < 0) idx += n;
        std::memcpy(z.data + size_t(r * k + j) * esize, x.data + size_t(r * n + idx) * esize, esize);
      }
    return Status::Ok();
  }
};

// A tensor attribute's elements as doubles (float, double, 16-bit float or integer types).
Status TensorAttr(const KernelArgs& args, const char* name, std::vector<double>& out, bool required = true) {
  out.clear();
  const plan::Attr* a = args.attrs.Find(name);
  if (!a) return required ? args.Error(std::string("needs the tensor attribute ") + name) : Status::Ok();
  if (a->kind() != plan::AttrKind_Tensor || !a->tensor_data()) return args.Error(std::string(name) + " must be a tensor");
  DataType dt = DataType(a->tensor_dtype());
  size_t esize = DataTypeSize(dt);
  if (esize == 0 || a->tensor_data()->size() % esize != 0) return args.Error(std::string(name) + " has a bad size");
  Tensor t;
  t.dtype = dt;
  t.numel = int64_t(a->tensor_data()->size() / esize);
  t.data = const_cast<uint8_t*>(a->tensor_data()->data());
  bool numeric = dt == DataType::kF32 || dt == DataType::kF64 || dt == DataType::kF16 || dt == DataType::kBF16 || dt == DataType::kU8 ||
                 dt == DataType::kI64 || dt == DataType::kI32;
  if (!numeric) return args.Error(std::string(name) + " must be numeric");
  for (int64_t i = 0; i < t.numel; ++i) out.push_back(ReadAt(t, i));
  return Status::Ok();
}

// TreeEnsemble with post_transform NONE: each tree's leaf for a row adds (sum, average) or
// compares (min, max) its weight into its target. Nodes compare feature x with their split:
// <=, <, >=, >, ==, != or membership in a set (mode 6), or go true on NaN where
// nodes_missing_value_tracks_true says so. Sets come from membership_values in the order the
// reference builds the trees (each node, then its true branch, then its false branch), each
// ended by NaN (or by a 0, as the reference's loop reads it).
class TreeEnsembleKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    targets_ = args.attrs.Int("n_targets", 0);
    if (!x || !y || x->rank() != 2 || x->dtype != y->dtype || y->dims != std::vector<int64_t>{x->dims[0], targets_})
      return args.Error("needs X [N, F] and an output [N, n_targets] of its dtype");
    agg_ = args.attrs.Int("aggregate_function", 1);
    if (agg_ < 0 || agg_ > 3 || args.attrs.Int("post_transform", 0) != 0) return args.Error("unsupported aggregate_function or post_transform");
    feature_ = args.attrs.Ints("nodes_featureids"), true_id_ = args.attrs.Ints("nodes_truenodeids"), false_id_ = args.attrs.Ints("nodes_falsenodeids");
    true_leaf_ = args.attrs.Ints("nodes_trueleafs"), false_leaf_ = args.attrs.Ints("nodes_falseleafs"), target_ = args.attrs.Ints("leaf_targetids");
    roots_ = args.attrs.Ints("tree_roots");
    missing_true_ = args.attrs.Ints("nodes_missing_value_tracks_true");
    std::vector<double> modes, members;
    PRECIS_RETURN_IF_ERROR(TensorAttr(args, "nodes_splits", splits_));
    PRECIS_RETURN_IF_ERROR(TensorAttr(args, "nodes_modes", modes));
    PRECIS_RETURN_IF_ERROR(TensorAttr(args, "leaf_weights", weights_));
    PRECIS_RETURN_IF_ERROR(TensorAttr(args, "membership_values", members, false));
    size_t n = feature_.size();
    if (true_id_.size() != n || false_id_.size() != n || true_leaf_.size() != n || false_leaf_.size() != n || splits_.size() != n ||
        modes.size() != n || (!missing_true_.empty() && missing_true_.size() != n) || target_.size() != weights_.size())
      return args.Error("node or leaf arrays differ in length");
    mode_.clear();
    for (double m : modes) {
      if (m < 0 || m > 6) return args.Error("a node mode is outside 0..6");
      mode_.push_back(int(m));
    }
    for (int64_t f : feature_)
      if (f < 0 || f >= x->dims[1]) return args.Error("a node's feature id is outside X's " + std::to_string(x->dims[1]) + " features");
    for (int64_t t : target_)
      if (t < 0 || t >= targets_) return args.Error("a leaf target id is outside n_targets");
    // Membership sets, assigned in the reference's build order.
    sets_.assign(n, {});
    size_t next = 0;
    std::vector<bool> visited(n, false);
    std::vector<std::pair<int64_t, bool>> stack;  // (index, is_leaf), preorder with the true branch first
    for (int64_t root : roots_) {
      if (root < 0 || size_t(root) >= n) return args.Error("a tree root is outside the nodes");
      stack.push_back({root, RootIsLeaf(root)});
      while (!stack.empty()) {
        auto [i, leaf] = stack.back();
        stack.pop_back();
        if (leaf) {
          if (i < 0 || size_t(i) >= weights_.size()) return args.Error("a leaf id is outside the leaves");
          continue;
        }
        if (i < 0 || size_t(i) >= n || visited[size_t(i)]) return args.Error("the nodes do not form trees (an id out of range, or a node reached twice)");
        visited[size_t(i)] = true;
        if (mode_[size_t(i)] == 6) {
          for (;;) {
            if (next >= members.size()) return args.Error("membership_values ends before every membership node has its set");
            double m = members[next++];
            if (m == 0 || std::isnan(m)) break;
            sets_[size_t(i)].push_back(m);
          }
        }
        stack.push_back({false_id_[size_t(i)], false_leaf_[size_t(i)] != 0});
        stack.push_back({true_id_[size_t(i)], true_leaf_[size_t(i)] != 0});
      }
    }
    return Status::Ok();
  }
  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    int64_t rows = x.dims[0], features = x.dims[1];
    bool wide = x.dtype == DataType::kF64;
    double start = agg_ == 2 ? (wide ? std::numeric_limits<double>::max() : double(std::numeric_limits<float>::max()))
                 : agg_ == 3 ? (wide ? std::numeric_limits<double>::lowest() : double(std::numeric_limits<float>::lowest()))
                             : 0.0;
    std::vector<double> acc(static_cast<size_t>(targets_));
    // Arithmetic in X's dtype, as the reference's result array: FP32 (or narrower) rounds each step.
    auto round = [&](double v) { return wide ? v : double(float(v)); };
    for (int64_t r = 0; r < rows; ++r) {
      std::fill(acc.begin(), acc.end(), start);
      for (int64_t root : roots_) {
        int64_t i = root;
        bool leaf = RootIsLeaf(root);
        for (int64_t steps = 0; !leaf; ++steps) {
          if (steps > int64_t(feature_.size())) return args.Error("a tree has a cycle");
          double v = ReadAt(x, r * features + feature_[size_t(i)]);
          bool go = Compare(size_t(i), v) || (!missing_true_.empty() && missing_true_[size_t(i)] && std::isnan(v));
          leaf = (go ? true_leaf_ : false_leaf_)[size_t(i)] != 0;
          i = (go ? true_id_ : false_id_)[size_t(i)];
        }
        double w = weights_[size_t(i)];
        double& a = acc[size_t(target_[size_t(i)])];
        if (agg_ == 1) a = round(a + w);
        else if (agg_ == 0) a = round(a + round(w / double(roots_.size())));
        else if (agg_ == 2) a = std::min(a, w);
        else a = std::max(a, w);
      }
      for (int64_t t = 0; t < targets_; ++t) WriteAt(y, r * targets_ + t, acc[size_t(t)]);
    }
    return Status::Ok();
  }

 private:
  // The reference treats a root as a leaf when both its branches are leaves with one id.
  bool RootIsLeaf(int64_t root) const {
    size_t i = size_t(root);
    return true_leaf_[i] && false_leaf_[i] && true_id_[i] == false_id_[i];
  }
  bool Compare(size_t i, double v) const {
    double s = splits_[i];
    switch (mode_[i]) {
      case 0: return v <= s;
      case 1: return v < s;
      case 2: return v >= s;
      case 3: return v > s;
      case 4: return v == s;
      case 5: return v != s;
      default:
        for (double m : sets_[i])
          if (m == v) return true;
        return false;
    }
  }
  int64_t targets_ = 0, agg_ = 1;
  std::vector<int64_t> feature_, true_id_, false_id_, true_leaf_, false_leaf_, target_, roots_, missing_true_;
  std::vector<int> mode_;
  std::vector<double> splits_, weights_;
  std::vector<std::vector<double>> sets_;
};

}  // namespace

void RegisterMlKernels(KernelRegistry& r) {
  r.Register("ai.onnx.ml::Binarizer", Make<BinarizerKernel>);
  r.Register("ai.onnx.ml::ArrayFeatureExtractor", Make<ArrayFeatureExtractorKernel>);
  r.Register("ai.onnx.ml::TreeEnsemble", Make<TreeEnsembleKernel>);
}

}  // namespace precis::rt
