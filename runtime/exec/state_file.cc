// State files (see state_file.h): serialization, atomic replacement and validation. Parsing
// takes bytes (ParseStateFile) so that the fuzz target (tests/fuzz/state_fuzz.cc) needs no files.
#include "runtime/exec/state_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "runtime/base/hash.h"

namespace precis::rt {
namespace {

constexpr char kStateMagic[8] = {'P', 'R', 'E', 'C', 'I', 'S', 'S', 'T'};
constexpr uint32_t kStateVersion = 1;

template <typename T>
void Put(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}

// Bounds-checked reads over the file bytes.
class Reader {
 public:
  Reader(const uint8_t* data, size_t end) : data_(data), end_(end) {}
  template <typename T>
  bool Get(T* v) {
    if (end_ - pos_ < sizeof(T)) return false;
    std::memcpy(v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Bytes(uint64_t n, const uint8_t** p) {
    if (end_ - pos_ < n) return false;
    *p = data_ + pos_;
    pos_ += size_t(n);
    return true;
  }
  bool done() const { return pos_ == end_; }

 private:
  const uint8_t* data_;
  size_t end_, pos_ = 0;
};

// The byte size that a tensor of `dtype` and `dims` needs, or false when a dim is negative or the
// size does not fit in 63 bits.
bool TensorBytes(DataType dtype, const std::vector<int64_t>& dims, uint64_t* bytes) {
  uint64_t n = DataTypeSize(dtype);
  for (int64_t d : dims) {
    if (d < 0) return false;
    if (d > 0 && n > (uint64_t(1) << 62) / uint64_t(d)) return false;
    n *= uint64_t(d);
  }
  *bytes = n;
  return true;
}

Status WriteAll(int fd, const std::vector<uint8_t>& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) return Internal("cannot write '" + path + "': " + std::strerror(errno));
    done += size_t(n);
  }
  return Status::Ok();
}

}  // namespace

uint64_t StateSignature(const std::vector<TensorInfo>& state) {
  std::vector<uint8_t> key;
  for (const TensorInfo& t : state) {
    key.insert(key.end(), t.name.begin(), t.name.end());
    Put(key, uint8_t(0));
    Put(key, uint8_t(t.dtype));
    for (int64_t d : t.dims) Put(key, d);
    Put(key, int64_t(-1));
  }
  return HashBytes(key.data(), key.size());
}

std::vector<uint8_t> SerializeStateFile(uint64_t signature, const std::vector<StateRecord>& records) {
  std::vector<uint8_t> out(kStateMagic, kStateMagic + sizeof kStateMagic);
  Put(out, kStateVersion);
  Put(out, uint32_t(records.size()));
  Put(out, signature);
  for (const StateRecord& r : records) {
    Put(out, uint32_t(r.info.name.size()));
    out.insert(out.end(), r.info.name.begin(), r.info.name.end());
    Put(out, uint8_t(r.info.dtype));
    Put(out, uint32_t(r.info.dims.size()));
    for (int64_t d : r.info.dims) Put(out, d);
    Put(out, uint64_t(r.bytes.size()));
    out.insert(out.end(), r.bytes.begin(), r.bytes.end());
  }
  Put(out, HashBytes(out.data(), out.size()));
  return out;
}

Status WriteStateFile(const std::string& path, uint64_t signature, const std::vector<StateRecord>& records) {
  std::vector<uint8_t> out = SerializeStateFile(signature, records);
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return NotFound("cannot create '" + tmp + "': " + std::strerror(errno));
  Status s = WriteAll(fd, out, tmp);
  if (s.ok() && ::fsync(fd) != 0) s = Internal("cannot flush '" + tmp + "': " + std::strerror(errno));
  ::close(fd);
  if (s.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) s = Internal("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
  if (!s.ok()) std::remove(tmp.c_str());
  return s;
}

StatusOr<std::vector<StateRecord>> ParseStateFile(const uint8_t* data, size_t size, uint64_t signature, const std::string& name) {
  auto bad = [&](const std::string& why) { return InvalidArgument("state file '" + name + "' " + why); };
  constexpr size_t kHeader = sizeof kStateMagic + 4 + 4 + 8;
  if (size < kHeader + 8) return bad("is truncated (" + std::to_string(size) + " bytes)");
  if (std::memcmp(data, kStateMagic, sizeof kStateMagic) != 0) return bad("is not a Precis state file (wrong magic)");
  uint64_t stored = 0;
  std::memcpy(&stored, data + size - 8, 8);
  if (stored != HashBytes(data, size - 8)) return bad("fails its checksum: it is truncated or corrupted");
  Reader in(data, size - 8);
  const uint8_t* magic = nullptr;
  uint32_t version = 0, count = 0;
  uint64_t file_signature = 0;
  in.Bytes(sizeof kStateMagic, &magic);
  in.Get(&version);
  in.Get(&count);
  in.Get(&file_signature);
  if (version != kStateVersion) return bad("has format version " + std::to_string(version) + " (this runtime reads " + std::to_string(kStateVersion) + ")");
  if (file_signature != signature)
    return bad("holds the state of a different plan (its tensors' names, dtypes or shapes differ from this plan's)");
  std::vector<StateRecord> records;
  for (uint32_t i = 0; i < count; ++i) {
    StateRecord r;
    uint32_t name_len = 0, rank = 0;
    uint8_t dtype = 0;
    const uint8_t* p = nullptr;
    if (!in.Get(&name_len) || !in.Bytes(name_len, &p)) return bad("is malformed (tensor " + std::to_string(i) + ")");
    r.info.name.assign(reinterpret_cast<const char*>(p), name_len);
    if (!in.Get(&dtype) || !in.Get(&rank) || rank > 64) return bad("is malformed (tensor '" + r.info.name + "')");
    if (!IsValidDataType(dtype)) return bad("is malformed (tensor '" + r.info.name + "' has dtype code " + std::to_string(dtype) + ")");
    r.info.dtype = DataType(dtype);
    r.info.dims.resize(rank);
    for (int64_t& d : r.info.dims)
      if (!in.Get(&d)) return bad("is malformed (tensor '" + r.info.name + "')");
    uint64_t bytes = 0, need = 0;
    if (!TensorBytes(r.info.dtype, r.info.dims, &need)) return bad("is malformed (tensor '" + r.info.name + "' has bad dims)");
    if (!in.Get(&bytes) || bytes != need) return bad("is malformed (tensor '" + r.info.name + "' does not hold " + std::to_string(need) + " bytes)");
    if (!in.Bytes(bytes, &p)) return bad("is malformed (tensor '" + r.info.name + "')");
    r.bytes.assign(p, p + bytes);
    records.push_back(std::move(r));
  }
  if (!in.done()) return bad("has trailing bytes");
  return records;
}

StatusOr<std::vector<StateRecord>> ReadStateFile(const std::string& path, uint64_t signature) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot open state file '" + path + "'");
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return ParseStateFile(data.data(), data.size(), signature, path);
}

}  // namespace precis::rt
