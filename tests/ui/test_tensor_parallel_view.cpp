// SPDX-License-Identifier: GPL-3.0-or-later
// The Tensor parallel view, offscreen, fed the events of real tp 2 runs: it
// counts every layer transfer the run emitted, 4 collectives per layer per
// micro-batch on each tp rank at their places (backward ends at the QKV's f),
// and the bytes each rank sent per layer per micro-batch equal the formula in
// both footer lines; sequence parallelism's all-gathers and reduce-scatters
// find their places from their op; "One step, slowly" draws the last step's
// collectives again; with tp 1 it says how to turn it on. The
// panel's tp row, a window run, the memory bars' and the ZeRO grid's tp
// labels. Screenshots are saved beside the test.
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSpinBox>
#include <QtTest>

#include "clock/schedule_summary.h"
#include "config_panel.h"
#include "engine/collecting_sink.h"
#include "events/event.h"
#include "main_window.h"
#include "run_controller.h"
#include "train/trainer.h"
#include "views/memory_bars.h"
#include "views/qcustomplot_include.h"
#include "views/tensor_parallel_view.h"
#include "views/zero_view.h"

using namespace shardscope;
using shardscope::ui::ConfigPanel;
using shardscope::ui::MainWindow;
using shardscope::ui::TensorParallelPass;
using shardscope::ui::TensorParallelPlace;
using shardscope::ui::TensorParallelView;
using shardscope::ui::ZeroView;

namespace {

RunConfig tensorConfig(int tp, bool checkpoint = false) {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 2;
  c.batch = 8;
  c.seq = 32;
  c.threads = 2;
  c.layout[Axis::tp] = tp;
  c.checkpoint = checkpoint;
  return c;
}

// The steps, then an evaluation (as the window's runs end): its forwards'
// all-reduces carry no micro-batch and count toward no step's layer traffic.
std::vector<Event> run(const RunConfig& c) {
  test::CollectingSink sink;
  Trainer trainer(c, &sink);
  for (int s = 0; s < c.steps; ++s) trainer.step();
  trainer.evaluate();
  return sink.events();
}

std::int64_t layerTransfers(const std::vector<Event>& events) {
  return std::count_if(events.begin(), events.end(), is_tensor_parallel_layer_transfer);
}

}  // namespace

class TestTensorParallelView : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void countsEveryTransferAndCollective() {
    const RunConfig c = tensorConfig(2);
    const std::vector<Event> events = run(c);
    TensorParallelView view;
    view.reset(*make_run_plan(c));
    view.consume(events);
    const auto& m = view.model();
    QVERIFY(m.layers() >= 2);
    QVERIFY(layerTransfers(events) > 0);
    QCOMPARE(m.transfers(), layerTransfers(events));
    std::int64_t by_layer = 0;
    for (int l = 0; l < m.layers(); ++l) {
      by_layer += m.transfers(l);
      // 2 forward + 2 backward all-reduces per micro-batch on each of the 2 ranks.
      QCOMPARE(m.collectives(l), std::int64_t{c.steps} * 4 * 2);
      const auto* last = m.latest(l);
      QVERIFY(last != nullptr);
      QCOMPARE(last->place, TensorParallelPlace::attention_in);
      QCOMPARE(last->pass, TensorParallelPass::backward);
      QCOMPARE(last->op, CommOp::all_reduce);
      QCOMPARE(m.latest(l, TensorParallelPlace::attention_out).pass, TensorParallelPass::forward);
      QCOMPARE(m.latest(l, TensorParallelPlace::mlp_in).pass, TensorParallelPass::backward);
    }
    QCOMPARE(by_layer, m.transfers());
  }

  void bytesEqualTheFormula() {
    for (bool checkpoint : {false, true}) {
      const RunConfig c = tensorConfig(2, checkpoint);
      TensorParallelView view;
      view.reset(*make_run_plan(c));
      view.consume(run(c));
      const auto& m = view.model();
      QVERIFY(m.formula().bytes > 0);
      for (int l = 0; l < m.layers(); ++l) {
        const auto [step, micro_batch] = m.completeMicroBatch(l);
        QCOMPARE(step, std::int64_t{c.steps});
        for (int rank : m.group(l)) QCOMPARE(m.bytesSent(rank, l, step, micro_batch), m.formula().bytes);
      }
      const std::vector<Event> events = run(c);
      for (const auto& [key, sent] : measure_tensor_parallel_traffic(events, c.steps))
        QCOMPARE(sent, m.formula().bytes);
      const QString bytes = QLocale().toString(m.formula().bytes);
      view.setLayer(1);
      QVERIFY2(view.measuredText().contains(QStringLiteral("rank 1: %1 B").arg(bytes)),
               qPrintable(view.measuredText()));
      QVERIFY2(view.formulaText().contains(QStringLiteral("= %1 B").arg(bytes)), qPrintable(view.formulaText()));
      QVERIFY(view.formulaText().contains(checkpoint ? QStringLiteral("6 \u00b7") : QStringLiteral("4 \u00b7")));
    }
  }

  // "One step, slowly" starts from the model as it was before the step (no
  // collective lit, the step's transfers and collectives uncounted, the footer
  // on the previous step's micro-batch), lights the step's collectives again as
  // they come, lasts at least 2 s, and puts the run's model back at its end.
  void replaysAStepSlowly() {
    const RunConfig c = tensorConfig(2);
    const std::vector<Event> events = run(c);
    const std::int64_t step_transfers = std::count_if(events.begin(), events.end(), [&](const Event& e) {
      return is_tensor_parallel_layer_transfer(e) && e.step == c.steps;
    });
    TensorParallelView view;
    view.resize(900, 560);
    view.reset(*make_run_plan(c));
    view.consume(events);
    const auto& m = view.model();
    const std::int64_t live_transfers = m.transfers(), live_collectives = m.collectives(0);
    const auto live_complete = m.completeMicroBatch(0);
    QCOMPARE(live_complete.first, std::int64_t{c.steps});
    QCOMPARE(live_collectives, std::int64_t{c.steps} * 4 * 2);
    view.replayStep(7);  // not run: nothing to draw
    QVERIFY(!view.drawing());
    QElapsedTimer took;
    took.start();
    view.replayStep(c.steps);
    QVERIFY(view.drawing());
    QCOMPARE(view.replayedStep(), std::int64_t{c.steps});
    QVERIFY(m.latest(0) == nullptr);  // nothing lit yet
    QCOMPARE(m.transfers(), live_transfers - step_transfers);
    QCOMPARE(m.collectives(0), live_collectives - 4 * 2);
    QCOMPARE(m.completeMicroBatch(0).first, std::int64_t{c.steps - 1});
    bool partway = false, shot = false;
    while (view.drawing() && took.elapsed() < 10000) {
      QTest::qWait(15);
      const std::int64_t replayed = m.transfers() - (live_transfers - step_transfers);
      partway = partway || (replayed > 0 && replayed < step_transfers);
      if (view.drawing() && !shot && replayed >= step_transfers / 2 && replayed < step_transfers) {
        shot = true;  // a picture about half-way through the step
        const QString path = QDir(QCoreApplication::applicationDirPath()).filePath("tensor_parallel_replay.png");
        QVERIFY(view.grab().save(path));
        qInfo("mid-replay screenshot (%lld of %lld transfers): %s", static_cast<long long>(replayed),
              static_cast<long long>(step_transfers), qPrintable(path));
      }
    }
    QVERIFY(!view.drawing());
    QVERIFY2(took.elapsed() >= 1900, qPrintable(QString::number(took.elapsed())));  // at least 2 s at 1x
    QVERIFY(partway);
    QCOMPARE(view.replayedStep(), std::int64_t{0});
    QCOMPARE(m.transfers(), live_transfers);  // the run's model back
    QCOMPARE(m.collectives(0), live_collectives);
    QCOMPARE(m.completeMicroBatch(0), live_complete);
    QVERIFY(m.latest(0) != nullptr);
    QCOMPARE(m.latest(0)->place, TensorParallelPlace::attention_in);
    QCOMPARE(m.latest(0)->pass, TensorParallelPass::backward);
  }

  // Sequence parallelism's collectives, as the engine will emit them (an
  // all-gather before each column-parallel layer, a reduce-scatter after each
  // row-parallel one; the reverse in backward): placed from their op and
  // order, with nothing assumed about all-reduces.
  void sequenceParallelOpsFindTheirPlaces() {
    using P = TensorParallelPlace;
    const RunConfig c = tensorConfig(2);
    TensorParallelView view;
    view.reset(*make_run_plan(c));
    std::vector<Event> events;
    const CommOp order[] = {CommOp::all_gather, CommOp::reduce_scatter, CommOp::all_gather, CommOp::reduce_scatter,
                            CommOp::all_gather, CommOp::reduce_scatter, CommOp::all_gather, CommOp::reduce_scatter};
    const P forward[] = {P::attention_in, P::attention_out, P::mlp_in, P::mlp_out};
    for (CommOp op : order)
      for (int rank : {0, 1}) {
        Event e;
        e.kind = EventKind::comm_span;
        e.purpose = CommPurpose::tensor_parallel;
        e.op = op;
        e.phase = op == CommOp::all_gather ? RingPhase::all_gather : RingPhase::reduce_scatter;
        e.rank = e.src = rank;
        e.dst = 1 - rank;
        e.unit = 1;  // layer 0
        e.step = 1;
        e.micro_batch = 0;
        e.ring_step = 0;
        e.bytes = 100;
        events.push_back(e);
      }
    for (std::size_t k = 0; k < events.size(); k += 2) {
      view.consume({events[k], events[k + 1]});
      const auto* last = view.model().latest(0);
      QVERIFY(last != nullptr);
      const std::size_t index = k / 2;
      QCOMPARE(last->op, order[index]);
      QCOMPARE(last->pass, index < 4 ? TensorParallelPass::forward : TensorParallelPass::backward);
      QCOMPARE(last->place, index < 4 ? forward[index] : forward[7 - index]);
    }
    QCOMPARE(view.model().completeMicroBatch(0), (std::pair<std::int64_t, int>{1, 0}));
    QCOMPARE(view.model().bytesSent(1, 0, 1, 0), std::int64_t{800});
  }

  void tpOneSaysHowToTurnItOn() {
    const RunConfig c = tensorConfig(1);
    TensorParallelView view;
    QVERIFY(!view.placeholderText().isEmpty());
    view.reset(*make_run_plan(c));
    QVERIFY(view.placeholderText().contains(QStringLiteral("--tp")));
    view.reset(*make_run_plan(tensorConfig(2)));
    QVERIFY(view.placeholderText().isEmpty());
  }

  // The panel's row: its label, its range, the summary's dp × tp × pp; a run
  // from the window trains with it and fills the view.
  void thePanelOffersTpAndTheWindowTrainsWithIt() {
    ConfigPanel panel(nullptr, false);
    QCOMPARE(panel.labelText(QStringLiteral("tp")), QStringLiteral("Tensor-parallel ranks"));
    auto* tp = panel.findChild<QSpinBox*>(QStringLiteral("tp"));
    QVERIFY(tp != nullptr);
    QCOMPARE(tp->minimum(), 1);
    QCOMPARE(tp->maximum(), 64);
    tp->setValue(2);
    QCOMPARE(panel.config().layout.tp(), 2);
    const QString summary = panel.findChild<QLabel*>(QStringLiteral("summary"))->text();
    QVERIFY2(summary.startsWith(QStringLiteral("8 rank")) &&
                 summary.contains(QStringLiteral("dp 2 \u00d7 tp 2 \u00d7 pp 2")),
             qPrintable(summary));

    MainWindow window;
    window.resize(1280, 720);
    RunConfig c = tensorConfig(2);
    c.layout[Axis::dp] = 2;  // 2 tp groups
    window.configPanel()->setConfig(c);
    QVERIFY2(window.configPanel()->problem().isEmpty(), qPrintable(window.configPanel()->problem()));
    QTest::mouseClick(window.runButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!window.controller()->busy(), 120000);
    QVERIFY2(window.statusText().startsWith(QStringLiteral("Finished")), qPrintable(window.statusText()));
    auto* view = window.findChild<TensorParallelView*>();
    QVERIFY(view != nullptr);
    QCOMPARE(view->model().tp(), 2);
    QCOMPARE(view->model().collectives(0), std::int64_t{2} * 4 * 2);
    // The memory bars: one per rank, the tp group's ranks labelled with their tp rank.
    auto* bars = window.memoryBars();
    QCOMPARE(bars->tensorParallel(), 2);
    QCOMPARE(bars->rankCount(), 4);
    for (int r = 0; r < 4; ++r) QVERIFY(bars->bytes(r).total() > 0);
    auto ticker = bars->plot()->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticker);
    QCOMPARE(ticker->ticks().value(3), QStringLiteral("rank 3\ntp 1"));
    QVERIFY(bars->grab().save(QDir(QCoreApplication::applicationDirPath()).filePath("memory_bars_tp.png")));
  }

  // The ZeRO grid names each row's tp rank and says what a row holds.
  void zeroGridNamesTheTpSlices() {
    RunConfig c = tensorConfig(2);
    c.layout[Axis::dp] = 2;
    c.zero_stage = 1;
    ZeroView zero;
    zero.reset(*make_run_plan(c));
    QCOMPARE(zero.model().ranks(), 4);
    QCOMPARE(zero.rankLabel(3), QStringLiteral("rank 3 \u00b7 tp 1"));
    QVERIFY2(zero.tensorParallelText().contains(QStringLiteral("1/2")), qPrintable(zero.tensorParallelText()));
    QVERIFY(zero.tensorParallelText().contains(QStringLiteral("ZeRO shards")));
    // Both tp ranks hold a slice of the same size.
    QCOMPARE(zero.model().planBytes(0, ModelState::parameters), zero.model().planBytes(1, ModelState::parameters));
    zero.resize(900, 420);
    zero.consume(run(c));
    zero.refresh();
    for (int r = 0; r < 4; ++r) QCOMPARE(zero.model().all_gathers(c.steps, r), 1);  // ZeRO-1's, not the loss's
    QVERIFY(zero.grab().save(QDir(QCoreApplication::applicationDirPath()).filePath("zero_view_tp.png")));
    zero.reset(*make_run_plan(tensorConfig(1)));
    QVERIFY(zero.tensorParallelText().isEmpty());
  }

  void screenshotMidStep() {
    const RunConfig c = tensorConfig(2);
    const std::vector<Event> events = run(c);
    // Up to the middle of the last step's layer collectives: a forward g lit.
    std::size_t cut = events.size(), seen = 0;
    for (std::size_t i = 0; i < events.size(); ++i)
      if (events[i].step == c.steps && is_tensor_parallel_layer_transfer(events[i]) && ++seen == 6) cut = i + 1;
    TensorParallelView view;
    view.resize(900, 560);
    view.reset(*make_run_plan(c));
    view.consume(std::vector<Event>(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(cut)));
    view.refresh();
    const QString path = QDir(QCoreApplication::applicationDirPath()).filePath("tensor_parallel_view.png");
    QVERIFY(view.grab().save(path));
    qInfo("screenshot: %s", qPrintable(path));
  }
};

QTEST_MAIN(TestTensorParallelView)
#include "test_tensor_parallel_view.moc"
