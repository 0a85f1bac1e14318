// SPDX-License-Identifier: GPL-3.0-or-later
// The ZeRO sharding view, offscreen, fed the events of real runs: under ZeRO-3
// every gather is released, each rank gathers every unit in forward and
// backward and reduce-scatters every unit's gradient once; what each rank
// holds follows the stage; reset forgets the run; screenshots are saved
// mid-step for ZeRO-3 (dp 4) and ZeRO-1.
#include <QCoreApplication>
#include <QDir>
#include <QtTest>

#include <array>

#include "engine/collecting_sink.h"
#include "events/event.h"
#include "train/trainer.h"
#include "byte_text.h"
#include "plan/sharding_plan.h"
#include "views/zero_view.h"

using namespace shardscope;
using shardscope::ui::ZeroView;
using State = shardscope::ui::ZeroViewModel::State;

namespace {

RunConfig zeroConfig(int stage, int dp) {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 1;
  c.batch = 8;
  c.seq = 32;
  c.threads = 2;
  c.layout[Axis::dp] = dp;
  c.zero_stage = stage;
  return c;
}

std::vector<Event> runOneStep(const RunConfig& c, int* layers = nullptr) {
  test::CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.step();
  if (layers != nullptr) *layers = trainer.model().config().layers;
  return sink.events();
}

// Consumes a step's events up to just after the `nth` event that `mid` picks
// (a moment mid-step with something in flight) and saves the view.
template <typename Pred>
void screenshot(const RunConfig& c, const QString& name, int nth, Pred mid) {
  const std::vector<Event> events = runOneStep(c);
  std::size_t cut = events.size();
  for (std::size_t i = 0, seen = 0; i < events.size(); ++i)
    if (mid(events[i]) && static_cast<int>(++seen) == nth) {
      cut = i + 1;
      break;
    }
  QVERIFY(cut < events.size());
  ZeroView view;
  view.resize(900, 420);
  view.reset(*make_run_plan(c));
  view.consume(std::vector<Event>(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(cut)));
  view.refresh();
  const QString dir = QCoreApplication::applicationDirPath();
  const QString path = QDir(dir).filePath(name);
  QVERIFY(view.grab().save(path));
  qInfo("screenshot: %s", qPrintable(path));
}

}  // namespace

class TestZeroView : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void zero3CountsGathersReleasesAndReduceScatters() {
    const RunConfig c = zeroConfig(3, 2);
    int L = 0;
    const std::vector<Event> events = runOneStep(c, &L);
    QVERIFY(L >= 1);
    ZeroView view;
    view.reset(*make_run_plan(c));
    view.consume(events);
    view.refresh();
    const auto& m = view.model();
    QCOMPARE(m.layers(), L);
    QCOMPARE(m.columns(), L + 2);
    QCOMPARE(m.chunks(), 2);
    const std::int64_t step = m.lastStep();
    QVERIFY(step >= 1);
    for (int r = 0; r < 2; ++r) {
      QCOMPARE(m.gathers(step, r), (L + 3) + (L + 2));
      QCOMPARE(m.releases(step, r), m.gathers(step, r));
      QCOMPARE(m.gathered_units(r), 0);
      QCOMPARE(m.reduce_scatters(step, r), L + 2);
    }
    QVERIFY(view.countsText().contains(QString::number(2 * ((L + 3) + (L + 2)))));
    QVERIFY(view.formulaText().contains(QStringLiteral("16Ψ/Nd")));

    // Mid-step: some unit is gathered on some rank after a gather is consumed.
    ZeroView partial;
    partial.reset(*make_run_plan(c));
    std::vector<Event> upTo;
    for (const Event& e : events) {
      upTo.push_back(e);
      if (e.kind == EventKind::shard && e.shard_action == ShardAction::gather) break;
    }
    partial.consume(upTo);
    QCOMPARE(partial.model().gathered_units(upTo.back().rank), 1);
    QVERIFY(partial.model().gathered(upTo.back().rank, upTo.back().unit));
  }

  void holdsFollowsTheStage() {
    ZeroView view;
    view.reset(*make_run_plan(zeroConfig(3, 2)));
    const auto& m = view.model();
    for (int r = 0; r < 2; ++r)
      for (int u = 0; u < m.columns(); ++u)
        for (State s : {State::parameters, State::gradients, State::optimizer}) {
          QVERIFY(m.holdsChunk(r, u, r, s));
          QVERIFY(!m.holdsChunk(r, u, 1 - r, s));
          QVERIFY(!m.holds(r, u, s));
        }

    view.reset(*make_run_plan(zeroConfig(2, 2)));
    QVERIFY(m.holds(0, 1, State::parameters));
    QVERIFY(m.holdsChunk(1, 1, 1, State::gradients));
    QVERIFY(!m.holdsChunk(1, 1, 0, State::gradients));
    QVERIFY(!m.holds(0, 1, State::optimizer));

    view.reset(*make_run_plan(zeroConfig(0, 2)));
    QCOMPARE(m.chunks(), 1);
    for (int r = 0; r < 2; ++r)
      for (int u = 0; u < m.columns(); ++u)
        for (State s : {State::parameters, State::gradients, State::optimizer}) QVERIFY(m.holds(r, u, s));

    view.reset(*make_run_plan(zeroConfig(1, 2)));
    QCOMPARE(m.columns(), 2);  // the Nd flat shards
    for (int r = 0; r < 2; ++r)
      for (int shard = 0; shard < 2; ++shard) {
        QVERIFY(m.holds(r, shard, State::parameters));
        QVERIFY(m.holds(r, shard, State::gradients));
        QCOMPARE(m.holds(r, shard, State::optimizer), shard == r);
      }
  }

  // The formula and the bytes come from the run's sharding plan: an fp16
  // ZeRO-3 run states the mixed-precision 2Ψ + 2Ψ + 12Ψ (each over Nd), and
  // each rank's plan bytes are what its ledger holds, which the view shows.
  void fp16Zero3StatesTheMixedFormulaAndTheLedgersBytes() {
    RunConfig c = zeroConfig(3, 2);
    c.precision = Precision::fp16;
    test::CollectingSink sink;
    Trainer trainer(c, &sink);
    trainer.step();
    ZeroView view;
    view.reset(*make_run_plan(c));
    QVERIFY(view.formulaText().contains(QStringLiteral("2Ψ/Nd + 2Ψ/Nd + 12Ψ/Nd = 16Ψ/Nd")));
    QVERIFY(!view.formulaText().contains(QStringLiteral("4Ψ")));
    QVERIFY(view.bytesText(0).endsWith(QStringLiteral("(plan)")));  // before any memory sample
    view.consume(sink.events());
    for (int r = 0; r < 2; ++r) {
      const MemoryBytes held = trainer.ledger(r).current();
      const std::array<std::pair<ModelState, MemoryCategory>, 3> states{
          {{ModelState::parameters, MemoryCategory::parameters},
           {ModelState::gradients, MemoryCategory::gradients},
           {ModelState::optimizer_states, MemoryCategory::optimizer_states}}};
      for (const auto& [state, category] : states) {
        QVERIFY(held[category] > 0);
        QCOMPARE(view.model().planBytes(r, state), held[category]);
        QCOMPARE(view.model().ledgerBytes(r, state), held[category]);
      }
      // fp16: parameters and gradients 2 bytes, optimizer states 12 (master, m, v) per element.
      QCOMPARE(held[MemoryCategory::optimizer_states] % 12, std::int64_t{0});
      QCOMPARE(view.model().planBytes(r, ModelState::parameters), trainer.plan().rank(r).parameter_elements * 2);
      QVERIFY(view.bytesText(r).contains(shardscope::ui::byteText(held[MemoryCategory::optimizer_states])));
      QVERIFY(!view.bytesText(r).contains(QStringLiteral("(plan)")));
    }
  }

  // dp 2 x pp 2: each rank holds only its pipeline stage's units.
  void pipelineStagesHoldOnlyTheirUnits() {
    RunConfig c = zeroConfig(0, 2);
    c.layout[Axis::pp] = 2;
    ZeroView view;
    view.reset(*make_run_plan(c));
    const auto& m = view.model();
    QCOMPARE(m.ranks(), 4);
    const int L = m.layers();
    QVERIFY(L >= 2);
    const ShardingPlan& plan = *m.plan();
    const int head = L + 1;
    for (int r = 0; r < 4; ++r) {
      const int stage = plan.grid().stage_of(r);
      const StageLayers& layers = plan.stage(stage).layers;
      for (int l = 0; l < L; ++l) {
        const bool mine = l >= layers.first_layer && l < layers.end_layer;
        for (State s : {State::parameters, State::gradients, State::optimizer}) QCOMPARE(m.holds(r, 1 + l, s), mine);
      }
      QCOMPARE(m.holds(r, head, State::parameters), stage == 1);
    }
    // Stage 0 holds the first layer, stage 1 the last; never both.
    QVERIFY(m.holds(0, 1, State::parameters) && !m.holds(0, L, State::parameters));
    QVERIFY(m.holds(3, L, State::parameters) && !m.holds(3, 1, State::parameters));
    QVERIFY(view.formulaText().contains(QStringLiteral("4Ψ + 4Ψ + 8Ψ = 16Ψ")));
  }

  void zero1CountsTheParameterAllGather() {
    const RunConfig c = zeroConfig(1, 2);
    ZeroView view;
    view.reset(*make_run_plan(c));
    view.consume(runOneStep(c));
    const std::int64_t step = view.model().lastStep();
    QVERIFY(step >= 1);
    for (int r = 0; r < 2; ++r) {
      QCOMPARE(view.model().all_gathers(step, r), 1);
      QCOMPARE(view.model().gathers(step, r), 0);
      QCOMPARE(view.model().reduce_scatters(step, r), 0);
    }
  }

  // A replayed step is drawn from its own model: the run's events that come
  // meanwhile go to the run's model set aside (LiveModel), which comes back,
  // with them, when the replay ends.
  void aReplayKeepsTheRunsEventsForAfter() {
    const RunConfig c = zeroConfig(3, 2);
    test::CollectingSink sink;
    Trainer trainer(c, &sink);
    trainer.step();
    const std::vector<Event> first = sink.events();
    trainer.step();
    const std::vector<Event> both = sink.events();
    const std::vector<Event> second(both.begin() + static_cast<std::ptrdiff_t>(first.size()), both.end());
    ZeroView view, reference;
    view.reset(*make_run_plan(c));
    reference.reset(*make_run_plan(c));
    view.consume(first);
    reference.consume(both);
    QCOMPARE(reference.model().lastStep(), std::int64_t{2});
    view.setPlaybackSpeed(100.0);
    view.replayStep(1);
    QVERIFY(view.drawing());
    view.consume(second);  // the run goes on during the replay
    QCOMPARE(view.model().lastStep(), std::int64_t{1});
    QVERIFY(QTest::qWaitFor([&] { return !view.drawing(); }, 10000));
    QCOMPARE(view.model().lastStep(), std::int64_t{2});
    QCOMPARE(view.countsText(), reference.countsText());
    QCOMPARE(view.model().gathers(2, 0), reference.model().gathers(2, 0));
  }

  void resetForgetsTheRun() {
    const RunConfig c = zeroConfig(3, 2);
    ZeroView view;
    view.reset(*make_run_plan(c));
    view.consume(runOneStep(c));
    QVERIFY(view.model().lastStep() >= 1);
    QVERIFY(view.model().gathers(1, 0) > 0);
    view.reset(*make_run_plan(zeroConfig(2, 4)));
    QCOMPARE(view.model().lastStep(), std::int64_t{0});
    QCOMPARE(view.model().gathers(1, 0), 0);
    QCOMPARE(view.model().reduce_scatters(1, 0), 0);
    QCOMPARE(view.model().stage(), 2);
    QCOMPARE(view.model().ranks(), 4);
    QCOMPARE(view.model().activity_ns(0, 1, State::parameters), std::int64_t{-1});
  }

  void screenshots() {
    // ZeRO-3: in backward, a few units after the forward's gathers.
    screenshot(zeroConfig(3, 4), QStringLiteral("zero_view_zero3.png"), 4 * 9, [](const Event& e) {
      return e.kind == EventKind::shard && e.shard_action == ShardAction::gather;
    });
    // ZeRO-1: during the all-gather of the updated parameter shards.
    screenshot(zeroConfig(1, 2), QStringLiteral("zero_view_zero1.png"), 1, [](const Event& e) {
      return e.kind == EventKind::comm_span && e.op == CommOp::all_gather;
    });
    // dp 2 x pp 2: each stage's ranks hold their own units, during a bucket all-reduce.
    RunConfig pipelined = zeroConfig(0, 2);
    pipelined.layout[Axis::pp] = 2;
    screenshot(pipelined, QStringLiteral("zero_view_dp2_pp2.png"), 1, [](const Event& e) {
      return e.kind == EventKind::comm_span && e.op == CommOp::all_reduce && e.bucket >= 0;
    });
  }
};

QTEST_MAIN(TestZeroView)
#include "test_zero_view.moc"
