// SPDX-License-Identifier: GPL-3.0-or-later
// Pacing that keeps its promise, offscreen: at ¼× the ring view draws every
// transfer of every step (drawn = emitted, per step, none skipped) and the run
// waits for it (the drawing is never a step behind); the ring's circles and
// its totals line read the same count; "One step, slowly" draws the last step
// again, every transfer. The ring's timer runs at 1 ms a tick so that the
// slow motion (14 ticks per ring step at ¼×) fits a test's time.
#include <QComboBox>
#include <QLocale>
#include <QPushButton>
#include <QTabWidget>
#include <QTimer>
#include <QtTest>
#include <map>

#include "config_panel.h"
#include "engine/collecting_sink.h"
#include "main_window.h"
#include "train/trainer.h"
#include "views/ring_allreduce_view.h"

using namespace shardscope;
using namespace shardscope::ui;

namespace {

RunConfig pacedConfig(int zero_stage) {
  RunConfig c = ConfigPanel::defaultConfig();
  c.model = "gpt-tiny";
  c.steps = 3;
  c.batch = 8;
  c.seq = 16;
  c.micro_batches = 1;
  c.layout = {};
  c.layout[Axis::dp] = 4;
  c.zero_stage = zero_stage;
  c.bucket_mb = 1.0;
  c.eval_every = 0;
  return c;
}

// The ring's transfers (stage 0's data-parallel group: every rank at dp 4) among drained events, by step.
bool isRingTransfer(const Event& e) {
  if (e.kind != EventKind::comm_span || e.src < 0 || e.dst < 0 || e.purpose == CommPurpose::evaluation) return false;
  return (e.op == CommOp::all_reduce && e.phase != RingPhase::none && e.bucket >= 0) ||
         e.op == CommOp::reduce_scatter || e.op == CommOp::all_gather;
}

struct PacedRun {
  std::map<std::int64_t, std::int64_t> emitted;  // ring transfers by step
  std::int64_t most_behind = 0;                  // the ring's drawing behind the trainer, in steps
  int label_checks = 0, label_mismatches = 0;
};

// Runs `c` at ¼× with the Ring tab shown, watching the ring every 5 ms, until
// the run ends and the ring has drawn everything.
void runPaced(MainWindow& window, const RunConfig& c, PacedRun& out) {
  auto* ring = window.findChild<RingAllreduceView*>();
  ring->setTickMs(1);
  window.viewTabs()->setCurrentWidget(ring);
  window.speedBox()->setCurrentIndex(window.speedBox()->findData(0.25));
  window.configPanel()->setConfig(c);
  QObject::connect(window.controller(), &RunController::eventsDrained, ring, [&out](const std::vector<Event>& events) {
    for (const Event& e : events)
      if (isRingTransfer(e)) ++out.emitted[e.step];
  });
  QTimer watch;
  QObject::connect(&watch, &QTimer::timeout, ring, [&] {
    const std::int64_t done = window.controller()->stepsDone();
    if (ring->drawing()) out.most_behind = std::max(out.most_behind, done - ring->shownStep());
    out.most_behind = std::max(out.most_behind, ring->stepsBehind());
    // The circles and the line under them: one count.
    const QString totals = ring->totalsCaption();
    ++out.label_checks;
    if (!totals.contains(QLocale().toString(ring->shownBytesSent(0)))) ++out.label_mismatches;
  });
  watch.start(5);
  window.runButton()->click();
  QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy() && !ring->drawing(), 50000);
  watch.stop();
}

void checkEveryTransferDrawn(const MainWindow& window, const PacedRun& run, std::int64_t steps) {
  const auto* ring = window.findChild<RingAllreduceView*>();
  QVERIFY2(!window.statusText().startsWith(QStringLiteral("Run failed")), qPrintable(window.statusText()));
  QCOMPARE(static_cast<std::int64_t>(run.emitted.size()), steps);
  for (const auto& [step, emitted] : run.emitted) {
    qInfo("step %lld: %lld ring transfers emitted, %lld drawn", static_cast<long long>(step),
          static_cast<long long>(emitted), static_cast<long long>(ring->playedTransfers(step)));
    QVERIFY(emitted > 0);
    QCOMPARE(static_cast<std::int64_t>(ring->transfers(step).size()), emitted);
    QCOMPARE(ring->playedTransfers(step), emitted);  // drawn = emitted, this step
  }
  QCOMPARE(ring->skippedTransfers(), std::int64_t{0});
  // The run waited: the ring drew step k while the trainer had done k, never more.
  QCOMPARE(run.most_behind, std::int64_t{0});
  QVERIFY(run.label_checks > 10);
  QCOMPARE(run.label_mismatches, 0);
  for (int rank = 0; rank < 4; ++rank) QCOMPARE(ring->shownBytesSent(rank), ring->bytes_sent(rank, steps));
}

}  // namespace

class TestPacing : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void quarterSpeedDdpDrawsEveryBucketTransfer() {
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    const RunConfig c = pacedConfig(0);
    PacedRun run;
    runPaced(window, c, run);
    if (QTest::currentTestFailed()) return;
    checkEveryTransferDrawn(window, run, c.steps);

    // One step, slowly: the last step's transfers drawn again, every one.
    auto* ring = window.findChild<RingAllreduceView*>();
    QPushButton* slowly = window.oneStepSlowlyButton();
    QVERIFY(slowly->isEnabled());
    QCOMPARE(window.lastCompletedStep(), c.steps);
    const std::int64_t before = ring->playedTransfers(c.steps);
    slowly->click();
    QVERIFY(ring->drawing());
    QTRY_VERIFY_WITH_TIMEOUT(!ring->drawing(), 20000);
    QCOMPARE(ring->playedTransfers(c.steps) - before, run.emitted.at(c.steps));
    QCOMPARE(ring->skippedTransfers(), std::int64_t{0});
    for (int rank = 0; rank < 4; ++rank) QCOMPARE(ring->shownBytesSent(rank), ring->bytes_sent(rank, c.steps));
  }

  void quarterSpeedZero3DrawsEveryGather() {
    MainWindow window;
    window.resize(1280, 720);
    window.show();
    const RunConfig c = pacedConfig(3);
    PacedRun run;
    runPaced(window, c, run);
    if (QTest::currentTestFailed()) return;
    checkEveryTransferDrawn(window, run, c.steps);
  }

  // Real time: the drawing may lag, but it says so and catches up at a step boundary.
  void realTimeSaysHowFarBehind() {
    RunConfig c = pacedConfig(3);
    c.steps = 4;
    RingAllreduceView ring;
    ring.reset(*make_run_plan(c));
    ring.setPlaybackSpeed(1.0);
    shardscope::test::CollectingSink sink;
    Trainer trainer(make_run_plan(c), &sink);
    for (int s = 0; s < 2; ++s) trainer.step();
    ring.consume(sink.events());
    ring.refresh();
    QCOMPARE(ring.shownStep(), std::int64_t{2});  // caught up: step 1 skipped whole at the boundary
    QVERIFY(ring.skippedTransfers() > 0);
    const std::size_t seen = sink.events().size();
    trainer.step();  // step 3 arrives while step 2 is drawn
    const std::vector<Event> all = sink.events();
    ring.consume(std::vector<Event>(all.begin() + static_cast<std::ptrdiff_t>(seen), all.end()));
    QCOMPARE(ring.stepsBehind(), std::int64_t{1});
    QVERIFY(ring.totalsCaption().contains(QStringLiteral("so far")));
  }
};

QTEST_MAIN(TestPacing)
#include "test_pacing.moc"
