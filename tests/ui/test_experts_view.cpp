// SPDX-License-Identifier: GPL-3.0-or-later
// The Experts view, offscreen, fed the events of real gpt-tiny-moe runs: the
// engine emits one expert_load event per MoE layer and expert per step, whose
// figures equal the step's metrics (choices per expert per layer, routed,
// dropped, aux loss); the bars are those figures, each under its capacity
// (per forward times the step's forwards); the all-to-all matrix's bytes are
// the expert_parallel sends' sums (row sender, column receiver), the same
// after a recording's round trip; a dense model gets the empty state. "One
// step, slowly" fills the step's matrix again from empty, its routing at the end.
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>
#include <numeric>

#include "engine/collecting_sink.h"
#include "events/event.h"
#include "events/recording.h"
#include "model/mixture_of_experts.h"
#include "train/trainer.h"
#include "views/experts_view.h"

using namespace shardscope;
using shardscope::ui::ExpertLayerLoad;
using shardscope::ui::ExpertsView;

namespace {

RunConfig moeConfig(int dp, int ep) {
  RunConfig c;
  c.model = "gpt-tiny-moe";
  c.steps = 3;
  c.batch = 8;
  c.seq = 32;
  c.threads = 2;
  c.layout[Axis::dp] = dp;
  c.expert_parallel = ep;
  return c;
}

struct Run {
  std::vector<Event> events;
  std::vector<StepMetrics> metrics;
  ModelConfig model;
};

Run run(const RunConfig& c) {
  test::CollectingSink sink;
  Trainer trainer(c, &sink);
  Run r;
  for (int s = 0; s < c.steps; ++s) r.metrics.push_back(trainer.step());
  r.events = sink.events();
  r.model = trainer.model().config();
  return r;
}

}  // namespace

class TestExpertsView : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void barsEqualTheStepMetrics() {
    const RunConfig c = moeConfig(2, 2);
    const Run r = run(c);
    const int E = r.model.experts, layers = r.model.moe_layer_count();
    QVERIFY(E > 0 && layers > 0);
    for (std::int64_t step = 1; step <= c.steps; ++step)
      QCOMPARE(std::count_if(r.events.begin(), r.events.end(),
                             [&](const Event& e) { return e.kind == EventKind::expert_load && e.step == step; }),
               std::int64_t{E} * layers);
    ExpertsView view;
    view.reset(*make_run_plan(c));
    view.consume(r.events);
    const auto& m = view.model();
    QVERIFY(view.placeholderText().isEmpty());
    QCOMPARE(m.latestLoadStep(), std::int64_t{c.steps});
    const MoeStats& stats = *r.metrics.back().moe;
    const std::int64_t forwards = 2;  // two ranks, one micro-batch each
    QCOMPARE(m.capacityPerForward(), moe_capacity(r.model, c.micro_batch_size() * c.seq));
    std::int64_t routed = 0, dropped = 0;
    for (int l = 0, moe = 0; l < r.model.layers; ++l) {
      if (!r.model.moe_layer(l)) continue;
      const ExpertLayerLoad* load = m.load(c.steps, l);
      QVERIFY(load != nullptr);
      QCOMPARE(load->capacity, m.capacityPerForward() * forwards);
      std::int64_t kept = 0;
      for (int e = 0; e < E; ++e) {
        QCOMPARE(load->tokens[e], stats.tokens_per_expert[static_cast<std::size_t>(moe * E + e)]);
        QVERIFY(load->tokens[e] <= load->capacity);
        kept += load->tokens[e];
      }
      QCOMPARE(load->routed - load->dropped, kept);
      routed += load->routed;
      dropped += load->dropped;
      ++moe;
    }
    QCOMPARE(routed, stats.routed);
    QCOMPARE(dropped, stats.dropped);
    QCOMPARE(m.auxLoss().size(), std::size_t(c.steps));
    for (std::int64_t step = 1; step <= c.steps; ++step)
      QCOMPARE(m.auxLoss().at(step), static_cast<float>(r.metrics[step - 1].moe->aux_loss()));
    view.resize(1000, 620);
    QVERIFY(view.grab().save(QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("experts_ep2.png"))));
  }

  void matrixEqualsTheEventsSums() {
    const RunConfig c = moeConfig(2, 2);
    const Run r = run(c);
    ExpertsView view;
    view.reset(*make_run_plan(c));
    view.consume(r.events);
    const auto& m = view.model();
    const int layer = 1;
    QCOMPARE(m.shownMatrixStep(layer), std::int64_t{c.steps});
    std::vector<std::int64_t> expected(4, 0);
    std::int64_t sends = 0;
    for (const Event& e : r.events)
      if (e.kind == EventKind::comm_span && e.purpose == CommPurpose::expert_parallel && e.op == CommOp::send) {
        ++sends;
        if (e.step == c.steps && e.unit == 1 + layer) expected[static_cast<std::size_t>(e.src * 2 + e.dst)] += e.bytes;
      }
    QVERIFY(sends > 0);
    QCOMPARE(m.transfers(), sends);
    const std::vector<std::int64_t> matrix = m.matrix(c.steps, layer);
    QCOMPARE(matrix, expected);
    QVERIFY(matrix[1] > 0 && matrix[2] > 0);  // rank 0 → 1 and 1 → 0
    QCOMPARE(matrix[0], std::int64_t{0});     // a rank's own tokens stay
    // Recorded and read back, the events draw the same.
    QTemporaryDir dir;
    const std::string file = dir.filePath(QStringLiteral("moe.ssrun")).toStdString();
    {
      RecordingWriter writer(file, "{}");
      for (const Event& e : r.events) writer.emit(e);
    }
    RecordingReader reader;
    reader.open(file);
    ExpertsView replay;
    replay.reset(*make_run_plan(c));
    replay.consume(reader.read_all());
    QCOMPARE(replay.model().matrix(c.steps, layer), matrix);
    for (int e = 0; e < r.model.experts; ++e)
      QCOMPARE(replay.model().load(c.steps, layer)->tokens[e], m.load(c.steps, layer)->tokens[e]);
    QCOMPARE(replay.model().auxLoss(), m.auxLoss());
  }

  // The replay starts with an empty matrix and the step's routing not yet in (the previous
  // step's bars), fills the matrix as the sends come, the routing at the step's end, and puts
  // the run's model back after.
  void replaysAStepSlowly() {
    const RunConfig c = moeConfig(2, 2);
    const Run r = run(c);
    ExpertsView view;
    view.reset(*make_run_plan(c));
    view.consume(r.events);
    const int layer = 1;
    const std::vector<std::int64_t> live = view.model().matrix(c.steps, layer);
    const auto total = [](const std::vector<std::int64_t>& m) { return std::accumulate(m.begin(), m.end(), 0LL); };
    QVERIFY(total(live) > 0);
    QElapsedTimer took;
    took.start();
    view.replayStep(c.steps);
    QVERIFY(view.drawing());
    QCOMPARE(view.model().latestLoadStep(), std::int64_t{c.steps - 1});
    QCOMPARE(total(view.model().matrix(c.steps, layer)), 0LL);
    QCOMPARE(view.model().auxLoss().count(c.steps), std::size_t{0});
    bool partway = false;
    while (view.drawing() && took.elapsed() < 10000) {
      QTest::qWait(15);
      const long long shown = total(view.model().matrix(c.steps, layer));
      partway = partway || (shown > 0 && shown < total(live));
      if (view.drawing() && shown < total(live)) QCOMPARE(view.model().latestLoadStep(), std::int64_t{c.steps - 1});
    }
    QVERIFY(!view.drawing());
    QVERIFY2(took.elapsed() >= 1900, qPrintable(QString::number(took.elapsed())));
    QVERIFY(partway);
    QCOMPARE(view.model().matrix(c.steps, layer), live);
    QCOMPARE(view.model().latestLoadStep(), std::int64_t{c.steps});
    QCOMPARE(view.model().auxLoss().size(), std::size_t(c.steps));
  }

  void denseModelSaysHowToGetIt() {
    RunConfig c;
    c.model = "gpt-tiny";
    c.steps = 1;
    c.batch = 4;
    c.seq = 32;
    ExpertsView view;
    view.reset(*make_run_plan(c));
    test::CollectingSink sink;
    Trainer trainer(c, &sink);
    trainer.step();
    const std::vector<Event> events = sink.events();
    QCOMPARE(
        std::count_if(events.begin(), events.end(), [](const Event& e) { return e.kind == EventKind::expert_load; }),
        std::ptrdiff_t{0});
    view.consume(events);
    QVERIFY(view.placeholderText().contains(QStringLiteral("gpt-tiny-moe")));
    view.replayStep(1);  // nothing of a dense step to draw again: the run is not held
    QVERIFY(!view.drawing());
  }
};

QTEST_MAIN(TestExpertsView)
#include "test_experts_view.moc"
