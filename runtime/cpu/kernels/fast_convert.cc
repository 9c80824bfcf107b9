// WidenBlock and NarrowBlock (see convert_blocks.h): rows split among threads when the block is
// large enough to pay for a parallel region.
#include "runtime/base/half_array.h"
#include "runtime/cpu/kernels/convert_blocks.h"
#include "runtime/cpu/kernels/fast_util.h"

namespace precis::rt {

void WidenBlock(DataType dtype, const uint8_t* src, int64_t src_stride, float* dst, int64_t rows, int64_t cols, int threads) {
  const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
  fast::ParallelFor(rows, cols, threads, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (dtype == DataType::kF16) HalfToFloatArray(s + r * src_stride, dst + r * cols, size_t(cols));
      else Bf16ToFloatArray(s + r * src_stride, dst + r * cols, size_t(cols));
    }
  });
}

void WidenIntoLayout(DataType dtype, const uint8_t* src, int64_t src_stride, int64_t rows, const int64_t* row_off,
                     const LayoutRun* runs, int64_t num_runs, float* dst, int threads) {
  const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
  int64_t cols = 0;
  for (int64_t i = 0; i < num_runs; ++i) cols += runs[i].len;
  fast::ParallelFor(rows, cols, threads, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const uint16_t* from = s + r * src_stride;
      float* to = dst + row_off[r];
      for (int64_t i = 0; i < num_runs; ++i) {
        const LayoutRun& run = runs[i];
        if (dtype == DataType::kF16) HalfToFloatArray(from + run.n0, to + run.off, size_t(run.len));
        else Bf16ToFloatArray(from + run.n0, to + run.off, size_t(run.len));
      }
    }
  });
}

void NarrowBlock(DataType dtype, const float* src, uint8_t* dst, int64_t dst_stride, int64_t rows, int64_t cols, int threads) {
  uint16_t* d = reinterpret_cast<uint16_t*>(dst);
  fast::ParallelFor(rows, cols, threads, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (dtype == DataType::kF16) FloatToHalfArray(src + r * cols, d + r * dst_stride, size_t(cols));
      else FloatToBf16Array(src + r * cols, d + r * dst_stride, size_t(cols));
    }
  });
}

void ParallelJobs(int64_t jobs, int threads, void (*fn)(void* context, int64_t job, int thread), void* context) {
  int t = int(std::clamp<int64_t>(jobs, 1, std::max(threads, 1)));
  if (t <= 1) {
    for (int64_t j = 0; j < jobs; ++j) fn(context, j, 0);
    return;
  }
#pragma omp parallel num_threads(t)
  {
    int i = omp_get_thread_num(), nt = omp_get_num_threads();
    for (int64_t j = i; j < jobs; j += nt) fn(context, j, i);
  }
}

void WidenArrayParallel(DataType dtype, const uint8_t* src, float* dst, int64_t n, int threads) {
  const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
  fast::ParallelFor(n, 1, threads, [&](int64_t begin, int64_t end) {
    if (dtype == DataType::kF16) HalfToFloatArray(s + begin, dst + begin, size_t(end - begin));
    else Bf16ToFloatArray(s + begin, dst + begin, size_t(end - begin));
  });
}

void NarrowArrayParallel(DataType dtype, const float* src, uint8_t* dst, int64_t n, int threads) {
  uint16_t* d = reinterpret_cast<uint16_t*>(dst);
  fast::ParallelFor(n, 1, threads, [&](int64_t begin, int64_t end) {
    if (dtype == DataType::kF16) FloatToHalfArray(src + begin, d + begin, size_t(end - begin));
    else FloatToBf16Array(src + begin, d + begin, size_t(end - begin));
  });
}

}  // namespace precis::rt
