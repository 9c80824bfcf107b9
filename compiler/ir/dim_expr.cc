// DimExpr (see dim_expr.h).
#include "compiler/ir/dim_expr.h"

#include <algorithm>
#include <cctype>

namespace precis::ir {
namespace {

bool AddOverflows(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool MulOverflows(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }

// Recursive descent over: expr := term (('+'|'-') term)*; term := factor ('*' factor)*;
// factor := integer | name | '(' expr ')' | '-' factor.
class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  std::optional<DimExpr> Run() {
    auto e = Expr();
    Skip();
    if (!e || pos_ != s_.size()) return std::nullopt;
    return e;
  }

 private:
  void Skip() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool Eat(char c) {
    Skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<DimExpr> Expr() {
    auto e = Term();
    while (e) {
      if (Eat('+')) {
        auto t = Term();
        e = t ? e->Add(*t) : std::nullopt;
      } else if (Eat('-')) {
        auto t = Term();
        e = t ? e->Sub(*t) : std::nullopt;
      } else {
        break;
      }
    }
    return e;
  }
  std::optional<DimExpr> Term() {
    auto e = Factor();
    while (e && Eat('*')) {
      auto f = Factor();
      e = f ? e->Mul(*f) : std::nullopt;
    }
    return e;
  }
  std::optional<DimExpr> Factor() {
    if (++depth_ > 64) return std::nullopt;  // hostile nesting
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    Skip();
    if (pos_ >= s_.size()) return std::nullopt;
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      auto e = Expr();
      if (!e || !Eat(')')) return std::nullopt;
      // "(P)/k": floor division by a positive constant.
      Skip();
      if (pos_ < s_.size() && s_[pos_] == '/') {
        ++pos_;
        Skip();
        int64_t k = 0;
        size_t digits = 0;
        while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
          if (MulOverflows(k, 10, &k) || AddOverflows(k, s_[pos_] - '0', &k)) return std::nullopt;
          ++pos_, ++digits;
        }
        if (!digits || k <= 0) return std::nullopt;
        return e->FloorDiv(k);
      }
      return e;
    }
    if (c == '-') {
      ++pos_;
      auto f = Factor();
      return f ? DimExpr().Sub(*f) : std::nullopt;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (MulOverflows(v, 10, &v) || AddOverflows(v, s_[pos_] - '0', &v)) return std::nullopt;
        ++pos_;
      }
      return DimExpr::Constant(v);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
      return DimExpr::Symbol(s_.substr(start, pos_ - start));
    }
    return std::nullopt;
  }

  const std::string& s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

DimExpr DimExpr::Constant(int64_t v) {
  DimExpr e;
  if (v) e.terms_[{}] = v;
  return e;
}

DimExpr DimExpr::Symbol(const std::string& name) {
  DimExpr e;
  e.terms_[{name}] = 1;
  return e;
}

std::optional<DimExpr> DimExpr::FromDim(const Dim& d) {
  if (d.is_static()) return Constant(d.value());
  if (d.is_symbolic()) return Parse(d.symbol());
  return std::nullopt;
}

std::optional<DimExpr> DimExpr::Parse(const std::string& text) { return Parser(text).Run(); }

int64_t DimExpr::constant() const {
  auto it = terms_.find({});
  return it == terms_.end() ? 0 : it->second;
}

Dim DimExpr::ToDim() const {
  if (is_constant()) return constant() >= 0 && constant() <= kMaxDim ? Dim::Static(constant()) : Dim();
  return Dim::Symbolic(ToString());
}

std::string DimExpr::ToString() const {
  if (terms_.empty()) return "0";
  std::vector<const std::pair<const Monomial, int64_t>*> order;
  for (const auto& t : terms_) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->first.size() > b->first.size(); });
  std::string s;
  for (const auto* t : order) {
    int64_t c = t->second;
    bool first = s.empty();
    if (c < 0) s += "-";
    else if (!first) s += "+";
    // |INT64_MIN| does not fit: print through unsigned.
    uint64_t magnitude = c < 0 ? uint64_t(0) - uint64_t(c) : uint64_t(c);
    if (t->first.empty()) {
      s += std::to_string(magnitude);
      continue;
    }
    if (magnitude != 1) s += std::to_string(magnitude) + "*";
    for (size_t i = 0; i < t->first.size(); ++i) s += (i ? "*" : "") + t->first[i];
  }
  return s;
}

std::set<std::string> DimExpr::Symbols() const {
  std::set<std::string> out;
  for (const auto& [m, c] : terms_)
    for (const std::string& f : m) {
      if (auto atom = ParseAtom(f)) {
        std::set<std::string> inner = atom->first.Symbols();
        out.insert(inner.begin(), inner.end());
      } else {
        out.insert(f);
      }
    }
  return out;
}

std::optional<std::pair<DimExpr, int64_t>> DimExpr::ParseAtom(const std::string& factor) {
  if (factor.empty() || factor[0] != '(') return std::nullopt;
  size_t slash = factor.rfind(")/");
  if (slash == std::string::npos) return std::nullopt;
  auto inner = Parse(factor.substr(1, slash - 1));
  std::string k = factor.substr(slash + 2);
  if (!inner || k.empty() || k.size() > 18 || k.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::make_pair(*inner, int64_t(std::stoll(k)));
}

std::vector<std::string> DimExpr::Atoms() const {
  std::vector<std::string> out;
  for (const auto& [m, c] : terms_)
    for (const std::string& f : m)
      if (auto atom = ParseAtom(f)) {
        for (const std::string& inner : atom->first.Atoms())
          if (std::find(out.begin(), out.end(), inner) == out.end()) out.push_back(inner);
        if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
      }
  return out;
}

std::optional<DimExpr> DimExpr::FloorDiv(int64_t k) const {
  if (k <= 0) return std::nullopt;
  if (k == 1) return *this;
  // this = k*Q + R with every coefficient of R in [0, k): floor(this/k) = Q + floor(R/k).
  DimExpr q, r;
  for (const auto& [m, c] : terms_) {
    int64_t qc = c / k, rc = c % k;
    if (rc < 0) rc += k, --qc;
    if (qc) q.terms_[m] = qc;
    if (rc) r.terms_[m] = rc;
  }
  if (r.is_constant()) return q;  // 0 <= R < k: floor(R/k) is 0
  DimExpr atom;
  atom.terms_[{"(" + r.ToString() + ")/" + std::to_string(k)}] = 1;
  return q.Add(atom);
}

std::optional<DimExpr> DimExpr::Add(const DimExpr& o) const {
  DimExpr r = *this;
  for (const auto& [m, c] : o.terms_) {
    int64_t sum;
    if (AddOverflows(r.terms_[m], c, &sum)) return std::nullopt;
    if (sum) r.terms_[m] = sum;
    else r.terms_.erase(m);
  }
  return r;
}

std::optional<DimExpr> DimExpr::Sub(const DimExpr& o) const {
  DimExpr neg;
  for (const auto& [m, c] : o.terms_) {
    int64_t n;
    if (MulOverflows(c, -1, &n)) return std::nullopt;
    neg.terms_[m] = n;
  }
  return Add(neg);
}

std::optional<DimExpr> DimExpr::Mul(const DimExpr& o) const {
  DimExpr r;
  for (const auto& [ma, ca] : terms_)
    for (const auto& [mb, cb] : o.terms_) {
      Monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      int64_t c, sum;
      if (MulOverflows(ca, cb, &c) || AddOverflows(r.terms_[m], c, &sum)) return std::nullopt;
      if (sum) r.terms_[m] = sum;
      else r.terms_.erase(m);
    }
  return r;
}

std::optional<DimExpr> DimExpr::DivExact(const DimExpr& o) const {
  if (o.terms_.size() != 1) return std::nullopt;
  const Monomial& dm = o.terms_.begin()->first;
  int64_t dc = o.terms_.begin()->second;
  DimExpr r;
  for (const auto& [m, c] : terms_) {
    if ((dc == -1 && c == INT64_MIN) || c % dc != 0) return std::nullopt;
    Monomial rest = m;
    for (const std::string& s : dm) {
      auto it = std::find(rest.begin(), rest.end(), s);
      if (it == rest.end()) return std::nullopt;
      rest.erase(it);
    }
    r.terms_[rest] = c / dc;
  }
  return r;
}

std::optional<int64_t> DimExpr::Evaluate(const std::map<std::string, int64_t>& symbols) const {
  int64_t total = 0;
  for (const auto& [m, c] : terms_) {
    int64_t v = c;
    for (const std::string& s : m) {
      int64_t f = 0;
      if (auto atom = ParseAtom(s)) {
        auto inner = atom->first.Evaluate(symbols);
        if (!inner) return std::nullopt;
        f = *inner / atom->second;
        if (*inner % atom->second < 0) --f;  // floor, also below 0
      } else {
        auto it = symbols.find(s);
        if (it == symbols.end()) return std::nullopt;
        f = it->second;
      }
      if (MulOverflows(v, f, &v)) return std::nullopt;
    }
    if (AddOverflows(total, v, &total)) return std::nullopt;
  }
  return total;
}

std::optional<DimExpr> DimProduct(const std::vector<Dim>& dims) {
  DimExpr p = DimExpr::Constant(1);
  for (const Dim& d : dims) {
    auto e = DimExpr::FromDim(d);
    if (!e) return std::nullopt;
    auto q = p.Mul(*e);
    if (!q) return std::nullopt;
    p = *q;
  }
  return p;
}

std::string SymbolName(const std::string& dim_param) {
  std::string s;
  for (char c : dim_param) s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  return s;
}

}  // namespace precis::ir
