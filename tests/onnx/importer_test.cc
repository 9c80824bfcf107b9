// Unit tests of the ONNX importer on ModelProtos built here, one feature or one defect per case:
// every way of storing weights (raw, typed fields, external, sparse, Constant nodes), old-IR
// initializer inputs, value_info, ordering and scoping; then malformed input, where each case
// checks the status code and that the message names the node, value or file at fault. Element
// types, dimensions, tensor data and external data are in importer_data_test.cc.
#include "tests/onnx/importer_test_util.h"

namespace precis::onnx {
namespace {

using namespace importer_test;

// ---- Good models ------------------------------------------------------------------------------

TEST_F(ImporterTest, RawDataInitializerBecomesOwnedConstant) {
  auto model = ImportOk(BaseModel());
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->ir_version, 8);
  EXPECT_EQ(model->producer_name, "importer_test");
  EXPECT_EQ(model->opsets.at(""), 17);
  const ir::Graph& g = *model->graph;
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0]->name(), "X");
  EXPECT_EQ(g.inputs()[0]->type(), ir::Type::Tensor(ir::DType::kF32, ir::Shape::FromStatic({2, 3})));
  const ir::Value* w = g.FindLocal("W");
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->is_constant());
  EXPECT_EQ(w->data()->dtype(), ir::DType::kF32);
  EXPECT_EQ(w->data()->dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(w->data()->buffer().is_view());
  EXPECT_EQ(BufferBytes(*w->data()), Bytes(kW));
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0]->op_type(), "Relu");
  EXPECT_EQ(g.nodes()[1]->inputs()[1], w);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->type(), ir::Type::Tensor(ir::DType::kF32, ir::Shape::FromStatic({2, 3})));
}

TEST_F(ImporterTest, ImportsFromBufferWithoutExternalData) {
  std::string bytes = BaseModel().SerializeAsString();
  auto r = ImportModelFromBuffer(bytes.data(), bytes.size(), "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->graph->nodes().size(), 2u);
}

struct TypedCase {
  std::string name;
  int32_t onnx_type;
  ir::DType dtype;
  std::function<void(TensorProto&)> fill;
  std::vector<uint8_t> expected;
};

TEST_F(ImporterTest, TypedFieldInitializersAreConverted) {
  std::vector<TypedCase> cases = {
      {"f32", TensorProto::FLOAT, ir::DType::kF32,
       [](TensorProto& t) { t.add_float_data(1.5f); t.add_float_data(-2.0f); }, Bytes<float>({1.5f, -2.0f})},
      {"i8", TensorProto::INT8, ir::DType::kI8,
       [](TensorProto& t) { t.add_int32_data(-128); t.add_int32_data(127); }, Bytes<int8_t>({-128, 127})},
      {"u8", TensorProto::UINT8, ir::DType::kU8,
       [](TensorProto& t) { t.add_int32_data(0); t.add_int32_data(255); }, Bytes<uint8_t>({0, 255})},
      {"i16", TensorProto::INT16, ir::DType::kI16,
       [](TensorProto& t) { t.add_int32_data(-32768); t.add_int32_data(7); }, Bytes<int16_t>({-32768, 7})},
      {"u16", TensorProto::UINT16, ir::DType::kU16,
       [](TensorProto& t) { t.add_int32_data(65535); t.add_int32_data(1); }, Bytes<uint16_t>({65535, 1})},
      {"i32", TensorProto::INT32, ir::DType::kI32,
       [](TensorProto& t) { t.add_int32_data(-7); t.add_int32_data(1 << 30); }, Bytes<int32_t>({-7, 1 << 30})},
      // bool: any non-zero value is true, stored as one byte 1.
      {"bool", TensorProto::BOOL, ir::DType::kBool,
       [](TensorProto& t) { t.add_int32_data(0); t.add_int32_data(5); }, Bytes<uint8_t>({0, 1})},
      // float16 / bfloat16: the bit patterns travel in int32_data (1.0 and -2.0 here).
      {"f16", TensorProto::FLOAT16, ir::DType::kF16,
       [](TensorProto& t) { t.add_int32_data(0x3C00); t.add_int32_data(0xC000); }, Bytes<uint16_t>({0x3C00, 0xC000})},
      {"bf16", TensorProto::BFLOAT16, ir::DType::kBF16,
       [](TensorProto& t) { t.add_int32_data(0x3F80); t.add_int32_data(0xC000); }, Bytes<uint16_t>({0x3F80, 0xC000})},
      {"i64", TensorProto::INT64, ir::DType::kI64,
       [](TensorProto& t) { t.add_int64_data(-1); t.add_int64_data(k2Pow40); }, Bytes<int64_t>({-1, k2Pow40})},
      {"u32", TensorProto::UINT32, ir::DType::kU32,
       [](TensorProto& t) { t.add_uint64_data(0); t.add_uint64_data(4294967295u); }, Bytes<uint32_t>({0, 4294967295u})},
      {"u64", TensorProto::UINT64, ir::DType::kU64,
       [](TensorProto& t) { t.add_uint64_data(1); t.add_uint64_data(~uint64_t(0)); }, Bytes<uint64_t>({1, ~uint64_t(0)})},
      {"f64", TensorProto::DOUBLE, ir::DType::kF64,
       [](TensorProto& t) { t.add_double_data(0.1); t.add_double_data(-1e300); }, Bytes<double>({0.1, -1e300})},
  };
  auto m = BaseModel();
  for (const auto& c : cases) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(c.name);
    t->set_data_type(c.onnx_type);
    t->add_dims(2);
    c.fill(*t);
  }
  auto* s = m.mutable_graph()->add_initializer();
  s->set_name("str");
  s->set_data_type(TensorProto::STRING);
  s->add_dims(2);
  s->add_string_data("a");
  s->add_string_data(std::string("b\0c", 3));

  auto model = ImportOk(m);
  ASSERT_NE(model, nullptr);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const ir::Value* v = model->graph->FindLocal(c.name);
    ASSERT_NE(v, nullptr);
    ASSERT_TRUE(v->is_constant());
    EXPECT_EQ(v->data()->dtype(), c.dtype);
    EXPECT_EQ(v->data()->dims(), std::vector<int64_t>{2});
    EXPECT_EQ(BufferBytes(*v->data()), c.expected);
  }
  const ir::Value* str = model->graph->FindLocal("str");
  ASSERT_NE(str, nullptr);
  EXPECT_EQ(str->data()->dtype(), ir::DType::kString);
  EXPECT_EQ(str->data()->strings(), (std::vector<std::string>{"a", std::string("b\0c", 3)}));
}

TEST_F(ImporterTest, ExternalDataIsAViewOfTheMappedFile) {
  // W at offset 16 of weights.bin, V (no length key, no offset key) at the start of sub/v.bin.
  std::vector<float> v_values = {9.0f, -9.5f};
  WriteFile("weights.bin", std::string(16, 'x') + RawBytes(kW) + "trailing");
  WriteFile("sub/v.bin", RawBytes(v_values));
  auto m = BaseModel();
  MakeExternal(Initializer(m, "W"), "weights.bin", "16", "24");
  auto* v = m.mutable_graph()->add_initializer();
  SetFloatRaw(v, "V", {2}, {});
  MakeExternal(v, "sub/v.bin", "", "");
  auto model = ImportOk(m);
  ASSERT_NE(model, nullptr);
  const ir::Value* w = model->graph->FindLocal("W");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->data()->buffer().is_view());
  EXPECT_EQ(BufferBytes(*w->data()), Bytes(kW));
  const ir::Value* vv = model->graph->FindLocal("V");
  ASSERT_NE(vv, nullptr);
  EXPECT_TRUE(vv->data()->buffer().is_view());
  EXPECT_EQ(BufferBytes(*vv->data()), Bytes(v_values));
}

TEST_F(ImporterTest, ExternalDataThroughSymlinksInsideTheFolderIsAccepted) {
  // A symlinked model folder and a link to a file inside it both stay within the folder.
  WriteFile("m/real.bin", RawBytes(kW));
  fs::create_symlink("real.bin", dir_ / "m" / "alias.bin");
  fs::create_directory_symlink(dir_ / "m", dir_ / "mlink");
  auto m = BaseModel();
  MakeExternal(Initializer(m, "W"), "alias.bin", "0", "24");
  WriteFile("m/model.onnx", m.SerializeAsString());
  auto r = ImportModelFile((dir_ / "mlink" / "model.onnx").string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(BufferBytes(*(*r)->graph->FindLocal("W")->data()), Bytes(kW));
}

TEST_F(ImporterTest, ConstantNodeVariantsBecomeConstants) {
  auto m = BaseModel();
  auto* g = m.mutable_graph();
  auto constant = [&](const std::string& out, const std::string& attr, ::onnx::AttributeProto::AttributeType type) {
    auto* a = AddNode(g, "Constant", "const_" + out, {}, {out})->add_attribute();
    a->set_name(attr);
    a->set_type(type);
    return a;
  };
  using A = ::onnx::AttributeProto;
  SetFloatRaw(constant("c_value", "value", A::TENSOR)->mutable_t(), "", {3}, {1.0f, 2.0f, 3.0f});
  constant("c_float", "value_float", A::FLOAT)->set_f(2.5f);
  auto* fs_attr = constant("c_floats", "value_floats", A::FLOATS);
  fs_attr->add_floats(1.0f);
  fs_attr->add_floats(-1.0f);
  constant("c_int", "value_int", A::INT)->set_i(-42);
  auto* is_attr = constant("c_ints", "value_ints", A::INTS);
  for (int64_t i : {7, 8, 9}) is_attr->add_ints(i);
  constant("c_string", "value_string", A::STRING)->set_s("hello");
  auto* ss_attr = constant("c_strings", "value_strings", A::STRINGS);
  ss_attr->add_strings("x");
  ss_attr->add_strings("yz");
  auto* sp = constant("c_sparse", "sparse_value", A::SPARSE_TENSOR)->mutable_sparse_tensor();
  sp->add_dims(4);
  SetFloatRaw(sp->mutable_values(), "c_sparse_values", {1}, {6.5f});
  SetInt64Tensor(sp->mutable_indices(), {1}, {2});
  // A Constant feeding a node, to check uses are wired to the constant.
  AddNode(g, "Mul", "mul1", {"Y", "c_float"}, {"Z"});

  auto model = ImportOk(m);
  ASSERT_NE(model, nullptr);
  const ir::Graph& graph = *model->graph;
  EXPECT_EQ(graph.nodes().size(), 3u) << "Constant nodes must not stay nodes";
  for (const auto& n : graph.nodes()) EXPECT_NE(n->op_type(), "Constant");
  auto data = [&](const std::string& name) -> const ir::Tensor& {
    const ir::Value* v = graph.FindLocal(name);
    EXPECT_TRUE(v && v->is_constant()) << name;
    static const ir::Tensor kNone;
    return v && v->data() ? *v->data() : kNone;
  };
  EXPECT_EQ(BufferBytes(data("c_value")), Bytes<float>({1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(data("c_float").dtype(), ir::DType::kF32);
  EXPECT_TRUE(data("c_float").dims().empty());
  EXPECT_EQ(BufferBytes(data("c_float")), Bytes<float>({2.5f}));
  EXPECT_EQ(data("c_floats").dims(), std::vector<int64_t>{2});
  EXPECT_EQ(BufferBytes(data("c_floats")), Bytes<float>({1.0f, -1.0f}));
  EXPECT_EQ(data("c_int").dtype(), ir::DType::kI64);
  EXPECT_EQ(BufferBytes(data("c_int")), Bytes<int64_t>({-42}));
  EXPECT_EQ(BufferBytes(data("c_ints")), Bytes<int64_t>({7, 8, 9}));
  EXPECT_EQ(data("c_string").strings(), std::vector<std::string>{"hello"});
  EXPECT_TRUE(data("c_string").dims().empty());
  EXPECT_EQ(data("c_strings").strings(), (std::vector<std::string>{"x", "yz"}));
  EXPECT_EQ(BufferBytes(data("c_sparse")), Bytes<float>({0, 0, 6.5f, 0}));
  const ir::Node& mul = *graph.nodes()[2];
  EXPECT_EQ(mul.inputs()[1], graph.FindLocal("c_float"));
}

TEST_F(ImporterTest, SparseInitializersAreDensified) {
  // f32[3,4] with 1.5 at (0,1) and -2.5 at (2,3): linear indices 1 and 11.
  std::vector<float> expected(12, 0.0f);
  expected[1] = 1.5f;
  expected[11] = -2.5f;
  auto m = BaseModel();
  auto add_sparse = [&](const std::string& name, const std::vector<int64_t>& index_dims,
                        const std::vector<int64_t>& indices) {
    auto* sp = m.mutable_graph()->add_sparse_initializer();
    sp->add_dims(3);
    sp->add_dims(4);
    SetFloatRaw(sp->mutable_values(), name, {2}, {1.5f, -2.5f});
    SetInt64Tensor(sp->mutable_indices(), index_dims, indices);
  };
  add_sparse("linear", {2}, {1, 11});
  add_sparse("coords", {2, 2}, {0, 1, 2, 3});
  auto model = ImportOk(m);
  ASSERT_NE(model, nullptr);
  for (const char* name : {"linear", "coords"}) {
    SCOPED_TRACE(name);
    const ir::Value* v = model->graph->FindLocal(name);
    ASSERT_NE(v, nullptr);
    ASSERT_TRUE(v->is_constant());
    EXPECT_EQ(v->data()->dims(), (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(BufferBytes(*v->data()), Bytes(expected));
  }
}

TEST_F(ImporterTest, OldIrInitializerInputIsAConstantByDefault) {
  auto model = ImportOk(OldIrModel());
  ASSERT_NE(model, nullptr);
  const ir::Graph& g = *model->graph;
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0]->name(), "X");
  const ir::Value* w = g.FindLocal("W");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->is_constant());
  EXPECT_EQ(BufferBytes(*w->data()), Bytes(kW));
}

TEST_F(ImporterTest, KeepInitializerInputsKeepsADefault) {
  ImportOptions options;
  options.keep_initializer_inputs = true;
  auto model = ImportOk(OldIrModel(), options);
  ASSERT_NE(model, nullptr);
  const ir::Graph& g = *model->graph;
  ASSERT_EQ(g.inputs().size(), 2u);
  EXPECT_EQ(g.inputs()[1]->name(), "W");
  const ir::Value* w = g.FindLocal("W");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->kind(), ir::Value::Kind::kInput);
  ASSERT_NE(w->data(), nullptr);
  EXPECT_EQ(BufferBytes(*w->data()), Bytes(kW));
  EXPECT_EQ(w->type(), ir::Type::Tensor(ir::DType::kF32, ir::Shape::FromStatic({2, 3})));
  EXPECT_TRUE(g.constants().empty());
}

TEST_F(ImporterTest, ValueInfoShapesAndSymbolicDimsAreKept) {
  auto m = BaseModel();
  auto* x = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  x->mutable_dim(0)->set_dim_param("batch");
  x->add_dim();  // neither value nor param: unknown
  auto* r = m.mutable_graph()->add_value_info();
  r->set_name("R");
  auto* rt = r->mutable_type()->mutable_tensor_type();
  rt->set_elem_type(TensorProto::FLOAT);
  rt->mutable_shape()->add_dim()->set_dim_param("batch");
  rt->mutable_shape()->add_dim()->set_dim_value(3);
  // Y's declared type is unrelated to X's here: the importer keeps what it is told.
  auto model = ImportOk(m);
  ASSERT_NE(model, nullptr);
  const auto& xd = model->graph->FindLocal("X")->type().shape().dims();
  ASSERT_EQ(xd.size(), 3u);
  EXPECT_TRUE(xd[0].is_symbolic());
  EXPECT_EQ(xd[0].symbol(), "batch");
  EXPECT_EQ(xd[1].value(), 3);
  EXPECT_TRUE(xd[2].is_unknown());
  EXPECT_EQ(model->graph->FindLocal("R")->type(),
            ir::Type::Tensor(ir::DType::kF32, ir::Shape({ir::Dim::Symbolic("batch"), ir::Dim::Static(3)})));
}

TEST_F(ImporterTest, UnsortedNodesAreSortedTopologically) {
  auto m = BaseModel();
  m.mutable_graph()->mutable_node()->SwapElements(0, 1);  // Add before the Relu it reads
  auto model = ImportOk(m);
  ASSERT_NE(model, nullptr);
  const auto& nodes = model->graph->nodes();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0]->name(), "relu1");
  EXPECT_EQ(nodes[1]->name(), "add1");
  EXPECT_EQ(nodes[0]->index(), 0);
  EXPECT_EQ(nodes[1]->index(), 1);
}

TEST_F(ImporterTest, IfBranchesReadOuterValues) {
  // The If comes first in the file but its then-branch reads R, made by the Relu after it.
  auto m = BaseModel();
  auto* g = m.mutable_graph();
  SetTensorType(g->add_input(), "cond", TensorProto::BOOL, {});
  auto* if_node = AddNode(g, "If", "if1", {"cond"}, {"Z"});
  g->mutable_node()->SwapElements(0, 2);
  g->mutable_node()->SwapElements(1, 2);
  auto branch = [&](const char* attr, const char* op, const char* input) {
    auto* a = if_node->add_attribute();
    a->set_name(attr);
    a->set_type(::onnx::AttributeProto::GRAPH);
    auto* sub = a->mutable_g();
    sub->set_name(std::string(attr) + "_graph");
    AddNode(sub, op, std::string(attr) + "_node", {input}, {std::string(attr) + "_out"});
    SetTensorType(sub->add_output(), std::string(attr) + "_out", TensorProto::FLOAT, {2, 3});
  };
  branch("then_branch", "Neg", "R");
  branch("else_branch", "Abs", "W");
  auto model = ImportOk(m);
  ASSERT_NE(model, nullptr);
  const ir::Graph& main = *model->graph;
  ASSERT_EQ(main.nodes().size(), 3u);
  EXPECT_EQ(main.nodes()[0]->name(), "relu1");
  const ir::Node* if1 = nullptr;
  for (const auto& n : main.nodes())
    if (n->op_type() == "If") if1 = n.get();
  ASSERT_NE(if1, nullptr);
  EXPECT_GT(if1->index(), main.nodes()[0]->index());
  const ir::Attribute* then_attr = if1->FindAttribute("then_branch");
  ASSERT_NE(then_attr, nullptr);
  ASSERT_EQ(then_attr->graphs.size(), 1u);
  const ir::Graph& then_graph = *then_attr->graphs[0];
  EXPECT_EQ(then_graph.parent_node(), if1);
  const ir::Value* r = main.FindLocal("R");
  const ir::Node& neg = *then_graph.nodes()[0];
  EXPECT_EQ(neg.inputs()[0], r);
  EXPECT_EQ(r->owner(), &main);
  bool use_recorded = false;
  for (const auto& u : r->uses()) use_recorded |= u.node == &neg;
  EXPECT_TRUE(use_recorded);
  const ir::Graph& else_graph = *if1->FindAttribute("else_branch")->graphs[0];
  EXPECT_EQ(else_graph.nodes()[0]->inputs()[0], main.FindLocal("W"));
}

TEST_F(ImporterTest, AiOnnxDomainIsNormalized) {
  auto m = BaseModel();
  m.mutable_opset_import(0)->set_domain("ai.onnx");
  m.mutable_graph()->mutable_node(0)->set_domain("ai.onnx");
  auto model = ImportOk(m);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->opsets, (std::map<std::string, int64_t>{{"", 17}}));
  EXPECT_EQ(model->graph->nodes()[0]->domain(), "");
}

// ---- Files that are not models ------------------------------------------------------------------

TEST_F(ImporterTest, EmptyFileIsRefused) {
  std::string path = WriteFile("empty.onnx", "");
  EXPECT_TRUE(Fails(ImportModelFile(path), StatusCode::kInvalidArgument, {path}));
  EXPECT_TRUE(Fails(ImportModelFromBuffer("", 0, ""), StatusCode::kInvalidArgument, {"ir_version"}));
}

TEST_F(ImporterTest, MissingFileAndFolderAreRefused) {
  std::string missing = (dir_ / "nope.onnx").string();
  EXPECT_TRUE(Fails(ImportModelFile(missing), StatusCode::kNotFound, {missing}));
  EXPECT_TRUE(Fails(ImportModelFile(dir_.string()), StatusCode::kInvalidArgument, {dir_.string()}));
}

TEST_F(ImporterTest, RandomBytesAreNotAProtobuf) {
  std::mt19937 rng(20240611);
  std::string bytes(4096, '\0');
  for (char& c : bytes) c = char(rng() & 0xff);
  std::string path = WriteFile("random.onnx", bytes);
  EXPECT_TRUE(Fails(ImportModelFile(path), StatusCode::kInvalidArgument, {path, "protobuf"}));
  EXPECT_TRUE(Fails(ImportModelFromBuffer(bytes.data(), bytes.size(), ""), StatusCode::kInvalidArgument, {"protobuf"}));
}

TEST_F(ImporterTest, EveryTruncationIsAnError) {
  // Field order on the wire: ir_version, producer_name, graph, opset_import. A cut at a field
  // boundary still parses, so the importer must also refuse a model without graph or opsets.
  std::string bytes = BaseModel().SerializeAsString();
  ASSERT_TRUE(ImportModelFromBuffer(bytes.data(), bytes.size(), "").ok());
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto r = ImportModelFromBuffer(bytes.data(), len, dir_.string());
    EXPECT_TRUE(Fails(r, StatusCode::kInvalidArgument, {})) << "prefix of " << len << " of " << bytes.size() << " bytes";
  }
  for (size_t len : {bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    std::string path = WriteFile("cut.onnx", bytes.substr(0, len));
    EXPECT_TRUE(Fails(ImportModelFile(path), StatusCode::kInvalidArgument, {path})) << len;
  }
}

TEST_F(ImporterTest, HeaderDefectsAreRefused) {
  auto old = BaseModel();
  old.set_ir_version(2);
  EXPECT_TRUE(Fails(Import(old), StatusCode::kUnimplemented, {"IR version 2"}));
  auto no_version = BaseModel();
  no_version.clear_ir_version();
  EXPECT_TRUE(Fails(Import(no_version), StatusCode::kInvalidArgument, {"ir_version"}));
  auto no_graph = BaseModel();
  no_graph.clear_graph();
  EXPECT_TRUE(Fails(Import(no_graph), StatusCode::kInvalidArgument, {"no graph"}));
  auto no_opset = BaseModel();
  no_opset.clear_opset_import();
  EXPECT_TRUE(Fails(Import(no_opset), StatusCode::kInvalidArgument, {"opset"}));
  auto twice = BaseModel();
  *twice.add_opset_import() = twice.opset_import(0);
  twice.mutable_opset_import(1)->set_domain("ai.onnx");
  EXPECT_TRUE(Fails(Import(twice), StatusCode::kInvalidArgument, {"opset", "twice"}));
}

// ---- Graph structure ----------------------------------------------------------------------------

TEST_F(ImporterTest, MissingInputReferenceNamesNodeAndValue) {
  auto m = BaseModel();
  m.mutable_graph()->mutable_node(1)->set_input(1, "nope");
  EXPECT_TRUE(Fails(Import(m), StatusCode::kInvalidArgument, {"Add 'add1' (node 1)", "'nope'", "graph 'g'"}));
}

TEST_F(ImporterTest, MissingReferenceInsideABranchNamesTheBranch) {
  auto m = BaseModel();
  auto* if_node = AddNode(m.mutable_graph(), "If", "if1", {"X"}, {"Z"});
  auto* a = if_node->add_attribute();
  a->set_name("then_branch");
  a->set_type(::onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name("then_graph");
  AddNode(a->mutable_g(), "Neg", "neg1", {"ghost"}, {"t"});
  EXPECT_TRUE(Fails(Import(m), StatusCode::kInvalidArgument, {"If 'if1'", "then_graph", "Neg 'neg1'", "'ghost'"}));
}

TEST_F(ImporterTest, MissingGraphOutputIsNamed) {
  auto m = BaseModel();
  m.mutable_graph()->mutable_output(0)->set_name("Q");
  EXPECT_TRUE(Fails(Import(m), StatusCode::kInvalidArgument, {"'Q'"}));
}

TEST_F(ImporterTest, CycleIsReportedWithItsNodes) {
  auto m = BaseModel();
  auto* g = m.mutable_graph();
  g->clear_node();
  AddNode(g, "Add", "n1", {"X", "b"}, {"a"});
  AddNode(g, "Relu", "n2", {"a"}, {"b"});
  AddNode(g, "Relu", "n3", {"b"}, {"Y"});
  EXPECT_TRUE(Fails(Import(m), StatusCode::kInvalidArgument, {"cycle", "Add 'n1'", "Relu 'n2'"}));
}

TEST_F(ImporterTest, SelfLoopIsACycle) {
  auto m = BaseModel();
  m.mutable_graph()->mutable_node(0)->set_input(0, "R");
  EXPECT_TRUE(Fails(Import(m), StatusCode::kInvalidArgument, {"cycle", "Relu 'relu1'"}));
}

TEST_F(ImporterTest, DuplicateValueNamesAreRefused) {
  auto two_producers = BaseModel();
  AddNode(two_producers.mutable_graph(), "Neg", "neg1", {"X"}, {"R"});
  EXPECT_TRUE(Fails(Import(two_producers), StatusCode::kInvalidArgument, {"duplicate", "'R'", "Neg 'neg1'"}));

  auto shadows_input = BaseModel();
  shadows_input.mutable_graph()->mutable_node(0)->set_output(0, "X");
  EXPECT_TRUE(Fails(Import(shadows_input), StatusCode::kInvalidArgument, {"duplicate", "'X'", "Relu 'relu1'"}));

  auto shadows_initializer = BaseModel();
  shadows_initializer.mutable_graph()->mutable_node(0)->set_output(0, "W");
  EXPECT_TRUE(Fails(Import(shadows_initializer), StatusCode::kInvalidArgument, {"duplicate", "'W'"}));

  auto two_initializers = BaseModel();
  *two_initializers.mutable_graph()->add_initializer() = *Initializer(two_initializers, "W");
  EXPECT_TRUE(Fails(Import(two_initializers), StatusCode::kInvalidArgument, {"duplicate", "'W'"}));

  auto two_inputs = BaseModel();
  *two_inputs.mutable_graph()->add_input() = two_inputs.graph().input(0);
  EXPECT_TRUE(Fails(Import(two_inputs), StatusCode::kInvalidArgument, {"duplicate", "'X'"}));
}

TEST_F(ImporterTest, EmptyOperatorTypeIsRefused) {
  auto m = BaseModel();
  m.mutable_graph()->mutable_node(1)->set_op_type("");
  EXPECT_TRUE(Fails(Import(m), StatusCode::kInvalidArgument, {"'add1' (node 1)", "operator type"}));
}

TEST_F(ImporterTest, ModelLocalFunctionIsUnimplemented) {
  auto m = BaseModel();
  auto* f = m.add_functions();
  f->set_name("MyFn");
  f->set_domain("local");
  auto* op = m.add_opset_import();
  op->set_domain("local");
  op->set_version(1);
  AddNode(m.mutable_graph(), "MyFn", "fn1", {"Y"}, {"Z"})->set_domain("local");
  EXPECT_TRUE(Fails(Import(m), StatusCode::kUnimplemented, {"MyFn", "function"}));
}

}  // namespace
}  // namespace precis::onnx
