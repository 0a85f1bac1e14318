// SPDX-License-Identifier: GPL-3.0-or-later
// The ring all-reduce view, offscreen, fed the events of real runs: under DDP
// it holds every ring transfer of the step, in ring order per rank, with the
// per-rank bytes of the events (2(N-1)/N of each bucket); under naive
// DataParallel rank 0 moves the most bytes; reset forgets the run; and a
// screenshot is saved mid-animation.
#include <QCoreApplication>
#include <QDir>
#include <QTabWidget>
#include <QtTest>
#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "engine/collecting_sink.h"
#include "events/event.h"
#include "main_window.h"
#include "parallel/ddp.h"
#include "train/trainer.h"
#include "views/ring_allreduce_view.h"

using namespace shardscope;
using shardscope::test::CollectingSink;
using shardscope::ui::RingAllreduceView;
using shardscope::ui::RingTransfer;

namespace {

RunConfig ringConfig(DataParallelMode mode) {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 1;
  c.batch = 8;
  c.seq = 32;
  c.threads = 2;
  c.layout[Axis::dp] = 4;
  c.bucket_mb = 0.8;
  c.dp_mode = mode;
  return c;
}

}  // namespace

class TestRingView : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // dp 2 × tp 2 with ZeRO-1: the ring is tp rank 0's dp group; the tp group's
  // collectives (the layers' all-reduces, the loss's all-gather) are not on it.
  void tensorParallelCollectivesStayOffTheRing() {
    RunConfig c = ringConfig(DataParallelMode::ddp);
    c.layout[Axis::dp] = 2;
    c.layout[Axis::tp] = 2;
    c.zero_stage = 1;
    CollectingSink sink;
    Trainer trainer(c, &sink);
    trainer.step();
    RingAllreduceView view;
    view.reset(*make_run_plan(c));
    view.consume(sink.events());
    const Grid grid(c.layout);
    QVERIFY(!view.transfers(1).empty());
    for (const RingTransfer& t : view.transfers(1)) {
      QCOMPARE(grid.tp_rank_of(t.src), grid.tp_rank_of(t.dst));
      QVERIFY(t.purpose != CommPurpose::tensor_parallel);
    }
    for (int r : grid.dp_group(0)) QCOMPARE(view.bytes_sent(r, 1), view.state_bytes_sent(r, 1));
  }

  // dp 2 × cp 2: ring attention's key/value blocks move activations between the
  // cp ranks; they are not the ring's (its gradients still are).
  void contextParallelBlocksStayOffTheRing() {
    RunConfig c = ringConfig(DataParallelMode::ddp);
    c.layout[Axis::dp] = 2;
    c.layout[Axis::cp] = 2;
    CollectingSink sink;
    Trainer trainer(c, &sink);
    trainer.step();
    const std::vector<Event> events = sink.events();  // one copy: begin and end of the same vector
    const bool blocks_sent = std::any_of(events.begin(), events.end(), [](const Event& e) {
      return e.purpose == CommPurpose::context_parallel && e.kind == EventKind::comm_span;
    });
    QVERIFY(blocks_sent);
    RingAllreduceView view;
    view.reset(*make_run_plan(c));
    view.consume(events);
    QVERIFY(!view.transfers(1).empty());
    for (const RingTransfer& t : view.transfers(1)) QVERIFY(t.purpose != CommPurpose::context_parallel);
  }

  void ddpStepIsConsumedInRingOrder() {
    const RunConfig c = ringConfig(DataParallelMode::ddp);
    CollectingSink sink;
    Trainer trainer(c, &sink);
    trainer.step();
    const auto buckets = make_gradient_buckets(trainer.model().layout(), bucket_cap_bytes(c.bucket_mb));
    QVERIFY(buckets.size() >= 3);
    const int N = 4;

    RingAllreduceView view;
    view.reset(*make_run_plan(c));
    view.consume(sink.events());
    view.refresh();
    QVERIFY(!view.naive());
    QCOMPARE(view.ringSize(), N);
    const std::int64_t step = view.lastStep();
    QVERIFY(step >= 1);
    const auto& transfers = view.transfers(step);
    QCOMPARE(transfers.size(), buckets.size() * 2 * (N - 1) * N);

    for (int r = 0; r < N; ++r) {
      std::int64_t event_bytes = 0;
      for (const Event& e : sink.events())
        if (e.kind == EventKind::comm_span && e.op == CommOp::all_reduce && e.bucket >= 0 && e.src == r &&
            e.step == step)
          event_bytes += e.bytes;
      QCOMPARE(view.bytes_sent(r, step), event_bytes);
      QVERIFY(event_bytes > 0);

      std::vector<RingTransfer> mine;
      for (const RingTransfer& t : transfers)
        if (t.src == r) mine.push_back(t);
      QCOMPARE(mine.size(), buckets.size() * 2 * (N - 1));
      std::size_t i = 0;
      for (const auto& bucket : buckets) {
        for (RingPhase phase : {RingPhase::reduce_scatter, RingPhase::all_gather}) {
          for (int s = 0; s < N - 1; ++s, ++i) {
            QCOMPARE(mine[i].bucket, bucket.index);
            QCOMPARE(mine[i].phase, phase);
            QCOMPARE(mine[i].ring_step, s);
            QCOMPARE(mine[i].dst, (r + 1) % N);
          }
        }
        const std::int64_t bucket_bytes = (bucket.end - bucket.begin) * 4;
        if (bucket_bytes % (4 * N) == 0)
          QCOMPARE(view.bytes_sent(r, step, bucket.index), 2 * (N - 1) * bucket_bytes / N);
      }
    }

    // The replay plays groups of N simultaneous transfers, in order.
    QVERIFY(view.pendingGroups() > 0);
    view.advance(3);
    QCOMPARE(view.playedTransfers() + view.skippedTransfers() > 0, true);
    QCOMPARE((view.playedTransfers() + view.skippedTransfers()) % N, std::int64_t{0});

    view.reset(*make_run_plan(c));
    QVERIFY(view.transfers(step).empty());
    QCOMPARE(view.bytes_sent(0, step), std::int64_t{0});
    QCOMPARE(view.pendingGroups(), std::size_t{0});
    QCOMPARE(view.lastStep(), std::int64_t{0});
  }

  void naiveModeLoadsRankZero() {
    const RunConfig c = ringConfig(DataParallelMode::naive);
    CollectingSink sink;
    Trainer trainer(c, &sink);
    trainer.step();
    RingAllreduceView view;
    view.reset(*make_run_plan(c));
    view.consume(sink.events());
    view.refresh();
    QVERIFY(view.naive());
    const std::int64_t step = view.lastStep();
    QVERIFY(step >= 1);
    std::map<CommOp, int> ops;
    for (const RingTransfer& t : view.transfers(step)) {
      ++ops[t.op];
      QVERIFY(t.src == 0 || t.dst == 0);
    }
    QCOMPARE(ops[CommOp::gather], 3);
    QVERIFY(ops[CommOp::broadcast] >= 3);
    QVERIFY(ops[CommOp::scatter] >= 3);
    QCOMPARE(ops[CommOp::all_reduce], 0);
    const std::int64_t root = view.bytes_sent(0, step) + view.bytes_received(0, step);
    for (int r = 1; r < 4; ++r) {
      const std::int64_t other = view.bytes_sent(r, step) + view.bytes_received(r, step);
      QVERIFY2(root > other, qPrintable(QStringLiteral("rank 0 %1 vs rank %2 %3").arg(root).arg(r).arg(other)));
    }
    // Rank 0 receives every peer's gradients and sends each the parameters and its tokens.
    std::int64_t gathered = 0, sent = 0;
    for (const RingTransfer& t : view.transfers(step)) (t.op == CommOp::gather ? gathered : sent) += t.bytes;
    QCOMPARE(view.bytes_received(0, step), gathered);
    QCOMPARE(view.bytes_sent(0, step), sent);
    view.reset(*make_run_plan(ringConfig(DataParallelMode::ddp)));
    QVERIFY(!view.naive());
    QVERIFY(view.transfers(step).empty());
  }

  // ZeRO-1/2/3 runs are drawn too: every reduce-scatter and all-gather transfer
  // of the step, with its unit, and each rank's bytes equal to the formula of
  // plan/data_parallel_traffic.h (the tiny model's units divide by 4: no padding).
  void zeroRunsShowTheirCollectivesWithTheirBytes() {
    for (int zero : {1, 2, 3}) {
      RunConfig c = ringConfig(DataParallelMode::ddp);
      c.zero_stage = zero;
      CollectingSink sink;
      Trainer trainer(c, &sink);
      trainer.step();
      RingAllreduceView view;
      view.reset(*make_run_plan(c));
      view.consume(sink.events());
      view.refresh();
      QCOMPARE(view.zeroStage(), zero);
      const std::int64_t step = view.lastStep();
      QCOMPARE(step, std::int64_t{1});
      std::map<CommOp, std::int64_t> bytes;
      std::set<int> units;
      for (const RingTransfer& t : view.transfers(step)) {
        bytes[t.op] += t.bytes;
        units.insert(t.unit);
        QCOMPARE(t.dst, (t.src + 1) % 4);  // along the ring
        QCOMPARE(t.purpose, t.op == CommOp::reduce_scatter ? CommPurpose::gradients : CommPurpose::parameters);
      }
      QVERIFY(bytes[CommOp::reduce_scatter] > 0);
      QVERIFY(bytes[CommOp::all_gather] > 0);
      QCOMPARE(bytes[CommOp::all_reduce], std::int64_t{0});
      // ZeRO-1 moves the flat shards (no unit); ZeRO-2/3 every unit: embeddings, layers, head.
      const int unit_count = trainer.model().config().layers + 2;
      QCOMPARE(static_cast<int>(units.size()), zero == 1 ? 1 : unit_count);
      // ZeRO-3 gathers every unit twice (forward, backward) and the tied embeddings once more, for
      // the head: over the 4 ranks, 2× the reduce-scatters plus 4 × 3/4 × E × 4 bytes.
      const std::int64_t E = trainer.model().layout().find_unit(0)->numel();
      if (zero == 3) QCOMPARE(bytes[CommOp::all_gather], 2 * bytes[CommOp::reduce_scatter] + 3 * E * 4);
      QVERIFY(view.formulaBytes() > 0);
      QVERIFY(!view.formulaText().isEmpty());
      for (int r = 0; r < 4; ++r) {
        std::int64_t event_bytes = 0;
        for (const Event& e : sink.events())
          if (e.kind == EventKind::comm_span && e.src == r && e.dst >= 0 && moves_model_states(e.purpose))
            event_bytes += e.bytes;
        QCOMPARE(view.state_bytes_sent(r, step), event_bytes);
        QCOMPARE(static_cast<double>(view.state_bytes_sent(r, step)), view.formulaBytes());
      }
      // The replay shows them: groups of 4 simultaneous transfers.
      QVERIFY(view.pendingGroups() > 0);
      view.advance(14 * 3);
      QCOMPARE((view.playedTransfers() + view.skippedTransfers()) % 4, std::int64_t{0});
    }
  }

  void replaySkipsAheadWhenBehind() {
    RunConfig c = ringConfig(DataParallelMode::ddp);
    c.steps = 4;
    CollectingSink sink;
    Trainer trainer(c, &sink);
    for (int s = 0; s < 4; ++s) trainer.step();
    RingAllreduceView view;
    view.reset(*make_run_plan(c));
    view.consume(sink.events());
    view.refresh();
    std::int64_t total = 0;
    for (std::int64_t s = 1; s <= view.lastStep(); ++s) total += static_cast<std::int64_t>(view.transfers(s).size());
    QCOMPARE(view.lastStep(), std::int64_t{4});
    QVERIFY(view.skippedTransfers() > 0);  // four steps at once: far more than the replay can show
    view.advance(100000);                  // play everything left
    QCOMPARE(view.pendingGroups(), std::size_t{0});
    QCOMPARE(view.playedTransfers() + view.skippedTransfers(), total);  // each one played or skipped once
    QVERIFY(view.playedTransfers() > 0);
  }

  void stagePickerShowsThatStagesRanks() {
    RunConfig c = ringConfig(DataParallelMode::ddp);
    c.layout[Axis::dp] = 2;
    c.layout[Axis::pp] = 2;
    c.micro_batches = 2;
    CollectingSink sink;
    Trainer trainer(c, &sink);
    trainer.step();
    RingAllreduceView view;
    view.reset(*make_run_plan(c));
    view.consume(sink.events());
    const std::int64_t step = view.lastStep();
    QVERIFY(!view.transfers(step).empty());
    for (const RingTransfer& t : view.transfers(step)) QVERIFY(t.src < 2 && t.dst < 2);
    view.setStage(1);
    QCOMPARE(view.stage(), 1);
    QVERIFY(!view.transfers(step).empty());
    for (const RingTransfer& t : view.transfers(step)) QVERIFY(t.src >= 2 && t.dst >= 2);
    QVERIFY(view.pendingGroups() > 0);  // the stage's latest step replays
  }

  // One GPU per rank: NCCL's all-reduce is one span per call and rank (its ring
  // steps run inside its kernels). The view counts the shown stage's first
  // rank's calls, bytes and GPU time, and says why no chunk moves.
  void ncclSpansAreCountedNotDrawnAsChunks() {
    RunConfig c = ringConfig(DataParallelMode::ddp);
    c.layout[Axis::dp] = 2;
    RingAllreduceView view;
    view.resize(820, 620);
    view.reset(*make_run_plan(c));
    std::vector<Event> events;
    for (int rank = 0; rank < 2; ++rank)
      for (const auto& [bytes, ns] :
           {std::pair<std::int64_t, std::int64_t>{4'000'000, 1'000'000}, {2'000'000, 500'000}}) {
        Event e;
        e.kind = EventKind::comm_span;
        e.op = CommOp::all_reduce;
        e.rank = e.src = rank;
        e.dst = -1;
        e.step = 3;
        e.bytes = bytes;
        e.start_ns = 10'000'000;
        e.end_ns = e.start_ns + ns;
        events.push_back(e);
      }
    view.consume(events);
    view.refresh();
    const RingAllreduceView::NcclCalls calls = view.ncclCalls(3);
    QCOMPARE(calls.calls, 2);
    QCOMPARE(calls.bytes, std::int64_t{6'000'000});
    QCOMPARE(calls.gpu_ns, std::int64_t{1'500'000});
    QVERIFY(view.transfers(3).empty());
    QCOMPARE(view.lastStep(), std::int64_t{3});
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setAnimationRunning(false);
    QVERIFY(
        view.grab().save(QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("ring_view_nccl.png"))));
  }

  // dp 3 x pp 2 on NCCL: the first rank of stage 1 is global rank 3 (rank = stage * dp + dp rank; 3 rather than
  // 2 so a dp/pp mix-up shows), so only its calls count; stage 0's ranks and stage 1's other dp ranks do not.
  void ncclCallsOfAPickedStageAreItsFirstRanks() {
    RunConfig c = ringConfig(DataParallelMode::ddp);
    c.layout[Axis::dp] = 3;
    c.layout[Axis::pp] = 2;
    c.batch = 12;  // a valid run: 12 rows split over 3 replicas
    RingAllreduceView view;
    view.reset(*make_run_plan(c));
    view.setStage(1);
    QCOMPARE(view.ringSize(), 3);
    std::vector<Event> events;
    for (int rank = 0; rank < 6; ++rank) {
      Event e;
      e.kind = EventKind::comm_span;
      e.op = CommOp::all_reduce;
      e.rank = e.src = rank;
      e.dst = -1;
      e.step = 2;
      e.bytes = 1'000 * (rank + 1);  // tells the ranks apart
      e.start_ns = 1'000'000;
      e.end_ns = e.start_ns + 100'000 * (rank + 1);
      events.push_back(e);
    }
    view.consume(events);
    const RingAllreduceView::NcclCalls calls = view.ncclCalls(2);
    QCOMPARE(calls.calls, 1);
    QCOMPARE(calls.bytes, std::int64_t{4'000});
    QCOMPARE(calls.gpu_ns, std::int64_t{400'000});
  }

  void mainWindowHasTheRingTab() {
    shardscope::ui::MainWindow window;
    RingAllreduceView* ring = nullptr;
    for (int i = 0; i < window.viewTabs()->count(); ++i)
      if (auto* v = qobject_cast<RingAllreduceView*>(window.viewTabs()->widget(i))) ring = v;
    QVERIFY(ring != nullptr);
    QCOMPARE(ring->ringSize(), 2);  // the default preset: dp 2 x pp 2, reset by the window
    QVERIFY(!ring->naive());
  }

  void screenshotMidAnimation() {
    const RunConfig c = ringConfig(DataParallelMode::ddp);
    CollectingSink sink;
    Trainer trainer(c, &sink);
    trainer.step();
    RingAllreduceView view;
    view.resize(820, 620);
    view.reset(*make_run_plan(c));
    view.consume(sink.events());
    view.refresh();
    view.advance(3 * 14 + 7);  // a few groups in, the chunks half way along their edges
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setAnimationRunning(false);
    const QImage image = view.grab().toImage();
    QVERIFY(!image.isNull());
    const QString path = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("ring_view.png"));
    QVERIFY(image.save(path));
    qInfo("ring view screenshot: %s", qPrintable(path));

    RunConfig n = ringConfig(DataParallelMode::naive);
    CollectingSink naive_sink;
    Trainer naive_trainer(n, &naive_sink);
    naive_trainer.step();
    view.reset(*make_run_plan(n));
    view.consume(naive_sink.events());
    view.refresh();
    view.advance(14 + 7);
    view.setAnimationRunning(false);
    const QString naive_path =
        QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("ring_view_naive.png"));
    QVERIFY(view.grab().save(naive_path));
  }
};

QTEST_MAIN(TestRingView)
#include "test_ring_view.moc"
