// Which runtime kernels may write output 0 over the storage of one of their inputs.
//
// The compiler's memory planner lets an elementwise-shaped step reuse the bytes of its input when
// that input dies at the step (ops::OpDef::inplace_input). The session accepts such an alias in a
// plan only where the kernel is listed here, at the listed input, with the same offset and byte
// size; every other overlap between a step's operands is refused at load, since kernels that copy
// or gather would read bytes they already overwrote. A compiler test keeps this table and the op
// registry in agreement.
#pragma once

#include <string_view>

namespace precis::rt {

// The input whose storage output 0 of `kernel` may share, or -1 when the kernel never runs in place.
int InPlaceInput(std::string_view kernel);

// Whether any output of `kernel` may take exactly the bytes of any of its inputs: FusedElementwise,
// whose program says which pairs it may (fused_program.h InPlaceOk), checked by the kernel at
// Init (fused::DecodeStep). A training plan's optimizer step writes a weight and its moments
// over the values it read.
bool SharesAnyInput(std::string_view kernel);

}  // namespace precis::rt
