// JsonWriter: a small streaming JSON writer (objects, arrays, strings, numbers) with two-space
// indentation and deterministic output. Used for `--json` summaries and precision reports.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace precis::ir {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Double(double value);  // non-finite values are written as null
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  const std::string& str() const { return out_; }

 private:
  void BeforeValue();
  void Newline();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

std::string JsonEscape(std::string_view s);

}  // namespace precis::ir
