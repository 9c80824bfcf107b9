// Shared pieces of the importer tests (importer_test.cc, importer_data_test.cc): building
// ModelProtos, checking results, and a fixture that writes each model to a fresh folder.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include <onnx/onnx_pb.h>

#include "compiler/onnx/importer.h"

namespace precis::onnx::importer_test {

namespace fs = std::filesystem;
using ::onnx::TensorProto;
using ImportResult = StatusOr<std::unique_ptr<ir::Model>>;

constexpr int64_t k2Pow40 = int64_t(1) << 40;

// ---- Building ModelProtos ---------------------------------------------------------------------

inline void SetTensorType(::onnx::ValueInfoProto* vi, const std::string& name, int32_t elem,
                   const std::vector<int64_t>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

inline ::onnx::NodeProto* AddNode(::onnx::GraphProto* g, const std::string& op, const std::string& name,
                           const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

template <typename T>
inline std::string RawBytes(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(s.data(), values.data(), s.size());
  return s;
}

template <typename T>
inline std::vector<uint8_t> Bytes(const std::vector<T>& values) {
  std::string s = RawBytes(values);
  return {s.begin(), s.end()};
}

inline std::vector<uint8_t> BufferBytes(const ir::Tensor& t) {
  return {t.buffer().data(), t.buffer().data() + t.buffer().size()};
}

inline void SetFloatRaw(TensorProto* t, const std::string& name, const std::vector<int64_t>& dims,
                 const std::vector<float>& values) {
  t->set_name(name);
  t->set_data_type(TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(RawBytes(values));
}

inline void SetInt64Tensor(TensorProto* t, const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
  t->set_data_type(TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
}

inline const std::vector<float> kW = {0.5f, -1.25f, 2.0f, 3.5f, -0.75f, 8.0f};

// X -> Relu 'relu1' -> R; R + W (initializer) -> Add 'add1' -> Y; all f32[2,3], IR 8, opset 17.
inline ::onnx::ModelProto BaseModel() {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("importer_test");
  auto* g = m.mutable_graph();
  g->set_name("g");
  SetTensorType(g->add_input(), "X", TensorProto::FLOAT, {2, 3});
  SetFloatRaw(g->add_initializer(), "W", {2, 3}, kW);
  AddNode(g, "Relu", "relu1", {"X"}, {"R"});
  AddNode(g, "Add", "add1", {"R", "W"}, {"Y"});
  SetTensorType(g->add_output(), "Y", TensorProto::FLOAT, {2, 3});
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  return m;
}

// IR 3: W is listed both as a graph input and as an initializer.
inline ::onnx::ModelProto OldIrModel() {
  auto m = BaseModel();
  m.set_ir_version(3);
  m.mutable_opset_import(0)->set_version(7);
  SetTensorType(m.mutable_graph()->add_input(), "W", TensorProto::FLOAT, {2, 3});
  return m;
}

inline TensorProto* Initializer(::onnx::ModelProto& m, const std::string& name) {
  for (auto& t : *m.mutable_graph()->mutable_initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

inline void MakeExternal(TensorProto* t, const std::string& location, const std::string& offset,
                  const std::string& length) {
  t->clear_raw_data();
  t->set_data_location(TensorProto::EXTERNAL);
  auto add = [&](const char* key, const std::string& value) {
    if (value.empty()) return;
    auto* kv = t->add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  };
  add("location", location);
  add("offset", offset);
  add("length", length);
}

// ---- Checking results -------------------------------------------------------------------------

// The import failed with `code` and its message mentions every one of `needles`.
inline ::testing::AssertionResult Fails(const ImportResult& r, StatusCode code, const std::vector<std::string>& needles) {
  if (r.ok()) return ::testing::AssertionFailure() << "imported, expected " << StatusCodeName(code);
  const Status& s = r.status();
  if (s.code() != code)
    return ::testing::AssertionFailure() << "expected " << StatusCodeName(code) << ", got " << s.ToString();
  for (const auto& n : needles)
    if (s.message().find(n) == std::string::npos)
      return ::testing::AssertionFailure() << "message '" << s.message() << "' does not mention '" << n << "'";
  return ::testing::AssertionSuccess();
}

// A fresh folder per test; models are written there and imported from the file.
class ImporterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("precis_importer_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string WriteFile(const std::string& rel, const std::string& bytes) {
    fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    return p.string();
  }
  ImportResult Import(const ::onnx::ModelProto& m, const ImportOptions& options = {},
                      const std::string& rel = "model.onnx") {
    return ImportModelFile(WriteFile(rel, m.SerializeAsString()), options);
  }
  // Imports and fails the test on error.
  std::unique_ptr<ir::Model> ImportOk(const ::onnx::ModelProto& m, const ImportOptions& options = {},
                                      const std::string& rel = "model.onnx") {
    auto r = Import(m, options, rel);
    if (!r.ok()) {
      ADD_FAILURE() << r.status().ToString();
      return nullptr;
    }
    return std::move(r).value();
  }

  fs::path dir_;
};

}  // namespace precis::onnx::importer_test
