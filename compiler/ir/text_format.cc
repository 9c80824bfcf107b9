// Spelling rules of the IR text form shared by printer and parser.
#include "compiler/ir/text_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "runtime/base/half.h"

namespace precis::ir {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9') || c == '.'; }

template <typename F>
std::string Shortest(F v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string NaNBits(uint64_t bits, int hex_digits) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "nan(0x%0*llx)", hex_digits, static_cast<unsigned long long>(bits));
  return buf;
}

template <typename T>
T Load(const Tensor& t, int64_t i) {
  T v;
  std::memcpy(&v, t.buffer().data() + size_t(i) * sizeof(T), sizeof(T));
  return v;
}

std::string FormatHalfLike(uint16_t bits, float value, uint16_t canonical_nan) {
  if (std::isnan(value)) return bits == canonical_nan ? "nan" : NaNBits(bits, 4);
  return FormatF32(value);
}

}  // namespace

std::string QuoteName(const std::string& name) {
  bool bare = !name.empty() && IsIdentStart(name[0]) && name != "_";
  for (char c : name) bare = bare && IsIdentChar(c);
  return bare ? name : QuoteString(name);
}

bool IsValueNameChar(char c) {
  return IsIdentChar(c) || (c >= '0' && c <= '9') || c == '/' || c == '-';
}

std::string QuoteValueName(const std::string& name) {
  bool bare = !name.empty();
  for (char c : name) bare = bare && IsValueNameChar(c);
  return bare ? name : QuoteString(name);
}

std::string QuoteString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

std::string FormatF32(float v) {
  if (std::isnan(v)) return FloatBits(v) == kF32NaN ? "nan" : NaNBits(FloatBits(v), 8);
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return Shortest(v);
}

std::string FormatF64(double v) {
  if (std::isnan(v)) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return bits == kF64NaN ? "nan" : NaNBits(bits, 16);
  }
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return Shortest(v);
}

std::string FormatElement(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32: return FormatF32(Load<float>(t, i));
    case DType::kF64: return FormatF64(Load<double>(t, i));
    case DType::kF16: {
      uint16_t b = Load<uint16_t>(t, i);
      return FormatHalfLike(b, HalfToFloat(b), kF16NaN);
    }
    case DType::kBF16: {
      uint16_t b = Load<uint16_t>(t, i);
      return FormatHalfLike(b, Bf16ToFloat(b), kBF16NaN);
    }
    case DType::kI8: return std::to_string(Load<int8_t>(t, i));
    case DType::kI16: return std::to_string(Load<int16_t>(t, i));
    case DType::kI32: return std::to_string(Load<int32_t>(t, i));
    case DType::kI64: return std::to_string(Load<int64_t>(t, i));
    case DType::kU8: return std::to_string(Load<uint8_t>(t, i));
    case DType::kU16: return std::to_string(Load<uint16_t>(t, i));
    case DType::kU32: return std::to_string(Load<uint32_t>(t, i));
    case DType::kU64: return std::to_string(Load<uint64_t>(t, i));
    case DType::kBool: {
      uint8_t b = Load<uint8_t>(t, i);
      return b == 0 ? "false" : b == 1 ? "true" : std::to_string(b);
    }
    case DType::kString: return QuoteString(t.strings()[size_t(i)]);
    case DType::kUndefined: break;
    default:  // storage types (float8, float4, int4, int2): the byte Precis holds
      return std::to_string(Load<uint8_t>(t, i));
  }
  return "?";
}

}  // namespace precis::ir
