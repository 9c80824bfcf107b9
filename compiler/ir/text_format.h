// Shared spelling rules of the IR text form: name quoting, string escapes and number formats.
// The printer writes with these and the parser reads what they write.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "compiler/ir/tensor.h"

namespace precis::ir {

// A name printed bare when it is an identifier ([A-Za-z_][A-Za-z0-9_.]*, not "_"), else quoted.
std::string QuoteName(const std::string& name);
// A value name after '%': bare when it matches [A-Za-z0-9_./-]+, else quoted.
std::string QuoteValueName(const std::string& name);
bool IsValueNameChar(char c);
// "text" with \\ \" \n \t and \xHH escapes for other bytes outside printable ASCII.
std::string QuoteString(std::string_view s);
// Shortest exact decimal; always has '.', 'e', inf or nan; non-canonical NaN as nan(0xBITS).
std::string FormatF32(float v);
std::string FormatF64(double v);
// Element i of a tensor with data, in the tensor's dtype.
std::string FormatElement(const Tensor& t, int64_t i);

// Canonical quiet NaN bit patterns of each float storage type.
inline constexpr uint32_t kF32NaN = 0x7fc00000u;
inline constexpr uint64_t kF64NaN = 0x7ff8000000000000ull;
inline constexpr uint16_t kF16NaN = 0x7e00;
inline constexpr uint16_t kBF16NaN = 0x7fc0;

}  // namespace precis::ir
