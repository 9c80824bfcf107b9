// Attribute conversion for the ONNX importer.
#pragma once

#include <functional>

#include "compiler/onnx/import_internal.h"

namespace precis::onnx {

// Imports one subgraph in the scope of the node being imported; `what` names the attribute.
using SubgraphImporter =
    std::function<StatusOr<std::unique_ptr<ir::Graph>>(::onnx::GraphProto&, const std::string& what)>;

// `node` names the node in messages ("Conv 'conv1' (node 7)").
StatusOr<ir::Attribute> ImportAttribute(::onnx::AttributeProto& proto, ImportContext& ctx,
                                        const std::string& node, const SubgraphImporter& import_graph);

}  // namespace precis::onnx
