// SPDX-License-Identifier: GPL-3.0-or-later
// The planner's parallel layouts, offscreen: expert parallelism halving the
// experts' bytes, pipelines refusing ZeRO-2/3 with the run's own rule, and a
// zero-bubble schedule's (ZB-H2's, ZB-V's) activations equal to the estimator's; every bar is
// the engine's estimate of the same request (the rest: test_planner.cpp).
#include <QComboBox>
#include <QSpinBox>
#include <QtTest>

#include "config/run_schema.h"
#include "i18n.h"
#include "planner/planner_dialog.h"
#include "ui/planner_test_support.h"

using namespace shardscope;
using namespace shardscope::planner_test;
using shardscope::ui::PlannerDialog;

class TestPlannerLayouts : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void cleanup() { ui::setLanguage(QStringLiteral("en")); }

  // Expert parallelism (issue 33): ep 2 leaves each GPU half of gpt-tiny-moe's
  // experts, the estimator's figure; ZeRO-2/3 with ep are the engine's refusals.
  void expertParallelHalvesTheExperts() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    const int index = planner.modelBox()->findData(QStringLiteral("preset:gpt-tiny-moe"));
    QVERIFY(index >= 0);
    planner.modelBox()->setCurrentIndex(index);
    Q_EMIT planner.modelBox()->activated(index);
    QVERIFY(planner.waitForPlan());
    planner.dpBox()->setValue(2);
    planner.replan();
    QVERIFY(planner.waitForPlan());
    const ModelShape shape = planner.model().shape;
    const std::int64_t psi = shape.parameters(), experts = shape.layer_expert_parameters * shape.layers;
    QVERIFY(experts > 0);
    QCOMPARE(planner.stages()[0].fullest()->bytes[MemoryCategory::parameters], 4 * psi);
    planner.epBox()->setValue(2);
    planner.replan();
    QVERIFY(planner.waitForPlan());
    QCOMPARE(planner.settings().expert_parallel, 2);
    const RankMemory* r = planner.stages()[0].fullest();
    QVERIFY(r != nullptr);
    QCOMPARE(r->bytes[MemoryCategory::parameters], 4 * (psi - experts + experts / 2));
    QCOMPARE(r->bytes.bytes, engineEstimate(planner, 0).memory.ranks[static_cast<std::size_t>(r->rank)].bytes.bytes);
    QVERIFY(planner.stages()[1].estimate);  // ZeRO-1: the experts' states over dp/ep
    for (int stage : {2, 3}) {
      const auto& plan = planner.stages()[static_cast<std::size_t>(stage)];
      QVERIFY(!plan.estimate);
      QVERIFY2(plan.refused.contains(QStringLiteral("ZeRO-1")), qPrintable(plan.refused));
    }
    planner.dpBox()->setValue(8);
    planner.epBox()->setValue(8);  // 4 experts do not split over 8 ranks: the engine's words
    planner.replan();
    QVERIFY(planner.waitForPlan());
    QString shown = planner.errorText();
    for (const auto& plan : planner.stages()) shown += plan.refused;
    QVERIFY2(shown.contains(QStringLiteral("do not split over 8")), qPrintable(shown));
  }

  // Pipelines refuse ZeRO-2/3 (the run's own layout rule): those bars say why, 0 and 1 are planned.
  void pipelineStagesRefuseZero2And3() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    planner.nodesBox()->setValue(4);  // 32 GPUs
    planner.ppBox()->setValue(4);
    planner.zeroBox()->setValue(3);
    planner.replan();
    QVERIFY(planner.waitForPlan());
    QCOMPARE(planner.dpBox()->value(), 8);
    QVERIFY(planner.stages()[0].estimate && planner.stages()[1].estimate);
    for (int stage : {2, 3}) {
      const auto& plan = planner.stages()[static_cast<std::size_t>(stage)];
      QVERIFY(!plan.estimate);
      QVERIFY2(plan.refused.contains(QStringLiteral("ZeRO stage")) &&
                   plan.refused.contains(QStringLiteral("Pipeline stages")),
               qPrintable(plan.refused));
      QVERIFY(!planner.bars()->bars()[static_cast<std::size_t>(stage)].valid);
    }
    QVERIFY2(planner.verdictText().contains(QStringLiteral("refused")), qPrintable(planner.verdictText()));
    QCOMPARE(planner.stages()[1].fullest()->bytes.bytes,
             engineEstimate(planner, 1)
                 .memory.ranks[static_cast<std::size_t>(engineEstimate(planner, 1).memory.fullest_rank())]
                 .bytes.bytes);
    planner.resize(1280, 720);
    planner.show();
    QTest::qWait(20);
    QVERIFY(planner.grab().save(shotPath(QStringLiteral("planner_pp4_refuses_zero23.png"))));
  }

  // Every schedule the engine knows is offered; picking ZB-H2 (GPT-3 175B, pp 8 × m 16)
  // changes the activations shown to the estimator's for it (the micro-batches it keeps
  // and the gradients kept from B to W), and a combination it refuses shows the engine's reason.
  void zeroBubbleScheduleShowsTheEstimatorsActivations() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    QCOMPARE(planner.scheduleBox()->count(),
             static_cast<int>(field_on(*find_schema_field("schedule"), surface::planner).choices.size()));
    planner.ppBox()->setValue(8);
    planner.microBatchesBox()->setValue(16);
    planner.zeroBox()->setValue(1);
    planner.replan();
    QVERIFY(planner.waitForPlan());
    QVERIFY(planner.stages()[1].fullest() != nullptr);
    const std::int64_t one_f_one_b = planner.stages()[1].fullest()->bytes[MemoryCategory::activations];
    planner.scheduleBox()->setCurrentIndex(planner.scheduleBox()->findText(QStringLiteral("zb-h2")));
    planner.replan();
    QVERIFY(planner.waitForPlan());
    QCOMPARE(planner.request().settings.schedule, PipelineScheduleKind::zb_h2);
    const Estimate e = engineEstimate(planner, 1);
    const RankMemory* shown = planner.stages()[1].fullest();
    QVERIFY(shown != nullptr);
    QCOMPARE(shown->bytes.bytes, e.memory.ranks[static_cast<std::size_t>(e.memory.fullest_rank())].bytes.bytes);
    QVERIFY(shown->bytes[MemoryCategory::activations] != one_f_one_b);
    QCOMPARE(barBytes(planner)[1][kActivations], shown->bytes[MemoryCategory::activations]);
    planner.tpBox()->setValue(2);
    planner.replan();
    QVERIFY(planner.waitForPlan());
    // With tp the estimator counts each rank's slice of what B keeps for W (ledger = estimator in
    // test_tp_pipeline_schedules): the planner shows it, no refusal.
    QVERIFY2(planner.errorText().isEmpty(), qPrintable(planner.errorText()));
    const Estimate tp = engineEstimate(planner, 1);
    QVERIFY(planner.stages()[1].fullest() != nullptr);
    QCOMPARE(planner.stages()[1].fullest()->bytes.bytes,
             tp.memory.ranks[static_cast<std::size_t>(tp.memory.fullest_rank())].bytes.bytes);
  }

  // ZB-V on a layout it runs (GPT-3 175B's 96 layers in 2 × 8 chunks, m 16 ≥ 2p − 1):
  // the bars are the estimator's, stage 0 holding the embeddings and the head; with
  // m 8 the planner shows the run's refusal of the V's warm-up.
  void zbVScheduleShowsTheEstimatorsActivations() {
    PlannerDialog planner;
    QVERIFY(planner.waitForPlan());
    QVERIFY(planner.scheduleBox()->findText(QStringLiteral("zb-v")) >= 0);
    planner.ppBox()->setValue(8);
    planner.microBatchesBox()->setValue(16);
    planner.zeroBox()->setValue(1);
    planner.scheduleBox()->setCurrentIndex(planner.scheduleBox()->findText(QStringLiteral("zb-h2")));
    planner.replan();
    QVERIFY(planner.waitForPlan());
    QVERIFY(planner.stages()[1].fullest() != nullptr);
    const std::int64_t zb_h2 = planner.stages()[1].fullest()->bytes[MemoryCategory::activations];
    planner.scheduleBox()->setCurrentIndex(planner.scheduleBox()->findText(QStringLiteral("zb-v")));
    planner.replan();
    QVERIFY(planner.waitForPlan());
    QCOMPARE(planner.request().settings.schedule, PipelineScheduleKind::zb_v);
    QVERIFY2(planner.errorText().isEmpty(), qPrintable(planner.errorText()));
    const Estimate e = engineEstimate(planner, 1);
    const RankMemory* shown = planner.stages()[1].fullest();
    QVERIFY(shown != nullptr);
    QCOMPARE(shown->bytes.bytes, e.memory.ranks[static_cast<std::size_t>(e.memory.fullest_rank())].bytes.bytes);
    QVERIFY(shown->bytes[MemoryCategory::activations] != zb_h2);
    QCOMPARE(barBytes(planner)[1][kActivations], shown->bytes[MemoryCategory::activations]);
    const RankMemory& first = e.memory.ranks[0];
    QVERIFY(first.layers.embedding && first.layers.head && first.layers.chunks == 2);
    QVERIFY2(first.formula(MemoryCategory::activations).find("(zb-v)") != std::string::npos,
             first.formula(MemoryCategory::activations).c_str());
    planner.microBatchesBox()->setValue(8);
    planner.replan();
    QVERIFY(planner.waitForPlan());
    QVERIFY2(planner.errorText().contains(QStringLiteral("zb-v")) && planner.errorText().contains(QStringLiteral("15")),
             qPrintable(planner.errorText()));
  }
};

QTEST_MAIN(TestPlannerLayouts)
#include "test_planner_layouts.moc"
