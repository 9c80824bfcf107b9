// The ONNX importer: ModelProto (+ external data) -> Precis IR Model.
//
// Accepts IR version 3 and newer and any opset (per-domain versions are kept; operator
// semantics are checked later, by compiler/ops). Weight bytes are not copied: raw_data is moved
// out of the parsed protobuf into owned buffers, external data is memory-mapped and viewed.
// Constant nodes become constants; graph inputs that are also initializers become constants
// unless keep_initializer_inputs is set. Nodes are put in topological order.
//
// Errors (never a crash, never an unbounded allocation): InvalidArgument for malformed models
// (not a protobuf, missing input references, cycles, duplicate names, bad tensors, absurd
// dimensions, escaping external paths), NotFound for a missing external data file, OutOfRange
// for external data outside its file, Unimplemented for what the IR cannot represent (float8,
// int4, complex, maps, sparse tensor types, model-local functions). Messages name the node and
// the value.
#pragma once

#include <memory>
#include <string>

#include "compiler/ir/graph.h"

namespace precis::onnx {

struct ImportOptions {
  // Keep graph inputs that also have an initializer as inputs (with the initializer as their
  // default value) instead of turning them into constants.
  bool keep_initializer_inputs = false;
  // Verify the imported model with the IR verifier before returning it.
  bool verify = true;
};

// Imports the model file at `path`; external data is resolved relative to its folder.
StatusOr<std::unique_ptr<ir::Model>> ImportModelFile(const std::string& path,
                                                     const ImportOptions& options = {});

// Imports a serialized ModelProto held in memory. External data is resolved relative to
// `base_dir`; when it is empty, a model with external data is refused.
StatusOr<std::unique_ptr<ir::Model>> ImportModelFromBuffer(const void* data, size_t size,
                                                           const std::string& base_dir,
                                                           const ImportOptions& options = {});

}  // namespace precis::onnx
