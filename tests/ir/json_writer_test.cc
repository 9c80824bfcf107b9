// Tests of JsonWriter (compiler/ir/json_writer.h): exact output for small documents (layout,
// commas, empty containers, numbers) and string escaping. Expected texts are written by hand.
#include "compiler/ir/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace precis::ir {
namespace {

TEST(JsonWriterTest, NestedDocument) {
  JsonWriter w;
  // The chain is laid out like the document it writes.
  // clang-format off
  w.BeginObject()
      .Key("name").String("conv1")
      .Key("count").Int(-3)
      .Key("list").BeginArray().Int(1).Double(0.5).Bool(true).Bool(false).Null().EndArray()
      .Key("empty object").BeginObject().EndObject()
      .Key("empty array").BeginArray().EndArray()
      .Key("nested").BeginObject()
          .Key("a").BeginArray().BeginObject().Key("b").Int(2).EndObject().EndArray()
      .EndObject()
      .EndObject();
  // clang-format on
  EXPECT_EQ(w.str(),
            "{\n"
            "  \"name\": \"conv1\",\n"
            "  \"count\": -3,\n"
            "  \"list\": [\n"
            "    1,\n"
            "    0.5,\n"
            "    true,\n"
            "    false,\n"
            "    null\n"
            "  ],\n"
            "  \"empty object\": {},\n"
            "  \"empty array\": [],\n"
            "  \"nested\": {\n"
            "    \"a\": [\n"
            "      {\n"
            "        \"b\": 2\n"
            "      }\n"
            "    ]\n"
            "  }\n"
            "}\n");
}

TEST(JsonWriterTest, TopLevelContainers) {
  JsonWriter empty;
  empty.BeginObject().EndObject();
  EXPECT_EQ(empty.str(), "{}\n");
  JsonWriter array;
  array.BeginArray().String("x").BeginArray().EndArray().EndArray();
  EXPECT_EQ(array.str(), "[\n  \"x\",\n  []\n]\n");
}

TEST(JsonWriterTest, Numbers) {
  JsonWriter w;
  w.BeginArray()
      .Int(std::numeric_limits<int64_t>::min())
      .Int(std::numeric_limits<int64_t>::max())
      .Int(0)
      .Double(0.1)
      .Double(-2.0)
      .Double(1e300)
      .Double(5e-324)
      .Double(INFINITY)
      .Double(-INFINITY)
      .Double(NAN)
      .EndArray();
  // Doubles print in their shortest round-trip form; JSON has no inf or nan, so those are null.
  EXPECT_EQ(w.str(),
            "[\n"
            "  -9223372036854775808,\n"
            "  9223372036854775807,\n"
            "  0,\n"
            "  0.1,\n"
            "  -2,\n"
            "  1e+300,\n"
            "  5e-324,\n"
            "  null,\n"
            "  null,\n"
            "  null\n"
            "]\n");
}

TEST(JsonWriterTest, EscapesStrings) {
  EXPECT_EQ(JsonEscape(""), "\"\"");
  EXPECT_EQ(JsonEscape("plain text / 123"), "\"plain text / 123\"");
  EXPECT_EQ(JsonEscape("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonEscape("\n\t\r"), "\"\\n\\t\\r\"");
  EXPECT_EQ(JsonEscape(std::string("\x00\x01\x08\x0c\x1f", 5)),
            "\"\\u0000\\u0001\\u0008\\u000c\\u001f\"");
  // Printable ASCII and UTF-8 pass through unchanged.
  EXPECT_EQ(JsonEscape("~ caf\xc3\xa9 \xe2\x9c\x93"), "\"~ caf\xc3\xa9 \xe2\x9c\x93\"");
}

TEST(JsonWriterTest, KeysAreEscapedToo) {
  JsonWriter w;
  w.BeginObject().Key("a\"b\n").String("\x01").EndObject();
  EXPECT_EQ(w.str(), "{\n  \"a\\\"b\\n\": \"\\u0001\"\n}\n");
}

}  // namespace
}  // namespace precis::ir
