// The data of a tensor stored outside its model file (ONNX external data), read with the
// importer's checks (a location inside the model's folder, offset and length inside the file,
// the length the shape needs). For tools that rewrite a model file rather than import it
// (`precis compile --train` inlines the external data of the source model it keeps in the plan).
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "precis/status.h"

namespace precis::onnx {

// The bytes of external tensor `proto` of the model file at `model_path` (its location resolved
// in that file's folder, as the importer does).
StatusOr<std::string> ReadExternalData(const ::onnx::TensorProto& proto, const std::string& model_path);

}  // namespace precis::onnx
