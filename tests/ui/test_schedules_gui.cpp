// SPDX-License-Identifier: GPL-3.0-or-later
// Pipeline schedules in the GUI (issue 30), offscreen: the panel lists every
// schedule the schema knows and enables v only for interleaved 1F1B; File →
// Open schedule sets a checked CSV (taking its pp and micro-batches) and
// refuses a bad one in a dialog naming the rank and action; the timeline draws
// a zero-bubble run's W boxes apart from B with the schedule and its formula
// in the header, and an interleaved schedule's chunks (the simulator's spans
// as events) with the sends between chunks. Screenshots in the build folder:
// schedules_zb_h1.png, schedules_interleaved.png. The Schedules tab runs the
// panel's layout under every schedule in the background and shows each one's
// step, bubble and peak activations per stage (schedule_compare{,_zh}.png).
#include <QAction>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <map>

#include "config_panel.h"
#include "engine/collecting_sink.h"
#include "i18n.h"
#include "main_window.h"
#include "plan/pipeline_schedule.h"
#include "settings_section.h"
#include "train/trainer.h"
#include "views/pipeline_timeline.h"
#include "views/schedule_compare.h"
#include "views/zero_view.h"

using namespace shardscope;
using namespace shardscope::ui;
using shardscope::test::CollectingSink;

namespace {

const QString kExamples = QStringLiteral(SHARDSCOPE_FIXTURES "/../../resources/examples/schedules/");

RunConfig pipelineRun(int pp, int m, PipelineScheduleKind schedule) {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 2;
  c.batch = 2 * m;
  c.seq = 32;
  c.threads = 2;
  c.layout[Axis::pp] = pp;
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

// The simulator's spans of a schedule (1 ms per F, 2 per B, 0.1 per send) as step 1's events, on ranks 0..p-1.
std::vector<Event> simulatedEvents(const PipelineSchedule& schedule) {
  const PipelineTimeline timeline = simulate_pipeline_schedule(schedule, 1.0, 2.0, 0.1);
  std::vector<Event> events;
  for (const auto& row : timeline.spans)
    for (const PipelineSpan& span : row) {
      using T = PipelineAction::Type;
      const PipelineAction& a = span.action;
      Event e;
      e.rank = e.stage = a.stage;
      e.step = 1;
      e.micro_batch = a.micro_batch;
      e.chunk = a.chunk;
      e.start_ns = static_cast<std::int64_t>(span.start * 1e6);
      e.end_ns = static_cast<std::int64_t>(span.end * 1e6);
      if (a.type == T::forward || a.type == T::backward || a.type == T::weight_gradient) {
        e.kind = EventKind::compute_span;
        e.compute = a.type == T::forward    ? ComputeKind::forward
                    : a.type == T::backward ? ComputeKind::backward
                                            : ComputeKind::weight_gradient;
      } else if (a.type == T::send_activation || a.type == T::send_gradient) {
        e.kind = EventKind::comm_span;
        e.op = CommOp::send;
        e.src = a.stage;
        e.dst = a.peer_stage;
        e.end_ns = e.start_ns + 100'000;
      } else {
        continue;
      }
      events.push_back(e);
    }
  Event done;
  done.kind = EventKind::step_metrics;
  done.step = 1;
  events.push_back(done);
  return events;
}

QString headerOf(const PipelineTimelineView& view) {
  return view.findChild<QLabel*>(QStringLiteral("bubble"))->text();
}

void saveShot(QWidget& widget, const QString& name) {
  widget.resize(1280, 720);
  widget.show();
  QCoreApplication::processEvents();
  widget.grab().save(QDir(QCoreApplication::applicationDirPath()).filePath(name));
}

}  // namespace

class TestSchedulesGui : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void panelListsEverySchedule() {
    ConfigPanel panel(nullptr, false);
    auto* schedule = panel.findChild<QComboBox*>(QStringLiteral("schedule"));
    auto* v = panel.findChild<QSpinBox*>(QStringLiteral("virtual_stages"));
    QVERIFY(schedule != nullptr && v != nullptr);
    const RunField& field = run_field("schedule");
    QCOMPARE(schedule->count(), static_cast<int>(field.choices.size()));  // nothing hidden
    QCOMPARE(schedule->itemText(schedule->findData(QStringLiteral("zb-h1"))), QStringLiteral("ZB-H1"));
    QCOMPARE(schedule->itemText(schedule->findData(QStringLiteral("interleaved-1f1b"))),
             QStringLiteral("Interleaved 1F1B"));
    QVERIFY(!v->isEnabled());
    RunConfig c = panel.config();
    c.schedule = PipelineScheduleKind::interleaved_1f1b;
    c.virtual_stages = 2;
    panel.setConfig(c);
    QVERIFY(v->isEnabled());
    QCOMPARE(panel.config().virtual_stages, 2);
    c.schedule = PipelineScheduleKind::zb_h1;
    c.virtual_stages = 1;
    panel.setConfig(c);
    QVERIFY(!v->isEnabled());
  }

  // The panel's parallel-layout section with interleaved 1F1B and v, in both languages (schedules_panel{,_zh}.png).
  void panelScreenshots() {
    MainWindow window;
    window.configPanel()->section(ConfigPanel::Section::model_and_data)->setExpanded(false);
    window.configPanel()->section(ConfigPanel::Section::parallel_layout)->setExpanded(true);
    RunConfig c = window.configPanel()->config();
    c.layout[Axis::pp] = 4;
    c.micro_batches = 8;
    c.batch = 32;
    c.schedule = PipelineScheduleKind::interleaved_1f1b;
    c.virtual_stages = 2;
    window.configPanel()->setConfig(c);
    saveShot(window, QStringLiteral("schedules_panel.png"));
    QVERIFY(setLanguage(QStringLiteral("zh_CN")));
    QCoreApplication::processEvents();
    QCOMPARE(window.configPanel()->labelText(QStringLiteral("virtual_stages")), QStringLiteral("虚拟阶段数（v）"));
    saveShot(window, QStringLiteral("schedules_panel_zh.png"));
    QVERIFY(setLanguage(QStringLiteral("en")));
  }

  void openScheduleChecksTheFile() {
    MainWindow window;
    QVERIFY(window.openScheduleAction() != nullptr);
    QVERIFY(window.openScheduleFile(kExamples + QStringLiteral("1f1b_pp4_m8.csv")));
    const RunConfig c = window.configPanel()->config();
    QCOMPARE(c.layout.pp(), 4);
    QCOMPARE(c.micro_batches, 8);
    QVERIFY(QString::fromStdString(c.schedule_file).endsWith(QStringLiteral("1f1b_pp4_m8.csv")));
    QVERIFY2(window.configPanel()->problem().isEmpty(), qPrintable(window.configPanel()->problem()));
    QVERIFY(!window.configPanel()->findChild<QComboBox*>(QStringLiteral("schedule"))->isEnabled());
    // A backward before its forward: refused, the rank and the action named, the panel unchanged.
    QTemporaryDir dir;
    QFile bad(dir.filePath(QStringLiteral("bad.csv")));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write("0F0,0F1,0B0,0B1\n1B0,1F0,1F1,1B1\n");
    bad.close();
    QVERIFY(!window.openScheduleFile(bad.fileName()));
    auto* box = window.findChild<QMessageBox*>(QStringLiteral("scheduleRefused"));
    QVERIFY(box != nullptr);
    QVERIFY2(box->text().contains(QStringLiteral("rank 1")) && box->text().contains(QStringLiteral("1B0")),
             qPrintable(box->text()));
    QVERIFY(window.statusText().contains(QStringLiteral("rank 1")));
    QVERIFY(QString::fromStdString(window.configPanel()->config().schedule_file).endsWith(QStringLiteral("m8.csv")));
  }

  void comparisonRunsEverySchedule() {
    MainWindow window;
    ScheduleCompareView* compare = window.scheduleComparison();
    QVERIFY(compare != nullptr);
    QCOMPARE(window.viewTabs()->indexOf(compare), window.viewTabs()->count() - 1);
    RunConfig c = window.configPanel()->config();
    c.layout[Axis::pp] = 4;
    c.micro_batches = 8;
    c.batch = 32;  // dp 2: a replica's 16, micro-batches of 2
    window.configPanel()->setConfig(c);
    window.viewTabs()->setCurrentWidget(compare);
    window.resize(1280, 720);
    window.show();
    compare->compareButton()->click();
    QVERIFY(compare->running());  // in the background: the window goes on
    QTRY_VERIFY_WITH_TIMEOUT(compare->finished(), 180000);
    const auto& cells = compare->cells();
    QCOMPARE(cells.size(), run_field("schedule").choices.size());
    std::map<QString, const ScheduleCompareView::Cell*> byKey;
    for (const auto& cell : cells) {
      byKey[cell.key] = &cell;
      QVERIFY2(cell.done != !cell.refused.isEmpty(), qPrintable(cell.key));  // trained, or the engine said why not
      QVERIFY(!cell.summary->text().isEmpty());
      if (!cell.done) continue;
      QCOMPARE(cell.config.layout.dp(), 1);
      QCOMPARE(cell.config.batch, 16);
      QCOMPARE(static_cast<int>(cell.peak_activations.size()), 4);
      for (std::int64_t bytes : cell.peak_activations) QVERIFY(bytes > 0);
      QVERIFY2(cell.measured > 0.0 && cell.measured < 1.0, qPrintable(cell.key));
      QVERIFY(cell.idle >= cell.measured - 1e-9);  // fill and drain is part of the idle time
      qInfo("%s: idle %.1f%%, fill and drain %.1f%%", qPrintable(cell.key), 100 * cell.idle, 100 * cell.measured);
      QVERIFY(!cell.formula.isEmpty());
      QVERIFY(!cell.timeline->boxes(1).empty());
    }
    for (const char* trains : {"gpipe", "1f1b", "zb-h1", "zb-h2"}) QVERIFY2(byKey.at(trains)->done, trains);
    // Activations in flight on the first stage: GPipe all 8 micro-batches, 1F1B p = 4, ZB-H2 up to 2p − 1 = 7.
    const auto first = [&](const char* key) { return byKey.at(key)->peak_activations[0]; };
    QVERIFY(first("1f1b") < first("gpipe"));
    QVERIFY(first("zb-h2") > first("zb-h1"));
    QVERIFY(byKey.at("zb-h1")->formula.contains(QStringLiteral("T_W")));
    QVERIFY(byKey.at("zb-h1")->idle < byKey.at("1f1b")->idle);  // W moved into the bubbles (measured 26.5% vs 35.2%)
    if (window.memoryAndLogAction()->isChecked()) window.memoryAndLogAction()->trigger();  // the tab's whole height
    QCoreApplication::processEvents();
    QCOMPARE(window.size(), QSize(1280, 720));
    window.grab().save(QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("schedule_compare.png")));
    QVERIFY(setLanguage(QStringLiteral("zh_CN")));
    QTest::qWait(100);  // the menu bar and the wrapped lines laid out again
    window.grab().save(
        QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("schedule_compare_zh.png")));
    QVERIFY(setLanguage(QStringLiteral("en")));
  }

  void zeroBubbleWBoxesAndFormula() {
    const RunConfig c = pipelineRun(2, 4, PipelineScheduleKind::zb_h1);
    PipelineTimelineView view;
    view.reset(*make_run_plan(c));
    view.consume(eventsOf(c));
    view.refresh();
    int w = 0, b = 0;
    for (const TimelineBox& box : view.boxes(2)) {
      w += box.kind == ComputeKind::weight_gradient ? 1 : 0;
      b += box.kind == ComputeKind::backward ? 1 : 0;
    }
    QCOMPARE(w, 2 * 4);  // a W per stage and micro-batch, apart from its B
    QCOMPARE(b, 2 * 4);
    const QString header = headerOf(view);
    QVERIFY2(header.contains(QStringLiteral("ZB-H1: bubble measured")), qPrintable(header));
    QVERIFY2(header.contains(QStringLiteral("(p−1)(T_F+T_B−T_W) with the measured")), qPrintable(header));
    saveShot(view, QStringLiteral("schedules_zb_h1.png"));
  }

  // "One step, slowly" in the timeline: a cursor sweeps the step over at least 2 s (at 1×), boxes grow behind it.
  void timelineReplaysAStepSlowly() {
    const RunConfig c = pipelineRun(2, 4, PipelineScheduleKind::one_f_one_b);
    PipelineTimelineView view;
    view.reset(*make_run_plan(c));
    view.consume(eventsOf(c));
    view.refresh();
    QVERIFY(!view.drawing());
    QCOMPARE(view.replayFraction(), -1.0);
    view.setPlaybackSpeed(1.0);
    view.replayStep(1);
    QVERIFY(view.drawing());
    QCOMPARE(view.shownStep(), std::int64_t{1});
    QTest::qWait(700);
    const double f = view.replayFraction();
    QVERIFY2(f > 0.2 && f < 0.6, qPrintable(QString::number(f)));
    saveShot(view, QStringLiteral("schedules_replay.png"));
    QTRY_VERIFY_WITH_TIMEOUT(!view.drawing(), 5000);
    QCOMPARE(view.replayFraction(), -1.0);
    QCOMPARE(view.shownStep(), std::int64_t{2});  // back to the last completed step
  }

  // "One step, slowly" in the ZeRO view: ZeRO-3's gathers of the step fed again over 2 s, the counts
  // growing back to the step's, then the live state back.
  void zeroViewReplaysAStep() {
    RunConfig c;
    c.model = "gpt-tiny";
    c.steps = 2;
    c.batch = 4;
    c.seq = 32;
    c.threads = 2;
    c.layout[Axis::dp] = 2;
    c.zero_stage = 3;
    ZeroView view;
    view.reset(*make_run_plan(c));
    view.consume(eventsOf(c));
    const int gathers = view.model().gathers(2, 0);
    QVERIFY(gathers > 0);
    view.setPlaybackSpeed(1.0);
    view.replayStep(2);
    QVERIFY(view.drawing());
    QTest::qWait(900);
    const int midway = view.model().gathers(2, 0);
    QVERIFY2(midway > 0 && midway < gathers, qPrintable(QStringLiteral("%1 of %2").arg(midway).arg(gathers)));
    saveShot(view, QStringLiteral("schedules_zero_replay.png"));
    QTRY_VERIFY_WITH_TIMEOUT(!view.drawing(), 5000);
    QCOMPARE(view.model().gathers(2, 0), gathers);
  }

  // A pinned run's step stays drawn above the next run's (issue 28's stacked timelines; schedules_pinned.png).
  void pinnedTimelineStacksAboveTheNextRun() {
    const RunConfig gpipe = pipelineRun(2, 4, PipelineScheduleKind::gpipe);
    const RunConfig zb = pipelineRun(2, 4, PipelineScheduleKind::zb_h1);
    PipelineTimelineView view;
    view.reset(*make_run_plan(gpipe));
    view.consume(eventsOf(gpipe));
    view.refresh();
    const std::size_t gpipeBoxes = view.boxes(2).size();
    view.pin(QStringLiteral("GPipe run"));
    QVERIFY(view.pinned() != nullptr);
    view.reset(*make_run_plan(zb));
    view.consume(eventsOf(zb));
    view.refresh();
    QCOMPARE(view.pinned()->boxes(2).size(), gpipeBoxes);  // the pinned step kept through the new run
    QVERIFY(view.boxes(2).size() > gpipeBoxes);            // the new run's W boxes
    const QString label = view.findChild<QLabel*>(QStringLiteral("pinnedTimeline"))->text();
    QVERIFY2(label.contains(QStringLiteral("Pinned: GPipe run, step 2")) && label.contains(QStringLiteral("GPipe:")),
             qPrintable(label));
    saveShot(view, QStringLiteral("schedules_pinned.png"));
    view.unpin();
    QVERIFY(view.pinned() == nullptr);
  }

  void interleavedChunksAndSendsBetweenThem() {
    const int p = 4, m = 8, v = 2;
    PipelineTimelineView view;
    view.reset(*make_run_plan(pipelineRun(p, m, PipelineScheduleKind::one_f_one_b)));
    view.consume(simulatedEvents(make_pipeline_schedule(PipelineScheduleKind::interleaved_1f1b, p, m, v)));
    view.refresh();
    int later = 0;
    for (const TimelineBox& box : view.boxes(1)) later += box.chunk == 1 ? 1 : 0;
    QCOMPARE(later, p * m * 2);  // every stage's F and B of chunk 1
    int between = 0, activations = 0;
    for (const TimelineTransfer& t : view.transfers(1)) {
      if (!t.betweenChunks()) continue;
      ++between;
      activations += t.forward() ? 1 : 0;
      QVERIFY(t.forward() ? t.src_stage == p - 1 && t.dst_stage == 0 : t.src_stage == 0 && t.dst_stage == p - 1);
    }
    QCOMPARE(between, 2 * m);  // each micro-batch's activation round to chunk 1, and its gradient back
    QCOMPARE(activations, m);
    saveShot(view, QStringLiteral("schedules_interleaved.png"));
  }
};

QTEST_MAIN(TestSchedulesGui)
#include "test_schedules_gui.moc"
