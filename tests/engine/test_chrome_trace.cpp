// SPDX-License-Identifier: GPL-3.0-or-later
// The Chrome trace export (events/chrome_trace.h): one process per rank with
// compute and communication tracks, microsecond timestamps, and overlapping
// spans of one track moved to separate lanes so Perfetto draws them all.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "events/chrome_trace.h"
#include "events/event.h"

using namespace shardscope;

namespace {
Event make(EventKind kind, std::int64_t step) {
  Event e;
  e.kind = kind;
  e.step = step;
  return e;
}
}  // namespace

class TestChromeTrace : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void chrome_trace_has_ranks_tracks_and_microseconds();
  void chrome_trace_puts_overlapping_spans_on_separate_lanes();
  void chrome_trace_survives_damaged_times();
  void a_log_that_lasts_is_a_span();
};

void TestChromeTrace::chrome_trace_has_ranks_tracks_and_microseconds() {
  std::vector<Event> events;
  Event fwd = make(EventKind::compute_span, 1);
  fwd.micro_batch = 0;
  fwd.start_ns = 1000;
  fwd.end_ns = 3500;
  events.push_back(fwd);
  Event send = make(EventKind::comm_span, 1);
  send.op = CommOp::send;
  send.src = 0;
  send.dst = 1;
  send.bytes = 4096;
  send.start_ns = 3500;
  send.end_ns = 5250;
  events.push_back(send);
  Event fwd1 = fwd;
  fwd1.rank = 1;
  fwd1.stage = 1;
  fwd1.start_ns = 5250;
  fwd1.end_ns = 8000;
  events.push_back(fwd1);
  Event metrics = make(EventKind::step_metrics, 1);
  metrics.loss = 2.5f;
  metrics.tokens_per_s = 1024.0f;
  metrics.start_ns = metrics.end_ns = 9000;
  events.push_back(metrics);
  Event host_memory = make(EventKind::memory_sample, 1);  // a CPU rank: no GPU counter
  host_memory.start_ns = host_memory.end_ns = 9000;
  events.push_back(host_memory);
  Event gpu_memory = host_memory;  // a GPU rank: cudaMemGetInfo and the allocator beside the ledger
  gpu_memory.rank = 1;
  gpu_memory.device = 0;
  gpu_memory.device_used_bytes = 3'000'000'000;
  gpu_memory.device_reserved_bytes = 2'000'000'000;
  gpu_memory.device_total_bytes = 150'000'000'000;
  events.push_back(gpu_memory);
  Event note = make(EventKind::log, 1);
  note.rank = 1;
  note.stage = 1;
  note.set_text("say \"hi\" 你好");
  events.push_back(note);

  std::ostringstream out;
  write_chrome_trace(events, R"({"model":"gpt-tiny"})", out);
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(out.str()), &error);
  QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
  QCOMPARE(doc.object()["otherData"].toObject()["run"].toString(), QString(R"({"model":"gpt-tiny"})"));
  const QJsonArray trace = doc.object()["traceEvents"].toArray();

  QMap<QString, int> process_pid;               // "rank 1 (stage 1)" -> pid
  QMap<QPair<int, int>, QString> thread_names;  // (pid, tid) -> name
  QList<QJsonObject> spans, counters, instants;
  for (const QJsonValue& v : trace) {
    const QJsonObject o = v.toObject();
    const QString ph = o["ph"].toString();
    if (ph == "M" && o["name"] == "process_name") process_pid[o["args"]["name"].toString()] = o["pid"].toInt();
    if (ph == "M" && o["name"] == "thread_name")
      thread_names[qMakePair(o["pid"].toInt(), o["tid"].toInt())] = o["args"]["name"].toString();
    if (ph == "X") spans.append(o);
    if (ph == "C") counters.append(o);
    if (ph == "i") instants.append(o);
  }
  QVERIFY(process_pid.contains("rank 0 (stage 0)"));
  QVERIFY(process_pid.contains("rank 1 (stage 1)"));
  QCOMPARE(spans.size(), 3);
  const QJsonObject& compute0 = spans[0];
  const QJsonObject& comm0 = spans[1];
  QCOMPARE(compute0["pid"].toInt(), process_pid["rank 0 (stage 0)"]);
  QCOMPARE(comm0["pid"].toInt(), compute0["pid"].toInt());
  QVERIFY(comm0["tid"].toInt() != compute0["tid"].toInt());  // communication has its own track
  QCOMPARE(spans[2]["pid"].toInt(), process_pid["rank 1 (stage 1)"]);
  const auto track = [](const QJsonObject& o) { return qMakePair(o["pid"].toInt(), o["tid"].toInt()); };
  for (const QJsonObject& s : spans) QVERIFY(thread_names.contains(track(s)));  // every track used is named
  QCOMPARE(thread_names[track(compute0)], QString("compute"));
  QCOMPARE(thread_names[track(comm0)], QString("communication"));
  QCOMPARE(compute0["ts"].toDouble(), 1.0);  // nanoseconds -> microseconds
  QCOMPARE(compute0["dur"].toDouble(), 2.5);
  QCOMPARE(comm0["ts"].toDouble(), 3.5);
  QCOMPARE(comm0["dur"].toDouble(), 1.75);
  QCOMPARE(compute0["name"].toString(), QString("forward mb 0"));
  QCOMPARE(comm0["name"].toString(), QString("send"));
  const QJsonObject args = comm0["args"].toObject();
  QCOMPARE(args["src"].toInt(), 0);
  QCOMPARE(args["dst"].toInt(), 1);
  QCOMPARE(args["bytes"].toInt(), 4096);
  QCOMPARE(args["step"].toInt(), 1);
  bool loss_counter = false, tokens_counter = false;
  for (const QJsonObject& c : counters) {
    if (c["name"] == "loss") loss_counter = c["args"]["loss"].toDouble() == 2.5 && c["ts"].toDouble() == 9.0;
    if (c["name"] == "tokens/s") tokens_counter = c["args"]["tokens_per_s"].toDouble() == 1024.0;
  }
  QVERIFY(loss_counter);
  QVERIFY(tokens_counter);
  int gpu_counters = 0;
  for (const QJsonObject& c : counters)
    if (c["name"] == "GPU memory (bytes)") {
      ++gpu_counters;
      QCOMPARE(c["pid"].toInt(), process_pid["rank 1 (stage 1)"]);
      QCOMPARE(c["args"]["used (cudaMemGetInfo)"].toDouble(), 3e9);
      QCOMPARE(c["args"]["reserved by the allocator"].toDouble(), 2e9);
      QCOMPARE(c["args"]["total"].toDouble(), 150e9);
    }
  QCOMPARE(gpu_counters, 1);
  bool log_found = false;
  for (const QJsonObject& i : instants)
    if (i["cat"] == "log") {
      log_found = true;
      QCOMPARE(i["name"].toString(), QString::fromUtf8("say \"hi\" 你好"));
      QCOMPARE(i["pid"].toInt(), process_pid["rank 1 (stage 1)"]);
    }
  QVERIFY(log_found);
}

// Two sends of rank 0 that overlap without nesting cannot share a thread
// (viewers drop or misdraw misnested slices); a span inside another can.
void TestChromeTrace::chrome_trace_puts_overlapping_spans_on_separate_lanes() {
  auto comm = [](std::int64_t start, std::int64_t end) {
    Event e = make(EventKind::comm_span, 1);
    e.op = CommOp::send;
    e.start_ns = start;
    e.end_ns = end;
    return e;
  };
  Event stage = make(EventKind::compute_span, 1);
  stage.start_ns = 0;
  stage.end_ns = 10'000;
  Event layer = stage;  // nested in the stage span
  layer.layer = 0;
  layer.start_ns = 1'000;
  layer.end_ns = 2'000;
  // Emitted out of time order, as a receiver thread may emit them.
  const std::vector<Event> events = {comm(3'000, 8'000), layer, stage, comm(1'000, 5'000), comm(5'000, 6'000)};
  std::ostringstream out;
  write_chrome_trace(events, "{}", out);
  const QJsonArray trace =
      QJsonDocument::fromJson(QByteArray::fromStdString(out.str())).object()["traceEvents"].toArray();
  QMap<double, int> comm_tid, compute_tid;  // by ts
  QMap<int, QString> thread_names;
  for (const QJsonValue& v : trace) {
    const QJsonObject o = v.toObject();
    if (o["ph"] == "M" && o["name"] == "thread_name") thread_names[o["tid"].toInt()] = o["args"]["name"].toString();
    if (o["ph"] == "X" && o["cat"] == "comm") comm_tid[o["ts"].toDouble()] = o["tid"].toInt();
    if (o["ph"] == "X" && o["cat"] == "compute") compute_tid[o["ts"].toDouble()] = o["tid"].toInt();
  }
  QCOMPARE(comm_tid.size(), 3);
  QVERIFY(comm_tid[1.0] != comm_tid[3.0]);  // [1, 5) and [3, 8) overlap: two lanes
  QCOMPARE(comm_tid[5.0], comm_tid[1.0]);   // [5, 6) starts when [1, 5) ends: back on the first lane
  QCOMPARE(thread_names[comm_tid[1.0]], QString("communication"));
  QCOMPARE(thread_names[comm_tid[3.0]], QString("communication 2"));
  QCOMPARE(compute_tid[0.0], compute_tid[1.0]);  // nesting is fine on one thread
}

// A damaged recording may hold any times: a span from INT64_MIN to INT64_MAX
// lasts about 1.8e16 µs (its end minus its start overflowed to -1 and was drawn as 0).
void TestChromeTrace::chrome_trace_survives_damaged_times() {
  Event span = make(EventKind::compute_span, 1);
  span.start_ns = std::numeric_limits<std::int64_t>::min();
  span.end_ns = std::numeric_limits<std::int64_t>::max();
  Event backwards = span;
  backwards.rank = 1;
  std::swap(backwards.start_ns, backwards.end_ns);
  std::ostringstream out;
  write_chrome_trace({span, backwards}, "{}", out);
  const QJsonArray trace = QJsonDocument::fromJson(QByteArray::fromStdString(out.str()))["traceEvents"].toArray();
  std::vector<double> durations;
  for (const QJsonValue& v : trace)
    if (v["ph"].toString() == "X") durations.push_back(v["dur"].toDouble());
  QCOMPARE(durations.size(), std::size_t{2});
  QCOMPARE(durations[0], 18446744073709551.615);  // (2^64 - 1) ns in µs
  QCOMPARE(durations[1], 0.0);                    // ends before it starts
}

// A checkpoint's background save is one log event from its copy to its
// write's end: a complete event on the log track; an instant log stays one.
void TestChromeTrace::a_log_that_lasts_is_a_span() {
  Event save = make(EventKind::log, 2);
  save.start_ns = 1'000;
  save.end_ns = 51'000;
  save.set_text("checkpoint step 2: training waited 0.0 ms (copy), written in 0.1 ms");
  Event note = make(EventKind::log, 2);
  note.start_ns = note.end_ns = 2'000;
  std::ostringstream out;
  write_chrome_trace({save, note}, "{}", out);
  const QJsonArray trace = QJsonDocument::fromJson(QByteArray::fromStdString(out.str()))["traceEvents"].toArray();
  int spans = 0, instants = 0;
  for (const QJsonValue& v : trace) {
    if (v["cat"].toString() != "log") continue;
    if (v["ph"].toString() == "X") {
      ++spans;
      QCOMPARE(v["dur"].toDouble(), 50.0);
      QVERIFY(v["name"].toString().startsWith("checkpoint step 2"));
    }
    if (v["ph"].toString() == "i") ++instants;
  }
  QCOMPARE(spans, 1);
  QCOMPARE(instants, 1);
}

QTEST_GUILESS_MAIN(TestChromeTrace)
#include "test_chrome_trace.moc"
