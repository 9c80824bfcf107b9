// Internal pieces of the ONNX importer shared by its files: tensor, type and attribute
// conversion, and the context that maps external data files once per import.
#pragma once

#include <map>
#include <memory>
#include <string>

#include <onnx/onnx_pb.h>

#include "compiler/ir/graph.h"
#include "runtime/base/mapped_file.h"

namespace precis::onnx {

struct ImportOptions;

// The folder external data of the model file at `path` is resolved in ("." for a bare name).
std::string ModelFolder(const std::string& path);

// State shared by one import: where external data lives and the files mapped so far.
class ImportContext {
 public:
  ImportContext(std::string base_dir, const ImportOptions& options)
      : base_dir_(std::move(base_dir)), options_(options) {}
  const ImportOptions& options() const { return options_; }
  // Maps `location` (relative to the model's folder, never escaping it) once per import.
  StatusOr<std::shared_ptr<const MappedFile>> MapExternal(const std::string& location,
                                                          const std::string& tensor_name);
  // Counts `bytes` of densified sparse data against the kMaxDensifyBytes this import may
  // allocate in all; Unimplemented past it.
  Status ChargeDensified(int64_t bytes, const std::string& what);

 private:
  std::string base_dir_;
  const ImportOptions& options_;
  std::map<std::string, std::shared_ptr<const MappedFile>> mapped_;
  int64_t densified_bytes_ = 0;
};

// TensorProto -> Tensor. Takes raw_data out of `proto` (no copy); `what` names the tensor in
// messages ("initializer 'w'").
StatusOr<ir::Tensor> ImportTensor(::onnx::TensorProto& proto, ImportContext& ctx, const std::string& what);
// SparseTensorProto -> dense Tensor (refused past kMaxDensifyBytes for all sparse tensors of an
// import together: a few bytes of sparse tensor each can otherwise ask for gigabytes).
StatusOr<ir::Tensor> DensifySparse(::onnx::SparseTensorProto& proto, ImportContext& ctx, const std::string& what);
inline constexpr int64_t kMaxDensifyBytes = int64_t(1) << 30;

// TypeProto -> Type; an absent type is the unknown Type.
StatusOr<ir::Type> ImportType(const ::onnx::TypeProto& proto, const std::string& what);

}  // namespace precis::onnx
