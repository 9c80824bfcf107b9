// Reference RoiAlign, AffineGrid, Col2Im, CenterCropPad, TfIdfVectorizer and NonMaxSuppression, each following the
// ONNX reference implementation (onnx/reference/ops) step for step, computing in double.
//
// RoiAlign: each region (x1, y1, x2, y2, scaled by spatial_scale, shifted by half a pixel in
//   "half_pixel" mode) is split into output_height x output_width bins; each bin averages (or takes
//   the max of) sampling_ratio^2 bilinear samples (ceil(roi / bins) when sampling_ratio is 0).
//   Samples beyond one pixel outside the map count as 0. In "max" mode the reference takes the max
//   of the four weighted corners, which is what is computed here too.
// AffineGrid: grid[n, ..., :] = theta[n] @ (x, y[, z], 1) over the normalized base grid (-1..1,
//   pixel centres unless align_corners).
// Col2Im: the blocks of input [N, C * prod(block), L] are summed into [N, C, image...] at
//   position block_index * stride - pad_begin + kernel_offset * dilation.
// CenterCropPad: each output element reads the input element offset by floor((in - out) / 2)
//   along cropped axes and -floor((out - in) / 2) along padded ones; outside the input it is 0.
// TfIdfVectorizer: n-grams of min..max_gram_length tokens (tokens skip_count apart, 0 to
//   max_skip_count; unigrams counted once) found in the pool are counted per row; TF gives counts,
//   IDF the weight (or 1) where the count is > 0, TFIDF weight * count.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "runtime/cpu/kernels/common.h"
#include "runtime/cpu/kernels/register.h"
#include "runtime/kernels/index_util.h"

namespace precis::rt {
namespace {

bool IsFloatType(DataType t) { return DispatchFloat(t, [](auto) {}); }

class RoiAlignKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *rois = args.in(1), *idx = args.in(2), *y = args.out(0);
    if (!x || !rois || !idx || !y) return args.Error("needs X, rois, batch_indices and an output");
    // In 16-bit plans rois stay FP32 (OpDef low_inputs): any float dtype is read as double.
    if (!IsFloatType(x->dtype) || !IsFloatType(rois->dtype) || y->dtype != x->dtype) return args.Error("X, rois and Y must be floats (X and Y of one dtype)");
    if (x->rank() != 4 || rois->rank() != 2 || rois->dims[1] != 4 || idx->rank() != 1 || idx->dims[0] != rois->dims[0])
      return args.Error("needs X [N, C, H, W], rois [R, 4] and batch_indices [R]");
    if (!IsIndexType(idx->dtype)) return args.Error("batch_indices must be int64 or int32");
    if (x->dims[2] < 1 || x->dims[3] < 1) return args.Error("X has an empty spatial dim");
    oh_ = args.attrs.Int("output_height", 1);
    ow_ = args.attrs.Int("output_width", 1);
    if (y->dims != std::vector<int64_t>{rois->dims[0], x->dims[1], oh_, ow_}) return args.Error("output shape does not match");
    max_ = args.attrs.String("mode", "avg") == "max";
    half_pixel_ = args.attrs.String("coordinate_transformation_mode", "half_pixel") == "half_pixel";
    ratio_ = args.attrs.Int("sampling_ratio", 0);
    scale_ = args.attrs.Float("spatial_scale", 1.0f);
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &x = *args.in(0), &rois = *args.in(1), &idx = *args.in(2);
    Tensor& y = *args.out(0);
    int64_t N = x.dims[0], C = x.dims[1], H = x.dims[2], W = x.dims[3], R = rois.dims[0];
    std::vector<int64_t> batch = ReadInts(idx);
    struct Sample {
      int64_t pos[4];
      double w[4];
    };
    std::vector<Sample> samples;
    for (int64_t r = 0; r < R; ++r) {
      int64_t b = batch[size_t(r)];
      if (b < 0 || b >= N) return args.Error("batch index " + std::to_string(b) + " is out of range for " + std::to_string(N) + " images");
      double off = half_pixel_ ? 0.5 : 0.0;
      double x0 = ReadAt(rois, 4 * r) * scale_ - off, y0 = ReadAt(rois, 4 * r + 1) * scale_ - off;
      double x1 = ReadAt(rois, 4 * r + 2) * scale_ - off, y1 = ReadAt(rois, 4 * r + 3) * scale_ - off;
      double rw = x1 - x0, rh = y1 - y0;
      if (!half_pixel_) {
        rw = std::max(rw, 1.0);
        rh = std::max(rh, 1.0);
      }
      double bh = rh / double(oh_), bw = rw / double(ow_);
      double gh_d = ratio_ > 0 ? double(ratio_) : std::ceil(rh / double(oh_));
      double gw_d = ratio_ > 0 ? double(ratio_) : std::ceil(rw / double(ow_));
      if (!(gh_d >= 0 && gw_d >= 0 && gh_d * gw_d * double(oh_ * ow_) <= double(1 << 24)))
        return args.Error("region " + std::to_string(r) + " needs too many samples (" + std::to_string(gh_d * gw_d * double(oh_ * ow_)) + ")");
      int64_t gh = int64_t(gh_d), gw = int64_t(gw_d);
      double count = double(std::max<int64_t>(gh * gw, 1));
      samples.assign(size_t(oh_ * ow_ * gh * gw), Sample{});
      size_t k = 0;
      for (int64_t ph = 0; ph < oh_; ++ph)
        for (int64_t pw = 0; pw < ow_; ++pw)
          for (int64_t iy = 0; iy < gh; ++iy) {
            double yy = y0 + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
            for (int64_t ix = 0; ix < gw; ++ix, ++k) {
              double xx = x0 + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw);
              Sample& s = samples[k];
              if (!(yy >= -1.0 && yy <= double(H) && xx >= -1.0 && xx <= double(W))) continue;  // all zero (NaN too)
              double sy = std::max(yy, 0.0), sx = std::max(xx, 0.0);
              int64_t ylo = int64_t(sy), xlo = int64_t(sx), yhi, xhi;
              if (ylo >= H - 1) yhi = ylo = H - 1, sy = double(ylo);
              else yhi = ylo + 1;
              if (xlo >= W - 1) xhi = xlo = W - 1, sx = double(xlo);
              else xhi = xlo + 1;
              double ly = sy - double(ylo), lx = sx - double(xlo), hy = 1 - ly, hx = 1 - lx;
              s = Sample{{ylo * W + xlo, ylo * W + xhi, yhi * W + xlo, yhi * W + xhi}, {hy * hx, hy * lx, ly * hx, ly * lx}};
            }
          }
      for (int64_t c = 0; c < C; ++c) {
        int64_t base = (b * C + c) * H * W;
        size_t k2 = 0;
        for (int64_t p = 0; p < oh_ * ow_; ++p) {
          double acc = 0;
          bool first = true;
          for (int64_t j = 0; j < gh * gw; ++j, ++k2) {
            const Sample& s = samples[k2];
            if (max_) {
              double v = s.w[0] * ReadAt(x, base + s.pos[0]);
              for (int q = 1; q < 4; ++q) v = std::max(v, s.w[q] * ReadAt(x, base + s.pos[q]));
              acc = first ? v : std::max(acc, v);
              first = false;
            } else {
              for (int q = 0; q < 4; ++q) acc += s.w[q] * ReadAt(x, base + s.pos[q]);
            }
          }
          WriteAt(y, (r * C + c) * oh_ * ow_ + p, max_ ? acc : acc / count);
        }
      }
    }
    return Status::Ok();
  }

 private:
  int64_t oh_ = 1, ow_ = 1, ratio_ = 0;
  double scale_ = 1;
  bool max_ = false, half_pixel_ = true;
};

class AffineGridKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *theta = args.in(0), *size = args.in(1), *y = args.out(0);
    if (!theta || !size || !y) return args.Error("needs theta, size and an output");
    if (!IsFloatType(theta->dtype) || y->dtype != theta->dtype) return args.Error("theta and the grid must be floats of one dtype");
    if (!IsIndexType(size->dtype)) return args.Error("size must be int64");
    spatial_ = y->rank() - 2;
    if ((spatial_ != 2 && spatial_ != 3) || theta->rank() != 3 || theta->dims[0] != y->dims[0] || theta->dims[1] != spatial_ ||
        theta->dims[2] != spatial_ + 1 || y->dims.back() != spatial_ || size->numel != spatial_ + 2)
      return args.Error("needs theta [N, 2, 3] with size of 4 values, or [N, 3, 4] with 5");
    align_ = args.attrs.Int("align_corners", 0) != 0;
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& theta = *args.in(0);
    Tensor& y = *args.out(0);
    std::vector<int64_t> size = ReadInts(*args.in(1));
    std::vector<int64_t> dims(y.dims.begin() + 1, y.dims.end() - 1);  // D, H, W or H, W
    for (size_t d = 0; d < dims.size(); ++d)
      if (size[d + 2] != dims[d]) return args.Error("size " + std::to_string(size[d + 2]) + " differs from the plan's grid dim " + std::to_string(dims[d]));
    if (size[0] != y.dims[0]) return args.Error("size[0] differs from theta's batch");
    // Base coordinates per dim, as numpy's arange builds them in the reference.
    std::vector<std::vector<double>> axis(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
      double s = double(dims[d]);
      for (int64_t i = 0; i < dims[d]; ++i) {
        double step = align_ ? 2.0 / (s - 1) : 2.0 / s, start = align_ ? -1.0 : -1.0 + step / 2;
        axis[d].push_back(dims[d] == 1 && align_ ? -1.0 : start + double(i) * step);
      }
    }
    int64_t points = 1;
    for (int64_t d : dims) points *= d;
    int64_t S = spatial_;
    for (int64_t n = 0; n < y.dims[0]; ++n)
      for (int64_t p = 0; p < points; ++p) {
        // Homogeneous point (x, y[, z], 1): x runs along the last dim.
        std::vector<double> h(size_t(S + 1), 1.0);
        int64_t rest = p;
        for (int64_t d = S - 1; d >= 0; --d) {
          int64_t i = rest % dims[size_t(d)];
          rest /= dims[size_t(d)];
          h[size_t(S - 1 - d)] = axis[size_t(d)][size_t(i)];
        }
        for (int64_t r = 0; r < S; ++r) {
          double acc = 0;
          for (int64_t c = 0; c <= S; ++c) acc += ReadAt(theta, (n * S + r) * (S + 1) + c) * h[size_t(c)];
          WriteAt(y, (n * points + p) * S + r, acc);
        }
      }
    return Status::Ok();
  }

 private:
  int64_t spatial_ = 2;
  bool align_ = false;
};

class Col2ImKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *image = args.in(1), *block = args.in(2), *y = args.out(0);
    if (!x || !image || !block || !y) return args.Error("needs input, image_shape, block_shape and an output");
    if (!IsFloatType(x->dtype) || y->dtype != x->dtype) return args.Error("input and output must be floats of one dtype");
    for (const Tensor* t : {image, block})
      if (!IsIndexType(t->dtype)) return args.Error("image_shape and block_shape must be int64");
    int64_t s = y->rank() - 2;
    if (x->rank() != 3 || s < 1 || image->numel != s || block->numel != s || y->dims[0] != x->dims[0])
      return args.Error("needs input [N, C * prod(block), L] and one image/block value per spatial dim");
    dil_ = args.attrs.Ints("dilations", std::vector<int64_t>(size_t(s), 1));
    strides_ = args.attrs.Ints("strides", std::vector<int64_t>(size_t(s), 1));
    pads_ = args.attrs.Ints("pads", std::vector<int64_t>(size_t(2 * s), 0));
    if (int64_t(dil_.size()) != s || int64_t(strides_.size()) != s || int64_t(pads_.size()) != 2 * s) return args.Error("attribute lengths do not match the spatial rank");
    for (int64_t d = 0; d < s; ++d)
      if (dil_[size_t(d)] < 1 || strides_[size_t(d)] < 1) return args.Error("dilations and strides must be >= 1");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    std::vector<int64_t> image = ReadInts(*args.in(1)), block = ReadInts(*args.in(2));
    size_t s = image.size();
    if (s > size_t(kMaxDims)) return args.Error("at most " + std::to_string(kMaxDims) + " spatial dims");
    int64_t kernel = 1, blocks = 1;
    int64_t nblocks[kMaxDims] = {};
    for (size_t d = 0; d < s; ++d) {
      if (image[d] != y.dims[d + 2]) return args.Error("image_shape differs from the plan's output dims");
      if (block[d] < 1) return args.Error("block_shape values must be >= 1");
      kernel *= block[d];
      int64_t span = image[d] + pads_[d] + pads_[d + s] - dil_[d] * (block[d] - 1) - 1;
      nblocks[d] = (span >= 0 ? span / strides_[d] : -((-span + strides_[d] - 1) / strides_[d])) + 1;  // floor, as the reference's //
      if (nblocks[d] < 1) return args.Error("the blocks do not fit the image");
      blocks *= nblocks[d];
    }
    int64_t C = y.dims[1], N = x.dims[0];
    if (x.dims[1] != C * kernel || x.dims[2] != blocks)
      return args.Error("input [" + std::to_string(x.dims[1]) + ", " + std::to_string(x.dims[2]) + "] per image does not hold " + std::to_string(C) + " x " +
                        std::to_string(kernel) + " kernel values over " + std::to_string(blocks) + " blocks");
    int64_t pixels = 1;
    for (size_t d = 0; d < s; ++d) pixels *= image[d];
    std::vector<double> acc(static_cast<size_t>(pixels));
    int64_t k[kMaxDims] = {}, b[kMaxDims] = {};
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t kf = 0; kf < kernel; ++kf) {
          for (int64_t r = kf, d = int64_t(s) - 1; d >= 0; --d) k[d] = r % block[size_t(d)], r /= block[size_t(d)];
          for (int64_t bf = 0; bf < blocks; ++bf) {
            int64_t pix = 0;
            bool inside = true;
            for (int64_t r = bf, d = int64_t(s) - 1; d >= 0; --d) b[d] = r % nblocks[d], r /= nblocks[d];
            for (size_t d = 0; d < s && inside; ++d) {
              int64_t i = b[d] * strides_[d] - pads_[d] + k[d] * dil_[d];
              inside = i >= 0 && i < image[d];
              pix = pix * image[d] + i;
            }
            if (inside) acc[size_t(pix)] += ReadAt(x, ((n * C + c) * kernel + kf) * blocks + bf);
          }
        }
        for (int64_t p = 0; p < pixels; ++p) WriteAt(y, (n * C + c) * pixels + p, acc[size_t(p)]);
      }
    return Status::Ok();
  }

 private:
  static constexpr int kMaxDims = 8;
  std::vector<int64_t> dil_, strides_, pads_;
};

class CenterCropPadKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs an input and an output");
    if (x->dtype != y->dtype || x->rank() != y->rank()) return args.Error("output type differs from the input's");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    size_t rank = x.dims.size(), esize = DataTypeSize(x.dtype);
    std::vector<int64_t> off(rank), in_strides = Strides(x.dims);
    for (size_t d = 0; d < rank; ++d) {
      int64_t diff = x.dims[d] - y.dims[d];
      off[d] = diff >= 0 ? diff / 2 : -((-diff) / 2);
    }
    const auto* src = static_cast<const uint8_t*>(x.data);
    auto* dst = static_cast<uint8_t*>(y.data);
    for (int64_t o = 0; o < y.numel; ++o) {
      int64_t rest = o, at = 0;
      bool inside = true;
      for (size_t d = rank; d-- > 0;) {
        int64_t i = rest % y.dims[d] + off[d];
        rest /= y.dims[d];
        inside = inside && i >= 0 && i < x.dims[d];
        at += i * in_strides[d];
      }
      if (inside) std::memcpy(dst + size_t(o) * esize, src + size_t(at) * esize, esize);
      else std::memset(dst + size_t(o) * esize, 0, esize);
    }
    return Status::Ok();
  }
};

class TfIdfKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *x = args.in(0), *y = args.out(0);
    if (!x || !y) return args.Error("needs tokens and an output");
    if (!IsIndexType(x->dtype) || y->dtype != DataType::kF32) return args.Error("needs int tokens and a float output");
    std::vector<int64_t> counts = args.attrs.Ints("ngram_counts"), pool = args.attrs.Ints("pool_int64s");
    indexes_ = args.attrs.Ints("ngram_indexes");
    weights_ = args.attrs.Floats("weights");
    min_ = args.attrs.Int("min_gram_length", 1);
    max_ = args.attrs.Int("max_gram_length", 1);
    skip_ = args.attrs.Int("max_skip_count", 0);
    std::string mode = args.attrs.String("mode", "TF");
    mode_ = mode == "TF" ? 1 : mode == "IDF" ? 2 : mode == "TFIDF" ? 3 : 0;
    if (!mode_ || min_ < 1 || max_ < min_ || skip_ < 0 || indexes_.empty()) return args.Error("bad n-gram attributes");
    for (int64_t v : indexes_)
      if (v < 0 || v >= (int64_t(1) << 30)) return args.Error("ngram_indexes must be in [0, 2^30)");
    if (x->rank() != 1 && x->rank() != 2) return args.Error("tokens must be [C] or [B, C]");
    if (y->rank() < 1) return args.Error("output must be [O] or [B, O]");
    out_ = *std::max_element(indexes_.begin(), indexes_.end()) + 1;
    if (!weights_.empty() && int64_t(weights_.size()) < out_) return args.Error("weights must hold one value per output column");
    if (y->dims.back() != out_ || (x->rank() == 2 && (y->rank() != 2 || y->dims[0] != x->dims[0])) || (x->rank() == 1 && y->rank() != 1))
      return args.Error("output shape does not match");
    if (y->numel != (x->rank() == 2 ? x->dims[0] : 1) * out_) return args.Error("output shape does not match");
    // The pool holds ngram_counts[i].. of (i + 1)-grams; ids count every n-gram in order (from 1),
    // those outside min..max included; prefixes of longer n-grams are entries with id 0.
    int64_t id = 1;
    for (size_t i = 0; i < counts.size(); ++i) {
      int64_t n = int64_t(i) + 1, begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : int64_t(pool.size());
      if (begin < 0 || end < begin || end > int64_t(pool.size())) return args.Error("ngram_counts must be ascending offsets into the pool");
      int64_t grams = (end - begin) / n;
      if (n < min_ || n > max_) {
        id += grams;
        continue;
      }
      for (int64_t g = 0; g < grams; ++g, ++id) {
        std::vector<int64_t> key;
        for (int64_t t = 0; t < n; ++t) {
          key.push_back(pool[size_t(begin + g * n + t)]);
          auto [it, added] = trie_.emplace(key, 0);
          if (t == n - 1) it->second = id;
        }
      }
    }
    if (id - 1 > int64_t(indexes_.size())) return args.Error("ngram_indexes holds fewer entries than the pool has n-grams");
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor& x = *args.in(0);
    Tensor& y = *args.out(0);
    std::vector<int64_t> tokens = ReadInts(x);
    int64_t rows = x.rank() == 2 ? x.dims[0] : 1, C = x.dims.back();
    std::vector<int64_t> freq(size_t(rows * out_), 0);
    std::vector<int64_t> key;
    for (int64_t r = 0; r < rows && !trie_.empty(); ++r) {
      const int64_t* row = tokens.data() + r * C;
      int64_t start_size = min_;
      for (int64_t dist = 1; dist <= skip_ + 1; ++dist) {
        for (int64_t s = 0; s < C; ++s) {
          if (s + dist * (start_size - 1) >= C) break;
          key.clear();
          for (int64_t n = 1, at = s; n <= max_ && at < C; ++n, at += dist) {
            key.push_back(row[at]);
            auto it = trie_.find(key);
            if (it == trie_.end()) break;
            if (n >= start_size && it->second != 0) ++freq[size_t(r * out_ + indexes_[size_t(it->second - 1)])];
          }
        }
        if (start_size == 1) {  // unigrams do not depend on the skip: counted once
          if (++start_size > max_) break;
        }
      }
    }
    float* out = y.As<float>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < out_; ++i) {
        int64_t f = freq[size_t(r * out_ + i)];
        double v = mode_ == 1 ? double(f)
                   : mode_ == 2 ? (f > 0 ? (weights_.empty() ? 1.0 : double(weights_[size_t(i)])) : 0.0)
                                : (weights_.empty() ? double(f) : double(weights_[size_t(i)]) * double(f));
        out[r * out_ + i] = float(v);
      }
    return Status::Ok();
  }

 private:
  std::map<std::vector<int64_t>, int64_t> trie_;  // n-gram (or prefix) -> id, 0 for a bare prefix
  std::vector<int64_t> indexes_;
  std::vector<float> weights_;
  int64_t min_ = 1, max_ = 1, skip_ = 0, out_ = 0;
  int mode_ = 1;
};

// NonMaxSuppression: per batch and class, boxes by score (highest first, lower index first among
// equal scores; above score_threshold when given), each kept unless its IoU with a box kept
// before exceeds iou_threshold, at most max_output_boxes_per_class (default 0) per class. Boxes
// are corners (y1, x1, y2, x2 in any order) or, with center_point_box, (x, y, width, height).
// The output [count, 3] (batch, class, box) has a data dim.
class NonMaxSuppressionKernel : public Kernel {
 public:
  Status Init(const KernelArgs& args, const CpuContext&) override {
    const Tensor *boxes = args.in(0), *scores = args.in(1), *y = args.out(0);
    if (!boxes || !scores || !y || y->dtype != DataType::kI64 || y->rank() != 2 || y->dims[1] != 3) return args.Error("needs boxes, scores and an int64 [count, 3] output");
    if (!IsFloatType(boxes->dtype) || !IsFloatType(scores->dtype) || boxes->rank() != 3 || scores->rank() != 3 || boxes->dims[2] != 4 ||
        boxes->dims[0] != scores->dims[0] || boxes->dims[1] != scores->dims[2])
      return args.Error("needs boxes [batches, boxes, 4] and scores [batches, classes, boxes]");
    center_ = args.attrs.Int("center_point_box", 0) != 0;
    if (const Tensor* m = args.in(2); m && !IsIndexType(m->dtype)) return args.Error("max_output_boxes_per_class must be int64");
    if (DataDimAxis(args) >= 0) PRECIS_RETURN_IF_ERROR(CheckDataDimOutput(args, *y, 0, {0, 3}));
    return Status::Ok();
  }

  Status Run(const KernelArgs& args, CpuContext&) override {
    const Tensor &boxes = *args.in(0), &scores = *args.in(1);
    Tensor& y = *args.out(0);
    const Tensor *max_t = args.in(2), *iou_t = args.in(3), *score_t = args.in(4);
    int64_t max_out = max_t && max_t->numel > 0 ? std::max<int64_t>(ReadInts(*max_t)[0], 0) : 0;
    double iou = iou_t && iou_t->numel > 0 ? ReadAt(*iou_t, 0) : 0.0;
    bool filter = score_t && score_t->numel > 0;
    double threshold = filter ? ReadAt(*score_t, 0) : 0.0;
    int64_t B = boxes.dims[0], N = boxes.dims[1], C = scores.dims[1];
    std::vector<int64_t> selected;  // (batch, class, box) triples
    std::vector<int64_t> candidates, kept;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c) {
        candidates.clear();
        kept.clear();
        auto score = [&](int64_t i) { return ReadAt(scores, (b * C + c) * N + i); };
        for (int64_t i = 0; i < N; ++i)
          if (!filter || score(i) > threshold) candidates.push_back(i);
        // NaN scores rank below every number (a strict weak order for the sort).
        auto key = [&](int64_t i) { double s = score(i); return std::isnan(s) ? -INFINITY : s; };
        std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t p, int64_t q) { return key(p) > key(q); });
        for (int64_t i : candidates) {
          if (int64_t(kept.size()) >= max_out) break;
          bool keep = true;
          for (int64_t k : kept) keep = keep && !Suppresses(boxes, b * N + i, b * N + k, iou);
          if (!keep) continue;
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    PRECIS_RETURN_IF_ERROR(SetDataDim(args, y, 0, int64_t(selected.size() / 3)));
    if (!selected.empty()) std::memcpy(y.data, selected.data(), selected.size() * sizeof(int64_t));
    return Status::Ok();
  }

 private:
  // Whether boxes p and q (flat box indices) overlap by more than `threshold` IoU, as the reference computes it.
  bool Suppresses(const Tensor& boxes, int64_t p, int64_t q, double threshold) const {
    double a[4], b[4];
    for (int k = 0; k < 4; ++k) a[k] = ReadAt(boxes, p * 4 + k), b[k] = ReadAt(boxes, q * 4 + k);
    double ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;
    if (!center_) {
      ax0 = std::min(a[1], a[3]), ax1 = std::max(a[1], a[3]), ay0 = std::min(a[0], a[2]), ay1 = std::max(a[0], a[2]);
      bx0 = std::min(b[1], b[3]), bx1 = std::max(b[1], b[3]), by0 = std::min(b[0], b[2]), by1 = std::max(b[0], b[2]);
    } else {
      ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2, ay0 = a[1] - a[3] / 2, ay1 = a[1] + a[3] / 2;
      bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2, by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;
    }
    double ix0 = std::max(ax0, bx0), ix1 = std::min(ax1, bx1), iy0 = std::max(ay0, by0), iy1 = std::min(ay1, by1);
    if (ix1 <= ix0 || iy1 <= iy0) return false;
    double inter = (ix1 - ix0) * (iy1 - iy0);
    double area_a = (ax1 - ax0) * (ay1 - ay0), area_b = (bx1 - bx0) * (by1 - by0), uni = area_a + area_b - inter;
    if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return false;
    return inter / uni > threshold;
  }

  bool center_ = false;
};

}  // namespace

void RegisterImageKernels(KernelRegistry& r) {
  r.Register("RoiAlign", Make<RoiAlignKernel>);
  r.Register("AffineGrid", Make<AffineGridKernel>);
  r.Register("Col2Im", Make<Col2ImKernel>);
  r.Register("CenterCropPad", Make<CenterCropPadKernel>);
  r.Register("TfIdfVectorizer", Make<TfIdfKernel>);
  r.Register("NonMaxSuppression", Make<NonMaxSuppressionKernel>);
}

}  // namespace precis::rt
