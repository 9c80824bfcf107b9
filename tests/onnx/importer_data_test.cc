// Unit tests of the ONNX importer (continued from importer_test.cc): element types, absurd
// dimensions, tensor data fields and external data.
#include "tests/onnx/importer_test_util.h"

namespace precis::onnx {
namespace {

using namespace importer_test;

// ---- Types ----------------------------------------------------------------------------------------

TEST_F(ImporterTest, UnrepresentableElementTypesAreUnimplemented) {
  for (auto [code, name] : {std::pair{14, "complex64"}, std::pair{15, "complex128"}}) {
    SCOPED_TRACE(name);
    auto on_input = BaseModel();
    on_input.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(code);
    EXPECT_TRUE(Fails(Import(on_input), StatusCode::kUnimplemented, {name, "input 'X'"}));
    auto on_initializer = BaseModel();
    Initializer(on_initializer, "W")->set_data_type(code);
    EXPECT_TRUE(Fails(Import(on_initializer), StatusCode::kUnimplemented, {name, "'W'"}));
  }
}

TEST_F(ImporterTest, PackedStorageTypesAreUnpacked) {
  // ONNX packs int4 two to a byte, low nibble first (code 22 is newer than the ONNX 1.12 enum,
  // hence the number); Precis holds one element per byte, sign-extended. W is [2, 3].
  auto m = BaseModel();
  TensorProto* w = Initializer(m, "W");
  w->set_data_type(22);
  w->set_raw_data(std::string("\x21\x8F\x07", 3));
  auto model = ImportOk(m);
  ASSERT_NE(model, nullptr);
  const ir::Value* v = model->graph->FindLocal("W");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->data()->dtype(), ir::DType::kI4);
  EXPECT_EQ(BufferBytes(*v->data()), (std::vector<uint8_t>{1, 2, 0xFF, 0xF8, 7, 0}));
  w->set_raw_data(std::string("\x21\x8F", 2));  // 2 bytes hold 4 elements, not 6
  EXPECT_TRUE(Fails(Import(m), StatusCode::kInvalidArgument, {"'W'", "packed"}));
  // float8 e4m3fn (17): one byte per element as it is.
  auto f8 = BaseModel();
  Initializer(f8, "W")->set_data_type(17);
  Initializer(f8, "W")->set_raw_data(std::string("\x00\x38\x7e\xfe\x7f\x01", 6));
  auto model8 = ImportOk(f8);
  ASSERT_NE(model8, nullptr);
  EXPECT_EQ(BufferBytes(*model8->graph->FindLocal("W")->data()), (std::vector<uint8_t>{0x00, 0x38, 0x7e, 0xfe, 0x7f, 0x01}));
}

TEST_F(ImporterTest, UnknownElementTypeCodeIsRefused) {
  auto on_input = BaseModel();
  on_input.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(999);
  EXPECT_TRUE(Fails(Import(on_input), StatusCode::kInvalidArgument, {"999", "input 'X'"}));
  auto on_initializer = BaseModel();
  Initializer(on_initializer, "W")->set_data_type(-3);
  EXPECT_TRUE(Fails(Import(on_initializer), StatusCode::kInvalidArgument, {"-3", "'W'"}));
  auto undefined = BaseModel();
  Initializer(undefined, "W")->set_data_type(0);
  EXPECT_TRUE(Fails(Import(undefined), StatusCode::kInvalidArgument, {"undefined", "'W'"}));
}

TEST_F(ImporterTest, MapAndSparseTypesAreUnimplemented) {
  auto map = BaseModel();
  auto* mt = map.mutable_graph()->mutable_input(0)->mutable_type()->mutable_map_type();
  mt->set_key_type(TensorProto::INT64);
  mt->mutable_value_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  EXPECT_TRUE(Fails(Import(map), StatusCode::kUnimplemented, {"map", "input 'X'"}));
  auto sparse = BaseModel();
  sparse.mutable_graph()->mutable_input(0)->mutable_type()->mutable_sparse_tensor_type()->set_elem_type(TensorProto::FLOAT);
  EXPECT_TRUE(Fails(Import(sparse), StatusCode::kUnimplemented, {"sparse", "input 'X'"}));
}

// ---- Absurd dimensions --------------------------------------------------------------------------

TEST_F(ImporterTest, AbsurdInitializerDimsAreRefused) {
  struct Case { std::vector<int64_t> dims; std::string needle; };
  std::vector<Case> cases = {
      {{-1, 3}, "-1"},
      {{int64_t(1) << 45}, std::to_string(int64_t(1) << 45)},
      {{k2Pow40, k2Pow40, k2Pow40}, "2^50"},  // each dim allowed, the product overflows int64
      {{INT64_MIN}, std::to_string(INT64_MIN)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.needle);
    auto m = BaseModel();
    auto* w = Initializer(m, "W");
    w->clear_dims();
    for (int64_t d : c.dims) w->add_dims(d);
    EXPECT_TRUE(Fails(Import(m), StatusCode::kInvalidArgument, {"initializer 'W'", c.needle}));
  }
}

TEST_F(ImporterTest, AbsurdValueInfoDimsAreRefused) {
  struct Case { std::vector<int64_t> dims; std::string needle; };
  std::vector<Case> cases = {
      {{2, -5}, "-5"},
      {{int64_t(1) << 45, 3}, std::to_string(int64_t(1) << 45)},
      {{k2Pow40, k2Pow40, k2Pow40}, "2^50"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.needle);
    auto on_value_info = BaseModel();
    SetTensorType(on_value_info.mutable_graph()->add_value_info(), "R", TensorProto::FLOAT, c.dims);
    EXPECT_TRUE(Fails(Import(on_value_info), StatusCode::kInvalidArgument, {"value 'R'", c.needle}));
    auto on_input = BaseModel();
    SetTensorType(on_input.mutable_graph()->mutable_input(0), "X", TensorProto::FLOAT, c.dims);
    EXPECT_TRUE(Fails(Import(on_input), StatusCode::kInvalidArgument, {"input 'X'", c.needle}));
  }
}

TEST_F(ImporterTest, HugeClaimWithTinyDataAllocatesNothing) {
  // 2^50 f32 elements would be 4 PiB: allocating before checking the data would throw
  // std::bad_alloc and abort this binary, so reaching the assertions is the check.
  const std::vector<int64_t> huge = {k2Pow40, 1024};
  auto raw = BaseModel();
  auto* w = Initializer(raw, "W");
  w->clear_dims();
  for (int64_t d : huge) w->add_dims(d);
  w->set_raw_data(std::string(4, '\0'));
  EXPECT_TRUE(Fails(Import(raw), StatusCode::kInvalidArgument, {"'W'", "raw_data"}));

  auto typed = raw;
  Initializer(typed, "W")->clear_raw_data();
  Initializer(typed, "W")->add_float_data(1.0f);
  EXPECT_TRUE(Fails(Import(typed), StatusCode::kInvalidArgument, {"'W'", "float_data"}));

  auto strings = raw;
  auto* s = Initializer(strings, "W");
  s->clear_raw_data();
  s->set_data_type(TensorProto::STRING);
  s->add_string_data("x");
  EXPECT_TRUE(Fails(Import(strings), StatusCode::kInvalidArgument, {"'W'", "string_data"}));

  auto sparse = BaseModel();
  auto* sp = sparse.mutable_graph()->add_sparse_initializer();
  for (int64_t d : huge) sp->add_dims(d);
  SetFloatRaw(sp->mutable_values(), "S", {1}, {1.0f});
  SetInt64Tensor(sp->mutable_indices(), {1}, {0});
  EXPECT_TRUE(Fails(Import(sparse), StatusCode::kUnimplemented, {"'S'", "densify"}));
}

// ---- Tensor data --------------------------------------------------------------------------------

TEST_F(ImporterTest, DataSizeMismatchesAreRefused) {
  auto raw = BaseModel();
  Initializer(raw, "W")->mutable_raw_data()->pop_back();
  EXPECT_TRUE(Fails(Import(raw), StatusCode::kInvalidArgument, {"initializer 'W'", "raw_data has 23 bytes", "24"}));

  auto typed = BaseModel();
  auto* w = Initializer(typed, "W");
  w->clear_raw_data();
  for (int i = 0; i < 5; ++i) w->add_float_data(1.0f);
  EXPECT_TRUE(Fails(Import(typed), StatusCode::kInvalidArgument, {"initializer 'W'", "float_data holds 5", "6"}));

  auto wrong_field = BaseModel();
  w = Initializer(wrong_field, "W");
  w->clear_raw_data();
  for (int i = 0; i < 6; ++i) w->add_int64_data(1);  // f32 data must be in float_data
  EXPECT_TRUE(Fails(Import(wrong_field), StatusCode::kInvalidArgument, {"initializer 'W'", "float_data holds 0"}));

  auto constant = BaseModel();
  auto* a = AddNode(constant.mutable_graph(), "Constant", "c1", {}, {"C"})->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  SetFloatRaw(a->mutable_t(), "", {4}, {1.0f});
  EXPECT_TRUE(Fails(Import(constant), StatusCode::kInvalidArgument, {"Constant 'c1'", "raw_data"}));
}

TEST_F(ImporterTest, BadSparseInitializersAreRefusedClearly) {
  auto make = [](const std::vector<int64_t>& index_dims, const std::vector<int64_t>& indices) {
    auto m = BaseModel();
    auto* sp = m.mutable_graph()->add_sparse_initializer();
    sp->add_dims(3);
    sp->add_dims(4);
    SetFloatRaw(sp->mutable_values(), "S", {2}, {1.0f, 2.0f});
    SetInt64Tensor(sp->mutable_indices(), index_dims, indices);
    return m;
  };
  EXPECT_TRUE(Fails(Import(make({2}, {1, 12})), StatusCode::kInvalidArgument, {"'S'", "out of range"}));
  EXPECT_TRUE(Fails(Import(make({2}, {-1, 0})), StatusCode::kInvalidArgument, {"'S'", "out of range"}));
  EXPECT_TRUE(Fails(Import(make({2, 2}, {0, 4, 0, 0})), StatusCode::kInvalidArgument, {"'S'", "out of range"}));
  EXPECT_TRUE(Fails(Import(make({3}, {0, 1, 2})), StatusCode::kInvalidArgument, {"'S'", "indices"}));
  auto unnamed = make({2}, {0, 1});
  unnamed.mutable_graph()->mutable_sparse_initializer(0)->mutable_values()->clear_name();
  EXPECT_TRUE(Fails(Import(unnamed), StatusCode::kInvalidArgument, {"sparse initializer 0"}));
}

TEST_F(ImporterTest, KeptInitializerInputWithOtherElementTypeIsRefused) {
  auto m = OldIrModel();
  m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::INT32);
  ImportOptions options;
  options.keep_initializer_inputs = true;
  EXPECT_TRUE(Fails(Import(m, options), StatusCode::kInvalidArgument, {"'W'", "element type"}));
}

// ---- External data ------------------------------------------------------------------------------

TEST_F(ImporterTest, MissingExternalFileIsNotFound) {
  auto m = BaseModel();
  MakeExternal(Initializer(m, "W"), "missing.bin", "0", "24");
  EXPECT_TRUE(Fails(Import(m), StatusCode::kNotFound, {"initializer 'W'", "missing.bin"}));
}

TEST_F(ImporterTest, ExternalDataOutsideItsFileIsOutOfRange) {
  WriteFile("w.bin", std::string(30, 'x'));
  for (const char* offset : {"8", "31", "9223372036854775807"}) {
    SCOPED_TRACE(offset);
    auto m = BaseModel();
    MakeExternal(Initializer(m, "W"), "w.bin", offset, "24");
    EXPECT_TRUE(Fails(Import(m), StatusCode::kOutOfRange, {"initializer 'W'", "w.bin", "30 bytes"}));
  }
}

TEST_F(ImporterTest, BadExternalKeysAreRefused) {
  WriteFile("w.bin", RawBytes(kW));
  auto length = BaseModel();
  MakeExternal(Initializer(length, "W"), "w.bin", "0", "20");
  EXPECT_TRUE(Fails(Import(length), StatusCode::kInvalidArgument, {"initializer 'W'", "length 20", "24"}));
  for (const char* offset : {"-4", "abc", "99999999999999999999"}) {
    auto m = BaseModel();
    MakeExternal(Initializer(m, "W"), "w.bin", offset, "24");
    EXPECT_TRUE(Fails(Import(m), StatusCode::kInvalidArgument, {"initializer 'W'", offset})) << offset;
  }
  auto no_location = BaseModel();
  MakeExternal(Initializer(no_location, "W"), "", "0", "24");
  EXPECT_TRUE(Fails(Import(no_location), StatusCode::kInvalidArgument, {"initializer 'W'", "location"}));
}

TEST_F(ImporterTest, ExternalPathsMayNotLeaveTheModelFolder) {
  // The model lives in m/; outside.bin is beside that folder, not in it.
  std::string outside = WriteFile("outside.bin", RawBytes(kW));
  WriteFile("m/placeholder", "");
  fs::create_symlink(outside, dir_ / "m" / "link.bin");
  fs::create_directory_symlink(dir_, dir_ / "m" / "up");
  struct Case { std::string location, needle; };
  std::vector<Case> cases = {
      {"../outside.bin", "escapes"},
      {"sub/../../outside.bin", "escapes"},
      {outside, "relative"},
      {"link.bin", "escapes"},
      {"up/outside.bin", "escapes"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.location);
    auto m = BaseModel();
    MakeExternal(Initializer(m, "W"), c.location, "0", "24");
    EXPECT_TRUE(Fails(Import(m, {}, "m/model.onnx"), StatusCode::kInvalidArgument,
                      {"initializer 'W'", c.location, c.needle}));
  }
}

TEST_F(ImporterTest, ExternalDataFromABufferNeedsABaseFolder) {
  WriteFile("w.bin", RawBytes(kW));
  auto m = BaseModel();
  MakeExternal(Initializer(m, "W"), "w.bin", "0", "24");
  std::string bytes = m.SerializeAsString();
  EXPECT_TRUE(Fails(ImportModelFromBuffer(bytes.data(), bytes.size(), ""), StatusCode::kInvalidArgument,
                    {"initializer 'W'", "w.bin", "memory"}));
  auto r = ImportModelFromBuffer(bytes.data(), bytes.size(), dir_.string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(BufferBytes(*(*r)->graph->FindLocal("W")->data()), Bytes(kW));
}

}  // namespace
}  // namespace precis::onnx
