// TensorBoard event files, written without TensorFlow or a protobuf library.
//
// The format is small and documented by TensorFlow (tensorflow/core/lib/io/
// record_writer.cc, tensorflow/core/util/event.proto). A file is a sequence
// of records:
//
//   uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
//
// little-endian, with masked_crc(x) = ((crc >> 15) | (crc << 17)) + 0xa282ead8
// over CRC-32C. Each record's data is one serialised Event message; the first
// carries file_version "brain.Event:2". Of the messages only these fields are
// written (field number, wire type):
//
//   Event       wall_time 1 (double), step 2 (int64), file_version 3 (string),
//               summary 5 (Summary), session_log 7 (SessionLog)
//   Summary     value 1 (repeated Value)
//   Value       tag 1 (string), simple_value 2 (float, in a oneof: always written)
//   SessionLog  status 1 (enum; START = 1)
//
// Scalars in proto3 are omitted at their default (a step of 0), as the
// reference serialiser does, so the bytes equal Python protobuf's (the
// known-answer tests in tests/util/event_file_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cifar::tfevents {

struct Scalar {
  std::string tag;  // "train/loss": TensorBoard groups tags by the part before '/'
  float value = 0;
};

inline constexpr const char* kFileVersion = "brain.Event:2";

// The TFRecord checksum of `bytes`: CRC-32C, rotated and offset (see above).
uint32_t masked_crc32c(std::string_view bytes);
// One record holding `data`.
std::string record(std::string_view data);

// Serialised Event messages.
std::string file_version_event(double wall_time);
std::string scalars_event(double wall_time, int64_t step, const std::vector<Scalar>& scalars);
// SessionLog START: TensorBoard's reader drops every value it has read with
// a step of `step` or more (a restarted run rewrites them).
std::string session_start_event(double wall_time, int64_t step);

// "events.out.tfevents.<seconds, 10 digits>.<host>"; the fixed width keeps
// files in time order when sorted by name, which is how TensorBoard reads a folder.
std::string file_name(int64_t seconds, const std::string& host);

// Seconds since the Unix epoch, as an Event's wall_time.
double wall_time_now();

// A new events file in an existing folder, written through to the kernel
// record by record (a crash loses at most the record being written).
class EventFileWriter {
 public:
  // Creates file_name(now, this host) in `folder`, or, if a file of that
  // name exists (a run started in the same second), the name with ".1",
  // ".2", ... added, which sorts after it. Writes the file_version record,
  // then `first_events`. Throws cifar::Error naming the path and the reason,
  // and then leaves no file.
  explicit EventFileWriter(const std::string& folder, const std::vector<std::string>& first_events = {});
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void write_event(std::string_view event);  // one record
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace cifar::tfevents
