// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline timeline view, offscreen, fed the events of real short runs:
// one box per (stage, micro-batch, pass), no overlap within a stage, every
// backward after its forward, the bubble text (per pipeline flush with
// accumulation), reset, the whole app, and a
// screenshot of a 4-stage 1F1B step (build/tests/pipeline_timeline.png).
#include <QCoreApplication>
#include <QDir>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QtTest>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>

#include "config_panel.h"
#include "engine/collecting_sink.h"
#include "main_window.h"
#include "train/trainer.h"
#include "views/pipeline_timeline.h"

using namespace shardscope;
using shardscope::test::CollectingSink;
using shardscope::ui::PipelineTimelineView;
using shardscope::ui::TimelineBox;

namespace {

RunConfig pipelineRun(int pp, int m, PipelineScheduleKind schedule) {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 2;
  c.batch = 2 * m;
  c.seq = 32;
  c.lr = 3e-3f;
  c.threads = 2;
  c.pp = pp;
  c.micro_batches = m;
  c.schedule = schedule;
  return c;
}

std::vector<Event> eventsOf(const RunConfig& c) {
  CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.run([](const StepMetrics&) {});
  return sink.events();
}

}  // namespace

class TestPipelineTimeline : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void boxesOfARealRun() {
    const RunConfig c = pipelineRun(2, 4, PipelineScheduleKind::gpipe);
    const auto events = eventsOf(c);
    PipelineTimelineView view;
    view.reset(c);
    view.consume(events);
    view.refresh();
    QCOMPARE(view.shownStep(), std::int64_t{2});
    const auto& boxes = view.boxes(2);
    QCOMPARE(static_cast<int>(boxes.size()), 2 * 4 * 2);
    std::map<std::tuple<int, int, int>, const TimelineBox*> byKey;
    for (const auto& b : boxes) {
      QVERIFY(b.kind == ComputeKind::forward || b.kind == ComputeKind::backward);
      QVERIFY(b.end_ns >= b.start_ns);
      QVERIFY(b.micro_batch >= 0 && b.micro_batch < 4);
      QVERIFY(b.stage >= 0 && b.stage < 2);
      QVERIFY(byKey.emplace(std::tuple{b.stage, b.micro_batch, static_cast<int>(b.kind)}, &b).second);
    }
    QCOMPARE(static_cast<int>(byKey.size()), 16);
    for (int s = 0; s < 2; ++s) {
      std::vector<TimelineBox> row;
      for (const auto& b : boxes)
        if (b.stage == s) row.push_back(b);
      std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
      for (std::size_t i = 1; i < row.size(); ++i) QVERIFY(row[i].start_ns >= row[i - 1].end_ns);
      for (int j = 0; j < 4; ++j) {
        const auto* f = byKey.at({s, j, static_cast<int>(ComputeKind::forward)});
        const auto* b = byKey.at({s, j, static_cast<int>(ComputeKind::backward)});
        QVERIFY(b->start_ns >= f->end_ns);
      }
    }
    QCOMPARE(static_cast<int>(view.boxes(1).size()), 16);
    const double measured = view.measured_bubble(2);
    QVERIFY2(measured > 0.0 && measured < 1.0, qPrintable(QString::number(measured)));
    QCOMPARE(view.formula_bubble(), 1.0 / 5.0);
    const QString text = view.bubbleText(2);
    QVERIFY2(text.contains(QStringLiteral("(p−1)/(m+p−1) = (2−1)/(4+2−1) = 20%")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("measured %1%").arg(std::lround(measured * 100))), qPrintable(text));
    QVERIFY(view.findChild<QLabel*>(QStringLiteral("bubble"))->text().contains(text));

    // Picking step 1 in the spin box shows it; 0 ("last completed") goes back to step 2.
    auto* pick = view.findChild<QSpinBox*>(QStringLiteral("timeline_step"));
    QCOMPARE(pick->maximum(), 2);
    pick->setValue(1);
    QCOMPARE(view.shownStep(), std::int64_t{1});
    QVERIFY(view.findChild<QLabel*>(QStringLiteral("bubble"))->text().startsWith(QStringLiteral("Step 1:")));
    pick->setValue(0);
    QCOMPARE(view.shownStep(), std::int64_t{2});

    view.reset(c);
    QVERIFY(view.boxes(1).empty());
    QVERIFY(view.boxes(2).empty());
    QCOMPARE(view.shownStep(), std::int64_t{0});
    QCOMPARE(view.measured_bubble(2), 0.0);
  }

  void accumulationFlushesThePipelineEveryMicroStep() {
    RunConfig c = pipelineRun(2, 4, PipelineScheduleKind::one_f_one_b);
    c.accum = 2;
    c.batch = 2 * 4 * 2;  // micro-batches of 2 sequences
    PipelineTimelineView view;
    view.reset(c);
    view.consume(eventsOf(c));
    view.refresh();
    const auto& boxes = view.boxes(2);
    QCOMPARE(static_cast<int>(boxes.size()), 2 * 8 * 2);  // F0..F7 and B0..B7 on both stages
    // The engine runs the schedule once per accumulation micro-step: every box of
    // micro-batches 0-3 ends before any of 4-7 starts (the pipeline drains in
    // between), so the formula beside the measurement takes m = 4, not 8.
    std::int64_t first_flush_end = 0, second_flush_start = std::numeric_limits<std::int64_t>::max();
    for (const auto& b : boxes) {
      if (b.micro_batch < 4) first_flush_end = std::max(first_flush_end, b.end_ns);
      else second_flush_start = std::min(second_flush_start, b.start_ns);
    }
    QVERIFY(first_flush_end <= second_flush_start);
    QCOMPARE(view.formula_bubble(), 1.0 / 5.0);
    QCOMPARE(view.one_flush_bubble(), 1.0 / 9.0);
    const QString text = view.bubbleText(2);
    QVERIFY2(text.contains(QStringLiteral("per flush (p−1)/(m+p−1) = (2−1)/(4+2−1) = 20%")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("k = 2 flushes of m = 4 micro-batches (F0–F7)")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("one flush of all 8 would idle 11%")), qPrintable(text));
    // Without accumulation the line stays short.
    QVERIFY(!PipelineTimelineView().bubbleText(1).contains(QStringLiteral("flush")));
  }

  void wholeAppFillsTheTimeline() {
    ui::MainWindow window;
    window.show();
    RunConfig c = ui::ConfigPanel::defaultConfig();  // dp 2 x pp 2
    c.steps = 2;
    c.batch = 8;
    c.seq = 32;
    c.micro_batches = 4;
    window.configPanel()->setConfig(c);
    PipelineTimelineView* timeline = nullptr;
    for (int i = 0; i < window.viewTabs()->count(); ++i)
      if (auto* t = qobject_cast<PipelineTimelineView*>(window.viewTabs()->widget(i))) timeline = t;
    QVERIFY(timeline != nullptr);
    QTest::mouseClick(window.runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    QCOMPARE(timeline->shownStep(), std::int64_t{2});
    // dp rank 0 of each stage: one box per (stage, micro-batch, forward/backward).
    QCOMPARE(static_cast<int>(timeline->boxes(2).size()), 2 * 4 * 2);
  }

  void recomputeLiesInsideItsBackward() {
    RunConfig c = pipelineRun(2, 4, PipelineScheduleKind::one_f_one_b);
    c.checkpoint = true;
    PipelineTimelineView view;
    view.resize(1000, 300);
    view.reset(c);
    view.consume(eventsOf(c));
    view.refresh();
    int recomputes = 0;
    for (const auto& r : view.boxes(2)) {
      if (r.kind != ComputeKind::recompute) continue;
      ++recomputes;
      QVERIFY(r.layer >= 0);
      const auto& all = view.boxes(2);
      QVERIFY(std::any_of(all.begin(), all.end(), [&](const TimelineBox& b) {
        return b.kind == ComputeKind::backward && b.stage == r.stage && b.micro_batch == r.micro_batch &&
               b.start_ns <= r.start_ns && r.end_ns <= b.end_ns;
      }));
    }
    QVERIFY(recomputes >= 2 * 4);  // at least one layer per (stage, micro-batch)
    const QString path =
        QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("pipeline_timeline_checkpoint.png"));
    QVERIFY(view.grab().save(path));
  }

  void screenshotOfFourStages() {
    const RunConfig c = pipelineRun(4, 8, PipelineScheduleKind::one_f_one_b);
    PipelineTimelineView view;
    view.resize(1000, 420);
    view.reset(c);
    view.consume(eventsOf(c));
    view.refresh();
    QCOMPARE(static_cast<int>(view.boxes(2).size()), 4 * 8 * 2);
    const QString path = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("pipeline_timeline.png"));
    QVERIFY(view.grab().save(path));
    qInfo("screenshot: %s", qPrintable(path));
  }
};

QTEST_MAIN(TestPipelineTimeline)
#include "test_pipeline_timeline.moc"
