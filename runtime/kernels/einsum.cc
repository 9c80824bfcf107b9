// Einsum equations and loop nests (see einsum.h): one parser for the CPU and CUDA kernels and the
// compiler's shape inference.
#include "runtime/kernels/einsum.h"

#include <algorithm>
#include <array>

namespace precis::rt {

namespace {

int LetterLabel(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

std::string LabelName(int l) { return std::string(1, char(l < 26 ? 'A' + l : 'a' + (l - 26))); }

struct Term {
  std::vector<int> letters;  // labels before the ellipsis, then -1 for it, then labels after
  bool ellipsis = false;
};

StatusOr<Term> ParseTerm(const std::string& s) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (s.compare(i, 3, "...") != 0 || t.ellipsis) return InvalidArgument("einsum term '" + s + "' has a malformed ellipsis");
      t.ellipsis = true;
      t.letters.push_back(-1);
      i += 2;
      continue;
    }
    int l = LetterLabel(s[i]);
    if (l < 0) return InvalidArgument("einsum term '" + s + "' has the character '" + s.substr(i, 1) + "'");
    t.letters.push_back(l);
  }
  return t;
}

// Expands a term's ellipsis into `e` labels right-aligned in an ellipsis of `total` dims.
std::vector<int> Expand(const Term& t, int e, int total) {
  std::vector<int> out;
  for (int l : t.letters) {
    if (l >= 0) out.push_back(l);
    else
      for (int j = 0; j < e; ++j) out.push_back(kEllipsisLabel + (total - e) + j);
  }
  return out;
}

}  // namespace

StatusOr<EinsumSpec> ParseEinsum(const std::string& equation, const std::vector<int64_t>& input_ranks) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    PRECIS_ASSIGN_OR_RETURN(Term t, ParseTerm(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != input_ranks.size())
    return InvalidArgument("equation '" + equation + "' has " + std::to_string(terms.size()) + " operand terms for " +
                           std::to_string(input_ranks.size()) + " inputs");
  EinsumSpec spec;
  std::vector<int> ellipsis_dims(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t letters = int64_t(terms[i].letters.size()) - (terms[i].ellipsis ? 1 : 0);
    int64_t e = input_ranks[i] - letters;
    if (e < 0 || (!terms[i].ellipsis && e != 0))
      return InvalidArgument("equation '" + equation + "': operand " + std::to_string(i) + " has rank " +
                             std::to_string(input_ranks[i]) + ", but its term has " + std::to_string(letters) + " letters");
    ellipsis_dims[i] = int(e);
    spec.ellipsis_rank = std::max(spec.ellipsis_rank, int(e));
  }
  std::array<int, kEllipsisLabel> count{};
  for (size_t i = 0; i < terms.size(); ++i) {
    spec.inputs.push_back(Expand(terms[i], ellipsis_dims[i], spec.ellipsis_rank));
    for (int l : terms[i].letters)
      if (l >= 0) ++count[size_t(l)];
  }
  if (arrow == std::string::npos) {
    for (int j = 0; j < spec.ellipsis_rank; ++j) spec.output.push_back(kEllipsisLabel + j);
    for (int l = 0; l < kEllipsisLabel; ++l)
      if (count[size_t(l)] == 1) spec.output.push_back(l);
    return spec;
  }
  PRECIS_ASSIGN_OR_RETURN(Term out, ParseTerm(eq.substr(arrow + 2)));
  std::array<bool, kEllipsisLabel> used{};
  for (int l : out.letters) {
    if (l < 0) continue;
    if (count[size_t(l)] == 0 || used[size_t(l)])
      return InvalidArgument("equation '" + equation + "': output label '" + LabelName(l) + "'" +
                             (used[size_t(l)] ? " is repeated" : " does not appear in any operand"));
    used[size_t(l)] = true;
  }
  spec.output = Expand(out, spec.ellipsis_rank, spec.ellipsis_rank);
  return spec;
}

Status PlanEinsumLoops(const KernelArgs& args, const EinsumSpec& spec, EinsumLoops* loops) {
  EinsumLoops& p = *loops;
  p = EinsumLoops{};
  p.label_size.assign(size_t(kEllipsisLabel + spec.ellipsis_rank), -1);
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    for (size_t d = 0; d < spec.inputs[i].size(); ++d) {
      int l = spec.inputs[i][d];
      int64_t x = args.inputs[i]->dims[d];
      int64_t& s = p.label_size[size_t(l)];
      if (s < 0 || (l >= kEllipsisLabel && s == 1)) s = x;
      else if (s != x && !(l >= kEllipsisLabel && x == 1))
        return args.Error("operand " + std::to_string(i) + " dimension " + std::to_string(d) + " has size " + std::to_string(x) +
                          ", but its label has size " + std::to_string(s));
    }
  p.loop = spec.output;
  for (int l = 0; l < int(p.label_size.size()); ++l)
    if (p.label_size[size_t(l)] >= 0 && std::find(p.loop.begin(), p.loop.end(), l) == p.loop.end()) p.loop.push_back(l);
  p.n_out = spec.output.size();
  size_t L = p.loop.size(), n = args.inputs.size();
  p.sizes.resize(L);
  for (size_t j = 0; j < L; ++j) p.sizes[j] = p.label_size[size_t(p.loop[j])];
  p.strides.assign(n * L, 0);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& t = *args.inputs[i];
    int64_t stride = 1;  // dense row-major strides, innermost first
    for (size_t d = t.dims.size(); d-- > 0;) {
      size_t j = size_t(std::find(p.loop.begin(), p.loop.end(), spec.inputs[i][d]) - p.loop.begin());
      if (t.dims[d] != 1 || p.sizes[j] == 1) p.strides[i * L + j] += stride;
      stride *= t.dims[d];
    }
  }
  std::vector<int64_t> out_dims(p.sizes.begin(), p.sizes.begin() + int64_t(p.n_out));
  const Tensor* y = args.out(0);
  if (!y || out_dims != y->dims)
    return args.Error("output shape " + (y ? DimsToString(y->dims) : std::string("(none)")) + ", expected " + DimsToString(out_dims));
  return Status::Ok();
}

}  // namespace precis::rt
