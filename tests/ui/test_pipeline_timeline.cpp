// SPDX-License-Identifier: GPL-3.0-or-later
// The pipeline timeline view, offscreen, fed the events of real short runs:
// one box per (stage, micro-batch, pass), no overlap within a stage, every
// backward after its forward, the bubble text (per pipeline flush with
// accumulation), reset, the whole app; the replica selector, an arrow per
// pipeline send → receive of the shown replica, DDP's bucket lane and its
// overlap equal to summarize_schedule's; screenshots of a 4-stage 1F1B step
// (build/tests/pipeline_timeline.png), of dp 2 × pp 2 with DDP's lanes
// (build/tests/pipeline_timeline_ddp.png) and of dp 2 alone (pipeline_timeline_dp.png).
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
#include <set>
#include <tuple>

#include "clock/schedule_summary.h"
#include "config_panel.h"
#include "engine/collecting_sink.h"
#include "layout/grid.h"
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

// dp 2 x pp 2 with DDP in buckets of 0.5 MiB (gpt-tiny's 3.3 MiB of gradients: several per stage).
RunConfig replicatedPipeline() {
  RunConfig c = pipelineRun(2, 4, PipelineScheduleKind::one_f_one_b);
  c.layout[Axis::dp] = 2;
  c.batch = 2 * 2 * 4;
  c.bucket_mb = 0.5;
  c.eval_every = 2;  // its forward-only messages come after step 2's and are not drawn
  c.eval_batches = 1;
  return c;
}

// The events summarize_schedule reads for one step and one replica, straight from the engine.
std::vector<Event> replicaEvents(const std::vector<Event>& events, const Grid& grid, std::int64_t step, int replica) {
  std::vector<Event> out;
  for (const Event& e : events)
    if (e.step == step && e.rank >= 0 && grid.dp_rank_of(e.rank) == replica) out.push_back(e);
  return out;
}

// The engine's pipeline messages of one step sent by a replica's ranks: (src, dst, micro-batch) -> count.
// Micro-batch -1: an evaluation's, after the step.
std::map<std::tuple<int, int, int>, int> sendsOf(const std::vector<Event>& events, const Grid& grid, std::int64_t step,
                                                 int replica) {
  std::map<std::tuple<int, int, int>, int> sends;
  for (const Event& e : events)
    if (e.kind == EventKind::comm_span && e.op == CommOp::send && e.step == step && grid.dp_rank_of(e.src) == replica)
      ++sends[{e.src, e.dst, e.micro_batch}];
  return sends;
}

int evaluationSends(const std::map<std::tuple<int, int, int>, int>& sends) {
  int n = 0;
  for (const auto& [key, count] : sends) n += std::get<2>(key) < 0 ? count : 0;
  return n;
}

QString percentOf(double fraction) {
  return QString::number(100.0 * fraction, 'f', 1) + QLatin1Char('%');
}

}  // namespace

class TestPipelineTimeline : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void boxesOfARealRun() {
    const RunConfig c = pipelineRun(2, 4, PipelineScheduleKind::gpipe);
    const auto events = eventsOf(c);
    PipelineTimelineView view;
    view.reset(*make_run_plan(c));
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
    // The header's bubble is summarize_schedule's (the CLI's closing line) over the step's events.
    const double measured = view.measured_bubble(2);
    QVERIFY2(measured > 0.0 && measured < 1.0, qPrintable(QString::number(measured)));
    const ScheduleSummary engine = summarize_schedule(replicaEvents(events, Grid(1, 2), 2, 0), 1, 2, 4);
    QVERIFY(engine.bubble.has_value());
    QCOMPARE(measured, engine.bubble->measured);
    QCOMPARE(view.formula_bubble(), 1.0 / 5.0);
    const QString text = view.bubbleText(2);
    QVERIFY2(text.contains(QStringLiteral("formula (p−1)/(m+p−1) = (2−1)/(4+2−1) = 20.0%")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("bubble measured ") + percentOf(measured)), qPrintable(text));
    QVERIFY2(
        text.contains(QStringLiteral("stage imbalance idles another ") + percentOf(engine.bubble->imbalance) +
                      QStringLiteral(" (idle in all ") + percentOf(engine.bubble->idle) +
                      QStringLiteral(", GPipe's with these stages' times ") + percentOf(engine.bubble->for_stages)),
        qPrintable(text));
    QVERIFY(view.findChild<QLabel*>(QStringLiteral("bubble"))->text().contains(text));

    // Picking step 1 in the spin box shows it; 0 ("last completed") goes back to step 2.
    auto* pick = view.findChild<QSpinBox*>(QStringLiteral("timeline_step"));
    QCOMPARE(pick->maximum(), 2);
    pick->setValue(1);
    QCOMPARE(view.shownStep(), std::int64_t{1});
    QVERIFY(view.findChild<QLabel*>(QStringLiteral("bubble"))->text().startsWith(QStringLiteral("Step 1:")));
    pick->setValue(0);
    QCOMPARE(view.shownStep(), std::int64_t{2});

    view.reset(*make_run_plan(c));
    QVERIFY(view.boxes(1).empty());
    QVERIFY(view.boxes(2).empty());
    QCOMPARE(view.shownStep(), std::int64_t{0});
    QCOMPARE(view.measured_bubble(2), 0.0);
  }

  // A step's metrics come after its boxes (after an evaluation, too): alone in the last batch, they still
  // move "last completed" and the header to that step.
  void headerFollowsTheLastCompletedStep() {
    const RunConfig c = pipelineRun(2, 4, PipelineScheduleKind::gpipe);
    auto events = eventsOf(c);
    const auto last = std::find_if(events.rbegin(), events.rend(),
                                   [](const Event& e) { return e.kind == EventKind::step_metrics && e.step == 2; });
    QVERIFY(last != events.rend());
    const Event metrics = *last;
    events.erase(std::next(last).base());
    PipelineTimelineView view;
    view.reset(*make_run_plan(c));
    view.consume(events);
    view.refresh();
    auto* header = view.findChild<QLabel*>(QStringLiteral("bubble"));
    QVERIFY2(header->text().startsWith(QStringLiteral("Step 1:")), qPrintable(header->text()));
    view.consume({metrics});
    view.refresh();
    QVERIFY2(header->text().startsWith(QStringLiteral("Step 2:")), qPrintable(header->text()));
  }

  void accumulationFlushesThePipelineEveryMicroStep() {
    RunConfig c = pipelineRun(2, 4, PipelineScheduleKind::one_f_one_b);
    c.accum = 2;
    c.batch = 2 * 4 * 2;  // micro-batches of 2 sequences
    PipelineTimelineView view;
    view.reset(*make_run_plan(c));
    view.consume(eventsOf(c));
    view.refresh();
    const auto& boxes = view.boxes(2);
    QCOMPARE(static_cast<int>(boxes.size()), 2 * 8 * 2);  // F0..F7 and B0..B7 on both stages
    // The engine runs the schedule once per accumulation micro-step: every box of
    // micro-batches 0-3 ends before any of 4-7 starts (the pipeline drains in
    // between), so the formula beside the measurement takes m = 4, not 8.
    std::int64_t first_flush_end = 0, second_flush_start = std::numeric_limits<std::int64_t>::max();
    for (const auto& b : boxes) {
      if (b.micro_batch < 4)
        first_flush_end = std::max(first_flush_end, b.end_ns);
      else
        second_flush_start = std::min(second_flush_start, b.start_ns);
    }
    QVERIFY(first_flush_end <= second_flush_start);
    QCOMPARE(view.formula_bubble(), 1.0 / 5.0);
    QCOMPARE(view.one_flush_bubble(), 1.0 / 9.0);
    const QString text = view.bubbleText(2);
    QVERIFY2(text.contains(QStringLiteral("per flush formula (p−1)/(m+p−1) = (2−1)/(4+2−1) = 20.0%")),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("k = 2 flushes of m = 4 micro-batches (F0–F7)")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("one flush of all 8 would idle 11.1%")), qPrintable(text));
    // Two flushes measured, each against its own fill and drain.
    QCOMPARE(view.summary(2).bubble->flushes, 2);
    // Without accumulation the line stays short.
    QVERIFY(!PipelineTimelineView().bubbleText(1).contains(QStringLiteral("flush")));
  }

  void initTestCase() { replicated_ = eventsOf(replicatedPipeline()); }

  void replicaSelectorPicksTheRanks() {
    const RunConfig c = replicatedPipeline();
    PipelineTimelineView view;
    view.reset(*make_run_plan(c));
    view.consume(replicated_);
    view.refresh();
    auto* pick = view.findChild<QSpinBox*>(QStringLiteral("timeline_replica"));
    QVERIFY(pick != nullptr && !pick->isHidden());
    QCOMPARE(pick->maximum(), 1);
    const Grid grid(2, 2);
    for (int replica : {0, 1}) {
      pick->setValue(replica);
      QCOMPARE(view.replica(), replica);
      const auto& boxes = view.boxes(2);
      QCOMPARE(static_cast<int>(boxes.size()), 2 * 4 * 2);  // one per (stage, micro-batch, pass) of this replica
      std::set<int> ranks;
      for (const auto& b : boxes) {
        QCOMPARE(b.rank, grid.rank_at(b.stage, replica));
        ranks.insert(b.rank);
      }
      QCOMPARE(ranks, (std::set<int>{grid.rank_at(0, replica), grid.rank_at(1, replica)}));
      for (const auto& t : view.transfers(2)) QCOMPARE(grid.dp_rank_of(t.src_rank), replica);
      for (const auto& s : view.bucketSpans(2)) QCOMPARE(grid.dp_rank_of(s.rank), replica);
    }
    // One replica: no selector.
    view.reset(*make_run_plan(pipelineRun(2, 4, PipelineScheduleKind::gpipe)));
    QVERIFY(pick->isHidden());
    QCOMPARE(view.replica(), 0);
  }

  // dp 2 × tp 2 × pp 2: the replica is a (dp, tp) pair; the tp selector moves
  // every row to that tp rank, its boxes, arrows and the tp collectives drawn
  // inside its boxes (each inside an F or B box of its rank).
  void tensorRankSelectorPicksTheRanks() {
    RunConfig c = pipelineRun(2, 2, PipelineScheduleKind::one_f_one_b);
    c.layout[Axis::dp] = 2;
    c.layout[Axis::tp] = 2;
    c.batch = 2 * 2 * 2;
    PipelineTimelineView view;
    view.reset(*make_run_plan(c));
    view.consume(eventsOf(c));
    view.refresh();
    auto* pick = view.findChild<QSpinBox*>(QStringLiteral("timeline_tp_rank"));
    QVERIFY(pick != nullptr && !pick->isHidden());
    QCOMPARE(pick->maximum(), 1);
    const Grid grid(c.layout);
    for (int replica : {0, 1})
      for (int tp : {0, 1}) {
        view.setReplica(replica);
        pick->setValue(tp);
        QCOMPARE(view.tensorRank(), tp);
        for (int s = 0; s < 2; ++s) {
          QCOMPARE(grid.tp_rank_of(view.shownRank(s)), tp);
          QCOMPARE(grid.dp_rank_of(view.shownRank(s)), replica);
          QCOMPARE(grid.stage_of(view.shownRank(s)), s);
        }
        const auto& boxes = view.boxes(2);
        QCOMPARE(static_cast<int>(boxes.size()), 2 * 2 * 2);  // (stage, micro-batch, pass) of this replica
        for (const auto& b : boxes) QCOMPARE(b.rank, view.shownRank(b.stage));
        for (const auto& t : view.transfers(2)) QCOMPARE(t.src_rank, view.shownRank(t.src_stage));
        QVERIFY(!view.tensorSpans(2).empty());
        for (const auto& t : view.tensorSpans(2)) {
          QCOMPARE(t.rank, view.shownRank(t.stage));
          const bool inside = std::any_of(boxes.begin(), boxes.end(), [&](const auto& b) {
            return b.rank == t.rank && b.layer == -1 && b.start_ns <= t.start_ns && t.end_ns <= b.end_ns;
          });
          QVERIFY(inside);
        }
      }
    view.resize(900, 400);
    view.setReplica(1);
    QVERIFY(view.grab().save(QDir(QCoreApplication::applicationDirPath()).filePath("pipeline_timeline_tp.png")));
    view.reset(*make_run_plan(pipelineRun(2, 4, PipelineScheduleKind::gpipe)));
    QVERIFY(pick->isHidden());
  }

  // An arrow per pipeline message of the shown replica: 2 (p − 1) m per step
  // (each micro-batch's activation forward and its gradient back over each of
  // the p − 1 stage boundaries), from the engine's send events, the send after
  // the sender's box and the arrival before the receiver's box.
  void arrowsAreTheReplicasSends() {
    PipelineTimelineView view;
    view.reset(*make_run_plan(replicatedPipeline()));
    view.consume(replicated_);
    view.refresh();
    const Grid grid(2, 2);
    for (int replica : {0, 1}) {
      view.setReplica(replica);
      const auto& transfers = view.transfers(2);
      QCOMPARE(static_cast<int>(transfers.size()), 2 * (2 - 1) * 4);
      std::map<std::tuple<int, int, int>, int> drawn;
      for (const auto& t : transfers) ++drawn[{t.src_rank, t.dst_rank, t.micro_batch}];
      auto sent = sendsOf(replicated_, grid, 2, replica);
      QVERIFY2(evaluationSends(sent) > 0, "the evaluation after step 2 sends too");
      std::erase_if(sent, [](const auto& kv) { return std::get<2>(kv.first) < 0; });
      QCOMPARE(drawn, sent);
      for (const auto& t : transfers) {
        QCOMPARE(std::abs(t.dst_stage - t.src_stage), 1);
        QCOMPARE(t.src_rank, grid.rank_at(t.src_stage, replica));
        QCOMPARE(t.dst_rank, grid.rank_at(t.dst_stage, replica));
        QVERIFY(t.bytes > 0 && t.end_ns >= t.start_ns);
        const ComputeKind pass = t.forward() ? ComputeKind::forward : ComputeKind::backward;
        const TimelineBox* producer = nullptr;
        const TimelineBox* consumer = nullptr;
        for (const auto& b : view.boxes(2)) {
          if (b.kind != pass || b.micro_batch != t.micro_batch) continue;
          if (b.stage == t.src_stage) producer = &b;
          if (b.stage == t.dst_stage) consumer = &b;
        }
        QVERIFY(producer != nullptr && consumer != nullptr);
        QVERIFY2(t.start_ns >= producer->end_ns, "a send starts after the box that made its data");
        QVERIFY2(consumer->start_ns >= t.end_ns, "the receiver's box starts after the data arrived");
      }
    }
  }

  // DDP: each row's lane holds the rank's bucket transfers; the header's overlap
  // is summarize_schedule's over the same step and replica.
  void bucketLaneAndOverlap() {
    RunConfig c = replicatedPipeline();
    PipelineTimelineView view;
    view.resize(1000, 420);
    view.reset(*make_run_plan(c));
    view.consume(replicated_);
    view.refresh();
    QVERIFY(view.hasBucketLane());
    const Grid grid(2, 2);
    for (int replica : {0, 1}) {
      view.setReplica(replica);
      int engineTransfers = 0;
      for (const Event& e : replicated_)
        if (e.kind == EventKind::comm_span && e.op == CommOp::all_reduce && e.bucket >= 0 && e.step == 2 &&
            e.src == e.rank && grid.dp_rank_of(e.rank) == replica)
          ++engineTransfers;
      QVERIFY(engineTransfers > 0);
      QCOMPARE(static_cast<int>(view.bucketSpans(2).size()), engineTransfers);
      std::set<int> buckets;
      for (const auto& s : view.bucketSpans(2)) buckets.insert(s.bucket);
      QVERIFY2(buckets.size() >= 2, "0.5 MiB buckets: several per stage");
      const ScheduleSummary engine = summarize_schedule(replicaEvents(replicated_, grid, 2, replica), 2, 2, 4);
      QVERIFY(engine.overlap.has_value() && view.summary(2).overlap.has_value());
      QCOMPARE(view.summary(2).overlap->fraction(), engine.overlap->fraction());
      QCOMPARE(view.summary(2).overlap->buckets, engine.overlap->buckets);
      const QString header = view.findChild<QLabel*>(QStringLiteral("bubble"))->text();
      QVERIFY2(header.contains(QStringLiteral("communication overlapped with backward: ") +
                               percentOf(engine.overlap->fraction())),
               qPrintable(header));
      QVERIFY2(header.contains(QStringLiteral("bubble measured ") + percentOf(engine.bubble->measured)),
               qPrintable(header));
    }
    const QString path =
        QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("pipeline_timeline_ddp.png"));
    QVERIFY(view.grab().save(path));
    // Data parallel without a pipeline: one row and its lane, the overlap alone in the header.
    RunConfig ddp = pipelineRun(1, 1, PipelineScheduleKind::one_f_one_b);
    ddp.layout[Axis::dp] = 2;
    ddp.batch = 4;
    ddp.bucket_mb = 0.5;
    const auto events = eventsOf(ddp);
    view.reset(*make_run_plan(ddp));
    view.consume(events);
    view.refresh();
    view.setReplica(0);
    QVERIFY(view.hasBucketLane() && !view.bucketSpans(2).empty());
    const ScheduleSummary engine = summarize_schedule(replicaEvents(events, Grid(2, 1), 2, 0), 2, 1, 1);
    const QString header = view.findChild<QLabel*>(QStringLiteral("bubble"))->text();
    QVERIFY2(header.contains(percentOf(engine.overlap->fraction())) && !header.contains(QStringLiteral("bubble")),
             qPrintable(header));
    QVERIFY(view.grab().save(
        QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("pipeline_timeline_dp.png"))));
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
    view.reset(*make_run_plan(c));
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
    view.reset(*make_run_plan(c));
    view.consume(eventsOf(c));
    view.refresh();
    QCOMPARE(static_cast<int>(view.boxes(2).size()), 4 * 8 * 2);
    QCOMPARE(static_cast<int>(view.transfers(2).size()), 2 * (4 - 1) * 8);
    const QString path = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("pipeline_timeline.png"));
    QVERIFY(view.grab().save(path));
    qInfo("screenshot: %s", qPrintable(path));
  }

 private:
  std::vector<Event> replicated_;  // replicatedPipeline()'s events
};

QTEST_MAIN(TestPipelineTimeline)
#include "test_pipeline_timeline.moc"
