// precis_import_bench: imports one ONNX model once and prints what it cost, as one JSON line.
//
// One import per process, because peak RSS (getrusage's ru_maxrss) is a high-water mark that
// never comes down: repeating imports in one process would measure the first one only.
// bench/import_bench.sh runs this several times per model and takes medians.
//
// The line holds the import wall time (steady_clock around ImportModelFile), the RSS before the
// import and the process peak, the resident anonymous and file-backed bytes after the import
// (anonymous pages are copies; file-backed pages are mapped weights that were touched), and
// the constant bytes of the model split into bytes views of mapped files and bytes the model
// owns. Usage:
//
//   precis_import_bench MODEL.onnx [--no-verify] [--keep-initializer-inputs]
//                       [--small-bytes N]
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/onnx/importer.h"

namespace {

struct Args {
  std::string model_path;
  precis::onnx::ImportOptions options;
  // Owned tensors below this size are "small" (the external-data export keeps tensors under
  // 1024 bytes inline, so those are expected to be owned).
  int64_t small_bytes = 1024;
};

struct ConstantBytes {
  int64_t count = 0;
  int64_t total = 0;
  int64_t viewed = 0;
  int64_t owned = 0;
  int64_t owned_large = 0;  // owned tensors of at least Args::small_bytes
  int64_t attribute = 0;    // tensor attributes (not constants), reported apart
};

int64_t PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}

// Reads "Key:   N kB" from /proc/self/status; -1 when absent (not Linux, old kernel).
int64_t ProcStatusBytes(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t key_len = std::strlen(key);
  while (std::getline(in, line)) {
    if (line.compare(0, key_len, key) == 0 && line.size() > key_len && line[key_len] == ':') {
      return std::strtoll(line.c_str() + key_len + 1, nullptr, 10) * 1024;
    }
  }
  return -1;
}

void CountTensor(const precis::ir::Tensor& tensor, int64_t small_bytes, ConstantBytes& bytes) {
  if (!tensor.has_data()) return;
  const int64_t size = tensor.ByteSize();
  ++bytes.count;
  bytes.total += size;
  if (tensor.buffer().is_view()) {
    bytes.viewed += size;
  } else {
    bytes.owned += size;
    if (size >= small_bytes) bytes.owned_large += size;
  }
}

ConstantBytes CountConstants(const precis::ir::Model& model, int64_t small_bytes) {
  ConstantBytes bytes;
  precis::ir::ForEachGraph(*model.graph, [&](const precis::ir::Graph& graph) {
    for (const precis::ir::Value* value : graph.constants()) {
      if (value->data() != nullptr) CountTensor(*value->data(), small_bytes, bytes);
    }
    // Initializers kept as inputs (keep_initializer_inputs) carry their weights as defaults.
    for (const precis::ir::Value* value : graph.inputs()) {
      if (value->data() != nullptr) CountTensor(*value->data(), small_bytes, bytes);
    }
    for (const auto& node : graph.nodes()) {
      for (const auto& attr : node->attributes()) {
        if (attr.kind == precis::ir::Attribute::Kind::kTensor && attr.t.has_data()) {
          bytes.attribute += attr.t.ByteSize();
        }
        for (const auto& t : attr.tensors) {
          if (t.has_data()) bytes.attribute += t.ByteSize();
        }
      }
    }
  });
  return bytes;
}

// Escapes a message for a JSON string.
std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

bool ParseArgs(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--no-verify") {
      args.options.verify = false;
    } else if (arg == "--keep-initializer-inputs") {
      args.options.keep_initializer_inputs = true;
    } else if (arg == "--small-bytes" && i + 1 < argc) {
      args.small_bytes = std::strtoll(argv[++i], nullptr, 10);
    } else if (!arg.empty() && arg[0] != '-' && args.model_path.empty()) {
      args.model_path = arg;
    } else {
      return false;
    }
  }
  return !args.model_path.empty();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, args)) {
    std::fprintf(stderr,
                 "usage: %s MODEL.onnx [--no-verify] [--keep-initializer-inputs] "
                 "[--small-bytes N]\n",
                 argv[0]);
    return 2;
  }
  const int64_t rss_before = ProcStatusBytes("VmRSS");
  const int64_t peak_before = PeakRssBytes();

  const auto start = std::chrono::steady_clock::now();
  auto model = precis::onnx::ImportModelFile(args.model_path, args.options);
  const auto stop = std::chrono::steady_clock::now();
  const double import_ms = std::chrono::duration<double, std::milli>(stop - start).count();
  const int64_t peak_after = PeakRssBytes();

  std::ostringstream line;
  line << "{\"model\":" << JsonString(args.model_path)
       << ",\"verify\":" << (args.options.verify ? "true" : "false");
  if (!model.ok()) {
    line << ",\"ok\":false,\"error\":" << JsonString(model.status().ToString()) << "}";
    std::printf("%s\n", line.str().c_str());
    return 1;
  }
  const ConstantBytes bytes = CountConstants(**model, args.small_bytes);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f", import_ms);
  line << ",\"ok\":true"
       << ",\"import_ms\":" << ms
       << ",\"rss_before_bytes\":" << rss_before
       << ",\"peak_rss_before_bytes\":" << peak_before
       << ",\"peak_rss_bytes\":" << peak_after
       << ",\"peak_rss_delta_bytes\":" << (peak_after - rss_before)
       << ",\"rss_anon_after_bytes\":" << ProcStatusBytes("RssAnon")
       << ",\"rss_file_after_bytes\":" << ProcStatusBytes("RssFile")
       << ",\"constants\":" << bytes.count
       << ",\"constant_bytes\":" << bytes.total
       << ",\"viewed_bytes\":" << bytes.viewed
       << ",\"owned_bytes\":" << bytes.owned
       << ",\"owned_large_bytes\":" << bytes.owned_large
       << ",\"small_bytes\":" << args.small_bytes
       << ",\"attribute_tensor_bytes\":" << bytes.attribute << "}";
  std::printf("%s\n", line.str().c_str());
  return 0;
}
