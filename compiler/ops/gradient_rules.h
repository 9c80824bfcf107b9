// The gradient rules defined outside gradients.cc, for its rule table (internal to compiler/ops):
// window and normalization operators in gradients_nn.cc, pointwise and data-movement operators in
// gradients_pointwise.cc. Each is a GradFn or GradRefusal (gradient.h).
#pragma once

#include <vector>

#include "compiler/ops/gradient.h"

namespace precis::ops::grad {

using V = std::vector<ir::Value*>;

// gradients_nn.cc
V MaxPoolGrad(GradContext& c);
V GlobalMaxPoolGrad(GradContext& c);
V AveragePoolGrad(GradContext& c);
V GlobalAveragePoolGrad(GradContext& c);
V GatherGrad(GradContext& c);
V LayerNormGrad(GradContext& c);
const char* RefusePool(const ir::Node& n);
const char* RefuseLayerNorm(const ir::Node& n);

// gradients_pointwise.cc
V ClipGrad(GradContext& c);
V LeakyReluGrad(GradContext& c);
V GeluGrad(GradContext& c);
V HardSigmoidGrad(GradContext& c);
V HardSwishGrad(GradContext& c);
V ReciprocalGrad(GradContext& c);
V MaxGrad(GradContext& c);
V MinGrad(GradContext& c);
V PadGrad(GradContext& c);
const char* RefusePad(const ir::Node& n);
V SliceGrad(GradContext& c);
V SplitGrad(GradContext& c);
V ExpandGrad(GradContext& c);
V TriluGrad(GradContext& c);
const char* RefuseMaxMin(const ir::Node& n);

}  // namespace precis::ops::grad
