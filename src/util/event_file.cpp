// TensorBoard event files: TFRecord framing and hand-encoded Event messages
// (see event_file.hpp).
#include "util/event_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "util/crc32c.hpp"
#include "util/error.hpp"
#include "util/log.hpp"
#include "util/paths.hpp"

namespace cifar::tfevents {
namespace {

// Protocol-buffer wire types.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// Field numbers of the messages written (event.proto, summary.proto).
namespace field {
constexpr uint32_t kWallTime = 1, kStep = 2, kFileVersion = 3, kSummary = 5, kSessionLog = 7;  // Event
constexpr uint32_t kValue = 1;                                                                 // Summary
constexpr uint32_t kTag = 1, kSimpleValue = 2;                                                 // Summary.Value
constexpr uint32_t kStatus = 1;                                                                // SessionLog
}  // namespace field
constexpr uint64_t kSessionStart = 1;  // SessionLog.SessionStatus.START

void put_varint(std::string& out, uint64_t value) {
  for (; value >= 0x80; value >>= 7) out += static_cast<char>((value & 0x7F) | 0x80);
  out += static_cast<char>(value);
}

void put_little_endian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

void put_key(std::string& out, uint32_t number, WireType type) { put_varint(out, (uint64_t{number} << 3) | type); }

void put_double(std::string& out, uint32_t number, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  put_key(out, number, kFixed64);
  put_little_endian(out, bits, 8);
}

void put_float(std::string& out, uint32_t number, float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  put_key(out, number, kFixed32);
  put_little_endian(out, bits, 4);
}

// int64 and enums: a negative value is its 64-bit two's complement, as protobuf writes it.
void put_int(std::string& out, uint32_t number, int64_t value) {
  put_key(out, number, kVarint);
  put_varint(out, static_cast<uint64_t>(value));
}

// Strings and embedded messages.
void put_bytes(std::string& out, uint32_t number, std::string_view bytes) {
  put_key(out, number, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

// The fields every Event starts with; proto3 leaves out default values.
std::string event_head(double wall_time, int64_t step) {
  std::string event;
  if (wall_time != 0) put_double(event, field::kWallTime, wall_time);
  if (step != 0) put_int(event, field::kStep, step);
  return event;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

void write_all(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error("cannot write TensorBoard events file " + path + ": " + std::strerror(errno) +
                  " (is the disk full?)");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string record(std::string_view data) {
  std::string length;
  put_little_endian(length, data.size(), 8);
  std::string out = length;
  put_little_endian(out, masked_crc32c(length), 4);
  out.append(data.data(), data.size());
  put_little_endian(out, masked_crc32c(data), 4);
  return out;
}

std::string file_version_event(double wall_time) {
  std::string event = event_head(wall_time, 0);
  put_bytes(event, field::kFileVersion, kFileVersion);
  return event;
}

std::string scalars_event(double wall_time, int64_t step, const std::vector<Scalar>& scalars) {
  std::string summary;
  for (const Scalar& s : scalars) {
    std::string value;
    put_bytes(value, field::kTag, s.tag);
    put_float(value, field::kSimpleValue, s.value);
    put_bytes(summary, field::kValue, value);
  }
  std::string event = event_head(wall_time, step);
  put_bytes(event, field::kSummary, summary);
  return event;
}

std::string session_start_event(double wall_time, int64_t step) {
  std::string session_log;
  put_int(session_log, field::kStatus, kSessionStart);
  std::string event = event_head(wall_time, step);
  put_bytes(event, field::kSessionLog, session_log);
  return event;
}

std::string file_name(int64_t seconds, const std::string& host) {
  return strprintf("events.out.tfevents.%010lld.%s", static_cast<long long>(seconds), host.c_str());
}

double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

EventFileWriter::EventFileWriter(const std::string& folder, const std::vector<std::string>& first_events) {
  const std::string base = paths::join(folder, file_name(static_cast<int64_t>(std::time(nullptr)), host_name()));
  for (int suffix = 0; fd_ < 0; ++suffix) {
    path_ = suffix == 0 ? base : base + "." + std::to_string(suffix);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno != EEXIST)
      throw Error("cannot create TensorBoard events file " + path_ + ": " + std::strerror(errno) +
                  " (check that --tensorboard names a writable folder)");
  }
  // A file without its first records is no output: a refused start (a full
  // disk, say) leaves none behind.
  try {
    write_event(file_version_event(wall_time_now()));
    for (const auto& event : first_events) write_event(event);
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(path_.c_str());
    throw;
  }
}

EventFileWriter::~EventFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void EventFileWriter::write_event(std::string_view event) { write_all(fd_, record(event), path_); }

}  // namespace cifar::tfevents
