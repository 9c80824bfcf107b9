// Import corpus check: every model.onnx under the given corpus folders must import, verify and
// round-trip through the text form (by reference with constants resolved, and fully inline,
// bytewise), and print deterministically. A model may instead be refused with Unimplemented
// only when it is listed, with its reason, in the expected-unsupported file; every such case is
// printed. Any other failure, an unlisted refusal, or a listed case that now imports fails the
// test.
//
// usage: import_corpus_test EXPECTED_UNSUPPORTED.txt LABEL=DIR [LABEL=DIR ...]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <ranges>
#include <set>
#include <unordered_map>

#include "compiler/ir/compare.h"
#include "compiler/ir/text.h"
#include "compiler/onnx/importer.h"

namespace fs = std::filesystem;
using namespace precis;

namespace {

void CollectTensors(const ir::Graph& g, std::unordered_map<uint64_t, ir::Tensor>& out) {
  ir::ForEachGraph(g, [&](const ir::Graph& sub) {
    for (const ir::Value* v : sub.values() | std::views::transform([](const auto& p) { return p.get(); }))
      if (v->data()) out.emplace(v->data()->ContentHash(), *v->data());
    for (const auto& n : sub.nodes())
      for (const auto& a : n->attributes()) {
        if (a.kind == ir::Attribute::Kind::kTensor) out.emplace(a.t.ContentHash(), a.t);
        for (const auto& t : a.tensors) out.emplace(t.ContentHash(), t);
      }
  });
}

// Empty string: the model round-trips; otherwise what went wrong.
std::string RoundTrip(const ir::Model& model) {
  std::string why;
  std::string text = ir::PrintModel(model);
  std::unordered_map<uint64_t, ir::Tensor> tensors;
  CollectTensors(*model.graph, tensors);
  ir::ParseOptions po;
  po.resolve = [&](ir::DType, const std::vector<int64_t>&, uint64_t hash) -> std::optional<ir::Tensor> {
    auto it = tensors.find(hash);
    if (it == tensors.end()) return std::nullopt;
    return it->second;
  };
  auto parsed = ir::ParseModel(text, po);
  if (!parsed.ok()) return "text does not parse back: " + parsed.status().ToString();
  if (!ir::ModelsEqual(model, **parsed, &why)) return "parsed text differs: " + why;
  if (ir::PrintModel(**parsed) != text) return "printing is not deterministic";
  ir::PrintOptions full;
  full.inline_limit = -1;
  auto inline_parsed = ir::ParseModel(ir::PrintModel(model, full));
  if (!inline_parsed.ok()) return "inline text does not parse back: " + inline_parsed.status().ToString();
  if (!ir::ModelsEqual(model, **inline_parsed, &why)) return "inline text differs: " + why;
  return "";
}

std::map<std::string, std::string> ReadExpected(const std::string& path) {
  std::map<std::string, std::string> expected;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto sep = line.find(' ');
    expected[line.substr(0, sep)] = sep == std::string::npos ? "" : line.substr(sep + 1);
  }
  return expected;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s EXPECTED_UNSUPPORTED.txt LABEL=DIR...\n", argv[0]);
    return 2;
  }
  if (!std::ifstream(argv[1])) {
    std::fprintf(stderr, "cannot read the expected-unsupported list %s\n", argv[1]);
    return 2;
  }
  auto expected = ReadExpected(argv[1]);
  int passed = 0, unsupported = 0, failed = 0, total = 0;
  std::set<std::string> seen_unsupported;
  std::printf("%-14s %6s %6s %11s %6s\n", "corpus", "cases", "pass", "unsupported", "fail");
  std::vector<std::string> problems, unsupported_lines;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    auto eq = arg.find('=');
    std::string label = arg.substr(0, eq), dir = arg.substr(eq + 1);
    if (eq == std::string::npos || !fs::is_directory(dir)) {
      std::printf("%-14s missing corpus folder %s\n", label.c_str(), dir.c_str());
      problems.push_back(label + ": corpus folder " + dir + " is missing (is the corpus installed?)");
      continue;
    }
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(dir))
      if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
    if (cases.empty()) problems.push_back(label + ": no cases (folders with a model.onnx) under " + dir);
    std::sort(cases.begin(), cases.end());
    int c_pass = 0, c_unsup = 0, c_fail = 0;
    for (const auto& c : cases) {
      std::string id = label + "/" + c.filename().string();
      std::string model_path = (c / "model.onnx").string();
      auto model = onnx::ImportModelFile(model_path);
      std::string problem;
      if (!model.ok()) {
        if (model.status().code() == StatusCode::kUnimplemented) {
          seen_unsupported.insert(id);
          std::string reason = model.status().message();
          if (reason.rfind(model_path + ": ", 0) == 0) reason = reason.substr(model_path.size() + 2);
          unsupported_lines.push_back(id + " " + reason);
          if (!expected.count(id)) problem = "refused but not listed as expected: " + model.status().ToString();
          else ++c_unsup;
        } else {
          problem = "import failed: " + model.status().ToString();
        }
      } else {
        problem = RoundTrip(**model);
        if (problem.empty() && expected.count(id)) problem = "listed as unsupported but imports now: update the list";
        if (problem.empty()) ++c_pass;
      }
      if (!problem.empty()) {
        ++c_fail;
        problems.push_back(id + ": " + problem);
      }
    }
    std::printf("%-14s %6zu %6d %11d %6d\n", label.c_str(), cases.size(), c_pass, c_unsup, c_fail);
    total += int(cases.size());
    passed += c_pass;
    unsupported += c_unsup;
    failed += c_fail;
  }
  std::printf("%-14s %6d %6d %11d %6d\n", "total", total, passed, unsupported, failed);
  if (!unsupported_lines.empty()) {
    std::printf("\nrefused as unsupported (each with its reason):\n");
    for (const auto& l : unsupported_lines) std::printf("  %s\n", l.c_str());
  }
  for (const auto& [id, reason] : expected)
    if (!seen_unsupported.count(id) && std::none_of(problems.begin(), problems.end(), [&](const std::string& p) { return p.rfind(id + ":", 0) == 0; }))
      problems.push_back(id + ": listed as unsupported but not found in any corpus");
  if (!problems.empty()) {
    std::printf("\nfailures:\n");
    for (const auto& p : problems) std::printf("  %s\n", p.c_str());
  }
  std::printf("\n%d passed, %d failed\n", passed + unsupported, int(problems.size()));
  return problems.empty() ? 0 : 1;
}
