// SPDX-License-Identifier: GPL-3.0-or-later
// The run file (.ssrun): every event of a run, after a header with the run's
// metadata, so the GUI can replay it and the CLI can export it. Records are
// fixed-size and appended as events arrive, so a file can be read while it is
// being written (RecordingWriter::writing_path(), until the run ends).
//
// Layout (all integers little-endian):
//   offset  size  field
//   0       8     magic "SSRUN\r\n\x1a" (the \r\n and \x1a catch text-mode copies)
//   8       4     u32 format version (kRecordingVersion)
//   12      4     u32 record size in bytes (record_size(version): 272 for
//                 versions 1 and 2, 304 for 3 and 4, 368 for 5, kRecordSize = 408 for 6)
//   16      4     u32 length N of the metadata JSON
//   20      N     metadata: UTF-8 JSON (the run config, and a --schedule-file
//                 run's schedule, train/metrics_json.h; "{}" if none)
//   20 + N  ...   records, one per Event, kRecordSize bytes each (recording.cpp
//                 lists the field offsets)
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/output_file.h"
#include "events/event.h"

namespace shardscope {

inline constexpr char kRecordingMagic[8] = {'S', 'S', 'R', 'U', 'N', '\r', '\n', '\x1a'};
inline constexpr std::uint32_t kRecordingVersion = 6;
inline constexpr std::uint32_t kRecordingHeaderSize = 20;  // before the JSON
inline constexpr std::uint32_t kRecordSize = 408;          // of kRecordingVersion

// The record size of a format version: 272 bytes before version 3 added the
// device fields of memory samples (version 4 uses a spare word of version 3
// for the ZeRO unit), 368 since version 5 added the ledger's peaks and the
// process's resident memory to memory samples, 408 since version 6 added the
// routing figures of mixture-of-experts steps. 0 for an unknown version.
constexpr std::uint32_t record_size(std::uint32_t version) {
  if (version == 1 || version == 2) return 272;
  if (version == 3 || version == 4) return 304;
  if (version == 5) return 368;
  return version == kRecordingVersion ? kRecordSize : 0;
}

// The fixed-size record of one event (field by field, little-endian), and back.
// decode_event reads a record of `version` (1 to kRecordingVersion) and throws
// FormatError saying which field is out of range (the reader adds the file and offset).
void encode_event(const Event& event, unsigned char* record);
Event decode_event(const unsigned char* record, std::uint32_t version = kRecordingVersion);

// The header of a kRecordingVersion recording (magic to metadata): also the
// start of an event stream (event_stream.h), so a stream saved as bytes is a
// recording. Throws std::invalid_argument if the metadata is not JSON or over 64 MiB.
std::vector<unsigned char> recording_header(const std::string& metadata_json);

// Writes a recording. Thread-safe: emit() takes a mutex, so it may be called
// from engine threads directly (through a FanOutSink; it then costs them a copy
// into the buffer and, every 64 KiB, a write) or from the one thread that
// drains an EventQueue. Events reach the file in the order emit() was called.
//
// The file is written through an OutputFile (core/output_file.h): into a
// temporary beside `path` ("<path>.XXXXXX.part", writing_path()) that close()
// renames over `path`. The temporary is a complete recording at every flush(),
// so it can be read (tailed, exported) while the run goes, and a process killed
// outright leaves it readable under that name.
class RecordingWriter final : public EventSink {
 public:
  // Checks `path` (only a regular file or a new path is replaced), creates the
  // temporary and writes the header. metadata_json must be valid JSON (empty
  // means "{}"). Throws FormatError (OutputError) naming `flag` (or the path,
  // where it is empty) and the reason if the file cannot be written;
  // std::invalid_argument if the metadata is not JSON.
  RecordingWriter(const std::string& path, const std::string& metadata_json, const std::string& flag = {});
  // Finishes the file as close() does; an error here is swallowed (destructors
  // must not throw) and leaves `path` as it was: call close() to see it.
  ~RecordingWriter() override;
  RecordingWriter(const RecordingWriter&) = delete;
  RecordingWriter& operator=(const RecordingWriter&) = delete;

  // Appends one record to the buffer; writes the buffer out when it is full.
  // A failed write throws FormatError (flag, path, the OS error: "No space
  // left on device"); after one failure every later call throws the same error.
  void emit(const Event& event) override;
  // Writes the buffer out, so readers of writing_path() see every record.
  void flush();
  // flush(), then the file is synced and renamed over path(). Further emits
  // throw. After a write error it throws that error, removes the temporary
  // and leaves path() as it was.
  void close();
  // Removes the temporary and leaves path() as it was (a run cut short). Never throws.
  void abandon() noexcept;

  const std::string& path() const { return path_; }
  const std::string& writing_path() const { return writing_path_; }  // the temporary, until close()
  std::uint64_t events_written() const;

 private:
  void write_buffer_locked();  // requires mutex_

  std::string path_, writing_path_;
  mutable std::mutex mutex_;
  std::unique_ptr<OutputFile> file_;  // null once closed or abandoned
  std::vector<unsigned char> buffer_;
  std::uint64_t events_ = 0;
  std::string error_;  // the first write error, if any
};

// Reads a recording, whole or while another process is still writing it.
class RecordingReader {
 public:
  RecordingReader() = default;
  RecordingReader(const RecordingReader&) = delete;
  RecordingReader& operator=(const RecordingReader&) = delete;

  // Validates the header and the metadata JSON. Throws FormatError naming the
  // file, the byte offset and a hint ("not a ShardScope recording", "version 7
  // is newer than this program (1)").
  void open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::string& metadata_json() const { return metadata_; }
  std::uint32_t version() const { return version_; }

  // Appends the complete records added since the last call (or since open) and
  // returns how many. A trailing partial record is left for a later call: that
  // is how a file is tailed while it is written. Throws FormatError on a
  // damaged record (unknown enum value), naming its offset.
  std::size_t read_new(std::vector<Event>& out);
  // Every complete record from the start of the file.
  std::vector<Event> read_all();
  // Bytes after the last complete record (a run cut off mid-write leaves some).
  std::uint64_t trailing_bytes();

 private:
  std::string path_;
  std::ifstream in_;
  std::string metadata_;
  std::uint32_t version_ = 0;
  std::uint32_t record_size_ = kRecordSize;  // of version_
  std::uint64_t records_begin_ = 0;  // file offset of the first record
  std::uint64_t next_offset_ = 0;    // file offset of the next record to read
};

}  // namespace shardscope
