// Hostile inputs to the readers the fuzz targets (tests/fuzz) cover: state files, .npy/.npz/.pb
// tensor files, and the plans the plan fuzzer found crashing a kernel's Init. Each must be refused
// with a message naming the problem (or, for a state file, parse back exactly). The plan inputs
// are the fuzzer's own, committed as tests/fuzz/plan_seeds/crash-*.plan so that every fuzz run
// re-checks them under the sanitizers too.
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "precis/session.h"
#include "runtime/base/hash.h"
#include "runtime/exec/state_file.h"
#include "runtime/plan/plan_format.h"
#include "tests/runtime/plan_test_util.h"
#include "tools/precis/tensor_io.h"

namespace precis {
namespace {

// --- state files -------------------------------------------------------------------------------

std::vector<rt::StateRecord> SomeRecords() {
  std::vector<rt::StateRecord> records(2);
  records[0].info = {"W", DataType::kF32, {2, 3}};
  records[0].bytes.resize(24);
  for (size_t i = 0; i < 24; ++i) records[0].bytes[i] = uint8_t(i * 7 + 1);
  records[1].info = {"step", DataType::kI64, {}};
  records[1].bytes = {5, 0, 0, 0, 0, 0, 0, 0};
  return records;
}

// Rewrites the trailing checksum, so that only the check under test can notice an edit.
void ResealState(std::vector<uint8_t>& bytes) {
  uint64_t sum = HashBytes(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &sum, 8);
}

std::string ParseError(const std::vector<uint8_t>& bytes, uint64_t signature) {
  auto records = rt::ParseStateFile(bytes.data(), bytes.size(), signature, "ckpt");
  return records.ok() ? "accepted" : records.status().ToString();
}

TEST(HostileStateFile, ParsesBackExactly) {
  std::vector<rt::StateRecord> records = SomeRecords();
  std::vector<uint8_t> bytes = rt::SerializeStateFile(42, records);
  auto parsed = rt::ParseStateFile(bytes.data(), bytes.size(), 42, "ckpt");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*parsed)[i].info.name, records[i].info.name);
    EXPECT_EQ((*parsed)[i].info.dtype, records[i].info.dtype);
    EXPECT_EQ((*parsed)[i].info.dims, records[i].info.dims);
    EXPECT_EQ((*parsed)[i].bytes, records[i].bytes);
  }
}

TEST(HostileStateFile, SignatureAndChecksumAreChecked) {
  std::vector<uint8_t> bytes = rt::SerializeStateFile(42, SomeRecords());
  EXPECT_NE(ParseError(bytes, 43).find("different plan"), std::string::npos) << ParseError(bytes, 43);
  bytes[30] ^= 1;
  EXPECT_NE(ParseError(bytes, 42).find("fails its checksum"), std::string::npos) << ParseError(bytes, 42);
  EXPECT_NE(ParseError({}, 42).find("truncated"), std::string::npos);
}

// Offsets into SerializeStateFile(42, SomeRecords()): header 24 bytes, then record 0: name length
// (4) and "W" (1), dtype (1), rank (4), dims (2 x 8), byte count (8).
constexpr size_t kDtype = 24 + 4 + 1, kFirstDim = kDtype + 1 + 4, kByteCount = kFirstDim + 16;

TEST(HostileStateFile, RecordsInconsistentWithTheirDtypeAndDimsAreRefused) {
  struct Case {
    const char* what;
    size_t at;
    std::vector<uint8_t> value;
    const char* message;
  };
  const uint64_t kNegative = ~uint64_t(0);
  auto le64 = [](uint64_t v) {
    std::vector<uint8_t> b(8);
    std::memcpy(b.data(), &v, 8);
    return b;
  };
  const std::vector<Case> cases = {
      {"string dtype", kDtype, {8}, "has dtype code 8"},
      {"unknown dtype", kDtype, {99}, "has dtype code 99"},
      {"negative dim", kFirstDim, le64(kNegative), "has bad dims"},
      // 2^62 x 3 f32: the byte count overflows.
      {"overflowing dims", kFirstDim, le64(uint64_t(1) << 62), "has bad dims"},
      {"short byte count", kByteCount, le64(23), "does not hold 24 bytes"},
      // The old reader took any byte count that fit in the file: 24 + 8 covers record 1 too.
      {"byte count swallowing the next record", kByteCount, le64(24 + 8), "does not hold 24 bytes"},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> bytes = rt::SerializeStateFile(42, SomeRecords());
    std::copy(c.value.begin(), c.value.end(), bytes.begin() + std::ptrdiff_t(c.at));
    ResealState(bytes);
    std::string error = ParseError(bytes, 42);
    EXPECT_NE(error.find(c.message), std::string::npos) << c.what << ": " << error;
    EXPECT_NE(error.find("'ckpt'"), std::string::npos) << "names the file: " << error;
  }
}

TEST(HostileStateFile, TrailingBytesAreRefused) {
  std::vector<uint8_t> bytes = rt::SerializeStateFile(42, SomeRecords());
  bytes.insert(bytes.end() - 8, 3, 0);
  ResealState(bytes);
  EXPECT_NE(ParseError(bytes, 42).find("trailing bytes"), std::string::npos) << ParseError(bytes, 42);
}

// --- tensor files ------------------------------------------------------------------------------

std::string Npy(const std::string& dict, const std::string& data) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += char(header.size() & 0xff);
  bytes += char(header.size() >> 8);
  return bytes + header + data;
}

std::string NpyError(const std::string& bytes) {
  auto t = tools::ParseNpy(bytes, "t.npy");
  return t.ok() ? "accepted" : t.status().ToString();
}

TEST(HostileTensorFile, NpyShapesAreParsedStrictly) {
  auto good = tools::ParseNpy(Npy("{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3L), }", std::string(12, '\1')), "t.npy");
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(good->data.size(), 12u);
  // 2^40 x 2^24 one-byte elements: 2^64 bytes, which the old reader's size_t product wrapped to 0,
  // accepting the file with no data at all.
  std::string overflow = Npy("{'descr': '|u1', 'fortran_order': False, 'shape': (1099511627776, 16777216), }", "");
  EXPECT_NE(NpyError(overflow).find("shape too large"), std::string::npos) << NpyError(overflow);
  // atoll read these as 0, 2 and 0.
  for (const char* shape : {"(x,)", "(2 2,)", "(-,)", "(99999999999999999999,)"}) {
    std::string bytes = Npy(std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + shape + ", }", "");
    EXPECT_NE(NpyError(bytes).find("bad dimension"), std::string::npos) << shape << ": " << NpyError(bytes);
  }
}

TEST(HostileTensorFile, NpzMembersMustLieInTheFile) {
  std::string npy = Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0'));
  auto member = [&](uint32_t size) {
    std::string h(30, '\0');
    const uint32_t magic = 0x04034b50u;
    std::memcpy(h.data(), &magic, 4);
    std::memcpy(h.data() + 18, &size, 4);
    h[26] = 5;  // name length
    return h + "x.npy";
  };
  auto good = tools::ParseNpz(member(uint32_t(npy.size())) + npy, "t.npz");
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->count("x"), 1u);
  auto past_end = tools::ParseNpz(member(uint32_t(npy.size() + 1)) + npy, "t.npz");
  ASSERT_FALSE(past_end.ok());
  EXPECT_NE(past_end.status().message().find("truncated"), std::string::npos) << past_end.status().ToString();
}

TEST(HostileTensorFile, TensorProtoExternalDataNeedsABaseFolder) {
  // TensorProto: name "e" (field 8), dims [2] (field 1), data_type FLOAT (field 2), external_data
  // {location: weights.bin} (field 13), data_location EXTERNAL (field 14).
  std::string proto = std::string("\x08\x02\x10\x01\x42\x01" "e", 7);
  std::string entry = std::string("\x0a\x08location\x12\x0bweights.bin", 23);
  proto += std::string("\x6a") + char(entry.size()) + entry + std::string("\x70\x01", 2);
  auto t = tools::ParseTensorProto(proto, "e.pb", "");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().ToString().find("e.pb"), std::string::npos) << t.status().ToString();
}

// --- plans the fuzzer found crashing a kernel's Init ---------------------------------------------

// The fuzz target's view of an input: its header's file size and checksum rewritten.
std::vector<uint8_t> ReadResealed(const std::string& name) {
  std::ifstream f(std::string(PRECIS_SOURCE_DIR) + "/tests/fuzz/plan_seeds/" + name, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_GE(bytes.size(), sizeof(plan::FileHeader)) << name;
  if (bytes.size() < sizeof(plan::FileHeader)) return bytes;
  plan::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  h.file_size = bytes.size();
  std::memcpy(bytes.data(), &h, sizeof h);
  testing::Reseal(bytes);
  return bytes;
}

std::string OpenError(const std::string& name) {
  std::vector<uint8_t> bytes = ReadResealed(name);
  SessionOptions options;
  options.threads = 1;
  options.synthetic_weights = true;
  auto session = Session::FromBuffer(bytes.data(), bytes.size(), options);
  return session.ok() ? "accepted" : session.status().ToString();
}

TEST(HostilePlanFromFuzzer, KernelGeometryThatWouldOverflowIsRefused) {
  // DepthToSpace with blocksize ~1.7e16: blocksize^2 overflowed int64 before the channel check.
  std::string error = OpenError("crash-depthtospace-blocksize-overflow.plan");
  EXPECT_NE(error.find("DepthToSpace"), std::string::npos) << error;
  EXPECT_NE(error.find("blocksize whose square divides the channels"), std::string::npos) << error;
  // Conv with a stride of ~7e18: the window arithmetic overflowed int64.
  error = OpenError("crash-conv-window-overflow.plan");
  EXPECT_NE(error.find("Conv"), std::string::npos) << error;
  EXPECT_NE(error.find("must be at most 2^31"), std::string::npos) << error;
  // Pads of ~8e18 overflowed oneDNN's geometry (the fast kernel, tried first) before the
  // reference kernel could refuse the step.
  error = OpenError("crash-dnnl-conv-geometry-overflow.plan");
  EXPECT_NE(error.find("must be at most 2^31"), std::string::npos) << error;
}

TEST(HostilePlanFromFuzzer, MisalignedDataIsRefused) {
  // A dims vector of 8-byte values at an address that is not a multiple of 8 (the FlatBuffers
  // verifier checks only 4-byte alignment): every read of the dims was a misaligned load.
  std::string error = OpenError("crash-misaligned-dims-vector.plan");
  EXPECT_NE(error.find("misaligned"), std::string::npos) << error;
  // An arena tensor at an offset that is not a multiple of its element size.
  error = OpenError("crash-misaligned-arena-offset.plan");
  EXPECT_NE(error.find("misaligned for its element type"), std::string::npos) << error;
}

}  // namespace
}  // namespace precis
