// Tensor: constant data in the IR (initializers, Constant nodes, tensor attributes).
//
// The bytes live in a Buffer that either owns them (moved out of the protobuf, or made by a pass)
// or views a memory-mapped file (external data) and keeps the map alive. Copying a Tensor copies
// the reference, never the bytes. A tensor parsed from text may carry only the content hash of
// data printed by reference (has_data() false); such tensors compare by hash.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/dtype.h"

namespace precis::ir {

class Buffer {
 public:
  Buffer() = default;
  static Buffer Own(std::string bytes);
  static Buffer Own(std::vector<uint8_t> bytes);
  // A view of [data, data + size) kept valid by `keeper` (for example a MappedFile).
  static Buffer View(std::shared_ptr<const void> keeper, const uint8_t* data, size_t size);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool is_view() const { return is_view_; }

 private:
  std::shared_ptr<const void> keeper_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool is_view_ = false;
};

class Tensor {
 public:
  Tensor() = default;
  // Numeric or bool tensor; data.size() must equal NumElements() * DTypeSize(dtype).
  Tensor(DType dtype, std::vector<int64_t> dims, Buffer data);
  // String tensor.
  Tensor(std::vector<int64_t> dims, std::vector<std::string> strings);
  // A tensor known only by its content hash (text form reference).
  static Tensor Reference(DType dtype, std::vector<int64_t> dims, uint64_t hash);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t NumElements() const;  // dims are validated on construction by their producers
  bool has_data() const { return has_data_; }
  const Buffer& buffer() const { return data_; }
  const std::vector<std::string>& strings() const { return strings_; }
  int64_t ByteSize() const;  // payload bytes (string tensors: sum of string lengths)
  // Content hash (FNV-1a over 64-bit words, then the tail); stable across runs and machines.
  uint64_t ContentHash() const;
  // Same dtype, dims and content (bytes, or hash when either side has no data).
  bool SameContent(const Tensor& other) const;

 private:
  DType dtype_ = DType::kUndefined;
  std::vector<int64_t> dims_;
  Buffer data_;
  std::vector<std::string> strings_;
  bool has_data_ = true;
  uint64_t reference_hash_ = 0;
};

}  // namespace precis::ir
