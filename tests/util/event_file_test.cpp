// CRC-32C and TensorBoard event files against known answers: the CRC's
// published check values, and Event messages and records whose bytes come
// from the reference implementation (Python protobuf 7.36 with TensorBoard
// 2.20's event_pb2 and its RecordWriter), so a change in any field number,
// wire type or checksum shows here before a reader sees it.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>

#include <fstream>
#include <iterator>

#include "util/crc32.hpp"
#include "util/crc32c.hpp"
#include "util/error.hpp"
#include "util/event_file.hpp"
#include "util/paths.hpp"

namespace cifar {
namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

TEST(Crc32c, PublishedCheckValues) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the catalogue's check value for CRC-32/ISCSI
  EXPECT_EQ(crc32c(""), 0u);
  // RFC 3720 (iSCSI), appendix B.4.
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i);
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
}

// The zip format's CRC-32, which shares CRC-32C's engine: the catalogue's
// check value, the empty string, and lengths around the eight-byte steps.
TEST(Crc32, PublishedCheckValues) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);  // CRC-32/ISO-HDLC, as zip and zlib compute it
  EXPECT_EQ(crc32(""), 0u);
  EXPECT_EQ(crc32("a"), 0xE8B7BE43u);
  EXPECT_EQ(crc32("The quick brown fox jumps over the lazy dog"), 0x414FA339u);
  EXPECT_EQ(crc32(std::string(32, '\0')), 0x190A55ADu);
  EXPECT_EQ(crc32(std::string(32, '\xff')), 0xFF6CAB0Bu);
  EXPECT_EQ(crc32_update(crc32("12345"), "6789", 4), 0xCBF43926u);  // in pieces
}

TEST(EventFile, MaskedCrcIsTensorFlows) { EXPECT_EQ(tfevents::masked_crc32c("123456789"), 0xC78AB0E5u); }

TEST(EventFile, EventsEqualPythonProtobufsBytes) {
  EXPECT_EQ(hex(tfevents::file_version_event(1700000000.5)), "0900002040fc54d9411a0d627261696e2e4576656e743a32");
  EXPECT_EQ(hex(tfevents::scalars_event(1700000000.5, 42, {{"train/loss", 1.25f}, {"train/lr", 0.001f}})),
            "0900002040fc54d941102a2a240a110a0a747261696e2f6c6f7373150000a03f0a0f0a08747261696e2f6c72156f12833a");
  EXPECT_EQ(hex(tfevents::session_start_event(1700000000.5, 7)), "0900002040fc54d94110073a020801");
}

TEST(EventFile, DefaultsAreLeftOutButAZeroScalarIsKept) {
  // Step 0 is proto3's default and not written; simple_value sits in a oneof,
  // so 0.0 must be written or the reader would see no value at all.
  EXPECT_EQ(hex(tfevents::scalars_event(1.0, 0, {{"x", 0.0f}})), "09000000000000f03f2a0a0a080a01781500000000");
  // A two-byte varint step and a negative value.
  EXPECT_EQ(hex(tfevents::scalars_event(1.0, 300, {{"epoch/test_accuracy", -2.5f}})),
            "09000000000000f03f10ac022a1c0a1a0a1365706f63682f746573745f616363757261637915000020c0");
}

TEST(EventFile, RecordEqualsTensorBoardsRecordWriter) {
  EXPECT_EQ(hex(tfevents::record(tfevents::file_version_event(1700000000.5))),
            "1800000000000000a37f4b22"                          // length 24, masked CRC of the length
            "0900002040fc54d9411a0d627261696e2e4576656e743a32"  // the Event
            "2b353110");                                        // masked CRC of the Event
}

TEST(EventFile, NameHasTenDigitSecondsAndTheHost) {
  EXPECT_EQ(tfevents::file_name(1700000000, "node7"), "events.out.tfevents.1700000000.node7");
  EXPECT_EQ(tfevents::file_name(42, "h"), "events.out.tfevents.0000000042.h");
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(EventFile, WriterStartsWithTheVersionAndNeverReusesAName) {
  const std::string folder = paths::make_temp_directory("event_file_test.");
  std::string first_path, second_path;
  {
    tfevents::EventFileWriter first(folder), second(folder);  // same second: the second gets ".1"
    first.write_event(tfevents::scalars_event(2.0, 1, {{"a", 1.0f}}));
    first_path = first.path();
    second_path = second.path();
  }
  EXPECT_EQ(paths::parent(first_path), folder);
  EXPECT_EQ(paths::file_name(first_path).rfind("events.out.tfevents.", 0), 0u) << first_path;
  EXPECT_NE(first_path, second_path);
  EXPECT_LT(first_path, second_path) << "a later file must sort after an earlier one";
  // The version record (its wall time varies, not its size or length
  // header), then the scalar record byte for byte.
  const std::string bytes = read_all(first_path);
  const std::string version = tfevents::record(tfevents::file_version_event(1.0));
  const std::string scalar = tfevents::record(tfevents::scalars_event(2.0, 1, {{"a", 1.0f}}));
  ASSERT_EQ(bytes.size(), version.size() + scalar.size());
  EXPECT_EQ(bytes.substr(0, 12), version.substr(0, 12));
  EXPECT_NE(bytes.find(tfevents::kFileVersion), std::string::npos);
  EXPECT_EQ(bytes.substr(version.size()), scalar);
  EXPECT_EQ(paths::remove_all(folder), "");
}

TEST(EventFile, UnwritableFolderIsNamed) {
  try {
    tfevents::EventFileWriter writer("/nonexistent/tb");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tb/events.out.tfevents."), std::string::npos) << e.what();
  }
}

// A file that cannot take its first records (here: a file-size limit of 0
// bytes, which fails the first write as a full disk would) is removed: a
// refused start leaves no empty events file.
TEST(EventFile, AFileThatCannotTakeItsFirstRecordsIsRemoved) {
  const std::string folder = paths::make_temp_directory("cifar_events_");
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // the write then fails with EFBIG
  struct rlimit none = old;
  none.rlim_cur = 0;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &none), 0);
  bool threw = false;
  try {
    tfevents::EventFileWriter writer(folder, {tfevents::session_start_event(0, 0)});
  } catch (const Error&) {
    threw = true;
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_TRUE(threw);
  EXPECT_TRUE(paths::list(folder).empty()) << paths::list(folder).front();
  paths::remove_all(folder);
}

}  // namespace
}  // namespace cifar
