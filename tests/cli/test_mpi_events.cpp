// SPDX-License-Identifier: GPL-3.0-or-later
// Every rank's events in one place when the ranks are processes
// (events/event_stream.h, app/cli_job_events.cpp): `launch --nproc-per-node 4
// -- train --dp 2 --pp 2 --record F` records the events of all 4 ranks, the
// recording replays (its config reads back) and exports 4 ranks' tracks, and
// the schedule summary prints the bubble, and the processes' times line up; a collector listening on a port
// (what the GUI's Attach does) receives every rank's events from `--events-to`,
// with the losses the run wrote; an unreachable listener stops the job.
// Skipped where mpirun is missing.
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "cli/cli_runner.h"
#include "events/event_queue.h"
#include "events/event_stream.h"
#include "events/recording.h"
#include "train/metrics_json.h"

using namespace shardscope;

namespace {

const QStringList kPipeline{"train", "--model",         "gpt-tiny", "--steps",     "20", "--batch",
                            "8",     "--seq",           "16",       "--dp",        "2",  "--pp",
                            "2",     "--micro-batches", "2",        "--log-every", "10"};

CliResult launch(const QStringList& train_args) {
  return run_cli(QStringList{"launch", "--nproc-per-node", "4", "--"} + train_args);
}

std::set<int> ranks_of(const std::vector<Event>& events) {
  std::set<int> ranks;
  for (const Event& e : events) ranks.insert(e.rank);
  return ranks;
}

std::vector<float> losses_of(const std::vector<Event>& events) {
  std::vector<float> out;
  for (const Event& e : events)
    if (e.kind == EventKind::step_metrics) out.push_back(e.loss);
  return out;
}

std::vector<float> metrics_losses(const QString& path) {
  QFile f(path);
  std::vector<float> out;
  if (!f.open(QIODevice::ReadOnly)) return out;
  for (const QByteArray& line : f.readAll().split('\n'))
    if (!line.trimmed().isEmpty()) out.push_back(static_cast<float>(QJsonDocument::fromJson(line)["loss"].toDouble()));
  return out;
}

// The processes' clocks compare (one machine: rank 0's start is every
// process's origin): stage 1 starts a micro-batch's forward only after stage 0
// of its replica finished it. The gaps, in ns, one per (step, replica, micro-batch).
std::vector<std::int64_t> stage_handoff_gaps(const std::vector<Event>& events, int dp) {
  std::map<std::tuple<std::int64_t, int, int>, std::int64_t> stage0_end;
  auto is_forward = [](const Event& e) {
    return e.kind == EventKind::compute_span && e.compute == ComputeKind::forward && e.layer == -1;
  };
  for (const Event& e : events)
    if (is_forward(e) && e.stage == 0) stage0_end[{e.step, e.rank % dp, e.micro_batch}] = e.end_ns;
  std::vector<std::int64_t> gaps;
  for (const Event& e : events) {
    const auto sent = stage0_end.find({e.step, e.rank % dp, e.micro_batch});
    if (is_forward(e) && e.stage == 1 && sent != stage0_end.end()) gaps.push_back(e.start_ns - sent->second);
  }
  return gaps;
}

// The distinct processes (ranks) of a Chrome trace's events.
QSet<int> trace_pids(const QString& path) {
  QFile f(path);
  QSet<int> pids;
  if (!f.open(QIODevice::ReadOnly)) return pids;
  const QJsonDocument trace = QJsonDocument::fromJson(f.readAll());
  const QJsonArray events = trace.isArray() ? trace.array() : trace["traceEvents"].toArray();
  for (const QJsonValue& e : events)
    if (e["ph"].toString() == "X") pids.insert(e["pid"].toInt());
  return pids;
}

}  // namespace

class TestMpiEvents : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() {
    if (QStandardPaths::findExecutable("mpirun").isEmpty())
      QSKIP("skipped: mpirun not found (install Open MPI: scripts/install-deps.sh installs openmpi-bin)");
  }

  void recording_holds_every_rank() {
    QTemporaryDir dir;
    const QString record = dir.filePath("job.ssrun"), trace = dir.filePath("job.json");
    const CliResult r = launch(kPipeline + QStringList{"--record", record});
    QVERIFY2(r.code == 0, qPrintable(r.err.right(3000) + "\n--- stdout:\n" + r.out.right(1000)));
    QVERIFY2(r.out.contains("bubble measured"), qPrintable(r.out.right(1500)));
    QVERIFY2(!r.out.contains("not summarized"), qPrintable(r.out.right(1500)));
    RecordingReader reader;
    reader.open(record.toStdString());
    const std::vector<Event> events = reader.read_all();
    QCOMPARE(ranks_of(events), (std::set<int>{0, 1, 2, 3}));
    QCOMPARE(losses_of(events).size(), std::size_t{20});
    qInfo("%zu events recorded from 4 processes", events.size());
    const std::vector<std::int64_t> gaps = stage_handoff_gaps(events, 2);
    QCOMPARE(gaps.size(), std::size_t{20 * 2 * 2});  // steps x replicas x micro-batches
    const std::int64_t least = *std::min_element(gaps.begin(), gaps.end());
    qInfo("stage 0 -> stage 1 hand-off across processes: at least %.1f us", static_cast<double>(least) / 1e3);
    QVERIFY2(least >= 0, qPrintable(QString::number(least)));
    const RunConfig config = run_config_from_json(nlohmann::json::parse(reader.metadata_json()));
    QCOMPARE(config.layout.dp() * config.layout.pp(), 4);
    const CliResult exported = run_cli({"export", record, "--chrome-trace", trace});
    QVERIFY2(exported.code == 0, qPrintable(exported.err));
    QCOMPARE(trace_pids(trace).size(), 4);
  }

  // What the GUI's Attach does: listen, and let a job started elsewhere stream to it.
  void collector_receives_every_rank() {
    QTemporaryDir dir;
    const QString metrics = dir.filePath("metrics.jsonl");
    EventQueue queue(1 << 20);
    EventCollector collector("127.0.0.1", 0, &queue);
    const QString address = "127.0.0.1:" + QString::number(collector.port());
    const CliResult r = launch(kPipeline + QStringList{"--events-to", address, "--metrics-out", metrics});
    QVERIFY2(r.code == 0, qPrintable(r.err.right(3000)));
    QVERIFY(collector.wait_for_ended(1, 10.0));
    QCOMPARE(collector.streams_opened(), 1);  // rank 0 forwards every rank's events
    QCOMPARE(QString::fromStdString(collector.error()), QString());
    std::vector<Event> events;
    while (queue.drain(events, 1 << 20) > 0) {
    }
    QCOMPARE(ranks_of(events), (std::set<int>{0, 1, 2, 3}));
    QCOMPARE(losses_of(events), metrics_losses(metrics));
    QCOMPARE(losses_of(events).size(), std::size_t{20});
    QVERIFY(nlohmann::json::parse(collector.metadata_json()).contains("pp"));
  }

  // Ranks as threads stream the same way (one process, every rank).
  void threaded_run_streams_too() {
    EventQueue queue(1 << 20);
    EventCollector collector("127.0.0.1", 0, &queue);
    const CliResult r =
        run_cli(kPipeline + QStringList{"--events-to", "127.0.0.1:" + QString::number(collector.port())});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(collector.wait_for_ended(1, 10.0));
    std::vector<Event> events;
    while (queue.drain(events, 1 << 20) > 0) {
    }
    QCOMPARE(ranks_of(events), (std::set<int>{0, 1, 2, 3}));
  }

  // Rank 0 cannot reach the listener: the job stops, saying so, and no process waits for it.
  void unreachable_listener_stops_the_job() {
    QElapsedTimer timer;
    timer.start();
    const CliResult r = launch(kPipeline + QStringList{"--events-to", "127.0.0.1:1"});
    qInfo("the job ended after %lld ms", static_cast<long long>(timer.elapsed()));
    QVERIFY(r.code != 0);
    QVERIFY2(r.err.contains("--events-to 127.0.0.1:1: cannot connect"), qPrintable(r.err.right(3000)));
    QVERIFY2(timer.elapsed() < 30000, qPrintable(QString::number(timer.elapsed())));
  }

  void bad_address_is_refused() {
    for (const QString& address : {QString("localhost"), QString("127.0.0.1:0"), QString("host:99999")}) {
      const CliResult r = run_cli(kPipeline + QStringList{"--events-to", address});
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.contains("--events-to '" + address + "': expected HOST:PORT"), qPrintable(r.err));
    }
  }
};

QTEST_GUILESS_MAIN(TestMpiEvents)
#include "test_mpi_events.moc"
