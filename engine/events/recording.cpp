// SPDX-License-Identifier: GPL-3.0-or-later
// Records are written field by field, never as a memcpy of Event: the struct's
// padding and layout belong to the compiler, the file's to us.
//
// Record layout, version 6 (408 bytes, little-endian). Version 5 is the first
// 368 bytes (no expert_load kind; aux loss 0). Version 4 is the first
// 304 bytes (no peaks or resident memory: peaks read as the current bytes,
// resident memory as 0, unknown). Version 3 has no unit
// field: its ZeRO events said the unit as layer + 1 (shard) or as the bucket
// (a reduce-scatter or all-gather), and are read back into `unit`. Version 2
// is the first 272 bytes (no device fields: read as device -1); version 1 is
// version 2 with no overflow kind, flag bit 1 or loss scale. All are still read.
//   0 u8 kind        1 u8 compute      2 u8 op         3 u8 phase
//   4 u8 shard_action 5 u8 level       6 u8 flags (bit 0: has_eval_loss, bit 1: skipped)
//   7 u8 purpose (comm_span; a spare byte, 0 = other, in older files of every version)
//   8 i32 rank       12 i32 stage      16 i64 step     24 i32 micro_batch  28 i32 layer
//   32 i64 start_ns  40 i64 end_ns
//   48 i32 bucket    52 i32 ring_step  56 i32 chunk    60 i32 src  64 i32 dst  68 u32 zero
//   72 i64 bytes     80 i64 memory[6] (MemoryCategory order)
//   128 f32 loss     132 f32 lr        136 f32 grad_norm  140 f32 tokens_per_s  144 f32 eval_loss
//   148 u8 text[120] (UTF-8, NUL-padded)                  268 f32 loss_scale (0 in version 1: read as 1)
//   272 i64 device_used_bytes  280 i64 device_total_bytes  288 i64 device_reserved_bytes
//   296 i32 device (-1: host)  300 i32 unit (version 4)
//   304 i64 memory_peak[6] (version 5)  352 i64 process_resident_bytes  360 i64 process_peak_resident_bytes
//   368 i32 expert (version 6)  372 f32 aux_loss  376 i64 expert_tokens  384 i64 expert_capacity
//   392 i64 routed  400 i64 dropped
#include "events/recording.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/error.h"
#include "core/input_file.h"
#include "core/json_text.h"

namespace shardscope {
namespace {

constexpr std::size_t kWriteBufferBytes = 64 * 1024;
constexpr std::uint32_t kMaxMetadataBytes = 64u << 20;

template <typename T>
void put(unsigned char* p, T value) {
  using U = std::make_unsigned_t<T>;
  const auto bits = static_cast<U>(value);
  for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<unsigned char>(bits >> (8 * i));
}

template <typename T>
T get(const unsigned char* p) {
  using U = std::make_unsigned_t<T>;
  U bits = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) bits = static_cast<U>(bits | static_cast<U>(U{p[i]} << (8 * i)));
  return static_cast<T>(bits);
}

void put_f32(unsigned char* p, float value) { put(p, std::bit_cast<std::uint32_t>(value)); }
float get_f32(const unsigned char* p) { return std::bit_cast<float>(get<std::uint32_t>(p)); }

// An enum byte, checked against its last valid value.
template <typename E>
E get_enum(const unsigned char* p, E last, const char* field) {
  if (*p > static_cast<unsigned char>(last))
    throw FormatError(std::string("unknown ") + field + " " + std::to_string(*p));
  return static_cast<E>(*p);
}

}  // namespace

void encode_event(const Event& e, unsigned char* r) {
  std::memset(r, 0, kRecordSize);
  r[0] = static_cast<unsigned char>(e.kind);
  r[1] = static_cast<unsigned char>(e.compute);
  r[2] = static_cast<unsigned char>(e.op);
  r[3] = static_cast<unsigned char>(e.phase);
  r[4] = static_cast<unsigned char>(e.shard_action);
  r[5] = static_cast<unsigned char>(e.level);
  r[6] = static_cast<unsigned char>((e.has_eval_loss ? 1 : 0) | (e.skipped ? 2 : 0));
  r[7] = static_cast<unsigned char>(e.purpose);
  put(r + 8, e.rank);
  put(r + 12, e.stage);
  put(r + 16, e.step);
  put(r + 24, e.micro_batch);
  put(r + 28, e.layer);
  put(r + 32, e.start_ns);
  put(r + 40, e.end_ns);
  put(r + 48, e.bucket);
  put(r + 52, e.ring_step);
  put(r + 56, e.chunk);
  put(r + 60, e.src);
  put(r + 64, e.dst);
  put(r + 72, e.bytes);
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) put(r + 80 + 8 * i, e.memory[i]);
  put_f32(r + 128, e.loss);
  put_f32(r + 132, e.lr);
  put_f32(r + 136, e.grad_norm);
  put_f32(r + 140, e.tokens_per_s);
  put_f32(r + 144, e.eval_loss);
  const std::string_view text = e.text_view();  // stops at the NUL; the rest stays zero
  std::memcpy(r + 148, text.data(), std::min(text.size(), kEventTextSize - 1));
  put_f32(r + 268, e.loss_scale);
  put(r + 272, e.device_used_bytes);
  put(r + 280, e.device_total_bytes);
  put(r + 288, e.device_reserved_bytes);
  put(r + 296, e.device);
  put(r + 300, e.unit);
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) put(r + 304 + 8 * i, e.memory_peak[i]);
  put(r + 352, e.process_resident_bytes);
  put(r + 360, e.process_peak_resident_bytes);
  put(r + 368, e.expert);
  put_f32(r + 372, e.aux_loss);
  put(r + 376, e.expert_tokens);
  put(r + 384, e.expert_capacity);
  put(r + 392, e.routed);
  put(r + 400, e.dropped);
}

Event decode_event(const unsigned char* r, std::uint32_t version) {
  Event e;
  e.kind = get_enum(r + 0, kLastEventKind, "event kind");
  e.compute = get_enum(r + 1, ComputeKind::weight_gradient, "compute kind");
  e.op = get_enum(r + 2, CommOp::barrier, "communication op");
  e.phase = get_enum(r + 3, RingPhase::all_gather, "ring phase");
  e.shard_action = get_enum(r + 4, ShardAction::release, "shard action");
  e.level = get_enum(r + 5, LogLevel::error, "log level");
  e.has_eval_loss = (r[6] & 1) != 0;
  e.skipped = (r[6] & 2) != 0;
  e.purpose = get_enum(r + 7, CommPurpose::expert_parallel, "communication purpose");
  e.rank = get<std::int32_t>(r + 8);
  e.stage = get<std::int32_t>(r + 12);
  e.step = get<std::int64_t>(r + 16);
  e.micro_batch = get<std::int32_t>(r + 24);
  e.layer = get<std::int32_t>(r + 28);
  e.start_ns = get<std::int64_t>(r + 32);
  e.end_ns = get<std::int64_t>(r + 40);
  e.bucket = get<std::int32_t>(r + 48);
  e.ring_step = get<std::int32_t>(r + 52);
  e.chunk = get<std::int32_t>(r + 56);
  e.src = get<std::int32_t>(r + 60);
  e.dst = get<std::int32_t>(r + 64);
  e.bytes = get<std::int64_t>(r + 72);
  for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) e.memory[i] = get<std::int64_t>(r + 80 + 8 * i);
  e.loss = get_f32(r + 128);
  e.lr = get_f32(r + 132);
  e.grad_norm = get_f32(r + 136);
  e.tokens_per_s = get_f32(r + 140);
  e.eval_loss = get_f32(r + 144);
  std::memcpy(e.text.data(), r + 148, kEventTextSize);
  e.text[kEventTextSize - 1] = '\0';  // a damaged record must not run off the end
  const float scale = get_f32(r + 268);
  e.loss_scale = scale == 0.0f ? 1.0f : scale;  // version 1 wrote zero there
  if (version >= 3) {
    e.device_used_bytes = get<std::int64_t>(r + 272);
    e.device_total_bytes = get<std::int64_t>(r + 280);
    e.device_reserved_bytes = get<std::int64_t>(r + 288);
    e.device = get<std::int32_t>(r + 296);
  }
  if (version >= 5) {
    for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) e.memory_peak[i] = get<std::int64_t>(r + 304 + 8 * i);
    e.process_resident_bytes = get<std::int64_t>(r + 352);
    e.process_peak_resident_bytes = get<std::int64_t>(r + 360);
  } else {
    e.memory_peak = e.memory;  // the best a version-4 sample knows
  }
  if (version >= 6) {
    e.expert = get<std::int32_t>(r + 368);
    e.aux_loss = get_f32(r + 372);
    e.expert_tokens = get<std::int64_t>(r + 376);
    e.expert_capacity = get<std::int64_t>(r + 384);
    e.routed = get<std::int64_t>(r + 392);
    e.dropped = get<std::int64_t>(r + 400);
  }
  if (version >= 4) {
    e.unit = get<std::int32_t>(r + 300);
  } else if (e.kind == EventKind::shard) {  // versions 1-3: a unit's gather or release said layer = unit - 1
    e.unit = e.layer + 1;
    e.layer = -1;
  } else if (e.kind == EventKind::comm_span && e.bucket >= 0 &&
             (e.op == CommOp::reduce_scatter || e.op == CommOp::all_gather)) {  // versions 1-3: bucket = unit
    e.unit = e.bucket;
    e.bucket = -1;
  }
  return e;
}

// ---- RecordingWriter ----

std::vector<unsigned char> recording_header(const std::string& metadata_json) {
  const std::string metadata = metadata_json.empty() ? "{}" : metadata_json;
  if (!nlohmann::json::accept(metadata)) throw std::invalid_argument("recording metadata is not valid JSON");
  if (metadata.size() > kMaxMetadataBytes) throw std::invalid_argument("recording metadata is over 64 MiB");
  std::vector<unsigned char> header(kRecordingHeaderSize + metadata.size());
  std::memcpy(header.data(), kRecordingMagic, 8);
  put(header.data() + 8, kRecordingVersion);
  put(header.data() + 12, kRecordSize);
  put(header.data() + 16, static_cast<std::uint32_t>(metadata.size()));
  std::memcpy(header.data() + kRecordingHeaderSize, metadata.data(), metadata.size());
  return header;
}

RecordingWriter::RecordingWriter(const std::string& path, const std::string& metadata_json, const std::string& flag)
    : path_(path) {
  std::vector<unsigned char> header;
  try {
    header = recording_header(metadata_json);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
  file_ = std::make_unique<OutputFile>(NamedFile{flag, path});
  writing_path_ = file_->temp_path();
  buffer_.reserve(kWriteBufferBytes + kRecordSize);
  buffer_.assign(header.begin(), header.end());
  flush();  // a reader may open writing_path() as soon as the constructor returns
}

RecordingWriter::~RecordingWriter() {
  try {
    close();
  } catch (...) {  // reported by close() to those who ask; the temporary is gone
  }
}

// buffer_ is the one buffer: written with one call, straight to the file.
void RecordingWriter::write_buffer_locked() {
  if (!error_.empty()) throw OutputError(error_);
  if (!file_) throw std::logic_error(path_ + ": recording is closed");
  try {
    file_->write(buffer_.data(), buffer_.size());
  } catch (const OutputError& e) {
    error_ = e.what();
    throw;
  }
  buffer_.clear();
}

void RecordingWriter::emit(const Event& event) {
  std::lock_guard lock(mutex_);
  if (!error_.empty()) throw OutputError(error_);
  if (!file_) throw std::logic_error(path_ + ": recording is closed");
  const std::size_t at = buffer_.size();
  buffer_.resize(at + kRecordSize);
  encode_event(event, buffer_.data() + at);
  ++events_;
  if (buffer_.size() >= kWriteBufferBytes) write_buffer_locked();
}

void RecordingWriter::flush() {
  std::lock_guard lock(mutex_);
  write_buffer_locked();
}

void RecordingWriter::close() {
  std::lock_guard lock(mutex_);
  if (!file_) return;
  // Closed from here on, whatever happens: `file` destroyed before its commit removes the temporary.
  const std::unique_ptr<OutputFile> file = std::move(file_);
  const std::string left = "; '" + path_ + "' was left as it was";
  if (!error_.empty()) throw OutputError(error_ + left);
  try {
    file->write(buffer_.data(), buffer_.size());
  } catch (const OutputError& e) {
    throw OutputError(e.what() + left);
  }
  buffer_.clear();
  file->commit();  // on failure, says so itself
}

void RecordingWriter::abandon() noexcept {
  std::lock_guard lock(mutex_);
  file_.reset();  // OutputFile's destructor removes the temporary
}

std::uint64_t RecordingWriter::events_written() const {
  std::lock_guard lock(mutex_);
  return events_;
}

// ---- RecordingReader ----

namespace {

std::uint64_t file_size(std::ifstream& in) {
  in.clear();
  in.seekg(0, std::ios::end);
  return static_cast<std::uint64_t>(in.tellg());
}

}  // namespace

void RecordingReader::open(const std::string& path) {
  path_ = path;
  in_.close();
  in_.clear();
  // Before the stream opens it: opening a FIFO would wait for a writer forever.
  if (const auto kind = special_file_kind(path))
    throw FormatError(path + ": is " + *kind + ", not a recording; choose a .ssrun file");
  in_.open(path, std::ios::binary);
  if (!in_) throw FormatError(path + ": cannot open the recording (missing or not readable?)");
  const std::uint64_t size = file_size(in_);
  unsigned char header[kRecordingHeaderSize] = {};
  const auto have = static_cast<std::size_t>(std::min<std::uint64_t>(size, kRecordingHeaderSize));
  in_.seekg(0);
  in_.read(reinterpret_cast<char*>(header), static_cast<std::streamsize>(have));

  const auto fail = [&](std::uint64_t offset, const std::string& what) {
    throw FormatError(path + ": byte " + std::to_string(offset) + ": " + what);
  };
  // Compare the magic as far as the file goes, so a short file of another
  // kind is called that, not "cut off".
  if (std::memcmp(header, kRecordingMagic, std::min<std::size_t>(have, 8)) != 0) {
    if (have >= 5 && std::memcmp(header, "SSRUN", 5) == 0)
      fail(5, "the magic's line-ending bytes were changed: the file was copied in text mode; copy it again as binary");
    fail(0, "not a ShardScope recording (it does not start with \"SSRUN\"); choose a .ssrun file");
  }
  if (size < kRecordingHeaderSize)
    fail(size, "the header is cut off after " + std::to_string(size) + " bytes (it needs " +
                   std::to_string(kRecordingHeaderSize) + "); the file is empty or was cut off");
  version_ = get<std::uint32_t>(header + 8);
  if (version_ == 0) fail(8, "format version 0 is invalid; the file is damaged");
  if (version_ > kRecordingVersion)
    fail(8, "format version " + std::to_string(version_) + " is newer than this program (" +
                std::to_string(kRecordingVersion) + "); open it with a newer ShardScope");
  const auto record_bytes = get<std::uint32_t>(header + 12);
  record_size_ = record_size(version_);
  if (record_bytes != record_size_)
    fail(12, "record size " + std::to_string(record_bytes) + ", expected " + std::to_string(record_size_) +
                 " for format version " + std::to_string(version_) + "; the file is damaged");
  const auto json_size = get<std::uint32_t>(header + 16);
  if (json_size > kMaxMetadataBytes || kRecordingHeaderSize + std::uint64_t{json_size} > size)
    fail(16, "metadata length " + std::to_string(json_size) + " runs past the end of the file (" +
                 std::to_string(size) + " bytes) or the 64 MiB limit; the file is cut off or damaged");
  metadata_.assign(json_size, '\0');
  in_.read(metadata_.data(), static_cast<std::streamsize>(json_size));
  // Checked whole here (syntax, numbers past a double's range, nesting depth),
  // so every reader of metadata_json() can parse it without surprises.
  JsonTextError error;
  if (!parse_json_text(metadata_, error))
    fail(kRecordingHeaderSize + error.byte,
         "the metadata is not valid JSON (" + error.reason + "); the file is damaged");
  records_begin_ = next_offset_ = kRecordingHeaderSize + std::uint64_t{json_size};
}

std::size_t RecordingReader::read_new(std::vector<Event>& out) {
  if (!in_.is_open()) throw std::logic_error("RecordingReader::read_new before open");
  const std::uint64_t size = file_size(in_);
  if (size < next_offset_)
    throw FormatError(path_ + ": the file shrank to " + std::to_string(size) + " bytes while being read (rewritten?)");
  // Only whole records: a writer may be half-way through the next one.
  const std::uint64_t complete = (size - next_offset_) / record_size_;
  constexpr std::uint64_t kChunkRecords = 4096;
  std::vector<unsigned char> chunk;
  std::size_t added = 0;
  in_.seekg(static_cast<std::streamoff>(next_offset_));
  for (std::uint64_t done = 0; done < complete;) {
    const std::uint64_t n = std::min(kChunkRecords, complete - done);
    chunk.resize(static_cast<std::size_t>(n * record_size_));
    in_.read(reinterpret_cast<char*>(chunk.data()), static_cast<std::streamsize>(chunk.size()));
    if (static_cast<std::uint64_t>(in_.gcount()) != chunk.size())
      throw FormatError(path_ + ": byte " + std::to_string(next_offset_) + ": read failed");
    for (std::uint64_t i = 0; i < n; ++i) {
      try {
        out.push_back(decode_event(chunk.data() + i * record_size_, version_));
      } catch (const FormatError& e) {
        throw FormatError(path_ + ": byte " + std::to_string(next_offset_) + ": record " +
                          std::to_string((next_offset_ - records_begin_) / record_size_) + ": " + e.what() +
                          "; the file is damaged");
      }
      next_offset_ += record_size_;
      ++added;
    }
    done += n;
  }
  return added;
}

std::vector<Event> RecordingReader::read_all() {
  next_offset_ = records_begin_;
  std::vector<Event> events;
  read_new(events);
  return events;
}

std::uint64_t RecordingReader::trailing_bytes() {
  const std::uint64_t size = file_size(in_);
  return size < records_begin_ ? 0 : (size - records_begin_) % record_size_;
}

}  // namespace shardscope
