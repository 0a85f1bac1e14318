// SPDX-License-Identifier: GPL-3.0-or-later
// The headline check, offscreen: a 20-step run of gpt-tiny on dp 2 x
// pp 2 with ZeRO-1, started from the window and recorded, ends with the loss
// plot holding 20 points, the pipeline view one box per (stage, micro-batch,
// forward/backward) of the shown step, the ring view holding every ring
// transfer of that step, the memory bars equal to the engine's ledger; then
// opening the recording in a fresh window shows the same. And closing the
// window during a run stops the engine and leaves an existing recording intact.
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QtTest>
#include <set>
#include <tuple>

#include "config_panel.h"
#include "main_window.h"
#include "recording_controller.h"
#include "views/live_plots.h"
#include "views/loss_plot.h"
#include "views/memory_bars.h"
#include "views/memory_timeline_plot.h"
#include "views/pipeline_timeline.h"
#include "views/qcustomplot_include.h"
#include "views/ring_allreduce_view.h"
#include "views/throughput_plot.h"

using namespace shardscope;
using namespace shardscope::ui;

namespace {

struct Shown {
  std::vector<std::pair<double, double>> loss;
  std::vector<MemoryBytes> memory;
  std::int64_t timeline_step = 0;
  std::set<std::tuple<int, int, int>> boxes;  // (stage, micro-batch, kind)
  std::size_t box_count = 0;
  std::int64_t ring_step = 0;
  std::size_t ring_transfers = 0;
  std::vector<std::pair<double, double>> rank0_throughput;
};

Shown shown(const MainWindow& window) {
  Shown s;
  const QCPGraph* train = window.lossPlot()->plot()->graph(0);
  for (auto it = train->data()->constBegin(); it != train->data()->constEnd(); ++it)
    s.loss.emplace_back(it->key, it->value);
  for (int r = 0; r < window.memoryBars()->rankCount(); ++r) s.memory.push_back(window.memoryBars()->bytes(r));
  auto* timeline = window.findChild<PipelineTimelineView*>();
  s.timeline_step = timeline->lastCompletedStep();
  for (const TimelineBox& b : timeline->boxes(s.timeline_step))
    s.boxes.emplace(b.stage, b.micro_batch, static_cast<int>(b.kind));
  s.box_count = timeline->boxes(s.timeline_step).size();
  auto* ring = window.findChild<RingAllreduceView*>();
  s.ring_step = ring->lastStep();
  s.ring_transfers = ring->transfers(s.ring_step).size();
  s.rank0_throughput = window.livePlots()->throughput()->rankPoints(0);
  return s;
}

QString tempPath(const QString& name) {
  return QDir(QCoreApplication::applicationDirPath()).filePath(name);
}

}  // namespace

class TestGuiRun : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void twentyStepsOfZero1OnTwoByTwoThenReplay() {
    const QString recording = tempPath(QStringLiteral("test_gui_run.ssrun"));
    QFile::remove(recording);
    MainWindow window;
    window.show();
    RunConfig c = ConfigPanel::defaultConfig();
    c.steps = 20;
    c.batch = 8;
    c.seq = 32;
    c.micro_batches = 4;
    c.zero_stage = 1;
    window.configPanel()->setConfig(c);
    QVERIFY2(window.configPanel()->problem().isEmpty(), qPrintable(window.configPanel()->problem()));
    QCOMPARE(window.configPanel()->config().zero_stage, 1);
    window.recorder()->setRecordPath(recording);
    // Every event the views were handed, to count what the ring view should hold.
    std::vector<Event> all;
    connect(window.controller(), &RunController::eventsDrained, this,
            [&all](const std::vector<Event>& events) { all.insert(all.end(), events.begin(), events.end()); });
    QElapsedTimer timer;
    timer.start();
    QTest::mouseClick(window.runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    qInfo("20 steps in %lld ms", static_cast<long long>(timer.elapsed()));
    QVERIFY2(!window.statusText().startsWith(QStringLiteral("Run failed")), qPrintable(window.statusText()));

    const Shown live = shown(window);
    QCOMPARE(static_cast<int>(live.loss.size()), 20);
    QCOMPARE(live.loss.back().first, 20.0);
    // Pipeline: 2 stages x 4 micro-batches x {forward, backward}, each exactly once.
    QCOMPARE(live.timeline_step, std::int64_t{20});
    QCOMPARE(live.box_count, std::size_t{16});
    QCOMPARE(live.boxes.size(), std::size_t{16});
    for (int stage = 0; stage < 2; ++stage)
      for (int mb = 0; mb < 4; ++mb)
        for (ComputeKind kind : {ComputeKind::forward, ComputeKind::backward})
          QVERIFY(live.boxes.count({stage, mb, static_cast<int>(kind)}) == 1);
    // Ring: every transfer of ZeRO-1's reduce-scatter and all-gather in the last
    // step within the shown stage's data-parallel group (stage 0: ranks 0 and 1) was consumed.
    std::size_t expected = 0;
    for (const Event& e : all)
      if (e.kind == EventKind::comm_span && e.step == 20 &&
          (e.op == CommOp::reduce_scatter || e.op == CommOp::all_gather) && e.src >= 0 && e.src / 2 == 0 &&
          e.dst >= 0 && e.dst / 2 == 0)
        ++expected;
    QCOMPARE(live.ring_step, std::int64_t{20});
    QVERIFY(expected > 0);
    QCOMPARE(live.ring_transfers, expected);
    // Memory bars = the engine's ledger peaks at the end of the run.
    const auto ledger = window.controller()->finalMemory();
    QCOMPARE(live.memory.size(), std::size_t{4});
    for (std::size_t r = 0; r < 4; ++r)
      for (MemoryCategory cat : kAllMemoryCategories) QCOMPARE(live.memory[r][cat], ledger[r][cat]);
    QCOMPARE(live.rank0_throughput.size(), std::size_t{20});

    // The saved recording, opened in a fresh window, reproduces the views.
    QVERIFY(QFile::exists(recording));
    MainWindow replay;
    QVERIFY(replay.openRecording(recording));
    const Shown again = shown(replay);
    QCOMPARE(again.loss, live.loss);
    QCOMPARE(again.timeline_step, live.timeline_step);
    QCOMPARE(again.boxes, live.boxes);
    QCOMPARE(again.box_count, live.box_count);
    QCOMPARE(again.ring_step, live.ring_step);
    QCOMPARE(again.ring_transfers, live.ring_transfers);
    QCOMPARE(again.rank0_throughput, live.rank0_throughput);
    for (std::size_t r = 0; r < 4; ++r)
      for (MemoryCategory cat : kAllMemoryCategories) QCOMPARE(again.memory[r][cat], live.memory[r][cat]);
  }

  void closingDuringARunKeepsTheExistingRecording() {
    const QString recording = tempPath(QStringLiteral("test_gui_close.ssrun"));
    const QByteArray precious("an earlier recording that must survive\n");
    {
      QFile f(recording);
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write(precious);
    }
    auto* window = new MainWindow;
    window->show();
    RunConfig c = ConfigPanel::defaultConfig();
    c.steps = 100000;
    c.batch = 8;
    c.seq = 32;
    window->configPanel()->setConfig(c);
    window->recorder()->setRecordPath(recording);
    window->startRun();
    QVERIFY(window->recorder()->recording());
    QTRY_VERIFY_WITH_TIMEOUT(window->lossPlot()->trainPointCount() >= 2, 60000);
    const QString writing = window->recorder()->writingPath();  // the run is being written beside it
    QVERIFY2(writing.startsWith(recording + QStringLiteral(".")) && writing.endsWith(QStringLiteral(".part")),
             qPrintable(writing));
    QVERIFY(QFile::exists(writing));
    QElapsedTimer timer;
    timer.start();
    QVERIFY(window->close());
    QVERIFY(!window->controller()->busy());  // the engine stopped, its thread joined
    QVERIFY(timer.elapsed() < 10000);
    QVERIFY(!window->recorder()->recording());
    QVERIFY(!QFile::exists(writing));
    delete window;
    QFile f(recording);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), precious);
  }

  void closingDuringSlowMotionIsPrompt() {
    auto* window = new MainWindow;
    window->speedBox()->setCurrentIndex(window->speedBox()->findData(0.1));
    RunConfig c = ConfigPanel::defaultConfig();
    c.steps = 100000;
    c.batch = 8;
    c.seq = 32;
    window->configPanel()->setConfig(c);
    window->startRun();
    QTRY_VERIFY_WITH_TIMEOUT(window->lossPlot()->trainPointCount() >= 1, 60000);
    QElapsedTimer timer;
    timer.start();
    QVERIFY(window->close());  // the trainer is waiting for the replay: it must not hang
    QVERIFY(!window->controller()->busy());
    QVERIFY(timer.elapsed() < 10000);
    delete window;
  }
};

QTEST_MAIN(TestGuiRun)
#include "test_gui_run.moc"
