// SPDX-License-Identifier: GPL-3.0-or-later
// Predicted equals measured for the split-backward schedules (ZB-H1, ZB-H2, ZB-V):
// each stage's activations at the peak of its simulated list equal the ledger of a
// real step; the closed forms the estimator uses past 4096 actions equal the walk;
// the simulated bubbles order as the paper's; ZB-V's refusals are the run's.
#include <QTest>

#include "engine/ledger_run.h"
#include "estimate/memory_model.h"
#include "estimate/split_backward_schedules.h"
#include "estimate/time_model.h"
#include "train/trainer.h"

using namespace shardscope;
using testing::check_ledger;
using testing::config_file_shape;

class TestEstimateLedgerZeroBubble : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void zero_bubble_predicted_equals_measured_data();
  void zero_bubble_predicted_equals_measured();
  void zero_bubble_bubbles_order_as_the_paper();
  void zb_v_predicted_equals_measured_data();
  void zb_v_predicted_equals_measured();
  void zb_v_refusals_are_the_runs();
  void zb_v_closed_form_is_the_walk();
  void zb_h_closed_forms_are_the_walk();
};

// ZB-H1 and ZB-H2 (Qi et al. 2024): the activation slots the schedule fills,
// plus the output gradients each B keeps until its W, at their peak along the
// stage's list, equal the ledger of a real step. Under --checkpoint B keeps
// each linear's input beside its output gradient (16h per token and layer).
void TestEstimateLedgerZeroBubble::zero_bubble_predicted_equals_measured_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("pp");
  QTest::addColumn<QString>("schedule");
  QTest::addColumn<int>("checkpoint");
  QTest::addColumn<QString>("precision");
  QTest::newRow("gpt pp2 zb-h1 m8") << "gpt-tiny" << 1 << 2 << "zb-h1" << 0 << "fp32";
  QTest::newRow("gpt pp2 zb-h2 m8") << "gpt-tiny" << 1 << 2 << "zb-h2" << 0 << "fp32";
  QTest::newRow("gpt pp4 zb-h1 m8") << "gpt-tiny" << 1 << 4 << "zb-h1" << 0 << "fp32";
  QTest::newRow("gpt pp4 zb-h2 m8") << "gpt-tiny" << 1 << 4 << "zb-h2" << 0 << "fp32";
  QTest::newRow("gpt dp2 pp2 zero1 zb-h1 m8") << "gpt-tiny" << 2 << 2 << "zb-h1" << 0 << "fp32";
  QTest::newRow("gpt dp2 pp2 zero1 zb-h2 m8") << "gpt-tiny" << 2 << 2 << "zb-h2" << 0 << "fp32";
  QTest::newRow("bert pp2 zb-h2 m8") << "bert-tiny" << 1 << 2 << "zb-h2" << 0 << "fp32";
  QTest::newRow("gpt pp2 zb-h1 m8 ckpt") << "gpt-tiny" << 1 << 2 << "zb-h1" << 1 << "fp32";
  QTest::newRow("gpt pp4 zb-h2 m8 ckpt") << "gpt-tiny" << 1 << 4 << "zb-h2" << 1 << "fp32";
  QTest::newRow("gpt dp2 pp2 zero1 zb-h2 m8 ckpt") << "gpt-tiny" << 2 << 2 << "zb-h2" << 1 << "fp32";
  QTest::newRow("bert pp2 zb-h1 m8 ckpt") << "bert-tiny" << 1 << 2 << "zb-h1" << 1 << "fp32";
  // In 16 bits each layer's fp32 gradient stays bound from its B to its W (workspace).
  QTest::newRow("gpt pp2 zb-h1 m8 fp16") << "gpt-tiny" << 1 << 2 << "zb-h1" << 0 << "fp16";
  QTest::newRow("gpt pp4 zb-h2 m8 ckpt bf16") << "gpt-tiny" << 1 << 4 << "zb-h2" << 1 << "bf16";
  QTest::newRow("gpt dp2 pp2 zero1 zb-h1 m8 ckpt fp16") << "gpt-tiny" << 2 << 2 << "zb-h1" << 1 << "fp16";
}

void TestEstimateLedgerZeroBubble::zero_bubble_predicted_equals_measured() {
  QFETCH(QString, model);
  QFETCH(int, dp);
  QFETCH(int, pp);
  QFETCH(QString, schedule);
  QFETCH(int, checkpoint);
  QFETCH(QString, precision);
  EstimateSettings s;
  s.precision = parse_precision(qPrintable(precision));
  s.layout[Axis::dp] = dp;
  s.layout[Axis::pp] = pp;
  s.zero_stage = dp > 1 ? 1 : 0;
  s.micro_batches = 8;
  s.schedule = parse_pipeline_schedule_kind(qPrintable(schedule));
  s.recompute = checkpoint ? Recompute::full : Recompute::none;
  s.micro_batch_size = 2;
  s.seq = 32;
  check_ledger(model, s);
  // The kept gradients are what ZB-H1 holds beyond 1F1B's activations.
  EstimateSettings one_f_one_b = s;
  one_f_one_b.schedule = PipelineScheduleKind::one_f_one_b;
  const ModelShape shape = model_shape_from_config(find_model_preset(qPrintable(model)), qPrintable(model));
  const MemoryEstimate zb = estimate_memory(shape, s), base = estimate_memory(shape, one_f_one_b);
  QVERIFY(zb.ranks[0].bytes[MemoryCategory::activations] > base.ranks[0].bytes[MemoryCategory::activations]);
}

// ZB-V (plan/zb_v_schedule.h) on the 8-layer GPT (2p chunks at pp 2 and pp 4) and
// bert-mini: stage r holds chunks r and 2p - 1 - r (stage 0 the embeddings and the
// head, the tied embedding once), and every stage's activations at the peak of its
// simulated V list (half-stage slots, plus one chunk's kept gradients per B not yet
// W'd) equal the ledger of a real step, rank by rank and category by category;
// in 16 bits the workspace with the layers' fp32 gradients bound from B to W.
void TestEstimateLedgerZeroBubble::zb_v_predicted_equals_measured_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("checkpoint");
  QTest::addColumn<QString>("precision");
  const QString gpt8 = QStringLiteral(SHARDSCOPE_FIXTURES "/gpt_tiny_8_layers");
  QTest::newRow("gpt8 pp2 zb-v m8") << gpt8 << 1 << 2 << 0 << "fp32";
  QTest::newRow("gpt8 pp4 zb-v m8") << gpt8 << 1 << 4 << 0 << "fp32";
  QTest::newRow("gpt8 dp2 pp2 zero1 zb-v m8") << gpt8 << 2 << 2 << 0 << "fp32";
  QTest::newRow("gpt8 pp2 zb-v m8 ckpt") << gpt8 << 1 << 2 << 1 << "fp32";
  QTest::newRow("gpt8 pp4 zb-v m8 ckpt") << gpt8 << 1 << 4 << 1 << "fp32";
  QTest::newRow("gpt8 dp2 pp2 zero1 zb-v m8 ckpt") << gpt8 << 2 << 2 << 1 << "fp32";
  QTest::newRow("bert-mini pp2 zb-v m8") << "bert-mini" << 1 << 2 << 0 << "fp32";
  QTest::newRow("gpt8 pp4 zb-v m8 fp16") << gpt8 << 1 << 4 << 0 << "fp16";
  QTest::newRow("gpt8 dp2 pp2 zero1 zb-v m8 ckpt bf16") << gpt8 << 2 << 2 << 1 << "bf16";
  QTest::newRow("bert-mini pp2 zb-v m8 fp16") << "bert-mini" << 1 << 2 << 0 << "fp16";
  QTest::newRow("moe pp2 zb-v m8") << "gpt-tiny-moe" << 1 << 2 << 0 << "fp32";
}

void TestEstimateLedgerZeroBubble::zb_v_predicted_equals_measured() {
  QFETCH(QString, model);
  QFETCH(int, dp);
  QFETCH(int, pp);
  QFETCH(int, checkpoint);
  QFETCH(QString, precision);
  EstimateSettings s;
  s.precision = parse_precision(qPrintable(precision));
  s.layout[Axis::dp] = dp;
  s.layout[Axis::pp] = pp;
  s.zero_stage = dp > 1 ? 1 : 0;
  s.micro_batches = 8;
  s.schedule = PipelineScheduleKind::zb_v;
  s.recompute = checkpoint ? Recompute::full : Recompute::none;
  s.micro_batch_size = 2;
  s.seq = 32;
  const ModelShape shape = model.startsWith('/')
                               ? config_file_shape(model.toStdString())
                               : model_shape_from_config(find_model_preset(qPrintable(model)), qPrintable(model));
  check_ledger(shape, s);
  const MemoryEstimate e = estimate_memory(shape, s);
  const RankMemory& first = e.ranks[0];
  QVERIFY(first.layers.embedding && first.layers.head && first.layers.chunks == 2);
  QCOMPARE(first.layers.chunk(1).first_layer, static_cast<int>(shape.layers) - first.layers.layer_count());
  QVERIFY2(first.formula(MemoryCategory::activations).find("(zb-v)") != std::string::npos,
           first.formula(MemoryCategory::activations).c_str());
}

// What a run refuses with ZB-V the estimator refuses by name: fewer than 2p - 1
// micro-batches, layers that do not split into 2p chunks, one stage.
void TestEstimateLedgerZeroBubble::zb_v_refusals_are_the_runs() {
  const ModelShape shape = config_file_shape(SHARDSCOPE_FIXTURES "/gpt_tiny_8_layers");
  EstimateSettings s;
  s.layout[Axis::pp] = 4;
  s.micro_batches = 6;
  s.schedule = PipelineScheduleKind::zb_v;
  s.micro_batch_size = 2;
  s.seq = 32;
  const auto refusal = [&](const EstimateSettings& settings, const ModelShape& model) -> std::string {
    try {
      (void)estimate_memory(model, settings);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  std::string why = refusal(s, shape);
  QVERIFY2(why.find("--micro-batches") != std::string::npos && why.find("7") != std::string::npos, why.c_str());
  s.micro_batches = 8;
  QVERIFY2(refusal(s, shape).empty(), refusal(s, shape).c_str());
  const ModelShape four = model_shape_from_config(find_model_preset("gpt-tiny"), "gpt-tiny");
  why = refusal(s, four);  // 4 layers into 8 chunks
  QVERIFY2(why.find("--pp") != std::string::npos && why.find("8 equal chunks") != std::string::npos, why.c_str());
  s.layout[Axis::pp] = 1;
  why = refusal(s, shape);
  QVERIFY2(why.find("--pp") != std::string::npos && why.find("2 or more") != std::string::npos, why.c_str());
}

// The simulated bubbles with the estimator's T_F, T_B, T_W (FLOPs): ZB-H2's
// below ZB-H1's below 1F1B's, at pp 4 × m 8 (the layout).
void TestEstimateLedgerZeroBubble::zero_bubble_bubbles_order_as_the_paper() {
  const ModelShape shape = model_shape_from_config(find_model_preset("gpt-tiny"), "gpt-tiny");
  EstimateSettings s;
  s.layout[Axis::pp] = 4;
  s.micro_batches = 8;
  s.micro_batch_size = 2;
  s.seq = 32;
  const double one_f_one_b = estimate_time(shape, s, nullptr).bubble_fraction;
  s.schedule = PipelineScheduleKind::zb_h1;
  const TimeEstimate h1 = estimate_time(shape, s, nullptr);
  s.schedule = PipelineScheduleKind::zb_h2;
  const TimeEstimate h2 = estimate_time(shape, s, nullptr);
  QVERIFY2(h1.bubble_fraction < one_f_one_b, h1.bubble_formula.c_str());
  QVERIFY2(h2.bubble_fraction < h1.bubble_fraction, h2.bubble_formula.c_str());
  QVERIFY(h1.bubble_formula.find("(p−1)(T_F+T_B−T_W)") != std::string::npos);
}

namespace {
// The closed form of `kind`'s activation peak on one stage against the walk of its list, for
// three slot/kept ratios (whichever of a slot and a kept set is the larger).
void check_closed_form_is_the_walk(PipelineScheduleKind kind, int p, int m, int stage) {
  for (const auto& [slot, kept] : {std::pair<std::int64_t, std::int64_t>{1000, 7}, {7, 1000}, {300, 300}}) {
    const StageActivationPeak walk = split_backward_activation_peak(kind, p, stage, m, slot, kept);
    const StageActivationPeak closed = split_backward_activation_peak_closed_form(kind, p, stage, m, slot, kept);
    QVERIFY2(!walk.bound && !closed.bound && walk.bytes == closed.bytes && walk.slots == closed.slots &&
                 walk.kept == closed.kept,
             qPrintable(QString("%1 p %2 m %3 stage %4: walk %5 slots %6 kept, closed form %7 slots %8 kept")
                            .arg(pipeline_schedule_name(kind))
                            .arg(p)
                            .arg(m)
                            .arg(stage)
                            .arg(walk.slots)
                            .arg(walk.kept)
                            .arg(closed.slots)
                            .arg(closed.kept)));
  }
}
}  // namespace

// Past p·m·2 = 4096 actions the estimator does not build ZB-V's lists: its closed
// form (2p slots, 2r + 1 kept on stage r) equals the walk of the lists wherever
// both can run.
void TestEstimateLedgerZeroBubble::zb_v_closed_form_is_the_walk() {
  for (int p = 2; p <= 8; ++p)
    for (int m = 2 * p - 1; m <= 2 * p + 12; ++m)
      for (int stage = 0; stage < p; ++stage) {
        check_closed_form_is_the_walk(PipelineScheduleKind::zb_v, p, m, stage);
        if (QTest::currentTestFailed()) return;
      }
}

// Past p·m = 4096 actions the estimator does not build ZB-H1's and ZB-H2's lists either:
// their closed forms (split_backward_schedules.h) equal the walk wherever both can run,
// from one micro-batch up.
void TestEstimateLedgerZeroBubble::zb_h_closed_forms_are_the_walk() {
  for (const PipelineScheduleKind kind : {PipelineScheduleKind::zb_h1, PipelineScheduleKind::zb_h2})
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 4 * p + 12; ++m)
        for (int stage = 0; stage < p; ++stage) {
          check_closed_form_is_the_walk(kind, p, m, stage);
          if (QTest::currentTestFailed()) return;
        }
}

QTEST_GUILESS_MAIN(TestEstimateLedgerZeroBubble)
#include "test_estimate_ledger_zero_bubble.moc"
