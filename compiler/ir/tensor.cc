// Buffer and Tensor: ownership of constant bytes, element counts and content hashing.
#include "compiler/ir/tensor.h"

#include <cstring>

#include "compiler/ir/type.h"
#include "runtime/base/check.h"
#include "runtime/base/hash.h"

namespace precis::ir {

Buffer Buffer::Own(std::string bytes) {
  auto holder = std::make_shared<const std::string>(std::move(bytes));
  Buffer b;
  b.data_ = reinterpret_cast<const uint8_t*>(holder->data());
  b.size_ = holder->size();
  b.keeper_ = std::move(holder);
  return b;
}

Buffer Buffer::Own(std::vector<uint8_t> bytes) {
  auto holder = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  Buffer b;
  b.data_ = holder->data();
  b.size_ = holder->size();
  b.keeper_ = std::move(holder);
  return b;
}

Buffer Buffer::View(std::shared_ptr<const void> keeper, const uint8_t* data, size_t size) {
  Buffer b;
  b.keeper_ = std::move(keeper);
  b.data_ = data;
  b.size_ = size;
  b.is_view_ = true;
  return b;
}

Tensor::Tensor(DType dtype, std::vector<int64_t> dims, Buffer data)
    : dtype_(dtype), dims_(std::move(dims)), data_(std::move(data)) {
  PRECIS_CHECK(dtype_ != DType::kString && dtype_ != DType::kUndefined) << DTypeName(dtype_);
  PRECIS_CHECK(int64_t(data_.size()) == NumElements() * DTypeSize(dtype_))
      << "tensor byte size " << data_.size() << " does not match its shape";
}

Tensor::Tensor(std::vector<int64_t> dims, std::vector<std::string> strings)
    : dtype_(DType::kString), dims_(std::move(dims)), strings_(std::move(strings)) {
  PRECIS_CHECK(int64_t(strings_.size()) == NumElements()) << "string count mismatch";
}

Tensor Tensor::Reference(DType dtype, std::vector<int64_t> dims, uint64_t hash) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.has_data_ = false;
  t.reference_hash_ = hash;
  return t;
}

int64_t Tensor::NumElements() const {
  auto n = CheckedElements(dims_);
  PRECIS_CHECK(n.has_value()) << "tensor dims out of range";
  return *n;
}

int64_t Tensor::ByteSize() const {
  if (!has_data_) return dtype_ == DType::kString ? 0 : NumElements() * DTypeSize(dtype_);
  if (dtype_ != DType::kString) return int64_t(data_.size());
  int64_t n = 0;
  for (const auto& s : strings_) n += int64_t(s.size());
  return n;
}

uint64_t Tensor::ContentHash() const {
  if (!has_data_) return reference_hash_;
  if (dtype_ != DType::kString) return HashBytes(data_.data(), data_.size());
  uint64_t h = kHashSeed;
  for (const auto& s : strings_) {
    uint64_t len = s.size();
    h = HashBytes(reinterpret_cast<const uint8_t*>(&len), 8, h);
    h = HashBytes(reinterpret_cast<const uint8_t*>(s.data()), s.size(), h);
  }
  return h;
}

bool Tensor::SameContent(const Tensor& o) const {
  if (dtype_ != o.dtype_ || dims_ != o.dims_) return false;
  if (!has_data_ || !o.has_data_) return ContentHash() == o.ContentHash();
  if (dtype_ == DType::kString) return strings_ == o.strings_;
  return data_.size() == o.data_.size() &&
         (data_.size() == 0 || std::memcmp(data_.data(), o.data_.data(), data_.size()) == 0);
}

}  // namespace precis::ir
