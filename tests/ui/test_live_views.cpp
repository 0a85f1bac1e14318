// SPDX-License-Identifier: GPL-3.0-or-later
// The live plots and slow motion, offscreen. Synthetic events (the engine's
// fp16 loss scaling may not emit them yet) check the loss-scale plot (log
// axis, one overflow marker per step), the per-rank throughput formula and
// memory over time. The playback pacer is checked with a fake clock, then a
// real run at 1/4 speed: a step's events reach the views over ~4x their span
// and the trainer never runs ahead of the replay by more than one step.
#include <spdlog/logger.h>

#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QLabel>
#include <QPlainTextEdit>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <thread>

#include "config_panel.h"
#include "events/recording.h"
#include "log_sink.h"
#include "main_window.h"
#include "playback_pacer.h"
#include "run_controller.h"
#include "train/metrics_json.h"
#include "views/live_plots.h"
#include "views/loss_plot.h"
#include "views/loss_scale_plot.h"
#include "views/memory_timeline_plot.h"
#include "views/qcustomplot_include.h"
#include "views/throughput_plot.h"

using namespace shardscope;
using namespace shardscope::ui;

namespace {

constexpr std::int64_t kMs = 1'000'000;

Event metrics(std::int64_t step, float scale, bool skipped, float tokens_per_s = 1000.0f) {
  Event e;
  e.kind = EventKind::step_metrics;
  e.step = step;
  e.loss = 5.0f;
  e.loss_scale = scale;
  e.skipped = skipped;
  e.tokens_per_s = tokens_per_s;
  return e;
}

Event span(int rank, std::int64_t step, ComputeKind kind, std::int64_t start_ns, std::int64_t end_ns) {
  Event e;
  e.kind = EventKind::compute_span;
  e.rank = rank;
  e.step = step;
  e.compute = kind;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  return e;
}

RunConfig smallRun() {
  RunConfig c = ConfigPanel::defaultConfig();
  c.batch = 8;
  c.seq = 32;
  c.micro_batches = 4;
  return c;
}

// The line's data lie inside its value axis, from 0, and its peak reaches past
// 40% of the axis: a line squashed flat against the axis fails.
void expectFillsItsAxis(const QCPGraph* graph) {
  QVERIFY(graph->dataCount() > 0);
  double peak = 0;
  for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) peak = std::max(peak, it->value);
  const QCPAxis* axis = graph->valueAxis();
  QVERIFY(axis->visible());
  const QCPRange range = axis->range();
  QVERIFY2(
      range.lower <= 0 && range.upper >= peak,
      qPrintable(
          QStringLiteral("%1: %2 outside [%3, %4]").arg(graph->name()).arg(peak).arg(range.lower).arg(range.upper)));
  QVERIFY2(peak > 0.4 * range.upper,
           qPrintable(QStringLiteral("%1: peak %2 of an axis up to %3").arg(graph->name()).arg(peak).arg(range.upper)));
}

}  // namespace

class TestLiveViews : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void lossScaleOnLogAxisWithOverflowMarkers() {
    LossScalePlot plot;
    plot.reset(*make_run_plan(smallRun()));
    QVERIFY(plot.plot()->yAxis->scaleType() == QCPAxis::stLogarithmic);
    Event overflow;
    overflow.kind = EventKind::overflow;
    overflow.step = 2;
    overflow.loss_scale = 65536.0f;
    overflow.set_text("h.0.attn.w_qkv");
    Event overflow_rank1 = overflow;
    overflow_rank1.rank = 1;
    plot.consume({metrics(1, 65536.0f, false), overflow, overflow_rank1, metrics(2, 65536.0f, true),
                  metrics(3, 32768.0f, false), metrics(4, 32768.0f, false)});
    plot.refresh();
    QCOMPARE(plot.scalePointCount(), 4);
    // Two ranks reported the overflow and the step says skipped: one marker.
    QCOMPARE(plot.overflowSteps().size(), std::size_t{1});
    QCOMPARE(plot.overflowSteps().begin()->first, std::int64_t{2});
    QCOMPARE(plot.overflowSteps().begin()->second, 65536.0);
    // The axis covers the halving with margin and stays positive (log).
    QVERIFY(plot.plot()->yAxis->range().lower > 0);
    QVERIFY(plot.plot()->yAxis->range().lower <= 32768.0);
    QVERIFY(plot.plot()->yAxis->range().upper >= 65536.0);
    plot.reset(*make_run_plan(smallRun()));
    QCOMPARE(plot.scalePointCount(), 0);
    QVERIFY(plot.overflowSteps().empty());
  }

  void perRankThroughputFromOptimizerSpans() {
    ThroughputPlot plot;
    RunConfig c = smallRun();  // dp 2: each replica takes 8 x 32 / 2 = 128 tokens a step
    plot.reset(*make_run_plan(c));
    QCOMPARE(plot.tokensPerReplicaStep(), 128.0);
    plot.consume({span(0, 1, ComputeKind::forward, 0, 5 * kMs), span(0, 1, ComputeKind::backward, 5 * kMs, 15 * kMs),
                  span(0, 1, ComputeKind::optimizer, 15 * kMs, 20 * kMs), metrics(1, 1, false, 6000.0f),
                  span(0, 2, ComputeKind::forward, 22 * kMs, 30 * kMs),
                  span(0, 2, ComputeKind::optimizer, 50 * kMs, 60 * kMs), metrics(2, 1, false, 3000.0f),
                  span(3, 1, ComputeKind::forward, 1 * kMs, 2 * kMs),
                  span(3, 1, ComputeKind::optimizer, 2 * kMs, 9 * kMs)});
    plot.refresh();
    QCOMPARE(plot.totalPointCount(), 2);
    const auto r0 = plot.rankPoints(0);
    QCOMPARE(r0.size(), std::size_t{2});
    QCOMPARE(r0[0].first, 1.0);
    QCOMPARE(r0[0].second, 128.0 / 0.020);  // first step: since its first span began
    QCOMPARE(r0[1].first, 2.0);
    QCOMPARE(r0[1].second, 128.0 / 0.040);  // optimizer end to optimizer end
    const auto r3 = plot.rankPoints(3);
    QCOMPARE(r3.size(), std::size_t{1});
    QCOMPARE(r3[0].second, 128.0 / 0.008);
    QCOMPARE(plot.rankPointCount(1), 0);
    QVERIFY(plot.toolTip().contains(QStringLiteral("optimizer")));
  }

  // Two labelled totals: the modeled one from the virtual time between the
  // step_metrics events (the first since 0), the measured one as the engine sent it.
  void modeledAndMeasuredThroughput() {
    ThroughputPlot plot;
    RunConfig c = smallRun();  // 8 x 32 = 256 tokens a step
    c.gpu_profile = "H100";
    plot.reset(*make_run_plan(c));
    QCOMPARE(plot.modeledName(), QStringLiteral("modeled tokens/s on H100"));
    QCOMPARE(plot.measuredName(), QStringLiteral("measured host tokens/s (wall clock)"));
    Event m1 = metrics(1, 1, false, 6000.0f), m2 = metrics(2, 1, false, 3000.0f);
    m1.start_ns = m1.end_ns = 50'000;   // 50 us on the H100
    m2.start_ns = m2.end_ns = 130'000;  // 80 us more
    plot.consume({m1, m2});
    plot.refresh();
    const auto modeled = plot.modeledPoints();
    QCOMPARE(modeled.size(), std::size_t{2});
    QCOMPARE(modeled[0], std::make_pair(1.0, 256.0 * 1e9 / 50'000));
    QCOMPARE(modeled[1], std::make_pair(2.0, 256.0 * 1e9 / 80'000));
    const auto measured = plot.measuredPoints();
    QCOMPARE(measured.size(), std::size_t{2});
    QCOMPARE(measured[1], std::make_pair(2.0, 3000.0));
    QVERIFY(plot.plot()->legend->hasItemWithPlottable(plot.plot()->graph(1)));
    QCOMPARE(plot.plot()->legend->itemCount(), 2);  // the two totals; the ranks are dashed in their colours
    // Without a profile the device is this machine's cores; on the wall clock there is no modeled line.
    c.gpu_profile = "none";
    plot.reset(*make_run_plan(c));
    QCOMPARE(plot.modeledName(), QStringLiteral("modeled tokens/s on this machine's cores"));
    c.clock = ClockKind::wall;
    plot.reset(*make_run_plan(c));
    plot.consume({m1, m2});
    QVERIFY(plot.modeledPoints().empty());
    QCOMPARE(plot.measuredPoints().size(), std::size_t{2});
    QVERIFY(!plot.plot()->legend->hasItemWithPlottable(plot.plot()->graph(1)));
  }

  // A GPU profile models tokens/s in millions while the host, every rank
  // sharing its cores, measures thousands: each line on an axis of its own,
  // each filling a good part of it and labelled with what it measures.
  void gpuProfileThroughputOnTwoAxes() {
    ThroughputPlot plot;
    RunConfig c = smallRun();  // 256 tokens a step, 128 a replica
    c.gpu_profile = "H100";
    plot.reset(*make_run_plan(c));
    Event m1 = metrics(1, 1, false, 5000.0f), m2 = metrics(2, 1, false, 3200.0f);
    m1.start_ns = m1.end_ns = 50'000;   // 5.12 M tokens/s modeled, 1000x the host's 5000
    m2.start_ns = m2.end_ns = 130'000;  // 3.2 M
    plot.consume({span(0, 1, ComputeKind::forward, 0, 20'000), span(0, 1, ComputeKind::optimizer, 30'000, 40'000), m1,
                  span(0, 2, ComputeKind::optimizer, 70'000, 80'000), m2});
    plot.refresh();
    const QCustomPlot* p = plot.plot();
    const QCPGraph* measured = p->graph(0);
    const QCPGraph* modeled = p->graph(1);
    QCOMPARE(measured->name(), plot.measuredName());
    QCOMPARE(modeled->name(), plot.modeledName());
    expectFillsItsAxis(modeled);
    expectFillsItsAxis(measured);
    QVERIFY(measured->valueAxis() != modeled->valueAxis());
    const QCPGraph* rank0 = p->graph(2);  // 128 tokens in 40 us, then in 40 us: 3.2 M on the modeled axis
    QCOMPARE(plot.rankPointCount(0), 2);
    QCOMPARE(rank0->valueAxis(), modeled->valueAxis());
    expectFillsItsAxis(rank0);
    const QString modeled_label = modeled->valueAxis()->label(), measured_label = measured->valueAxis()->label();
    QVERIFY2(modeled_label.contains(QStringLiteral("modeled")) && modeled_label.contains(QStringLiteral("H100")) &&
                 modeled_label.contains(QStringLiteral("virtual clock")),
             qPrintable(modeled_label));
    QVERIFY2(measured_label.contains(QStringLiteral("measured host")) &&
                 measured_label.contains(QStringLiteral("wall clock")),
             qPrintable(measured_label));
    // Without a profile both count tokens on this machine's cores: one axis shows what sharing them costs.
    c.gpu_profile = "none";
    plot.reset(*make_run_plan(c));
    plot.consume({m1, m2});
    plot.refresh();
    QCOMPARE(p->graph(0)->valueAxis(), p->graph(1)->valueAxis());
    QVERIFY(!p->yAxis2->visible());
    const QString shared = p->yAxis->label();
    QVERIFY2(shared.contains(QStringLiteral("modeled")) && shared.contains(QStringLiteral("measured host")),
             qPrintable(shared));
    c.clock = ClockKind::wall;  // the host's line and the ranks' on the wall clock alone
    plot.reset(*make_run_plan(c));
    QVERIFY2(p->yAxis->label().contains(QStringLiteral("wall clock")), qPrintable(p->yAxis->label()));
    QVERIFY(!p->yAxis2->visible());
  }

  void memoryOverTime() {
    MemoryTimelinePlot plot;
    plot.reset(*make_run_plan(smallRun()));
    QCOMPARE(plot.rankCount(), 4);
    Event m;
    m.kind = EventKind::memory_sample;
    m.rank = 2;
    m.end_ns = 10 * kMs;
    m.memory[0] = 1000;
    m.memory[3] = 500;
    Event later = m;
    later.end_ns = 20 * kMs;
    later.memory[3] = 2000;
    plot.consume({m, later});
    plot.refresh();
    QCOMPARE(plot.pointCount(2), 2);
    QCOMPARE(plot.pointCount(0), 0);
    QCOMPARE(plot.lastTotalBytes(2), std::int64_t{3000});
  }

  // The time axis spans the whole run from its first steps: 2 of 40 steps in 20 ms → about 0.4 s.
  void memoryOverTimeSpansTheRun() {
    RunConfig c = smallRun();
    c.steps = 40;
    MemoryTimelinePlot plot;
    plot.reset(*make_run_plan(c));
    QCOMPARE(plot.plot()->xAxis->label(), QStringLiteral("Virtual time (s)"));
    Event m;
    m.kind = EventKind::memory_sample;
    m.rank = 0;
    m.step = 1;
    m.end_ns = 10 * kMs;
    Event later = m;
    later.step = 2;
    later.end_ns = 20 * kMs;
    plot.consume({m, later});
    plot.refresh();
    QVERIFY2(plot.plot()->xAxis->range().upper >= 0.4, qPrintable(QString::number(plot.plot()->xAxis->range().upper)));
    QVERIFY(plot.plot()->xAxis->range().upper < 0.45);
  }

  void pacerSpreadsAStepWithAFakeClock() {
    PlaybackPacer pacer;
    pacer.setSpeed(0.25);
    std::vector<Event> step;  // event time 100..200 ms of the run
    step.push_back(span(0, 1, ComputeKind::forward, 100 * kMs, 110 * kMs));
    step.push_back(span(1, 1, ComputeKind::forward, 110 * kMs, 150 * kMs));
    step.push_back(span(0, 1, ComputeKind::optimizer, 190 * kMs, 200 * kMs));
    const std::int64_t wall0 = 5'000 * kMs;  // any origin
    pacer.push(step, wall0);
    std::vector<Event> out;
    pacer.release(wall0 + 39 * kMs, out);  // 10 ms of event time needs 40 ms of wall time
    QCOMPARE(out.size(), std::size_t{0});
    pacer.release(wall0 + 40 * kMs, out);
    QCOMPARE(out.size(), std::size_t{1});
    pacer.release(wall0 + 399 * kMs, out);
    QCOMPARE(out.size(), std::size_t{2});
    QVERIFY(!pacer.empty());
    pacer.release(wall0 + 400 * kMs, out);  // the step's 100 ms span took 400 ms: 1/4 speed
    QCOMPARE(out.size(), std::size_t{3});
    QVERIFY(pacer.empty());
    QCOMPARE(out[2].compute, ComputeKind::optimizer);  // arrival order kept
    // The next step re-anchors: the wait between steps is not replayed.
    pacer.endStep();
    pacer.push({span(0, 2, ComputeKind::forward, 900 * kMs, 920 * kMs)}, wall0 + 1000 * kMs);
    out.clear();
    pacer.release(wall0 + 1079 * kMs, out);
    QCOMPARE(out.size(), std::size_t{0});
    pacer.release(wall0 + 1080 * kMs, out);
    QCOMPARE(out.size(), std::size_t{1});
    // Real time passes everything at once.
    pacer.setSpeed(1.0);
    pacer.push(step, wall0);
    out.clear();
    pacer.release(wall0, out);
    QCOMPARE(out.size(), std::size_t{3});
  }

  void slowMotionRunReplaysEachStepAtAQuarter() {
    MainWindow window;
    QComboBox* speed = window.speedBox();
    speed->setCurrentIndex(speed->findData(0.25));
    QCOMPARE(window.controller()->playbackSpeed(), 0.25);
    auto* note = window.findChild<QLabel*>(QStringLiteral("speedNote"));
    QVERIFY(note != nullptr);
    QVERIFY2(note->text().contains(QStringLiteral("training waits between steps")), qPrintable(note->text()));

    RunConfig c = ConfigPanel::defaultConfig();  // batch 16 x seq 64: steps long against a 16 ms UI tick
    c.steps = 3;
    window.configPanel()->setConfig(c);
    QElapsedTimer clock;
    clock.start();
    // Per step: the last hand-over to the views (wall ms), and the events' span
    // (earliest start to latest end, engine ns).
    std::map<std::int64_t, qint64> last_handover;
    std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> span_ns;
    std::int64_t max_ahead = 0;
    connect(window.controller(), &RunController::eventsDrained, this, [&](const std::vector<Event>& events) {
      const qint64 now = clock.elapsed();
      for (const Event& e : events) {
        if (e.step < 1) continue;
        last_handover[e.step] = now;
        auto t = span_ns.emplace(e.step, std::make_pair(e.start_ns, e.end_ns)).first;
        t->second.first = std::min(t->second.first, e.start_ns);
        t->second.second = std::max(t->second.second, e.end_ns);
      }
      max_ahead = std::max(max_ahead, window.controller()->stepsDone() - window.controller()->stepsReplayed());
    });
    window.startRun();
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    QCOMPARE(window.lossPlot()->trainPointCount(), 3);
    QVERIFY(max_ahead <= 1);  // the trainer waited for the views between steps
    for (std::int64_t s : {2, 3}) {
      QVERIFY(last_handover.count(s) == 1 && last_handover.count(s - 1) == 1);
      // Step s began only after step s-1 was handed over completely (the
      // trainer waits), and its last event is handed over no earlier than its
      // span / speed later. Scheduling delays only lengthen this, so the lower
      // bound holds on a loaded machine too.
      const double span_ms = static_cast<double>(span_ns[s].second - span_ns[s].first) / 1e6;
      const double replay_ms = static_cast<double>(last_handover[s] - last_handover[s - 1]);
      qInfo("step %lld: events span %.1f ms, shown over %.1f ms (%.2fx)", static_cast<long long>(s), span_ms, replay_ms,
            replay_ms / std::max(span_ms, 1e-9));
      QVERIFY(span_ms > 1.0);
      // About 4x by construction (real time would be about 1x); 3x leaves room
      // for the first events' start. The upper bound is loose: the machine is shared.
      QVERIFY2(replay_ms >= 3.0 * span_ms, qPrintable(QString::number(replay_ms)));
      QVERIFY2(replay_ms <= 10.0 * span_ms + 2000.0, qPrintable(QString::number(replay_ms)));
    }
  }

  void overflowEventsReachPlotAndLog() {
    // A recording of fp16-style events (what the engine emits once its fp16
    // path lands), opened in the window: the same dispatch live events take.
    const QString path = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("test_overflow.ssrun"));
    RunConfig c = smallRun();
    c.precision = Precision::fp16;
    {
      RecordingWriter writer(path.toStdString(), run_config_to_json(c).dump());
      Event overflow;
      overflow.kind = EventKind::overflow;
      overflow.rank = 3;
      overflow.step = 2;
      overflow.loss_scale = 65536.0f;
      overflow.start_ns = overflow.end_ns = 15 * kMs;
      overflow.set_text("h.1.mlp.w_fc");
      Event m1 = metrics(1, 65536.0f, false), m2 = metrics(2, 65536.0f, true), m3 = metrics(3, 32768.0f, false);
      m1.start_ns = m1.end_ns = 10 * kMs;
      m2.start_ns = m2.end_ns = 20 * kMs;
      m3.start_ns = m3.end_ns = 30 * kMs;
      for (const Event& e : {m1, overflow, m2, m3}) writer.emit(e);
      writer.close();
    }
    MainWindow window;
    QVERIFY(window.openRecording(path));
    QCOMPARE(window.livePlots()->lossScale()->scalePointCount(), 3);
    QCOMPARE(window.livePlots()->lossScale()->overflowSteps().size(), std::size_t{1});
    QCOMPARE(window.livePlots()->lossScale()->overflowSteps().count(2), std::size_t{1});
    const QString log = window.logText();
    QVERIFY2(log.contains(QStringLiteral("warning rank 3 step 2: inf/NaN in h.1.mlp.w_fc at loss scale 65536")),
             qPrintable(log));
  }

  void logLinesFromAnyThreadReachThePanel() {
    MainWindow window;
    std::thread worker([&window] {
      for (int i = 0; i < 5; ++i) window.logger().info("from a worker thread {}", i);
      window.logger().error("a worker error");
    });
    worker.join();
    // Queued, not yet in the widget: the GUI timer (or logText) drains them.
    QTRY_VERIFY_WITH_TIMEOUT(window.findChild<QPlainTextEdit*>(QStringLiteral("log"))
                                 ->toPlainText()
                                 .contains(QStringLiteral("from a worker thread 4")),
                             5000);
    QVERIFY(window.logText().contains(QStringLiteral("error a worker error")));
    // A flood is bounded: the oldest lines are dropped and counted.
    QueuedLogSink sink;
    auto logger = std::make_shared<spdlog::logger>("flood", std::shared_ptr<spdlog::sinks::sink>(&sink, [](auto*) {}));
    for (std::size_t i = 0; i < QueuedLogSink::kMaxQueued + 7; ++i) logger->info("line {}", i);
    QCOMPARE(sink.droppedLines(), std::size_t{7});
    const auto lines = sink.take();
    QCOMPARE(lines.size(), QueuedLogSink::kMaxQueued);
    QVERIFY(QString::fromStdString(lines.front().text).endsWith(QStringLiteral("line 7")));
    QVERIFY(sink.take().empty());
  }

  void liveRunFillsThePlots() {
    MainWindow window;
    RunConfig c = smallRun();
    c.steps = 3;
    window.configPanel()->setConfig(c);
    window.startRun();
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    LivePlots* plots = window.livePlots();
    QCOMPARE(plots->lossScale()->scalePointCount(), 3);
    QVERIFY(plots->lossScale()->overflowSteps().empty());  // fp32: scale 1, never skipped
    QCOMPARE(plots->throughput()->totalPointCount(), 3);
    const auto ledger = window.controller()->finalMemory();
    for (int r = 0; r < 4; ++r) {
      QCOMPARE(plots->throughput()->rankPointCount(r), 3);
      QVERIFY(plots->memoryTimeline()->pointCount(r) >= 3);
      std::int64_t total = 0;
      for (MemoryCategory cat : kAllMemoryCategories) total += ledger[static_cast<std::size_t>(r)][cat];
      QCOMPARE(plots->memoryTimeline()->lastTotalBytes(r), total);
    }
    // The engine's log, the UI's own messages and errors arrive through spdlog.
    QVERIFY2(window.logText().contains(QStringLiteral("Finished")), qPrintable(window.logText()));
    QVERIFY2(window.logText().contains(QStringLiteral("Starting gpt-tiny")), qPrintable(window.logText()));
    QVERIFY2(
        window.logText().contains(QStringLiteral("info gpt-tiny: 4 ranks (dp 2 x pp 2)")),  // the engine's log event
        qPrintable(window.logText()));
  }

  // The gradient accumulation lesson: 4 accumulation steps of 4, then one of 16.
  // The first run stays on the loss plot, named by its setup, and the second
  // run's losses lie on it (the same averaged gradient, summed in another order).
  void secondRunIsDrawnOverTheFirst() {
    MainWindow window;
    RunConfig c = ConfigPanel::defaultConfig();
    c.layout[Axis::dp] = c.layout[Axis::pp] = c.micro_batches = 1;
    c.batch = 16;
    c.seq = 32;
    c.steps = 4;
    c.accum = 4;
    std::vector<double> losses[2];
    for (int run = 0; run < 2; ++run) {
      window.configPanel()->setConfig(c);
      window.startRun();
      QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
      const QCPGraph* train = window.lossPlot()->plot()->graph(0);
      QCOMPARE(train->dataCount(), 4);
      for (auto it = train->data()->constBegin(); it != train->data()->constEnd(); ++it)
        losses[run].push_back(it->value);
      c.accum = 1;
    }
    LossPlot* plot = window.lossPlot();
    QCOMPARE(plot->previousPointCount(), 4);
    QVERIFY2(plot->previousName().contains(QStringLiteral("batch 16, 4 accumulation steps of 4")),
             qPrintable(plot->previousName()));
    for (std::size_t i = 0; i < 4; ++i) QVERIFY2(std::abs(losses[0][i] - losses[1][i]) < 1e-4, qPrintable(QString::number(i)));
    plot->clear();
    QCOMPARE(plot->previousPointCount(), 0);
  }
};

QTEST_MAIN(TestLiveViews)
#include "test_live_views.moc"
