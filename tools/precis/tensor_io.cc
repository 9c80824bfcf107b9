// .npy and TensorProto .pb reading/writing (see tensor_io.h).
#include "tools/precis/tensor_io.h"

#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include "compiler/ir/dtype.h"
#include "compiler/onnx/import_internal.h"
#include "compiler/onnx/importer.h"
#include "runtime/base/half.h"

namespace precis::tools {
namespace {

struct NpyType {
  const char* descr;
  DataType dtype;
};
constexpr NpyType kNpyTypes[] = {
    {"<f4", DataType::kF32}, {"<f8", DataType::kF64}, {"<f2", DataType::kF16}, {"|i1", DataType::kI8},
    {"<i2", DataType::kI16}, {"<i4", DataType::kI32}, {"<i8", DataType::kI64}, {"|u1", DataType::kU8},
    {"<u2", DataType::kU16}, {"<u4", DataType::kU32}, {"<u8", DataType::kU64}, {"|b1", DataType::kBool},
};

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Value of 'key': ... in a numpy header dict.
std::string HeaderField(const std::string& header, const std::string& key) {
  auto k = header.find("'" + key + "'");
  if (k == std::string::npos) return "";
  auto colon = header.find(':', k);
  if (colon == std::string::npos) return "";
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) return "";
  char open = header[start];
  size_t end = open == '(' ? header.find(')', start) + 1 : open == '\'' ? header.find('\'', start + 1) + 1 : header.find(',', start);
  return header.substr(start, end - start);
}

}  // namespace

StatusOr<HostTensor> ReadNpy(const std::string& path) {
  PRECIS_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ParseNpy(bytes, path);
}

StatusOr<HostTensor> ParseNpy(const std::string& bytes, const std::string& path) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return InvalidArgument("'" + path + "' is not a .npy file");
  int major = uint8_t(bytes[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    offset = 10;
  } else {
    if (bytes.size() < 12) return InvalidArgument("'" + path + "' is truncated");
    uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    header_len = len;
    offset = 12;
  }
  if (offset + header_len > bytes.size()) return InvalidArgument("'" + path + "' has a truncated header");
  std::string header = bytes.substr(offset, header_len);
  std::string descr = HeaderField(header, "descr"), order = HeaderField(header, "fortran_order"), shape = HeaderField(header, "shape");
  HostTensor t;
  for (const auto& nt : kNpyTypes)
    if (descr == std::string("'") + nt.descr + "'") t.dtype = nt.dtype;
  if (t.dtype == DataType::kUndefined) return Unimplemented("'" + path + "' has unsupported numpy dtype " + descr);
  if (order != "False") return Unimplemented("'" + path + "' is in Fortran order; save it C-contiguous");
  if (shape.size() < 2 || shape.front() != '(') return InvalidArgument("'" + path + "' has a bad shape field");
  std::stringstream ss(shape.substr(1, shape.size() - 2));
  std::string item;
  // A dim is a decimal integer (numpy of Python 2 wrote a trailing L); the product of the dims
  // times the element size must not overflow: that size is then checked against the data.
  size_t need = DataTypeSize(t.dtype);
  while (std::getline(ss, item, ',')) {
    size_t first = item.find_first_not_of(' '), last = item.find_last_not_of(" L");
    if (first == std::string::npos) continue;
    long long d = -1;
    const char* end = item.data() + (last == std::string::npos || last < first ? first : last + 1);
    auto [ptr, ec] = std::from_chars(item.data() + first, end, d);
    if (ec != std::errc() || ptr != end || d < 0 || d > (1ll << 40)) return InvalidArgument("'" + path + "' has a bad dimension");
    if (d > 0 && need > (size_t(1) << 62) / size_t(d)) return InvalidArgument("'" + path + "' has a shape too large");
    need *= size_t(d);
    t.dims.push_back(d);
  }
  size_t data_offset = offset + header_len;
  if (bytes.size() - data_offset != need)
    return InvalidArgument("'" + path + "' holds " + std::to_string(bytes.size() - data_offset) + " data bytes, its shape needs " + std::to_string(need));
  t.data.assign(bytes.begin() + long(data_offset), bytes.end());
  return t;
}

Status WriteNpy(const std::string& path, DataType dtype, const std::vector<int64_t>& dims, const void* data, size_t bytes) {
  const char* descr = nullptr;
  for (const auto& nt : kNpyTypes)
    if (nt.dtype == dtype) descr = nt.descr;
  if (dtype == DataType::kBF16) return Unimplemented("numpy has no bfloat16; cannot write '" + path + "'");
  if (!descr) return Unimplemented("cannot write dtype " + std::string(DataTypeName(dtype)) + " to .npy");
  std::string shape = "(";
  for (size_t i = 0; i < dims.size(); ++i) shape += std::to_string(dims[i]) + (dims.size() == 1 ? "," : i + 1 < dims.size() ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) return Internal("cannot write '" + path + "'");
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = uint16_t(header.size());
  out.write(reinterpret_cast<const char*>(&len), 2);
  out.write(header.data(), long(header.size()));
  out.write(static_cast<const char*>(data), long(bytes));
  if (!out) return Internal("writing '" + path + "' failed");
  return Status::Ok();
}

StatusOr<HostTensor> ReadTensorProto(const std::string& path) {
  PRECIS_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
  return ParseTensorProto(bytes, path, dir.empty() ? "." : dir);
}

StatusOr<HostValue> ReadValueProto(const std::string& path, HostValue::Kind kind) {
  if (kind == HostValue::Kind::kTensor) {
    PRECIS_ASSIGN_OR_RETURN(HostTensor t, ReadTensorProto(path));
    HostValue v;
    v.tensors.push_back(std::move(t));
    return v;
  }
  PRECIS_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
  if (dir.empty()) dir = ".";
  auto sequence = [&](const ::onnx::SequenceProto& s, HostValue& v) -> Status {
    if (s.elem_type() != ::onnx::SequenceProto::TENSOR && s.tensor_values_size() == 0 && s.elem_type() != ::onnx::SequenceProto::UNDEFINED)
      return Unimplemented("'" + path + "' is a sequence of sequences, maps or optionals");
    v.sequence = true;
    for (const ::onnx::TensorProto& t : s.tensor_values()) {
      PRECIS_ASSIGN_OR_RETURN(HostTensor h, ParseTensorProto(t.SerializeAsString(), path, dir));
      v.tensors.push_back(std::move(h));
    }
    return Status::Ok();
  };
  HostValue v;
  if (kind == HostValue::Kind::kSequence) {
    ::onnx::SequenceProto s;
    if (!s.ParseFromString(bytes)) return InvalidArgument("'" + path + "' is not a SequenceProto");
    PRECIS_RETURN_IF_ERROR(sequence(s, v));
    return v;
  }
  ::onnx::OptionalProto o;
  if (!o.ParseFromString(bytes)) return InvalidArgument("'" + path + "' is not an OptionalProto");
  if (o.has_tensor_value()) {
    PRECIS_ASSIGN_OR_RETURN(HostTensor h, ParseTensorProto(o.tensor_value().SerializeAsString(), path, dir));
    v.tensors.push_back(std::move(h));
  } else if (o.has_sequence_value()) {
    PRECIS_RETURN_IF_ERROR(sequence(o.sequence_value(), v));
  } else if (o.elem_type() == ::onnx::OptionalProto::UNDEFINED || o.elem_type() == ::onnx::OptionalProto::TENSOR ||
             o.elem_type() == ::onnx::OptionalProto::SEQUENCE) {
    v.present = false;
  } else {
    return Unimplemented("'" + path + "' is an optional of a map or an optional");
  }
  return v;
}

StatusOr<HostTensor> ParseTensorProto(const std::string& bytes, const std::string& path, const std::string& base_dir) {
  ::onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) return InvalidArgument("'" + path + "' is not a TensorProto");
  onnx::ImportOptions options;
  onnx::ImportContext ctx(base_dir, options);
  PRECIS_ASSIGN_OR_RETURN(ir::Tensor t, onnx::ImportTensor(proto, ctx, "'" + path + "'"));
  if (t.dtype() == ir::DType::kString) return Unimplemented("'" + path + "' holds strings");
  HostTensor h;
  h.name = proto.name();
  h.dtype = DataType(ir::DTypeToOnnx(t.dtype()));
  h.dims = t.dims();
  h.data.assign(t.buffer().data(), t.buffer().data() + t.buffer().size());
  return h;
}

StatusOr<HostTensor> ReadTensorFile(const std::string& path) {
  if (path.size() >= 3 && path.compare(path.size() - 3, 3, ".pb") == 0) return ReadTensorProto(path);
  return ReadNpy(path);
}

std::vector<uint8_t> RandomData(const TensorInfo& info, std::mt19937_64& rng) {
  std::vector<uint8_t> data(info.ByteSize());
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 9);
  for (int64_t i = 0; i < info.NumElements(); ++i) {
    uint8_t* p = data.data() + size_t(i) * DataTypeSize(info.dtype);
    switch (info.dtype) {
      case DataType::kF32: { float v = real(rng); std::memcpy(p, &v, 4); break; }
      case DataType::kF64: { double v = real(rng); std::memcpy(p, &v, 8); break; }
      case DataType::kF16: { uint16_t v = FloatToHalf(real(rng)); std::memcpy(p, &v, 2); break; }
      case DataType::kBF16: { uint16_t v = FloatToBf16(real(rng)); std::memcpy(p, &v, 2); break; }
      case DataType::kBool: *p = uint8_t(small(rng) & 1); break;
      default: {
        int64_t v = small(rng);
        std::memcpy(p, &v, DataTypeSize(info.dtype));  // little-endian: low bytes first
      }
    }
  }
  return data;
}

static uint32_t Le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
static uint16_t Le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

// np.savez archives are zip files whose members are stored uncompressed: walk the local headers.
StatusOr<std::map<std::string, HostTensor>> ReadNpz(const std::string& path) {
  PRECIS_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ParseNpz(bytes, path);
}

StatusOr<std::map<std::string, HostTensor>> ParseNpz(const std::string& file, const std::string& path) {
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(file.data());
  const size_t size = file.size();
  std::map<std::string, HostTensor> s;
  size_t pos = 0;
  Status status = Status::Ok();
  while (pos + 30 <= size && Le32(&bytes[pos]) == 0x04034b50u) {
    uint16_t flags = Le16(&bytes[pos + 6]), method = Le16(&bytes[pos + 8]);
    uint64_t member = Le32(&bytes[pos + 18]);
    size_t name_len = Le16(&bytes[pos + 26]), extra_len = Le16(&bytes[pos + 28]);
    size_t data = pos + 30 + name_len + extra_len;
    if (data > size) break;
    std::string name(reinterpret_cast<const char*>(bytes + pos + 30), name_len);
    if (member == 0xffffffffu && extra_len >= 20 && Le16(&bytes[pos + 30 + name_len]) == 1)  // zip64 sizes
      member = uint64_t(Le32(&bytes[pos + 30 + name_len + 12])) | uint64_t(Le32(&bytes[pos + 30 + name_len + 16])) << 32;
    if (method != 0 || (flags & 8)) {
      status = Unimplemented("'" + path + "': member '" + name + "' is compressed; save with np.savez, not np.savez_compressed");
      break;
    }
    if (member > size - data) {
      status = InvalidArgument("'" + path + "' is truncated");
      break;
    }
    auto t = ParseNpy(file.substr(data, size_t(member)), path + ": " + name);
    if (!t.ok()) {
      status = t.status().WithContext(path + ": " + name);
      break;
    }
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    s[name] = std::move(*t);
    pos = data + size_t(member);
  }
  PRECIS_RETURN_IF_ERROR(status);
  if (s.empty()) return InvalidArgument("'" + path + "' holds no arrays (not an .npz file?)");
  return s;
}

}  // namespace precis::tools
