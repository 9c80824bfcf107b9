// Parser for the IR text form (grammar by example in text.h). Recursive descent over the lexer;
// values must be defined before use, so the text order is a topological order. Every error
// names line:column.
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/lexer.h"
#include "compiler/ir/text.h"
#include "compiler/ir/text_format.h"
#include "runtime/base/half.h"

namespace precis::ir {
namespace {

using TK = Token::Kind;

// Whether `bits` is a NaN of the float storage type `dtype`.
bool IsNaNBits(DType dtype, uint64_t bits) {
  switch (dtype) {
    case DType::kF64: return (bits & ~(1ull << 63)) > 0x7ff0000000000000ull;
    case DType::kF32: return bits <= 0xffffffffull && (bits & 0x7fffffffu) > 0x7f800000u;
    case DType::kF16: return bits <= 0xffff && (bits & 0x7fff) > 0x7c00;
    case DType::kBF16: return bits <= 0xffff && (bits & 0x7fff) > 0x7f80;
    default: return false;
  }
}

struct Scope {
  Graph* graph;
  const Scope* parent;
  Value* Lookup(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent)
      if (Value* v = s->graph->FindLocal(name)) return v;
    return nullptr;
  }
};

class Parser {
 public:
  Parser(std::string_view text, const ParseOptions& options) : lexer_(text), options_(options) {}

  StatusOr<std::unique_ptr<Model>> ParseModel() {
    PRECIS_RETURN_IF_ERROR(Advance());
    auto model = std::make_unique<Model>();
    PRECIS_RETURN_IF_ERROR(ParseModelHeader(*model));
    PRECIS_ASSIGN_OR_RETURN(model->graph, ParseGraph(nullptr));
    if (tok_.kind != TK::kEnd) return Error("expected end of input");
    return model;
  }

 private:
  // A lexer error is sticky: Consume() only tests Advance(), so the error must also surface
  // from every later Advance() and Error() rather than be replaced by a misleading one.
  Status Advance() {
    if (!lex_error_.ok()) return lex_error_;
    auto next = lexer_.Next();
    if (!next.ok()) return lex_error_ = next.status();
    tok_ = std::move(next).value();
    return Status::Ok();
  }
  Status Error(const std::string& message) const { return ErrorAt(tok_, message); }
  // For faults found only after `at` was consumed: the position is that token's, not the next
  // one's (which may be on a later line).
  Status ErrorAt(const Token& at, const std::string& message) const {
    if (!lex_error_.ok()) return lex_error_;
    std::string near = at.kind == TK::kEnd ? "end of input" : "'" + at.text + "'";
    return InvalidArgument(std::to_string(at.line) + ":" + std::to_string(at.column) + ": " +
                           message + " (at " + near + ")");
  }
  bool Is(TK kind, std::string_view text = {}) const {
    return tok_.kind == kind && (text.empty() || tok_.text == text);
  }
  bool IsPunct(std::string_view p) const { return Is(TK::kPunct, p); }
  bool IsKeyword(std::string_view k) const { return Is(TK::kIdent, k); }
  Status Expect(TK kind, std::string_view text, const char* what) {
    if (!Is(kind, text)) return Error(std::string("expected ") + what);
    return Advance();
  }
  Status ExpectPunct(std::string_view p) { return Expect(TK::kPunct, p, ("'" + std::string(p) + "'").c_str()); }
  Status ExpectKeyword(std::string_view k) { return Expect(TK::kIdent, k, ("'" + std::string(k) + "'").c_str()); }
  bool Consume(std::string_view p) {
    if (!IsPunct(p)) return false;
    return Advance().ok();
  }

  // A name written bare (identifier) or quoted.
  StatusOr<std::string> ParseName(const char* what) {
    if (!Is(TK::kIdent) && !Is(TK::kString)) return Error(std::string("expected ") + what);
    std::string s = tok_.text;
    PRECIS_RETURN_IF_ERROR(Advance());
    return s;
  }
  StatusOr<std::string> ParseString() {
    if (!Is(TK::kString)) return Error("expected a string");
    std::string s = tok_.text;
    PRECIS_RETURN_IF_ERROR(Advance());
    return s;
  }
  StatusOr<int64_t> ParseInt() {
    if (!Is(TK::kNumber)) return Error("expected an integer");
    int64_t v = 0;
    const std::string& t = tok_.text;
    const char* begin = t.data() + (t[0] == '+' ? 1 : 0);
    auto res = std::from_chars(begin, t.data() + t.size(), v);
    if (res.ec != std::errc() || res.ptr != t.data() + t.size()) return Error("bad integer");
    PRECIS_RETURN_IF_ERROR(Advance());
    return v;
  }

  Status ParseModelHeader(Model& m) {
    PRECIS_RETURN_IF_ERROR(ExpectKeyword("model"));
    PRECIS_RETURN_IF_ERROR(ExpectPunct("{"));
    while (!IsPunct("}")) {
      Token key_tok = tok_;
      PRECIS_ASSIGN_OR_RETURN(std::string key, ParseName("a model field"));
      PRECIS_RETURN_IF_ERROR(ExpectPunct("="));
      if (key == "ir_version") { PRECIS_ASSIGN_OR_RETURN(m.ir_version, ParseInt()); }
      else if (key == "model_version") { PRECIS_ASSIGN_OR_RETURN(m.model_version, ParseInt()); }
      else if (key == "producer_name") { PRECIS_ASSIGN_OR_RETURN(m.producer_name, ParseString()); }
      else if (key == "producer_version") { PRECIS_ASSIGN_OR_RETURN(m.producer_version, ParseString()); }
      else if (key == "domain") { PRECIS_ASSIGN_OR_RETURN(m.domain, ParseString()); }
      else if (key == "opsets") {
        PRECIS_RETURN_IF_ERROR(ExpectPunct("{"));
        while (!IsPunct("}")) {
          Token domain_tok = tok_;
          PRECIS_ASSIGN_OR_RETURN(std::string domain, ParseString());
          PRECIS_RETURN_IF_ERROR(ExpectPunct("="));
          PRECIS_ASSIGN_OR_RETURN(int64_t version, ParseInt());
          if (!m.opsets.emplace(domain, version).second) return ErrorAt(domain_tok, "duplicate opset domain");
          if (!Consume(",")) break;
        }
        PRECIS_RETURN_IF_ERROR(ExpectPunct("}"));
      } else {
        return ErrorAt(key_tok, "unknown model field '" + key + "'");
      }
      if (!Consume(",")) break;
    }
    return ExpectPunct("}");
  }

  StatusOr<Type> ParseType() {
    if (Consume("?")) return Type();
    Token head_tok = tok_;
    PRECIS_ASSIGN_OR_RETURN(std::string head, ParseName("a type"));
    if (head == "seq" || head == "opt") {
      PRECIS_RETURN_IF_ERROR(ExpectPunct("<"));
      PRECIS_RETURN_IF_ERROR(EnterNesting());
      PRECIS_ASSIGN_OR_RETURN(Type elem, ParseType());
      --nesting_;
      PRECIS_RETURN_IF_ERROR(ExpectPunct(">"));
      return head == "seq" ? Type::Sequence(std::move(elem)) : Type::Optional(std::move(elem));
    }
    DType dtype = DType::kUndefined;
    if (head != "undefined") {
      auto d = DTypeFromName(head);
      if (!d) return ErrorAt(head_tok, "unknown element type '" + head + "'");
      dtype = *d;
    }
    PRECIS_RETURN_IF_ERROR(ExpectPunct("["));
    if (Consume("*")) {
      PRECIS_RETURN_IF_ERROR(ExpectPunct("]"));
      return Type::Tensor(dtype, Shape());
    }
    std::vector<Dim> dims;
    while (!IsPunct("]")) {
      if (Consume("?")) dims.push_back(Dim());
      else if (Is(TK::kNumber)) {
        Token dim_tok = tok_;
        PRECIS_ASSIGN_OR_RETURN(int64_t v, ParseInt());
        if (v < 0 || v > kMaxDim) return ErrorAt(dim_tok, "dimension out of range");
        dims.push_back(Dim::Static(v));
      } else {
        PRECIS_ASSIGN_OR_RETURN(std::string sym, ParseName("a dimension"));
        dims.push_back(Dim::Symbolic(sym));
      }
      if (!Consume(",")) break;
    }
    PRECIS_RETURN_IF_ERROR(ExpectPunct("]"));
    return Type::Tensor(dtype, Shape(std::move(dims)));
  }

  // A float literal: number, inf, -inf, nan or nan(0xBITS). Bits are returned separately.
  struct FloatLit {
    double value = 0;
    bool has_bits = false;
    uint64_t bits = 0;
  };
  // `storage` is the float type the literal is stored as; nan(0xBITS) must be one of its NaNs.
  StatusOr<FloatLit> ParseFloatLit(DType storage) {
    FloatLit lit;
    if (IsKeyword("nan")) {
      PRECIS_RETURN_IF_ERROR(Advance());
      lit.value = std::nan("");
      if (Consume("(")) {
        if (!Is(TK::kNumber) || tok_.text.rfind("0x", 0) != 0) return Error("expected nan bits");
        const char* end = tok_.text.data() + tok_.text.size();
        auto res = std::from_chars(tok_.text.data() + 2, end, lit.bits, 16);
        if (res.ec != std::errc() || res.ptr != end) return Error("bad nan bits");
        if (!IsNaNBits(storage, lit.bits))
          return Error("nan bits are not a " + std::string(DTypeName(storage)) + " NaN");
        lit.has_bits = true;
        PRECIS_RETURN_IF_ERROR(Advance());
        PRECIS_RETURN_IF_ERROR(ExpectPunct(")"));
      }
      return lit;
    }
    if (IsKeyword("inf")) {
      PRECIS_RETURN_IF_ERROR(Advance());
      lit.value = INFINITY;
      return lit;
    }
    if (!Is(TK::kNumber)) return Error("expected a number");
    const std::string& t = tok_.text;
    if (t == "-inf" || t == "+inf") lit.value = t[0] == '-' ? -INFINITY : INFINITY;
    else {
      const char* begin = t.data() + (t[0] == '+' ? 1 : 0);
      auto res = std::from_chars(begin, t.data() + t.size(), lit.value);
      if (res.ec != std::errc() || res.ptr != t.data() + t.size()) return Error("bad number");
    }
    PRECIS_RETURN_IF_ERROR(Advance());
    return lit;
  }
  StatusOr<float> ParseF32() {
    if (Is(TK::kNumber) && tok_.text != "-inf" && tok_.text != "+inf") {
      // Parse as float directly: rounding a double again could differ in the last bit.
      float v = 0;
      const std::string& t = tok_.text;
      const char* begin = t.data() + (t[0] == '+' ? 1 : 0);
      auto res = std::from_chars(begin, t.data() + t.size(), v);
      if (res.ec != std::errc() || res.ptr != t.data() + t.size()) return Error("bad float");
      PRECIS_RETURN_IF_ERROR(Advance());
      return v;
    }
    PRECIS_ASSIGN_OR_RETURN(FloatLit lit, ParseFloatLit(DType::kF32));
    if (lit.has_bits) return BitsFloat(uint32_t(lit.bits));
    if (std::isnan(lit.value)) return BitsFloat(kF32NaN);
    return float(lit.value);
  }

  Status ParseElement(DType dtype, uint8_t* dst, std::vector<std::string>* strings);
  StatusOr<Tensor> ParseTensorData(DType dtype, const std::vector<int64_t>& dims);
  StatusOr<std::vector<int64_t>> StaticDims(const Type& type) {
    if (!type.is_tensor() || !type.shape().is_static() || type.dtype() == DType::kUndefined)
      return Error("constant type must be a tensor with a known element type and static shape");
    std::vector<int64_t> dims;
    for (const Dim& d : type.shape().dims()) dims.push_back(d.value());
    if (!CheckedElements(dims)) return Error("tensor too large");
    return dims;
  }
  StatusOr<Tensor> ParseTensorLiteral() {
    PRECIS_RETURN_IF_ERROR(ExpectKeyword("tensor"));
    PRECIS_RETURN_IF_ERROR(ExpectPunct("<"));
    PRECIS_ASSIGN_OR_RETURN(Type type, ParseType());
    PRECIS_RETURN_IF_ERROR(ExpectPunct(">"));
    PRECIS_ASSIGN_OR_RETURN(auto dims, StaticDims(type));
    return ParseTensorData(type.dtype(), dims);
  }

  StatusOr<std::unique_ptr<Graph>> ParseGraph(const Scope* parent);
  Status ParseStatement(Scope& scope);
  Status ParseNode(Scope& scope);
  StatusOr<Attribute> ParseAttribute(const Scope& scope);
  Status ParseAttributeList(Attribute& a, const Scope& scope);

  StatusOr<Value*> ParseUse(const Scope& scope) {
    if (IsKeyword("_")) {
      PRECIS_RETURN_IF_ERROR(Advance());
      return static_cast<Value*>(nullptr);
    }
    if (!Is(TK::kValueName)) return Error("expected a value (%name or _)");
    Value* v = scope.Lookup(tok_.text);
    if (!v) return Error("value %" + QuoteValueName(tok_.text) + " is not defined before this use");
    PRECIS_RETURN_IF_ERROR(Advance());
    return v;
  }
  Status CheckNewName(const Scope& scope, const std::string& name) {
    if (scope.graph->FindLocal(name)) return Error("duplicate value name %" + QuoteValueName(name));
    return Status::Ok();
  }

  // Types nest in types and graphs in graphs. Bounding the depth makes absurdly deep text an
  // error instead of a stack overflow, here and in the recursive printer, verifier and
  // destructors. An error ends the parse, so only the success paths leave a level.
  static constexpr int kMaxNesting = 64;
  Status EnterNesting() {
    if (++nesting_ > kMaxNesting) return Error("types or graphs nested deeper than 64 levels");
    return Status::Ok();
  }

  Lexer lexer_;
  const ParseOptions& options_;
  Token tok_;
  int nesting_ = 0;
  Status lex_error_;
};

Status Parser::ParseElement(DType dtype, uint8_t* dst, std::vector<std::string>* strings) {
  auto store = [&](auto v) { std::memcpy(dst, &v, sizeof v); };
  auto integer = [&](auto zero) -> Status {
    using T = decltype(zero);
    if (!Is(TK::kNumber)) return Error("expected an integer element");
    T v{};
    const std::string& t = tok_.text;
    const char* begin = t.data() + (t[0] == '+' ? 1 : 0);
    auto res = std::from_chars(begin, t.data() + t.size(), v);
    if (res.ec != std::errc() || res.ptr != t.data() + t.size()) return Error("bad integer element");
    store(v);
    return Advance();
  };
  switch (dtype) {
    case DType::kF32: {
      PRECIS_ASSIGN_OR_RETURN(float v, ParseF32());
      store(v);
      return Status::Ok();
    }
    case DType::kF64: {
      PRECIS_ASSIGN_OR_RETURN(FloatLit lit, ParseFloatLit(DType::kF64));
      if (lit.has_bits) store(lit.bits);
      else if (std::isnan(lit.value)) store(kF64NaN);
      else store(lit.value);
      return Status::Ok();
    }
    case DType::kF16:
    case DType::kBF16: {
      bool half = dtype == DType::kF16;
      if (IsKeyword("nan")) {
        PRECIS_ASSIGN_OR_RETURN(FloatLit lit, ParseFloatLit(dtype));
        store(uint16_t(lit.has_bits ? lit.bits : (half ? kF16NaN : kBF16NaN)));
        return Status::Ok();
      }
      PRECIS_ASSIGN_OR_RETURN(float v, ParseF32());
      store(half ? FloatToHalf(v) : FloatToBf16(v));
      return Status::Ok();
    }
    case DType::kBool:
      if (IsKeyword("true") || IsKeyword("false")) {
        store(uint8_t(tok_.text == "true"));
        return Advance();
      }
      return integer(uint8_t{});
    case DType::kI8: return integer(int8_t{});
    case DType::kI16: return integer(int16_t{});
    case DType::kI32: return integer(int32_t{});
    case DType::kI64: return integer(int64_t{});
    case DType::kU8: return integer(uint8_t{});
    case DType::kU16: return integer(uint16_t{});
    case DType::kU32: return integer(uint32_t{});
    case DType::kU64: return integer(uint64_t{});
    case DType::kString: {
      PRECIS_ASSIGN_OR_RETURN(std::string s, ParseString());
      strings->push_back(std::move(s));
      return Status::Ok();
    }
    case DType::kUndefined: break;
    default: return integer(uint8_t{});  // storage types: the byte Precis holds (text_format.cc)
  }
  return Error("tensor of undefined element type");
}

StatusOr<Tensor> Parser::ParseTensorData(DType dtype, const std::vector<int64_t>& dims) {
  int64_t n = *CheckedElements(dims);
  if (IsKeyword("ref")) {
    PRECIS_RETURN_IF_ERROR(Advance());
    if (!Is(TK::kNumber) || tok_.text.rfind("0x", 0) != 0) return Error("expected a 0x content hash");
    uint64_t hash = 0;
    const char* end = tok_.text.data() + tok_.text.size();
    auto res = std::from_chars(tok_.text.data() + 2, end, hash, 16);
    if (res.ec != std::errc() || res.ptr != end) return Error("bad content hash");
    Token hash_tok = tok_;
    PRECIS_RETURN_IF_ERROR(Advance());
    if (options_.resolve) {
      if (auto t = options_.resolve(dtype, dims, hash)) {
        if (t->dtype() != dtype || t->dims() != dims || t->ContentHash() != hash)
          return ErrorAt(hash_tok, "resolved tensor does not match its reference");
        return std::move(*t);
      }
    }
    return Tensor::Reference(dtype, dims, hash);
  }
  PRECIS_RETURN_IF_ERROR(ExpectPunct("["));
  std::vector<uint8_t> bytes;
  std::vector<std::string> strings;
  int64_t elem = DTypeSize(dtype);
  int64_t count = 0;
  while (!IsPunct("]")) {
    if (count == n) return Error("more elements than the shape holds (" + std::to_string(n) + ")");
    bytes.resize(size_t((count + 1) * elem));
    PRECIS_RETURN_IF_ERROR(ParseElement(dtype, bytes.data() + count * elem, &strings));
    ++count;
    if (!Consume(",")) break;
  }
  // Checked at the ']' so that the error points into the literal, not at the next statement.
  if (IsPunct("]") && count != n)
    return Error("tensor has " + std::to_string(count) + " elements, its shape holds " + std::to_string(n));
  PRECIS_RETURN_IF_ERROR(ExpectPunct("]"));
  if (dtype == DType::kString) return Tensor(dims, std::move(strings));
  return Tensor(dtype, dims, Buffer::Own(std::move(bytes)));
}

StatusOr<std::unique_ptr<Graph>> Parser::ParseGraph(const Scope* parent) {
  PRECIS_RETURN_IF_ERROR(EnterNesting());
  PRECIS_RETURN_IF_ERROR(ExpectKeyword("graph"));
  PRECIS_ASSIGN_OR_RETURN(std::string name, ParseString());
  auto graph = std::make_unique<Graph>(name);
  Scope scope{graph.get(), parent};
  PRECIS_RETURN_IF_ERROR(ExpectPunct("{"));
  while (!IsPunct("}")) {
    if (Is(TK::kEnd)) return Error("unterminated graph");
    PRECIS_RETURN_IF_ERROR(ParseStatement(scope));
  }
  PRECIS_RETURN_IF_ERROR(ExpectPunct("}"));
  --nesting_;
  return graph;
}

Status Parser::ParseStatement(Scope& scope) {
  Graph& g = *scope.graph;
  if (IsKeyword("input") || IsKeyword("const")) {
    bool is_input = tok_.text == "input";
    PRECIS_RETURN_IF_ERROR(Advance());
    if (!Is(TK::kValueName)) return Error("expected a value name");
    std::string name = tok_.text;
    PRECIS_RETURN_IF_ERROR(CheckNewName(scope, name));
    PRECIS_RETURN_IF_ERROR(Advance());
    Type type;
    if (Consume(":")) { PRECIS_ASSIGN_OR_RETURN(type, ParseType()); }
    if (!is_input || IsPunct("=")) {
      PRECIS_RETURN_IF_ERROR(ExpectPunct("="));
      PRECIS_ASSIGN_OR_RETURN(auto dims, StaticDims(type));
      PRECIS_ASSIGN_OR_RETURN(Tensor data, ParseTensorData(type.dtype(), dims));
      if (is_input) g.AddInputWithDefault(name, type, std::move(data));
      else g.AddConstant(name, std::move(data));
    } else {
      g.AddInput(name, type);
    }
    return Status::Ok();
  }
  if (IsKeyword("output")) {
    PRECIS_RETURN_IF_ERROR(Advance());
    Token out_tok = tok_;
    PRECIS_ASSIGN_OR_RETURN(Value * v, ParseUse(scope));
    if (!v) return ErrorAt(out_tok, "a graph output cannot be omitted");
    g.AddOutput(v);
    return Status::Ok();
  }
  return ParseNode(scope);
}

Status Parser::ParseNode(Scope& scope) {
  struct Out { std::string name; bool omitted; Type type; };
  std::vector<Out> outs;
  if (Is(TK::kValueName) || IsKeyword("_")) {
    while (true) {
      Out o{tok_.text, Is(TK::kIdent), Type()};
      if (!Is(TK::kValueName) && !IsKeyword("_")) return Error("expected an output value");
      // Duplicates are reported here, at the name, not after the whole node has been read.
      if (!o.omitted) {
        PRECIS_RETURN_IF_ERROR(CheckNewName(scope, o.name));
        for (const Out& prev : outs)
          if (!prev.omitted && prev.name == o.name)
            return Error("duplicate value name %" + QuoteValueName(o.name));
      }
      PRECIS_RETURN_IF_ERROR(Advance());
      if (!o.omitted && Consume(":")) { PRECIS_ASSIGN_OR_RETURN(o.type, ParseType()); }
      outs.push_back(std::move(o));
      if (!Consume(",")) break;
    }
    PRECIS_RETURN_IF_ERROR(ExpectPunct("="));
  }
  // A quoted name followed by '::' is the domain; otherwise it is the (quoted) operator.
  std::string domain;
  bool quoted = Is(TK::kString);
  PRECIS_ASSIGN_OR_RETURN(std::string op, ParseName("an operator"));
  if (quoted && IsPunct("::")) {
    PRECIS_RETURN_IF_ERROR(Advance());
    domain = std::move(op);
    PRECIS_ASSIGN_OR_RETURN(op, ParseName("an operator"));
  }
  PRECIS_RETURN_IF_ERROR(ExpectPunct("("));
  std::vector<Value*> inputs;
  while (!IsPunct(")")) {
    PRECIS_ASSIGN_OR_RETURN(Value * v, ParseUse(scope));
    inputs.push_back(v);
    if (!Consume(",")) break;
  }
  PRECIS_RETURN_IF_ERROR(ExpectPunct(")"));
  std::vector<Attribute> attrs;
  if (Consume("{")) {
    std::unordered_set<std::string> attr_names;  // a set: thousands of attributes stay linear
    while (!IsPunct("}")) {
      PRECIS_ASSIGN_OR_RETURN(Attribute a, ParseAttribute(scope));
      if (!attr_names.insert(a.name).second) return Error("duplicate attribute '" + a.name + "'");
      attrs.push_back(std::move(a));
      if (!Consume(",")) break;
    }
    PRECIS_RETURN_IF_ERROR(ExpectPunct("}"));
  }
  std::string node_name;
  if (IsKeyword("name")) {
    PRECIS_RETURN_IF_ERROR(Advance());
    PRECIS_ASSIGN_OR_RETURN(node_name, ParseString());
  }
  PrecisionRecord precision;
  if (IsKeyword("precision")) {
    PRECIS_RETURN_IF_ERROR(Advance());
    PRECIS_RETURN_IF_ERROR(ExpectPunct("{"));
    while (!IsPunct("}")) {
      Token key = tok_;
      PRECIS_ASSIGN_OR_RETURN(std::string field, ParseName("a precision field"));
      PRECIS_RETURN_IF_ERROR(ExpectPunct("="));
      if (field == "reason") {
        PRECIS_ASSIGN_OR_RETURN(precision.reason, ParseString());
      } else if (field == "evidence") {
        PRECIS_ASSIGN_OR_RETURN(precision.evidence, ParseString());
      } else if (field == "accumulate") {
        Token at = tok_;
        PRECIS_ASSIGN_OR_RETURN(std::string dtype, ParseName("a dtype"));
        auto d = DTypeFromName(dtype);
        if (!d) return ErrorAt(at, "unknown dtype '" + dtype + "'");
        precision.accumulate = *d;
      } else {
        return ErrorAt(key, "unknown precision field '" + field + "' (reason, accumulate, evidence)");
      }
      if (!Consume(",")) break;
    }
    PRECIS_RETURN_IF_ERROR(ExpectPunct("}"));
  }
  std::vector<Value*> outputs;
  for (auto& o : outs) {
    if (o.omitted) {
      outputs.push_back(nullptr);
      continue;
    }
    Value* v = scope.graph->NewValue(o.name);
    v->set_type(std::move(o.type));
    outputs.push_back(v);
  }
  Node* node = scope.graph->AddNode(domain, op, node_name, std::move(inputs), std::move(outputs), std::move(attrs));
  node->mutable_precision() = std::move(precision);
  return Status::Ok();
}

StatusOr<Attribute> Parser::ParseAttribute(const Scope& scope) {
  using K = Attribute::Kind;
  Attribute a;
  PRECIS_ASSIGN_OR_RETURN(a.name, ParseName("an attribute name"));
  PRECIS_RETURN_IF_ERROR(ExpectPunct("="));
  if (IsPunct("[")) {
    PRECIS_RETURN_IF_ERROR(ParseAttributeList(a, scope));
  } else if (Is(TK::kString)) {
    a.kind = K::kString;
    PRECIS_ASSIGN_OR_RETURN(a.s, ParseString());
  } else if (IsKeyword("tensor")) {
    a.kind = K::kTensor;
    PRECIS_ASSIGN_OR_RETURN(a.t, ParseTensorLiteral());
  } else if (IsKeyword("graph")) {
    a.kind = K::kGraph;
    PRECIS_ASSIGN_OR_RETURN(auto g, ParseGraph(&scope));
    a.graphs.push_back(std::move(g));
  } else if (IsKeyword("type")) {
    a.kind = K::kType;
    PRECIS_RETURN_IF_ERROR(Advance());
    PRECIS_RETURN_IF_ERROR(ExpectPunct("<"));
    PRECIS_ASSIGN_OR_RETURN(a.type, ParseType());
    PRECIS_RETURN_IF_ERROR(ExpectPunct(">"));
  } else if (Is(TK::kNumber) && tok_.text.find_first_of(".eEn") == std::string::npos) {
    a.kind = K::kInt;
    PRECIS_ASSIGN_OR_RETURN(a.i, ParseInt());
  } else {
    a.kind = K::kFloat;
    PRECIS_ASSIGN_OR_RETURN(a.f, ParseF32());
  }
  return a;
}

Status Parser::ParseAttributeList(Attribute& a, const Scope& scope) {
  using K = Attribute::Kind;
  PRECIS_RETURN_IF_ERROR(ExpectPunct("["));
  if (Consume("]")) {
    PRECIS_RETURN_IF_ERROR(ExpectPunct(":"));
    Token kind_tok = tok_;
    PRECIS_ASSIGN_OR_RETURN(std::string kind, ParseName("a list kind"));
    static const std::pair<const char*, K> kKinds[] = {
        {"floats", K::kFloats}, {"ints", K::kInts}, {"strings", K::kStrings},
        {"tensors", K::kTensors}, {"graphs", K::kGraphs}, {"types", K::kTypes}};
    for (const auto& [n, k] : kKinds)
      if (kind == n) {
        a.kind = k;
        return Status::Ok();
      }
    return ErrorAt(kind_tok, "unknown list kind '" + kind + "'");
  }
  // The first element decides the kind of the list.
  if (Is(TK::kString)) a.kind = K::kStrings;
  else if (IsKeyword("tensor")) a.kind = K::kTensors;
  else if (IsKeyword("graph")) a.kind = K::kGraphs;
  else if (IsKeyword("type")) a.kind = K::kTypes;
  else if (Is(TK::kNumber) && tok_.text.find_first_of(".eEn") == std::string::npos) a.kind = K::kInts;
  else a.kind = K::kFloats;
  while (!IsPunct("]")) {
    switch (a.kind) {
      case K::kStrings: { PRECIS_ASSIGN_OR_RETURN(std::string s, ParseString()); a.strings.push_back(std::move(s)); break; }
      case K::kTensors: { PRECIS_ASSIGN_OR_RETURN(Tensor t, ParseTensorLiteral()); a.tensors.push_back(std::move(t)); break; }
      case K::kGraphs: { PRECIS_ASSIGN_OR_RETURN(auto g, ParseGraph(&scope)); a.graphs.push_back(std::move(g)); break; }
      case K::kTypes: {
        PRECIS_RETURN_IF_ERROR(ExpectKeyword("type"));
        PRECIS_RETURN_IF_ERROR(ExpectPunct("<"));
        PRECIS_ASSIGN_OR_RETURN(Type t, ParseType());
        PRECIS_RETURN_IF_ERROR(ExpectPunct(">"));
        a.types.push_back(std::move(t));
        break;
      }
      case K::kInts: {
        if (Is(TK::kNumber) && tok_.text.find_first_of(".eEn") != std::string::npos)
          return Error("float in a list of ints");
        PRECIS_ASSIGN_OR_RETURN(int64_t v, ParseInt());
        a.ints.push_back(v);
        break;
      }
      default: { PRECIS_ASSIGN_OR_RETURN(float f, ParseF32()); a.floats.push_back(f); break; }
    }
    if (!Consume(",")) break;
  }
  return ExpectPunct("]");
}

}  // namespace

StatusOr<std::unique_ptr<Model>> ParseModel(std::string_view text, const ParseOptions& options) {
  Parser parser(text, options);
  return parser.ParseModel();
}

}  // namespace precis::ir
