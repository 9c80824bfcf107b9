// DimExpr (see dim_expr.h).
#include "compiler/ir/dim_expr.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace precis::ir {
namespace {

bool AddOverflows(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool MulOverflows(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }
bool IsIndicator(const std::string& factor) { return factor.rfind("eq(", 0) == 0 || factor.rfind("neg(", 0) == 0; }

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
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$') {
      size_t start = pos_++;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
      std::string name = s_.substr(start, pos_ - start);
      if (name == "$") return std::nullopt;
      bool binary = name == "div" || name == "min" || name == "max";
      if ((binary || name == "eq" || name == "neg") && pos_ < s_.size() && s_[pos_] == '(') {
        ++pos_;
        auto a = Expr();
        if (!a) return std::nullopt;
        if (binary) {
          if (!Eat(',')) return std::nullopt;
          auto b = Expr();
          if (!b || !Eat(')')) return std::nullopt;
          return name == "div" ? a->FloorDivBy(*b) : name == "min" ? DimExpr::Min(*a, *b) : DimExpr::Max(*a, *b);
        }
        if (!Eat(')')) return std::nullopt;
        return name == "eq" ? DimExpr::Eq(*a, DimExpr()) : DimExpr::Lt(*a, DimExpr());
      }
      return DimExpr::Symbol(name);
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
      if (auto atom = ParseDimAtom(f)) {
        for (const DimExpr* part : {&atom->p, &atom->q}) {
          std::set<std::string> inner = part->Symbols();
          out.insert(inner.begin(), inner.end());
        }
      } else {
        out.insert(f);
      }
    }
  return out;
}

std::optional<std::pair<DimExpr, int64_t>> DimExpr::ParseAtom(const std::string& factor) {
  auto atom = ParseDimAtom(factor);
  if (!atom || atom->kind != DimAtom::Kind::kFloor) return std::nullopt;
  return std::make_pair(atom->p, atom->k);
}

namespace {

// Atoms nest and every query re-reads them: a bounded per-thread memo of parsed atoms keeps
// the cost linear in the nesting depth instead of exponential.
std::optional<DimAtom> ParseDimAtomUncached(const std::string& factor);

}  // namespace

std::optional<DimAtom> ParseDimAtom(const std::string& factor) {
  if (factor.empty() || (factor[0] != '(' && factor.find('(') == std::string::npos)) return std::nullopt;
  thread_local std::unordered_map<std::string, std::optional<DimAtom>> memo;
  if (auto it = memo.find(factor); it != memo.end()) return it->second;
  auto atom = ParseDimAtomUncached(factor);
  if (memo.size() > 4096) memo.clear();
  memo.emplace(factor, atom);
  return atom;
}

namespace {

std::optional<DimAtom> ParseDimAtomUncached(const std::string& factor) {
  DimAtom a;
  auto inner = [&](size_t from) { return factor.size() > from && factor.back() == ')' ? DimExpr::Parse(factor.substr(from, factor.size() - from - 1)) : std::nullopt; };
  if (factor.rfind("eq(", 0) == 0 || factor.rfind("neg(", 0) == 0) {
    a.kind = factor[0] == 'e' ? DimAtom::Kind::kEq : DimAtom::Kind::kNeg;
    auto p = inner(a.kind == DimAtom::Kind::kEq ? 3 : 4);
    if (!p) return std::nullopt;
    a.p = *p;
    return a;
  }
  if (factor.rfind("div(", 0) == 0 || factor.rfind("min(", 0) == 0 || factor.rfind("max(", 0) == 0) {
    // The comma at depth 0 splits P from Q.
    int depth = 0;
    for (size_t i = 4; i + 1 < factor.size(); ++i) {
      depth += factor[i] == '(' ? 1 : factor[i] == ')' ? -1 : 0;
      if (factor[i] != ',' || depth != 0) continue;
      auto p = DimExpr::Parse(factor.substr(4, i - 4));
      auto q = factor.back() == ')' ? DimExpr::Parse(factor.substr(i + 1, factor.size() - i - 2)) : std::nullopt;
      if (!p || !q) return std::nullopt;
      a.kind = factor[0] == 'd' ? DimAtom::Kind::kDiv : factor[1] == 'a' ? DimAtom::Kind::kMax : DimAtom::Kind::kMin;
      a.p = *p;
      a.q = *q;
      return a;
    }
    return std::nullopt;
  }
  if (factor.empty() || factor[0] != '(') return std::nullopt;
  size_t slash = factor.rfind(")/");
  if (slash == std::string::npos) return std::nullopt;
  auto p = DimExpr::Parse(factor.substr(1, slash - 1));
  std::string k = factor.substr(slash + 2);
  if (!p || k.empty() || k.size() > 18 || k.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  a.p = *p;
  a.k = int64_t(std::stoll(k));
  return a;
}

}  // namespace

std::vector<std::string> DimExpr::Atoms() const {
  std::vector<std::string> out;
  for (const auto& [m, c] : terms_)
    for (const std::string& f : m)
      if (auto atom = ParseDimAtom(f)) {
        for (const DimExpr* part : {&atom->p, &atom->q})
          for (const std::string& inner : part->Atoms())
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
      // An indicator (eq, neg) is its own square.
      m.erase(std::unique(m.begin(), m.end(), [](const std::string& x, const std::string& y) { return x == y && IsIndicator(x); }), m.end());
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
      if (auto atom = ParseDimAtom(s)) {
        auto p = atom->p.Evaluate(symbols);
        if (!p) return std::nullopt;
        switch (atom->kind) {
          case DimAtom::Kind::kEq: f = *p == 0; break;
          case DimAtom::Kind::kNeg: f = *p < 0; break;
          case DimAtom::Kind::kMin:
          case DimAtom::Kind::kMax: {
            auto q = atom->q.Evaluate(symbols);
            if (!q) return std::nullopt;
            f = atom->kind == DimAtom::Kind::kMin ? std::min(*p, *q) : std::max(*p, *q);
            break;
          }
          case DimAtom::Kind::kFloor:
          case DimAtom::Kind::kDiv: {
            auto q = atom->kind == DimAtom::Kind::kFloor ? std::optional<int64_t>(atom->k) : atom->q.Evaluate(symbols);
            if (!q) return std::nullopt;
            if (*q == -1 && *p == INT64_MIN) return std::nullopt;
            f = *q == 0 ? 0 : *p / *q - ((*p % *q != 0) && ((*p < 0) != (*q < 0)) ? 1 : 0);  // floor
            break;
          }
        }
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

namespace {

// Atom texts longer than this are refused (the dim becomes unknown): a shape computation that
// builds them is not worth following.
constexpr size_t kMaxAtomText = 1 << 16;

std::optional<DimExpr> AtomExpr(const std::string& text) {
  if (text.size() > kMaxAtomText) return std::nullopt;
  return DimExpr::Symbol(text);  // a factor like a symbol
}

int64_t Gcd(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a < 0 ? -a : a;
}

// d divided by the gcd of its coefficients (> 0), and negated when `fix_sign` and its first
// non-constant term is negative: the one text of eq(d) for d, 2d and -d.
std::optional<DimExpr> Normalized(const DimExpr& d, bool fix_sign) {
  int64_t g = 0;
  for (const auto& [m, c] : d.terms()) {
    if (c == INT64_MIN) return d;
    g = Gcd(g, c);
  }
  std::optional<DimExpr> r = d;
  if (g > 1) r = d.DivExact(DimExpr::Constant(g));
  if (!r || !fix_sign) return r;
  for (const auto& [m, c] : r->terms())
    if (!m.empty()) return c < 0 ? DimExpr().Sub(*r) : r;
  return r;
}


}  // namespace

namespace {

// Whether a factor (a symbol or an atom) is >= 0 for every binding; memoized like the atoms.
bool FactorNonNegative(const std::string& f);

}  // namespace

bool DimExpr::KnownNonNegative() const {
  for (const auto& [m, c] : terms_) {
    if (c < 0) return false;
    for (const std::string& f : m)
      if (!FactorNonNegative(f)) return false;
  }
  return true;
}

namespace {

bool FactorNonNegativeUncached(const std::string& f) {
  {
    {
      if (auto atom = ParseDimAtom(f)) {
        if (atom->kind == DimAtom::Kind::kEq || atom->kind == DimAtom::Kind::kNeg) return true;
        if (atom->kind == DimAtom::Kind::kMax && (atom->p.KnownNonNegative() || atom->q.KnownNonNegative())) return true;
        return atom->p.KnownNonNegative() && (atom->kind == DimAtom::Kind::kFloor || atom->q.KnownNonNegative());
      }
      return f[0] != '$';
    }
  }
}

bool FactorNonNegative(const std::string& f) {
  if (f.empty() || f[0] == '$') return false;
  if (f.find('(') == std::string::npos) return true;  // a dim symbol
  thread_local std::unordered_map<std::string, bool> memo;
  if (auto it = memo.find(f); it != memo.end()) return it->second;
  bool r = FactorNonNegativeUncached(f);
  if (memo.size() > 4096) memo.clear();
  memo.emplace(f, r);
  return r;
}

}  // namespace

bool DimExpr::HasValueSymbols() const {
  for (const std::string& s : Symbols())
    if (s[0] == '$') return true;
  return false;
}

std::string DimExpr::ValueSymbol(size_t input, size_t element) { return "$" + std::to_string(input) + "_" + std::to_string(element); }

std::string DimExpr::FloatValueSymbol(size_t input, size_t element, int64_t scale) {
  return ValueSymbol(input, element) + "_" + std::to_string(scale);
}

bool DimExpr::ParseValueSymbol(const std::string& name, size_t* input, size_t* element, int64_t* scale) {
  if (name.size() < 4 || name[0] != '$') return false;
  std::vector<std::string> parts;
  for (size_t start = 1;;) {
    size_t end = name.find('_', start);
    parts.push_back(name.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (parts.size() != 2 && parts.size() != 3) return false;
  for (const std::string& p : parts)
    if (p.empty() || p.size() > 9 || p.find_first_not_of("0123456789") != std::string::npos) return false;
  if (parts.size() == 3 && !scale) return false;
  *input = size_t(std::stoul(parts[0]));
  *element = size_t(std::stoul(parts[1]));
  if (scale) *scale = parts.size() == 3 ? int64_t(std::stoll(parts[2])) : 0;
  return parts.size() == 2 || *scale >= 1;
}

std::optional<DimExpr> DimExpr::Eq(const DimExpr& a, const DimExpr& b) {
  auto d = a.Sub(b);
  if (!d) return std::nullopt;
  if (d->is_constant()) return Constant(d->constant() == 0 ? 1 : 0);
  auto neg = DimExpr().Sub(*d);
  // Dims are >= 0: d >= 1 (or d <= -1) is never 0.
  if ((d->KnownNonNegative() && d->constant() > 0) || (neg && neg->KnownNonNegative() && neg->constant() > 0)) return Constant(0);
  auto n = Normalized(*d, true);
  if (!n) return std::nullopt;
  return AtomExpr("eq(" + n->ToString() + ")");
}

std::optional<DimExpr> DimExpr::Lt(const DimExpr& a, const DimExpr& b) {
  auto d = a.Sub(b);
  if (!d) return std::nullopt;
  if (d->is_constant()) return Constant(d->constant() < 0 ? 1 : 0);
  if (d->KnownNonNegative()) return Constant(0);
  auto neg = DimExpr().Sub(*d);
  if (neg && neg->KnownNonNegative() && neg->constant() > 0) return Constant(1);
  auto n = Normalized(*d, false);
  if (!n) return std::nullopt;
  return AtomExpr("neg(" + n->ToString() + ")");
}

std::optional<DimExpr> DimExpr::Select(const DimExpr& c, const DimExpr& a, const DimExpr& b) {
  if (c.is_constant()) return c.constant() ? a : b;
  if (a == b) return a;
  auto d = a.Sub(b);
  auto cd = d ? c.Mul(*d) : std::nullopt;
  return cd ? b.Add(*cd) : std::nullopt;
}

namespace {

// min or max: the operand where the order is known, else an atom with its operands in text order.
std::optional<DimExpr> MinMax(const DimExpr& a, const DimExpr& b, bool min) {
  auto lt = DimExpr::Lt(a, b);
  if (!lt) return std::nullopt;
  if (lt->is_constant()) return (lt->constant() != 0) == min ? a : b;
  auto le = DimExpr::Lt(b, a);
  if (le && le->is_constant() && le->constant() == 0) return min ? a : b;  // a <= b
  std::string x = a.ToString(), y = b.ToString();
  if (y < x) std::swap(x, y);
  return AtomExpr(std::string(min ? "min(" : "max(") + x + "," + y + ")");
}

}  // namespace

std::optional<DimExpr> DimExpr::Min(const DimExpr& a, const DimExpr& b) { return MinMax(a, b, true); }

std::optional<DimExpr> DimExpr::Max(const DimExpr& a, const DimExpr& b) { return MinMax(a, b, false); }

std::optional<DimExpr> DimExpr::FloorDivBy(const DimExpr& q) const {
  if (q.is_constant()) {
    int64_t k = q.constant();
    if (k == 0) return Constant(0);
    if (k > 0) return FloorDiv(k);
    if (k == INT64_MIN) return std::nullopt;
    auto neg = DimExpr().Sub(*this);
    return neg ? neg->FloorDiv(-k) : std::nullopt;  // floor(p / k) = floor(-p / -k)
  }
  // Exact division keeps dims short; with value symbols q may be 0 at run time, where div gives 0.
  if (!q.HasValueSymbols())
    if (auto exact = DivExact(q)) return exact;
  return AtomExpr("div(" + ToString() + "," + q.ToString() + ")");
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
