// Checkpoint folders of `precis train` (see checkpoint.h): manifest writing and reading, the
// generation switch and the checks made before a checkpoint's state is loaded.
#include "tools/precis/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "compiler/ir/json_writer.h"
#include "runtime/base/hash.h"
#include "runtime/plan/plan_format.h"

namespace precis::tools {
namespace {

constexpr int kManifestFormat = 1;

std::string Hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}

// The raw token after "key": in the manifest's top level (everything before "training", the
// nested object written last), or empty when absent. Strings keep their quotes.
std::string Field(const std::string& json, const std::string& key) {
  std::string top = json.substr(0, json.find("\"training\":"));
  size_t at = top.find("\"" + key + "\":");
  if (at == std::string::npos) return "";
  size_t begin = top.find_first_not_of(' ', at + key.size() + 3);
  if (begin == std::string::npos) return "";
  size_t end = top[begin] == '"' ? top.find('"', begin + 1) + 1 : top.find_first_of(",}", begin);
  return end == std::string::npos || end == 0 ? "" : top.substr(begin, end - begin);
}

Status WriteAll(int fd, const char* data, size_t size, const std::string& path) {
  for (size_t done = 0; done < size;) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0) return Internal("cannot write '" + path + "': " + std::strerror(errno));
    done += size_t(n);
  }
  return Status::Ok();
}

// Writes and flushes `text`; with kill_after < its size, writes that many bytes and kills the
// process (the test hook of an interrupted save).
Status WriteFileSynced(const std::string& path, const std::string& text, size_t kill_after) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return NotFound("cannot create '" + path + "': " + std::strerror(errno));
  if (kill_after < text.size()) {
    (void)WriteAll(fd, text.data(), kill_after, path);
    ::fsync(fd);
    std::raise(SIGKILL);
  }
  Status s = WriteAll(fd, text.data(), text.size(), path);
  if (s.ok() && ::fsync(fd) != 0) s = Internal("cannot flush '" + path + "': " + std::strerror(errno));
  ::close(fd);
  return s;
}

void SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// The checksum a state file ends with (state_file.h: u64 HashBytes of everything before).
StatusOr<uint64_t> StateFileChecksum(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return NotFound("cannot open state file '" + path + "'");
  std::streamoff size = f.tellg();
  if (size < 8) return InvalidArgument("state file '" + path + "' is truncated (" + std::to_string(size) + " bytes)");
  uint64_t sum = 0;
  f.seekg(size - 8);
  f.read(reinterpret_cast<char*>(&sum), 8);
  if (!f) return InvalidArgument("cannot read state file '" + path + "'");
  return sum;
}

}  // namespace

StatusOr<PlanFileInfo> ReadPlanFileInfo(const std::string& plan_path) {
  std::ifstream f(plan_path, std::ios::binary);
  if (!f) return NotFound("cannot open plan '" + plan_path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  PRECIS_ASSIGN_OR_RETURN(plan::PlanView view, plan::ValidatePlan(bytes.data(), bytes.size()));
  PlanFileInfo info;
  info.hash = HashBytes(bytes.data(), bytes.size());
  if (view.meta->training_config()) info.training_config = view.meta->training_config()->str();
  if (view.meta->source_model()) info.source_model.assign(view.meta->source_model()->begin(), view.meta->source_model()->end());
  return info;
}

Status SaveCheckpoint(const Session& s, const std::string& dir, const std::string& plan_path, uint64_t plan_hash,
                      const std::string& training_config, const CheckpointPosition& p) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return NotFound("cannot create checkpoint folder '" + dir + "': " + ec.message());
  std::string state_name = "state-" + std::to_string(p.step) + ".bin";
  PRECIS_RETURN_IF_ERROR(s.SaveState(dir + "/" + state_name));
  PRECIS_ASSIGN_OR_RETURN(uint64_t checksum, StateFileChecksum(dir + "/" + state_name));
  char lr[32];
  std::snprintf(lr, sizeof lr, "%.9g", p.lr);
  std::string m = "{\"format\": " + std::to_string(kManifestFormat) + ", \"plan\": " + ir::JsonEscape(plan_path) + ", \"plan_hash\": \"" + Hex(plan_hash) +
                  "\", \"step\": " + std::to_string(p.step) + ", \"epoch\": " + std::to_string(p.epoch) +
                  ", \"batch_in_epoch\": " + std::to_string(p.batch_in_epoch) + ", \"batches_per_epoch\": " + std::to_string(p.batches_per_epoch) +
                  ", \"batch_size\": " + std::to_string(p.batch_size) + ", \"samples\": " + std::to_string(p.samples) +
                  ", \"seed\": " + std::to_string(p.seed) + ", \"shuffle\": " + (p.shuffle ? "true" : "false") +
                  ", \"schedule_step\": " + std::to_string(p.step) + ", \"lr\": " + lr +
                  ", \"rng\": \"plan state (no host random state: data order derives from seed and epoch)\"" +
                  ", \"state_file\": " + ir::JsonEscape(state_name) + ", \"state_checksum\": \"" + Hex(checksum) + "\"" +
                  ", \"training\": " + (training_config.empty() ? "{}" : training_config) + "}\n";
  size_t kill_after = std::string::npos;
  if (const char* hook = std::getenv("PRECIS_TEST_KILL_IN_CHECKPOINT"); hook && std::atoll(hook) == p.step) kill_after = m.size() / 2;
  std::string tmp = dir + "/manifest.json.tmp";
  PRECIS_RETURN_IF_ERROR(WriteFileSynced(tmp, m, kill_after));
  if (std::rename(tmp.c_str(), (dir + "/manifest.json").c_str()) != 0)
    return Internal("cannot rename '" + tmp + "' to manifest.json: " + std::strerror(errno));
  SyncDirectory(dir);
  // Older generations (and leftovers of interrupted saves) go only once the manifest names the new one.
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name != state_name && name.rfind("state-", 0) == 0) fs::remove(e.path(), ec);
  }
  return Status::Ok();
}

StatusOr<CheckpointPosition> LoadCheckpoint(Session& s, const std::string& dir, uint64_t plan_hash) {
  std::string path = dir + "/manifest.json";
  std::ifstream f(path);
  if (!f) return NotFound("'" + dir + "' holds no checkpoint (no manifest.json)");
  std::string m((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) { return InvalidArgument("checkpoint manifest '" + path + "' " + why); };
  auto integer = [&](const std::string& key, int64_t* out) -> Status {
    std::string v = Field(m, key);
    char* end = nullptr;
    *out = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end) return bad("is malformed: no integer \"" + key + "\"");
    return Status::Ok();
  };
  int64_t format = 0;
  PRECIS_RETURN_IF_ERROR(integer("format", &format));
  if (format != kManifestFormat)
    return bad("has format " + std::to_string(format) + " (this precis reads format " + std::to_string(kManifestFormat) + ")");
  std::string hash = Field(m, "plan_hash");
  if (hash.size() != 18) return bad("is malformed: no \"plan_hash\"");
  if (hash.substr(1, 16) != Hex(plan_hash))
    return InvalidArgument("checkpoint '" + dir + "' was written for another plan (plan hash " + hash.substr(1, 16) + ", this plan's is " + Hex(plan_hash) +
                           "): resume and export need the plan it was trained with");
  CheckpointPosition p;
  int64_t seed = 0;
  PRECIS_RETURN_IF_ERROR(integer("step", &p.step));
  PRECIS_RETURN_IF_ERROR(integer("epoch", &p.epoch));
  PRECIS_RETURN_IF_ERROR(integer("batch_in_epoch", &p.batch_in_epoch));
  PRECIS_RETURN_IF_ERROR(integer("batches_per_epoch", &p.batches_per_epoch));
  PRECIS_RETURN_IF_ERROR(integer("batch_size", &p.batch_size));
  PRECIS_RETURN_IF_ERROR(integer("samples", &p.samples));
  PRECIS_RETURN_IF_ERROR(integer("seed", &seed));
  p.seed = uint64_t(seed);
  std::string shuffle = Field(m, "shuffle");
  if (shuffle != "true" && shuffle != "false") return bad("is malformed: no \"shuffle\"");
  p.shuffle = shuffle == "true";
  p.lr = std::atof(Field(m, "lr").c_str());
  std::string state = Field(m, "state_file"), checksum = Field(m, "state_checksum");
  if (state.size() < 3 || checksum.size() != 18 || state.find('/') != std::string::npos) return bad("is malformed: no \"state_file\" or \"state_checksum\"");
  std::string state_path = dir + "/" + state.substr(1, state.size() - 2);
  PRECIS_ASSIGN_OR_RETURN(uint64_t actual, StateFileChecksum(state_path));
  if (Hex(actual) != checksum.substr(1, 16))
    return InvalidArgument("checkpoint '" + dir + "': state file '" + state_path + "' does not carry the checksum its manifest records: it is corrupted or truncated");
  PRECIS_RETURN_IF_ERROR(s.LoadState(state_path));
  return p;
}

}  // namespace precis::tools
