// Reading and writing tensors for the CLI and tests: numpy .npy files (v1/v2/v3 headers,
// little-endian, C order) and ONNX TensorProto .pb files (as in the ONNX backend test data).
// The Parse* functions take a file's bytes (`path` only names it in errors); any bytes give a
// tensor or an error, and a tensor's data always holds exactly numel * dtype-size bytes.
#pragma once

#include <map>
#include <random>
#include <string>
#include <vector>

#include "precis/status.h"
#include "precis/types.h"

namespace precis::tools {

struct HostTensor {
  std::string name;  // from the .pb file; empty for .npy
  DataType dtype = DataType::kUndefined;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

StatusOr<HostTensor> ReadNpy(const std::string& path);
// The bytes of a .npy file; `path` names it in errors.
StatusOr<HostTensor> ParseNpy(const std::string& bytes, const std::string& path);
// np.savez archives (uncompressed zip): array name -> tensor. Compressed members are refused.
StatusOr<std::map<std::string, HostTensor>> ReadNpz(const std::string& path);
StatusOr<std::map<std::string, HostTensor>> ParseNpz(const std::string& bytes, const std::string& path);
Status WriteNpy(const std::string& path, DataType dtype, const std::vector<int64_t>& dims, const void* data, size_t bytes);
StatusOr<HostTensor> ReadTensorProto(const std::string& path);

// A value of an ONNX backend test (.pb): a tensor, a sequence of tensors (SequenceProto) or an
// optional (OptionalProto) of either, as the model declares the value.
struct HostValue {
  enum class Kind { kTensor, kSequence, kOptional };
  bool present = true;    // an optional with a value
  bool sequence = false;  // the value (an optional's element) is a sequence
  std::vector<HostTensor> tensors;  // one for a tensor, the elements of a sequence
};
StatusOr<HostValue> ReadValueProto(const std::string& path, HostValue::Kind kind);
// A serialized TensorProto; external data is read relative to `base_dir` (never escaping it),
// and refused when `base_dir` is empty.
StatusOr<HostTensor> ParseTensorProto(const std::string& bytes, const std::string& path, const std::string& base_dir);
// .npy or .pb by extension.
StatusOr<HostTensor> ReadTensorFile(const std::string& path);
// Random data for a tensor: floats uniform in [-1, 1), integers in 0..9, bools 0/1.
std::vector<uint8_t> RandomData(const TensorInfo& info, std::mt19937_64& rng);

}  // namespace precis::tools
