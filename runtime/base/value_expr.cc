// Value expressions (value_expr.h): building, parsing, display and evaluation.
#include "runtime/base/value_expr.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "runtime/base/half.h"

namespace precis::value_expr {

namespace {

constexpr const char* kSymbolPrefix = "$x_";
constexpr int64_t kMaxValue = int64_t(1) << 50;  // as value symbols: no dim is larger

struct OpInfo {
  const char* name;
  int operands;
};
constexpr OpInfo kOps[] = {{"ceil", 1}, {"floor", 1}, {"neg", 1}, {"abs", 1}, {"relu", 1}, {"round", 1}, {"f32", 1}, {"f16", 1}, {"bf16", 1},
                           {"add", 2},  {"sub", 2},   {"mul", 2}, {"div", 2}, {"max", 2},  {"min", 2},   {"int", 1}, {"bool", 1}, {"rlen", 3}};

const OpInfo* FindOp(const std::string& t) {
  for (const OpInfo& o : kOps)
    if (t == o.name) return &o;
  return nullptr;
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    size_t end = text.find('_', start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

size_t CountTokens(const std::string& text) { return size_t(std::count(text.begin(), text.end(), '_')) + 1; }

bool ParseLeaf(const std::string& t, Leaf* leaf) {
  if (t.size() < 4 || (t[0] != 'i' && t[0] != 't')) return false;
  size_t e = t.find('e', 1);
  if (e == std::string::npos || e == 1 || e + 1 >= t.size() || e > 10 || t.size() - e > 10) return false;
  for (size_t k = 1; k < t.size(); ++k)
    if (k != e && (t[k] < '0' || t[k] > '9')) return false;
  leaf->kind = t[0];
  leaf->index = std::stoll(t.substr(1, e - 1));
  leaf->element = std::stoll(t.substr(e + 1));
  return true;
}

bool ParseConstant(const std::string& t, double* v) {
  if (t.size() != 17 || t[0] != 'c') return false;
  uint64_t bits = 0;
  for (size_t k = 1; k < 17; ++k) {
    char ch = t[k];
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (d < 0) return false;
    bits = bits << 4 | uint64_t(d);
  }
  std::memcpy(v, &bits, 8);
  return true;
}


}  // namespace

// A parsed expression (value_expr.h).
struct ExprNode {
  enum Kind { kLeaf, kConst, kOp } kind = kLeaf;
  Leaf leaf;
  double value = 0;
  const OpInfo* op = nullptr;
  std::vector<std::unique_ptr<ExprNode>> args;
};

namespace {

std::unique_ptr<ExprNode> ParseAt(const std::vector<std::string>& tokens, size_t& pos, int depth) {
  if (pos >= tokens.size() || depth > int(kMaxTokens)) return nullptr;
  const std::string& t = tokens[pos++];
  auto n = std::make_unique<ExprNode>();
  if (ParseLeaf(t, &n->leaf)) return n;
  if (ParseConstant(t, &n->value)) {
    n->kind = ExprNode::kConst;
    return n;
  }
  n->kind = ExprNode::kOp;
  n->op = FindOp(t);
  if (!n->op) return nullptr;
  for (int k = 0; k < n->op->operands; ++k) {
    auto a = ParseAt(tokens, pos, depth + 1);
    if (!a) return nullptr;
    n->args.push_back(std::move(a));
  }
  return n;
}

std::unique_ptr<ExprNode> Parse(const std::string& text) {
  std::vector<std::string> tokens = Split(text);
  if (tokens.size() > kMaxTokens + 4) return nullptr;
  size_t pos = 0;
  auto n = ParseAt(tokens, pos, 0);
  return n && pos == tokens.size() ? std::move(n) : nullptr;
}

// A symbol's conversion node (int, bool, rlen).
std::unique_ptr<ExprNode> ParseSymbol(const std::string& name) {
  if (!IsSymbol(name)) return nullptr;
  auto n = Parse(name.substr(std::strlen(kSymbolPrefix)));
  if (!n || n->kind != ExprNode::kOp || (std::strcmp(n->op->name, "int") != 0 && std::strcmp(n->op->name, "bool") != 0 && std::strcmp(n->op->name, "rlen") != 0))
    return nullptr;
  return n;
}

void CollectLeaves(const ExprNode& n, std::vector<Leaf>& out) {
  if (n.kind == ExprNode::kLeaf) out.push_back(n.leaf);
  for (const auto& a : n.args) CollectLeaves(*a, out);
}

std::string Write(const ExprNode& n, const std::function<std::string(const Leaf&)>& map) {
  if (n.kind == ExprNode::kLeaf) return map(n.leaf);
  if (n.kind == ExprNode::kConst) return Constant(n.value);
  std::string s = n.op->name;
  for (const auto& a : n.args) s += "_" + Write(*a, map);
  return s;
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string Show(const ExprNode& n, const std::function<std::string(const Leaf&)>& leaf_name) {
  if (n.kind == ExprNode::kLeaf) return leaf_name(n.leaf);
  if (n.kind == ExprNode::kConst) return Number(n.value);
  const std::string op = n.op->name;
  std::vector<std::string> a;
  for (const auto& x : n.args) a.push_back(Show(*x, leaf_name));
  static const char* const kInfix[][2] = {{"add", "+"}, {"sub", "-"}, {"mul", "*"}, {"div", "/"}};
  for (const auto& [name, sym] : kInfix)
    if (op == name) return "(" + a[0] + sym + a[1] + ")";
  if (op == "f32") return a[0];  // the inputs of these plans are FP32: writing it adds nothing
  if (op == "neg") return "-" + a[0];
  if (op == "rlen") return "range_length(" + a[0] + "," + a[1] + "," + a[2] + ")";
  std::string s = op + "(";
  for (size_t k = 0; k < a.size(); ++k) s += (k ? "," : "") + a[k];
  return s + ")";
}

double RoundTo(const char* type, double x) {
  float f = float(x);  // correctly rounded: double holds every sum, difference, product and quotient's rounding to FP32 exactly
  if (std::strcmp(type, "f16") == 0) return HalfToFloat(FloatToHalf(f));
  if (std::strcmp(type, "bf16") == 0) return Bf16ToFloat(FloatToBf16(f));
  return f;
}

StatusOr<double> Eval(const ExprNode& n, const std::function<double(const Leaf&)>& value, const std::string& display) {
  if (n.kind == ExprNode::kLeaf) return value(n.leaf);
  if (n.kind == ExprNode::kConst) return n.value;
  std::vector<double> a;
  for (const auto& x : n.args) {
    PRECIS_ASSIGN_OR_RETURN(double v, Eval(*x, value, display));
    a.push_back(v);
  }
  const std::string op = n.op->name;
  auto to_int = [&](double x) -> StatusOr<double> {
    if (!std::isfinite(x)) return InvalidArgument("the size " + display + " is " + Number(x) + ", computed from the input values");
    return std::clamp(std::trunc(x), -double(kMaxValue), double(kMaxValue));
  };
  if (op == "ceil") return std::ceil(a[0]);
  if (op == "floor") return std::floor(a[0]);
  if (op == "neg") return -a[0];
  if (op == "abs") return std::fabs(a[0]);
  if (op == "relu") return a[0] < 0 ? 0.0 : a[0];  // NaN stays NaN
  if (op == "round") return std::nearbyint(a[0]);   // half to even
  if (op == "f32" || op == "f16" || op == "bf16") return RoundTo(n.op->name, a[0]);
  if (op == "add") return a[0] + a[1];
  if (op == "sub") return a[0] - a[1];
  if (op == "mul") return a[0] * a[1];
  if (op == "div") return a[0] / a[1];
  if (op == "max" || op == "min") {
    if (std::isnan(a[0]) || std::isnan(a[1])) return std::nan("");
    return op == "max" ? std::max(a[0], a[1]) : std::min(a[0], a[1]);
  }
  if (op == "int") return to_int(a[0]);
  if (op == "bool") return a[0] != 0 ? 1.0 : 0.0;
  // rlen: Range's length, as the kernel counts it.
  if (a[2] == 0) return InvalidArgument("the size " + display + " has a Range delta of 0");
  PRECIS_ASSIGN_OR_RETURN(double count, to_int(std::ceil((a[1] - a[0]) / a[2])));
  return std::max(count, 0.0);
}

}  // namespace

std::string Input(size_t input, size_t element) { return "i" + std::to_string(input) + "e" + std::to_string(element); }

std::string Constant(double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, 8);
  char buf[24];
  std::snprintf(buf, sizeof buf, "c%016" PRIx64, bits);
  return buf;
}

std::optional<std::string> Apply(const std::string& op, const std::vector<std::string>& args) {
  const OpInfo* o = FindOp(op);
  if (!o || size_t(o->operands) != args.size()) return std::nullopt;
  std::string s = op;
  size_t tokens = 1;
  for (const std::string& a : args) {
    s += "_" + a;
    tokens += CountTokens(a);
  }
  if (tokens > kMaxTokens) return std::nullopt;
  return s;
}

std::optional<std::string> Symbol(const std::string& op, const std::vector<std::string>& args) {
  if (op != "int" && op != "bool" && op != "rlen") return std::nullopt;
  auto e = Apply(op, args);
  if (!e) return std::nullopt;
  return kSymbolPrefix + *e;
}

bool IsSymbol(const std::string& name) { return name.compare(0, std::strlen(kSymbolPrefix), kSymbolPrefix) == 0; }

std::optional<std::vector<Leaf>> Leaves(const std::string& text) {
  auto n = IsSymbol(text) ? ParseSymbol(text) : Parse(text);
  if (!n) return std::nullopt;
  std::vector<Leaf> out;
  CollectLeaves(*n, out);
  return out;
}

std::optional<std::string> MapLeaves(const std::string& text, const std::function<std::string(const Leaf&)>& map) {
  bool symbol = IsSymbol(text);
  auto n = symbol ? ParseSymbol(text) : Parse(text);
  if (!n) return std::nullopt;
  return (symbol ? kSymbolPrefix : "") + Write(*n, map);
}

std::optional<std::string> Display(const std::string& name, const std::function<std::string(const Leaf&)>& leaf_name) {
  auto n = ParseSymbol(name);
  if (!n) return std::nullopt;
  return Show(*n, leaf_name);
}

std::optional<Expression> Expression::Parse(const std::string& name) {
  std::shared_ptr<const ExprNode> root = ParseSymbol(name);
  if (!root) return std::nullopt;
  Expression e;
  CollectLeaves(*root, e.leaves_);
  e.root_ = std::move(root);
  return e;
}

StatusOr<int64_t> Expression::Evaluate(const std::function<double(const Leaf&)>& value, const std::string& display) const {
  PRECIS_ASSIGN_OR_RETURN(double v, Eval(*root_, value, display));
  return int64_t(v);
}

StatusOr<int64_t> Evaluate(const std::string& name, const std::function<double(const Leaf&)>& value, const std::string& display) {
  auto e = Expression::Parse(name);
  if (!e) return InvalidArgument("bad value expression '" + name + "'");
  return e->Evaluate(value, display);
}

}  // namespace precis::value_expr
