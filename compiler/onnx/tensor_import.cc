// ONNX TensorProto -> IR Tensor without copying weight bytes: raw_data is moved out of the
// parsed protobuf, external data is a view into a memory-mapped file. Typed fields (float_data,
// int32_data, ...) are converted into an owned buffer. Sizes are checked against the declared
// shape before anything is allocated, and external paths may not leave the model's folder.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "compiler/onnx/external_data.h"
#include "compiler/onnx/import_internal.h"
#include "runtime/base/small_types.h"
#include "compiler/onnx/importer.h"

namespace precis::onnx {
namespace {

namespace fs = std::filesystem;
using ir::DType;

StatusOr<std::vector<int64_t>> CheckedDims(const ::onnx::TensorProto& proto, const std::string& what) {
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 0 || dims[i] > ir::kMaxDim)
      return InvalidArgument(what + ": dimension " + std::to_string(i) + " is " +
                             std::to_string(dims[i]) + ", outside [0, 2^40]");
  if (!ir::CheckedElements(dims))
    return InvalidArgument(what + ": shape holds more than 2^50 elements");
  return dims;
}

// Copies a repeated numeric field into `n` elements of type Out.
template <typename Out, typename Field>
ir::Buffer ConvertField(const Field& field, int64_t n) {
  std::vector<uint8_t> bytes(size_t(n) * sizeof(Out));
  for (int64_t i = 0; i < n; ++i) {
    Out v = static_cast<Out>(field.Get(int(i)));
    std::memcpy(bytes.data() + size_t(i) * sizeof(Out), &v, sizeof(Out));
  }
  return ir::Buffer::Own(std::move(bytes));
}

StatusOr<ir::Buffer> FromTypedFields(const ::onnx::TensorProto& p, DType dtype, int64_t n,
                                     const std::string& what) {
  auto need = [&](int have, const char* field) -> Status {
    if (int64_t(have) != n)
      return InvalidArgument(what + ": " + field + " holds " + std::to_string(have) +
                             " values, the shape needs " + std::to_string(n));
    return Status::Ok();
  };
  switch (dtype) {
    case DType::kF32: PRECIS_RETURN_IF_ERROR(need(p.float_data_size(), "float_data")); return ConvertField<float>(p.float_data(), n);
    case DType::kF64: PRECIS_RETURN_IF_ERROR(need(p.double_data_size(), "double_data")); return ConvertField<double>(p.double_data(), n);
    case DType::kI64: PRECIS_RETURN_IF_ERROR(need(p.int64_data_size(), "int64_data")); return ConvertField<int64_t>(p.int64_data(), n);
    case DType::kU32: PRECIS_RETURN_IF_ERROR(need(p.uint64_data_size(), "uint64_data")); return ConvertField<uint32_t>(p.uint64_data(), n);
    case DType::kU64: PRECIS_RETURN_IF_ERROR(need(p.uint64_data_size(), "uint64_data")); return ConvertField<uint64_t>(p.uint64_data(), n);
    case DType::kI32: PRECIS_RETURN_IF_ERROR(need(p.int32_data_size(), "int32_data")); return ConvertField<int32_t>(p.int32_data(), n);
    case DType::kI16: PRECIS_RETURN_IF_ERROR(need(p.int32_data_size(), "int32_data")); return ConvertField<int16_t>(p.int32_data(), n);
    case DType::kI8: PRECIS_RETURN_IF_ERROR(need(p.int32_data_size(), "int32_data")); return ConvertField<int8_t>(p.int32_data(), n);
    case DType::kU16:
    case DType::kF16:
    case DType::kBF16: PRECIS_RETURN_IF_ERROR(need(p.int32_data_size(), "int32_data")); return ConvertField<uint16_t>(p.int32_data(), n);
    case DType::kU8: PRECIS_RETURN_IF_ERROR(need(p.int32_data_size(), "int32_data")); return ConvertField<uint8_t>(p.int32_data(), n);
    case DType::kBool: {
      PRECIS_RETURN_IF_ERROR(need(p.int32_data_size(), "int32_data"));
      std::vector<uint8_t> bytes(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) bytes[size_t(i)] = p.int32_data(int(i)) != 0;
      return ir::Buffer::Own(std::move(bytes));
    }
    default: break;
  }
  return InvalidArgument(what + ": no data for element type " + std::string(ir::DTypeName(dtype)));
}

struct ExternalRef {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
};

StatusOr<ExternalRef> ParseExternalRef(const ::onnx::TensorProto& p, const std::string& what) {
  ExternalRef ref;
  for (const auto& kv : p.external_data()) {
    auto number = [&](int64_t* out) -> Status {
      const std::string& s = kv.value();
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (s.empty() || *end != '\0' || errno != 0 || v < 0)
        return InvalidArgument(what + ": external data " + kv.key() + " '" + s + "' is not a non-negative integer");
      *out = v;
      return Status::Ok();
    };
    if (kv.key() == "location") ref.location = kv.value();
    else if (kv.key() == "offset") PRECIS_RETURN_IF_ERROR(number(&ref.offset));
    else if (kv.key() == "length") PRECIS_RETURN_IF_ERROR(number(&ref.length));
  }
  if (ref.location.empty()) return InvalidArgument(what + ": external data has no location");
  return ref;
}

}  // namespace

StatusOr<std::shared_ptr<const MappedFile>> ImportContext::MapExternal(const std::string& location,
                                                                       const std::string& what) {
  if (base_dir_.empty())
    return InvalidArgument(what + ": external data '" + location +
                           "' cannot be resolved for a model read from memory");
  fs::path rel(location);
  if (rel.is_absolute() || location.find('\0') != std::string::npos)
    return InvalidArgument(what + ": external data location '" + location + "' must be a relative path");
  for (const auto& part : rel)
    if (part == "..")
      return InvalidArgument(what + ": external data location '" + location + "' escapes the model's folder");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::path(base_dir_), ec);
  fs::path full = fs::weakly_canonical(fs::path(base_dir_) / rel, ec);
  if (ec) return InvalidArgument(what + ": cannot resolve external data '" + location + "'");
  // Symbolic links may still point outside the folder: compare the resolved paths.
  auto [b, f] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (b != base.end())
    return InvalidArgument(what + ": external data location '" + location + "' escapes the model's folder");
  std::string key = full.string();
  if (auto it = mapped_.find(key); it != mapped_.end()) return it->second;
  auto file = MappedFile::Open(key);
  if (!file.ok()) {
    if (file.status().code() == StatusCode::kNotFound)
      return NotFound(what + ": external data file '" + location + "' does not exist");
    return file.status().WithContext(what);
  }
  mapped_[key] = *file;
  return *file;
}

Status ImportContext::ChargeDensified(int64_t bytes, const std::string& what) {
  if (bytes > kMaxDensifyBytes - densified_bytes_)
    return Unimplemented(what + ": densifying this sparse tensor would need " + std::to_string(bytes) +
                         " bytes, " + std::to_string(densified_bytes_) +
                         " are already densified (limit 1 GiB per model)");
  densified_bytes_ += bytes;
  return Status::Ok();
}

StatusOr<ir::Tensor> ImportTensor(::onnx::TensorProto& p, ImportContext& ctx, const std::string& what) {
  if (p.has_segment()) return Unimplemented(what + ": segmented tensors are not supported");
  auto dtype_or = ir::DTypeFromOnnx(p.data_type());
  if (!dtype_or.ok()) return dtype_or.status().WithContext(what);
  DType dtype = *dtype_or;
  PRECIS_ASSIGN_OR_RETURN(std::vector<int64_t> dims, CheckedDims(p, what));
  int64_t n = *ir::CheckedElements(dims);

  if (dtype == DType::kString) {
    if (p.data_location() == ::onnx::TensorProto::EXTERNAL)
      return Unimplemented(what + ": string tensors in external data are not supported");
    if (int64_t(p.string_data_size()) != n)
      return InvalidArgument(what + ": string_data holds " + std::to_string(p.string_data_size()) +
                             " values, the shape needs " + std::to_string(n));
    std::vector<std::string> strings;
    strings.reserve(size_t(n));
    for (auto& s : *p.mutable_string_data()) strings.push_back(std::move(s));
    return ir::Tensor(std::move(dims), std::move(strings));
  }

  // Storage types: ONNX packs 4- and 2-bit values (int32_data holds one packed byte per value
  // then, one element per value for float8); Precis holds one element per byte.
  DataType storage = DataType(ir::DTypeToOnnx(dtype));
  bool packed = ir::IsStorageType(dtype) && PackedBits(storage) < 8;
  int64_t bytes = packed ? PackedBytes(storage, n) : n * ir::DTypeSize(dtype);
  if (ir::IsStorageType(dtype) && p.data_location() != ::onnx::TensorProto::EXTERNAL && !p.has_raw_data()) {
    if (int64_t(p.int32_data_size()) != bytes)
      return InvalidArgument(what + ": int32_data holds " + std::to_string(p.int32_data_size()) + " values, the shape needs " + std::to_string(bytes));
    std::string raw(size_t(bytes), '\0');
    for (int64_t i = 0; i < bytes; ++i) raw[size_t(i)] = char(uint8_t(p.int32_data(int(i))));
    p.set_raw_data(std::move(raw));
  }
  if (packed) {
    std::string raw;
    if (p.data_location() == ::onnx::TensorProto::EXTERNAL) {
      PRECIS_ASSIGN_OR_RETURN(ExternalRef ref, ParseExternalRef(p, what));
      PRECIS_ASSIGN_OR_RETURN(auto file, ctx.MapExternal(ref.location, what));
      if ((ref.length >= 0 && ref.length != bytes) || ref.offset > int64_t(file->size()) || bytes > int64_t(file->size()) - ref.offset)
        return InvalidArgument(what + ": external data does not hold the " + std::to_string(bytes) + " packed bytes its shape needs");
      raw.assign(reinterpret_cast<const char*>(file->data() + ref.offset), size_t(bytes));
    } else {
      raw = std::move(*p.mutable_raw_data());
    }
    if (int64_t(raw.size()) != bytes)
      return InvalidArgument(what + ": raw_data has " + std::to_string(raw.size()) + " bytes, the shape needs " + std::to_string(bytes) + " (packed)");
    std::vector<uint8_t> out(static_cast<size_t>(n));
    UnpackSubByte(storage, reinterpret_cast<const uint8_t*>(raw.data()), n, out.data());
    return ir::Tensor(dtype, std::move(dims), ir::Buffer::Own(std::move(out)));
  }
  if (p.data_location() == ::onnx::TensorProto::EXTERNAL) {
    PRECIS_ASSIGN_OR_RETURN(ExternalRef ref, ParseExternalRef(p, what));
    if (ref.length >= 0 && ref.length != bytes)
      return InvalidArgument(what + ": external data length " + std::to_string(ref.length) +
                             " does not match the " + std::to_string(bytes) + " bytes its shape needs");
    PRECIS_ASSIGN_OR_RETURN(auto file, ctx.MapExternal(ref.location, what));
    if (ref.offset > int64_t(file->size()) || bytes > int64_t(file->size()) - ref.offset)
      return OutOfRange(what + ": external data [" + std::to_string(ref.offset) + ", " +
                        std::to_string(uint64_t(ref.offset) + uint64_t(bytes)) + ") lies outside '" + ref.location +
                        "' (" + std::to_string(file->size()) + " bytes)");
    return ir::Tensor(dtype, std::move(dims), ir::Buffer::View(file, file->data() + ref.offset, size_t(bytes)));
  }
  if (p.has_raw_data()) {
    if (int64_t(p.raw_data().size()) != bytes)
      return InvalidArgument(what + ": raw_data has " + std::to_string(p.raw_data().size()) +
                             " bytes, the shape needs " + std::to_string(bytes));
    return ir::Tensor(dtype, std::move(dims), ir::Buffer::Own(std::move(*p.mutable_raw_data())));
  }
  PRECIS_ASSIGN_OR_RETURN(ir::Buffer buffer, FromTypedFields(p, dtype, n, what));
  return ir::Tensor(dtype, std::move(dims), std::move(buffer));
}

StatusOr<ir::Tensor> DensifySparse(::onnx::SparseTensorProto& p, ImportContext& ctx, const std::string& what) {
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  auto n_or = ir::CheckedElements(dims);
  if (!n_or) return InvalidArgument(what + ": sparse tensor has absurd dimensions");
  int64_t n = *n_or;
  PRECIS_ASSIGN_OR_RETURN(ir::Tensor values, ImportTensor(*p.mutable_values(), ctx, what + " values"));
  PRECIS_ASSIGN_OR_RETURN(ir::Tensor indices, ImportTensor(*p.mutable_indices(), ctx, what + " indices"));
  if (values.dtype() == DType::kString) return Unimplemented(what + ": sparse string tensors are not supported");
  int64_t esize = ir::DTypeSize(values.dtype());
  PRECIS_RETURN_IF_ERROR(ctx.ChargeDensified(n * esize, what));
  if (values.dims().size() != 1) return InvalidArgument(what + ": sparse values must be 1-D");
  int64_t nnz = values.dims()[0];
  if (indices.dtype() != DType::kI64) return InvalidArgument(what + ": sparse indices must be int64");
  bool linear = indices.dims().size() == 1 && indices.dims()[0] == nnz;
  bool coords = indices.dims().size() == 2 && indices.dims()[0] == nnz && indices.dims()[1] == int64_t(dims.size());
  if (!linear && !coords) return InvalidArgument(what + ": sparse indices have the wrong shape");
  std::vector<uint8_t> dense(size_t(n * esize), 0);
  const auto* idx = reinterpret_cast<const uint8_t*>(indices.buffer().data());
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t flat = 0;
    if (linear) {
      std::memcpy(&flat, idx + k * 8, 8);
    } else {
      for (size_t d = 0; d < dims.size(); ++d) {
        int64_t c;
        std::memcpy(&c, idx + (k * int64_t(dims.size()) + int64_t(d)) * 8, 8);
        if (c < 0 || c >= dims[d]) return InvalidArgument(what + ": sparse index out of range");
        flat = flat * dims[d] + c;
      }
    }
    if (flat < 0 || flat >= n) return InvalidArgument(what + ": sparse index out of range");
    std::memcpy(dense.data() + flat * esize, values.buffer().data() + k * esize, size_t(esize));
  }
  return ir::Tensor(values.dtype(), std::move(dims), ir::Buffer::Own(std::move(dense)));
}

std::string ModelFolder(const std::string& path) {
  std::string dir = fs::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

StatusOr<std::string> ReadExternalData(const ::onnx::TensorProto& proto, const std::string& model_path) {
  if (proto.data_location() != ::onnx::TensorProto::EXTERNAL) return InvalidArgument("tensor '" + proto.name() + "' has no external data");
  ImportOptions options;
  ImportContext ctx(ModelFolder(model_path), options);
  ::onnx::TensorProto copy = proto;  // ImportTensor may take data out of its argument
  PRECIS_ASSIGN_OR_RETURN(ir::Tensor t, ImportTensor(copy, ctx, "initializer '" + proto.name() + "'"));
  return std::string(reinterpret_cast<const char*>(t.buffer().data()), size_t(t.ByteSize()));
}

}  // namespace precis::onnx
