// SPDX-License-Identifier: GPL-3.0-or-later
// The .ssrun recording: every field of every kind round-trips, the documented
// layout, tailing a file being written, bad files named with their offset
// (the queue's tests: test_event_queue.cpp).
#include <cmath>
#include <QTemporaryDir>
#include <QTest>
#undef emit  // Qt's keyword macro (absent under QT_NO_KEYWORDS) would eat EventSink::emit

#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <limits>
#include <thread>

#include "core/error.h"
#include "events/event_queue.h"
#include "events/recording.h"

using namespace shardscope;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::string& bytes, std::ios::openmode mode = std::ios::trunc) {
  std::ofstream out(path, std::ios::binary | mode);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// One event of every kind, with a distinct non-default value in every field
// (not only the fields the kind uses), so a field the format forgets shows.
std::vector<Event> every_kind_with_every_field() {
  std::vector<Event> events;
  for (int k = 0; k <= static_cast<int>(kLastEventKind); ++k) {
    Event e;
    e.kind = static_cast<EventKind>(k);
    e.rank = 3 + k;
    e.stage = -2 - k;
    e.step = (std::int64_t{1} << 40) + k;
    e.micro_batch = 17 + k;
    e.start_ns = std::numeric_limits<std::int64_t>::min() + k;
    e.end_ns = std::numeric_limits<std::int64_t>::max() - k;
    e.compute = static_cast<ComputeKind>(k % 4);
    e.layer = 11 + k;
    e.op = static_cast<CommOp>(8 - k % 9);  // barrier .. all_reduce, again from barrier for a tenth kind
    e.phase = static_cast<RingPhase>(k % 3);
    e.bucket = 21 + k;
    e.unit = 71 + k;
    e.purpose = static_cast<CommPurpose>(k % 4);
    e.ring_step = 31 + k;
    e.chunk = 41 + k;
    e.src = -51 - k;
    e.dst = 61 + k;
    e.bytes = (std::int64_t{5} << 50) + k;
    e.shard_action = k % 2 ? ShardAction::release : ShardAction::gather;
    for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) e.memory[i] = (std::int64_t{1} << (33 + i)) + k;
    e.device = 7 - k;
    e.device_used_bytes = (std::int64_t{3} << 36) + k;
    e.device_total_bytes = (std::int64_t{141} << 30) - k;
    e.device_reserved_bytes = -(std::int64_t{9} << 40) - k;  // any value survives, not only sensible ones
    for (std::size_t i = 0; i < kMemoryCategoryCount; ++i) e.memory_peak[i] = (std::int64_t{1} << (40 + i)) - k;
    e.process_resident_bytes = (std::int64_t{5} << 30) + k;
    e.process_peak_resident_bytes = (std::int64_t{6} << 30) + k;
    e.expert = 81 + k;
    e.expert_tokens = (std::int64_t{7} << 34) + k;
    e.expert_capacity = (std::int64_t{8} << 34) - k;
    e.routed = (std::int64_t{9} << 34) + k;
    e.dropped = -(std::int64_t{10} << 34) - k;
    e.aux_loss = 1.0f + static_cast<float>(k) / 8.0f;
    e.loss = 2.5f + static_cast<float>(k);
    e.lr = 3e-4f * static_cast<float>(k + 1);
    e.grad_norm = -0.0f;
    e.tokens_per_s = 1.0e9f + static_cast<float>(k);
    e.eval_loss = std::numeric_limits<float>::denorm_min();
    e.has_eval_loss = k % 2 == 0;
    e.loss_scale = std::ldexp(1.0f, 10 + k);
    e.skipped = k % 3 == 0;
    e.level = static_cast<LogLevel>(k % 4);
    e.set_text("event " + std::to_string(k) + ": 损失 \"quoted\" \\ tab\t");
    events.push_back(e);
  }
  return events;
}

// Every field compared on its own (floats by bits, so -0 and denormals count).
void compare_events(const Event& a, const Event& b) {
  QCOMPARE(a.kind, b.kind);
  QCOMPARE(a.rank, b.rank);
  QCOMPARE(a.stage, b.stage);
  QCOMPARE(a.step, b.step);
  QCOMPARE(a.micro_batch, b.micro_batch);
  QCOMPARE(a.start_ns, b.start_ns);
  QCOMPARE(a.end_ns, b.end_ns);
  QCOMPARE(a.compute, b.compute);
  QCOMPARE(a.layer, b.layer);
  QCOMPARE(a.unit, b.unit);
  QCOMPARE(a.purpose, b.purpose);
  QCOMPARE(a.op, b.op);
  QCOMPARE(a.phase, b.phase);
  QCOMPARE(a.bucket, b.bucket);
  QCOMPARE(a.ring_step, b.ring_step);
  QCOMPARE(a.chunk, b.chunk);
  QCOMPARE(a.src, b.src);
  QCOMPARE(a.dst, b.dst);
  QCOMPARE(a.bytes, b.bytes);
  QCOMPARE(a.shard_action, b.shard_action);
  QVERIFY(a.memory == b.memory);
  QVERIFY(a.memory_peak == b.memory_peak);
  QCOMPARE(a.process_resident_bytes, b.process_resident_bytes);
  QCOMPARE(a.process_peak_resident_bytes, b.process_peak_resident_bytes);
  QCOMPARE(a.device, b.device);
  QCOMPARE(a.device_used_bytes, b.device_used_bytes);
  QCOMPARE(a.device_total_bytes, b.device_total_bytes);
  QCOMPARE(a.device_reserved_bytes, b.device_reserved_bytes);
  QCOMPARE(a.expert, b.expert);
  QCOMPARE(a.expert_tokens, b.expert_tokens);
  QCOMPARE(a.expert_capacity, b.expert_capacity);
  QCOMPARE(a.routed, b.routed);
  QCOMPARE(a.dropped, b.dropped);
  const std::initializer_list<std::pair<float, float>> floats = {
      {a.loss, b.loss},           {a.lr, b.lr},
      {a.grad_norm, b.grad_norm}, {a.tokens_per_s, b.tokens_per_s},
      {a.eval_loss, b.eval_loss}, {a.loss_scale, b.loss_scale},
      {a.aux_loss, b.aux_loss}};
  for (const auto& [x, y] : floats)
    QCOMPARE(std::bit_cast<std::uint32_t>(x), std::bit_cast<std::uint32_t>(y));
  QCOMPARE(a.has_eval_loss, b.has_eval_loss);
  QCOMPARE(a.skipped, b.skipped);
  QCOMPARE(a.level, b.level);
  QCOMPARE(std::string(a.text_view()), std::string(b.text_view()));
}

Event make(EventKind kind, std::int64_t step) {
  Event e;
  e.kind = kind;
  e.step = step;
  return e;
}

}  // namespace

class TestEvents : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void recording_round_trips_every_field_of_every_kind();
  void recording_layout_is_the_documented_one();
  void recording_is_read_while_being_written();
  void recording_bad_files_name_the_offset_data();
  void recording_bad_files_name_the_offset();
  void recording_reader_refuses_special_files();
  void recording_writer_reports_an_unwritable_path();
  void recording_keeps_chinese_text_and_metadata();

 private:
  QTemporaryDir dir_;
  std::string path(const char* name) const { return (dir_.path() + "/" + name).toStdString(); }
};

void TestEvents::recording_round_trips_every_field_of_every_kind() {
  const auto events = every_kind_with_every_field();
  const std::string file = path("all.ssrun");
  const std::string metadata = R"({"model":"gpt-tiny","ranks":4})";
  {
    RecordingWriter writer(file, metadata);
    for (const Event& e : events) writer.emit(e);
    QCOMPARE(writer.events_written(), std::uint64_t{events.size()});
  }  // the destructor flushes
  RecordingReader reader;
  reader.open(file);
  QCOMPARE(reader.metadata_json(), metadata);
  QCOMPARE(reader.version(), kRecordingVersion);
  const auto back = reader.read_all();
  QCOMPARE(back.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) compare_events(back[i], events[i]);
  QCOMPARE(reader.trailing_bytes(), std::uint64_t{0});
}

// The byte layout table in recording.h/.cpp, pinned: a change must bump the version.
void TestEvents::recording_layout_is_the_documented_one() {
  Event e = make(EventKind::memory_sample, 0x0102030405060708);
  e.rank = 0x11223344;
  e.set_text("hi");
  e.device = 2;
  e.device_used_bytes = 0x0A0B0C0D;
  e.device_total_bytes = std::int64_t{1} << 40;
  e.device_reserved_bytes = 0x77;
  e.unit = 0x05060708;
  e.purpose = CommPurpose::parameters;  // in version 5's spare byte 7 (0 = other in older files)
  e.memory_peak[0] = 0x21;
  e.memory_peak[5] = 0x26;
  e.process_resident_bytes = 0x31;
  e.process_peak_resident_bytes = 0x32;
  e.expert = 0x41;
  e.aux_loss = 2.0f;
  e.expert_tokens = 0x42;
  e.expert_capacity = 0x43;
  e.routed = 0x44;
  e.dropped = 0x45;
  const std::string file = path("layout.ssrun");
  {
    RecordingWriter writer(file, "");
    writer.emit(e);
  }
  const std::string bytes = read_file(file);
  QCOMPARE(bytes.size(), std::size_t{20 + 2 + 408});  // empty metadata is written as "{}"
  QCOMPARE(bytes.substr(0, 8), std::string("SSRUN\r\n\x1a", 8));
  QCOMPARE(bytes.substr(8, 12), std::string("\x06\0\0\0\x98\x01\0\0\x02\0\0\0", 12));
  QCOMPARE(bytes.substr(20, 2), std::string("{}"));
  const std::string record = bytes.substr(22);
  QCOMPARE(record[0], '\x04');                                                      // kind at 0
  QCOMPARE(record[7], '\x02');                                                      // purpose at 7
  QCOMPARE(record.substr(8, 4), std::string("\x44\x33\x22\x11"));                   // rank at 8, little-endian
  QCOMPARE(record.substr(16, 8), std::string("\x08\x07\x06\x05\x04\x03\x02\x01"));  // step at 16
  QCOMPARE(record.substr(148, 3), std::string("hi\0", 3));                          // text at 148
  QCOMPARE(record.substr(268, 4), std::string("\0\0\x80\x3f", 4));                  // loss scale 1.0f at 268
  QCOMPARE(record.substr(272, 8), std::string("\x0d\x0c\x0b\x0a\0\0\0\0", 8));      // device used at 272
  QCOMPARE(record.substr(280, 8), std::string("\0\0\0\0\0\x01\0\0", 8));            // device total at 280
  QCOMPARE(record.substr(288, 8), std::string("\x77\0\0\0\0\0\0\0", 8));            // reserved at 288
  QCOMPARE(record.substr(296, 8), std::string("\x02\0\0\0\x08\x07\x06\x05", 8));    // device at 296, unit at 300
  QCOMPARE(record.substr(304, 8), std::string("\x21\0\0\0\0\0\0\0", 8));            // peaks from 304
  QCOMPARE(record.substr(344, 8), std::string("\x26\0\0\0\0\0\0\0", 8));            // ... to 351
  QCOMPARE(record.substr(352, 16), std::string("\x31\0\0\0\0\0\0\0\x32\0\0\0\0\0\0\0", 16));  // resident, peak
  QCOMPARE(record.substr(368, 8), std::string("\x41\0\0\0\0\0\0\x40", 8));  // expert at 368, aux loss 2.0f at 372
  QCOMPARE(record.substr(376, 8), std::string("\x42\0\0\0\0\0\0\0", 8));    // expert tokens at 376
  QCOMPARE(record.substr(400, 8), std::string("\x45\0\0\0\0\0\0\0", 8));    // dropped at 400
  RecordingReader current;
  current.open(file);
  QCOMPARE(current.version(), std::uint32_t{6});
  compare_events(current.read_all().at(0), e);

  // Version 5 (368-byte records) had no routing figures: they read as none.
  {
    std::string v5 = bytes.substr(0, 22 + 368);
    v5[8] = '\x05';
    v5.replace(12, 4, std::string("\x70\x01\0\0", 4));  // record size 368
    const std::string v5_file = path("v5.ssrun");
    std::ofstream(v5_file, std::ios::binary) << v5;
    RecordingReader reader;
    reader.open(v5_file);
    QCOMPARE(reader.version(), std::uint32_t{5});
    const Event back = reader.read_all().at(0);
    QVERIFY(back.memory_peak == e.memory_peak);
    QCOMPARE(back.expert, -1);
    QCOMPARE(back.expert_tokens, std::int64_t{0});
    QCOMPARE(back.aux_loss, 0.0f);
  }

  // Version 4 (304-byte records) had no peaks or resident memory: peaks read as
  // the sample's current bytes, resident memory as unknown.
  {
    std::string v4 = bytes.substr(0, 22 + 304);
    v4[8] = '\x04';
    v4.replace(12, 4, std::string("\x30\x01\0\0", 4));  // record size 304
    const std::string v4_file = path("v4.ssrun");
    std::ofstream(v4_file, std::ios::binary) << v4;
    RecordingReader reader;
    reader.open(v4_file);
    QCOMPARE(reader.version(), std::uint32_t{4});
    const Event back = reader.read_all().at(0);
    QCOMPARE(back.unit, e.unit);
    QVERIFY(back.memory_peak == e.memory);
    QCOMPARE(back.process_resident_bytes, std::int64_t{0});
  }

  // Version 3 had no unit: ZeRO events said it as layer + 1 (a shard gather or
  // release) or as the bucket (a unit's reduce-scatter or all-gather).
  {
    Event shard;
    shard.kind = EventKind::shard;
    shard.layer = 2;  // unit 3, as version 3 wrote it
    Event scatter;
    scatter.kind = EventKind::comm_span;
    scatter.op = CommOp::reduce_scatter;
    scatter.bucket = 5;  // unit 5, as version 3 wrote it
    Event bucket = scatter;
    bucket.op = CommOp::all_reduce;  // a DDP bucket stays a bucket
    for (Event* v3 : {&shard, &scatter, &bucket}) {
      unsigned char r[kRecordSize];
      encode_event(*v3, r);
      const Event back = decode_event(r, 3);
      if (v3 == &shard) {
        QCOMPARE(back.unit, 3);
        QCOMPARE(back.layer, -1);
      } else if (v3 == &scatter) {
        QCOMPARE(back.unit, 5);
        QCOMPARE(back.bucket, -1);
      } else {
        QCOMPARE(back.unit, -1);
        QCOMPARE(back.bucket, 5);
      }
    }
  }

  // Versions 2 and 1 (272-byte records, no device fields; version 1 also with
  // zero where the loss scale now is) still open: no device, scale 1.
  for (const std::uint32_t version : {2u, 1u}) {
    std::string old = bytes.substr(0, 22 + 272);
    old[8] = static_cast<char>(version);
    old.replace(12, 4, std::string("\x10\x01\0\0", 4));  // record size 272
    if (version == 1) old.replace(22 + 268, 4, std::string(4, '\0'));
    const std::string old_file = path(version == 2 ? "v2.ssrun" : "v1.ssrun");
    std::ofstream(old_file, std::ios::binary) << old << old.substr(22);  // two records
    RecordingReader reader;
    reader.open(old_file);
    QCOMPARE(reader.version(), version);
    const auto back = reader.read_all();
    QCOMPARE(back.size(), std::size_t{2});
    QCOMPARE(reader.trailing_bytes(), std::uint64_t{0});
    for (const Event& b : back) {
      QCOMPARE(b.loss_scale, 1.0f);
      QCOMPARE(b.rank, 0x11223344);
      QCOMPARE(b.kind, EventKind::memory_sample);
      QCOMPARE(b.device, -1);
      QCOMPARE(b.device_used_bytes, std::int64_t{0});
      QCOMPARE(b.device_total_bytes, std::int64_t{0});
      QCOMPARE(b.device_reserved_bytes, std::int64_t{0});
    }
  }
}

void TestEvents::recording_is_read_while_being_written() {
  const auto events = every_kind_with_every_field();
  const std::string file = path("tail.ssrun");
  RecordingWriter writer(file, "{}");
  RecordingReader reader;
  reader.open(writer.writing_path());  // the header is on disk, in the temporary beside `file`, once the writer exists
  std::vector<Event> got;
  QCOMPARE(reader.read_new(got), std::size_t{0});
  for (int i = 0; i < 3; ++i) writer.emit(events[static_cast<std::size_t>(i)]);
  writer.flush();
  QCOMPARE(reader.read_new(got), std::size_t{3});
  QCOMPARE(reader.read_new(got), std::size_t{0});
  writer.emit(events[3]);
  writer.emit(events[4]);
  writer.flush();
  QCOMPARE(reader.read_new(got), std::size_t{2});
  for (std::size_t i = 0; i < got.size(); ++i) compare_events(got[i], events[i]);

  // A record written only in part is left for later: cut a finished file
  // mid-record and append the rest piece by piece.
  writer.close();
  const std::string whole = read_file(file);
  const std::size_t begin = 22;
  const std::string partial = path("partial.ssrun");
  write_file(partial, whole.substr(0, begin + kRecordSize + 100));
  RecordingReader tail;
  tail.open(partial);
  std::vector<Event> part;
  QCOMPARE(tail.read_new(part), std::size_t{1});
  QCOMPARE(tail.trailing_bytes(), std::uint64_t{100});
  write_file(partial, whole.substr(begin + kRecordSize + 100, kRecordSize), std::ios::app);  // completes record 1, starts record 2
  QCOMPARE(tail.read_new(part), std::size_t{1});
  write_file(partial, whole.substr(begin + 2 * kRecordSize + 100), std::ios::app);
  QCOMPARE(tail.read_new(part), std::size_t{3});
  QCOMPARE(part.size(), std::size_t{5});
  for (std::size_t i = 0; i < part.size(); ++i) compare_events(part[i], events[i]);
  QCOMPARE(tail.read_all().size(), std::size_t{5});
}

void TestEvents::recording_bad_files_name_the_offset_data() {
  std::string good;
  {
    RecordingWriter writer(path("good.ssrun"), "{}");
    writer.emit(make(EventKind::log, 1));
  }
  good = read_file(path("good.ssrun"));
  auto patched = [&](std::size_t at, std::string bytes) { return good.substr(0, at) + bytes + good.substr(at + bytes.size()); };
  QTest::addColumn<QByteArray>("bytes");  // "@MISSING@": no file at all
  QTest::addColumn<QString>("message");
  QTest::newRow("missing") << QByteArray("@MISSING@") << "cannot open the recording";
  QTest::newRow("empty") << QByteArray() << "byte 0: the header is cut off after 0 bytes";
  QTest::newRow("truncated header") << QByteArray::fromStdString(good.substr(0, 12))
                                    << "byte 12: the header is cut off after 12 bytes";
  QTest::newRow("bad magic") << QByteArray("PK\x03\x04 this is a zip file, not a run")
                             << "byte 0: not a ShardScope recording";
  QTest::newRow("text-mode copy") << QByteArray::fromStdString("SSRUN\n\x1a" + good.substr(8))
                                  << "byte 5: the magic's line-ending bytes were changed";
  QTest::newRow("newer version") << QByteArray::fromStdString(patched(8, std::string("\x07", 1)))
                                 << "byte 8: format version 7 is newer than this program (6)";
  QTest::newRow("version 0") << QByteArray::fromStdString(patched(8, std::string("\0", 1)))
                             << "byte 8: format version 0 is invalid";
  QTest::newRow("record size") << QByteArray::fromStdString(patched(12, std::string("\x2c\x01", 2)))
                               << "byte 12: record size 300, expected 408";
  QTest::newRow("metadata past end") << QByteArray::fromStdString(patched(16, std::string("\xe8\x03", 2)))
                                     << "byte 16: metadata length 1000 runs past the end";
  QTest::newRow("metadata not JSON") << QByteArray::fromStdString(patched(20, "{]"))
                                     << "byte 21: the metadata is not valid JSON";
  QTest::newRow("unknown kind") << QByteArray::fromStdString(patched(22, "\x0a"))
                                << "byte 22: record 0: unknown event kind 10";
  // The metadata is checked as every reader will parse it: nlohmann's
  // out_of_range.406 (exit 1 "internal error" in export) and nesting depth.
  { RecordingWriter writer(path("number.ssrun"), "{\"dp\": 1e300}"); }
  std::string number = read_file(path("number.ssrun"));
  number.replace(number.find("1e300"), 5, "1e400");
  QTest::newRow("metadata number past a double")
      << QByteArray::fromStdString(number)
      << "byte 27: the metadata is not valid JSON (key 'dp': the number 1e400 is beyond the range of a double";
  { RecordingWriter writer(path("deep.ssrun"), "{\"x\": " + std::string(600, '[') + std::string(600, ']') + "}"); }
  QTest::newRow("metadata 600 levels deep") << QByteArray::fromStdString(read_file(path("deep.ssrun")))
                                            << "byte 537: the metadata is not valid JSON (values nest deeper than 512";
}

// A directory or a FIFO as the recording is refused before the stream opens
// it (opening a FIFO with no writer would block forever).
void TestEvents::recording_reader_refuses_special_files() {
  const std::string fifo = path("run.fifo");
  QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string folder = dir_.path().toStdString();
  for (const auto& [file, kind] : {std::pair{fifo, "a FIFO (named pipe)"}, std::pair{folder, "a directory"}}) {
    try {
      RecordingReader reader;
      reader.open(file);
      QFAIL("no FormatError");
    } catch (const FormatError& e) {
      QCOMPARE(std::string(e.what()), file + ": is " + kind + ", not a recording; choose a .ssrun file");
    }
  }
}

void TestEvents::recording_bad_files_name_the_offset() {
  QFETCH(QByteArray, bytes);
  QFETCH(QString, message);
  const std::string file = path("bad.ssrun");
  std::remove(file.c_str());
  if (bytes != "@MISSING@") write_file(file, bytes.toStdString());
  try {
    RecordingReader reader;
    reader.open(file);
    (void)reader.read_all();
    QFAIL("no FormatError");
  } catch (const FormatError& e) {
    const QString what = QString::fromUtf8(e.what());
    QVERIFY2(what.startsWith(QString::fromStdString(file)), qPrintable(what));
    QVERIFY2(what.contains(message), qPrintable(what));
  }
}

void TestEvents::recording_writer_reports_an_unwritable_path() {
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, RecordingWriter(path("x.ssrun"), "{not json"));
  try {
    RecordingWriter writer("/no/such/dir/run.ssrun", "{}");
    QFAIL("no FormatError");
  } catch (const FormatError& e) {
    QVERIFY2(std::string(e.what()).find("/no/such/dir/run.ssrun: cannot write") != std::string::npos, e.what());
  }
}

void TestEvents::recording_keeps_chinese_text_and_metadata() {
  const std::string metadata = R"({"名称":"中文语料上的运行","model":"gpt-tiny"})";
  Event log = make(EventKind::log, 3);
  log.set_text("损失下降了：2.31 → 1.05");
  Event long_text = make(EventKind::error, 4);
  std::string many;
  for (int i = 0; i < 60; ++i) many += "梯度";  // 360 bytes: cut to fit, at a character boundary
  long_text.set_text(many);
  const std::string file = path("zh.ssrun");
  {
    RecordingWriter writer(file, metadata);
    writer.emit(log);
    writer.emit(long_text);
  }
  RecordingReader reader;
  reader.open(file);
  QCOMPARE(reader.metadata_json(), metadata);
  const auto back = reader.read_all();
  QCOMPARE(back.size(), std::size_t{2});
  QCOMPARE(QString::fromUtf8(back[0].text_view().data()), QString::fromUtf8("损失下降了：2.31 → 1.05"));
  const std::string cut(back[1].text_view());
  QVERIFY(!cut.empty() && many.starts_with(cut));
  QCOMPARE(QString::fromUtf8(cut.data(), static_cast<qsizetype>(cut.size())).toUtf8().toStdString(), cut);  // valid UTF-8
}

QTEST_GUILESS_MAIN(TestEvents)
#include "test_events.moc"
