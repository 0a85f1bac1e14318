// SPDX-License-Identifier: GPL-3.0-or-later
// The Context parallel view, offscreen, fed the events of real cp 2 and cp 4
// runs (zig-zag and contiguous): every ring-attention send is counted; once a
// layer's forward ring is in, each rank has held every block and its filled
// tiles equal its work, 2cp tiles per rank with the zig-zag split and 4r + 2
// with contiguous chunks (a diagonal tile counts half); partway through the
// ring the tiles are partly filled; the bytes each rank sent per layer per
// micro-batch equal plan/context_parallel_traffic.h's forward and backward
// formulas, and the bytes per ring step add up to the events'; with cp 1 the
// view says how to turn it on. "One step, slowly" feeds the step's sends again
// from an empty ring over at least 2 s, and the run's state comes back after.
// Screenshots are saved beside the test.
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QtTest>
#include <numeric>

#include "engine/collecting_sink.h"
#include "events/event.h"
#include "train/trainer.h"
#include "views/context_parallel_view.h"

using namespace shardscope;
using shardscope::ui::ContextParallelPass;
using shardscope::ui::ContextParallelView;

namespace {

RunConfig contextConfig(int cp, const char* split) {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 1;
  c.batch = 4;
  c.seq = 32;
  c.threads = 2;
  c.layout[Axis::cp] = cp;
  c.cp_split = split;
  return c;
}

std::vector<Event> run(const RunConfig& c) {
  test::CollectingSink sink;
  Trainer trainer(c, &sink);
  for (int s = 0; s < c.steps; ++s) trainer.step();
  return sink.events();
}

bool ringSend(const Event& e) {
  return e.kind == EventKind::comm_span && e.purpose == CommPurpose::context_parallel && e.op == CommOp::send;
}

}  // namespace

class TestContextParallelView : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void tilesAndBytesFollowTheEvents_data() {
    QTest::addColumn<int>("cp");
    QTest::addColumn<QString>("split");
    QTest::newRow("cp 2 zigzag") << 2 << QStringLiteral("zigzag");
    QTest::newRow("cp 2 contiguous") << 2 << QStringLiteral("contiguous");
    QTest::newRow("cp 4 zigzag") << 4 << QStringLiteral("zigzag");
    QTest::newRow("cp 4 contiguous") << 4 << QStringLiteral("contiguous");
  }

  void tilesAndBytesFollowTheEvents() {
    QFETCH(int, cp);
    QFETCH(QString, split);
    const RunConfig c = contextConfig(cp, split.toStdString().c_str());
    const std::vector<Event> events = run(c);
    ContextParallelView view;
    view.reset(*make_run_plan(c));
    view.consume(events);
    const auto& m = view.model();
    QCOMPARE(m.cp(), cp);
    QCOMPARE(m.zigzag(), split == QStringLiteral("zigzag"));
    QCOMPARE(m.transfers(), std::count_if(events.begin(), events.end(), ringSend));
    QVERIFY(m.transfers() > 0);
    QVERIFY(view.placeholderText().isEmpty());
    int total = 0;
    for (int r = 0; r < cp; ++r) {
      // Zig-zag: chunks r and 2cp−1−r, 2cp tiles; contiguous: chunks 2r, 2r+1, 4r+2 tiles (in halves: ×2).
      const int expected = m.zigzag() ? 2 * 2 * cp : 2 * (4 * r + 2);
      QCOMPARE(m.workHalves(r), expected);
      total += m.workHalves(r);
    }
    QCOMPARE(total, 4 * cp * cp);  // (2cp)² tiles: 2cp(2cp−1)/2 below the diagonal whole, 2cp on it half
    for (int layer = 0; layer < m.layers(); ++layer) {
      const ContextParallelPass& forward = m.latest(layer, false);
      const ContextParallelPass& backward = m.latest(layer, true);
      QCOMPARE(forward.step, std::int64_t{1});
      QCOMPARE(backward.step, std::int64_t{1});
      std::int64_t forward_events = 0, backward_events = 0;
      for (const Event& e : events)
        if (ringSend(e) && e.layer == layer && e.step == 1 && e.micro_batch == forward.micro_batch)
          (e.compute == ComputeKind::backward ? backward_events : forward_events) += e.bytes;
      for (int r = 0; r < cp; ++r) {
        for (int b = 0; b < cp; ++b) QVERIFY(forward.held[r][b]);
        QCOMPARE(m.filledHalves(forward, r), m.workHalves(r));
        QCOMPARE(forward.rank_bytes[r], m.formula().forward_bytes);
        QCOMPARE(backward.rank_bytes[r], m.formula().backward_bytes);
      }
      const auto sum = [](const std::vector<std::int64_t>& v) { return std::accumulate(v.begin(), v.end(), 0LL); };
      QCOMPARE(sum(forward.step_bytes), forward_events);
      QCOMPARE(sum(backward.step_bytes), backward_events);
      QCOMPARE(forward.latest_ring_step, cp - 2);  // the last block send; the ring's every rank at it
      QCOMPARE(forward.latestSends().size(), std::size_t(cp));
      QCOMPARE(backward.latest_gradients, true);
      QCOMPARE(backward.latestSends().size(), std::size_t(cp));
      QCOMPARE(forward.sends, cp * (cp - 1));
      QCOMPARE(backward.sends, cp * (cp - 1) + cp * cp);
    }
    view.resize(1000, 620);
    QVERIFY(view.grab().save(QDir(QCoreApplication::applicationDirPath())
                                 .filePath(QStringLiteral("context_parallel_cp%1_%2.png").arg(cp).arg(split))));
  }

  // The replay starts from an empty ring, its sends grow over the wall-clock time (a sample
  // sees part of the step's sends in), and at its end the live passes are back.
  void replaysAStepSlowly() {
    RunConfig c = contextConfig(4, "zigzag");
    c.steps = 2;
    const std::vector<Event> events = run(c);
    const std::int64_t step_sends =
        std::count_if(events.begin(), events.end(), [](const Event& e) { return ringSend(e) && e.step == 2; });
    ContextParallelView view;
    view.reset(*make_run_plan(c));
    view.consume(events);
    const ContextParallelPass live = view.model().latest(0, false);
    const std::int64_t live_transfers = view.model().transfers();
    QCOMPARE(live.step, std::int64_t{2});
    view.replayStep(7);  // not run: nothing to draw
    QVERIFY(!view.drawing());
    QElapsedTimer took;
    took.start();
    view.replayStep(2);
    QVERIFY(view.drawing());
    QCOMPARE(view.replayedStep(), std::int64_t{2});
    QCOMPARE(view.model().latest(0, false).step, std::int64_t{0});  // an empty ring first
    bool partway = false;
    while (view.drawing() && took.elapsed() < 10000) {
      QTest::qWait(15);
      const std::int64_t replayed = view.model().transfers() - live_transfers;
      partway = partway || (replayed > 0 && replayed < step_sends);
    }
    QVERIFY(!view.drawing());
    QVERIFY2(took.elapsed() >= 1900, qPrintable(QString::number(took.elapsed())));  // at least 2 s at 1x
    QVERIFY(partway);
    QCOMPARE(view.replayedStep(), std::int64_t{0});
    QCOMPARE(view.model().transfers(), live_transfers);  // the run's model back
    QCOMPARE(view.model().latest(0, false).sends, live.sends);
    QCOMPARE(view.model().latest(0, false).step, live.step);
  }

  // Partway through layer 0's forward ring (its first ring step only), a rank
  // has held two blocks: its tiles are partly filled.
  void tilesFillAsBlocksArrive() {
    const RunConfig c = contextConfig(4, "zigzag");
    std::vector<Event> first_step;
    for (const Event& e : run(c))
      if (ringSend(e) && e.layer == 0 && e.compute == ComputeKind::forward && e.ring_step == 0) first_step.push_back(e);
    QCOMPARE(first_step.size(), std::size_t{4});
    ContextParallelView view;
    view.reset(*make_run_plan(c));
    view.consume(first_step);
    const auto& m = view.model();
    const ContextParallelPass& pass = m.latest(0, false);
    QCOMPARE(pass.latest_ring_step, 0);
    QCOMPARE(pass.latestSends().size(), std::size_t{4});
    for (int r = 0; r < 4; ++r) {
      QVERIFY(pass.held[r][r]);
      QVERIFY(pass.held[r][(r + 3) % 4]);  // the previous rank's block arrived
      QVERIFY(!pass.held[r][(r + 2) % 4]);
      QVERIFY(m.filledHalves(pass, r) < m.workHalves(r));
      QVERIFY(m.filledHalves(pass, r) > 0);
    }
  }

  void oneRankSaysHowToTurnItOn() {
    RunConfig c = contextConfig(1, "zigzag");
    ContextParallelView view;
    view.reset(*make_run_plan(c));
    view.consume(run(c));
    QCOMPARE(view.model().transfers(), std::int64_t{0});
    QVERIFY(view.placeholderText().contains(QStringLiteral("--cp 2")));
  }
};

QTEST_MAIN(TestContextParallelView)
#include "test_context_parallel_view.moc"
