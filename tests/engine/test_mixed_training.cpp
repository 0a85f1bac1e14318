// SPDX-License-Identifier: GPL-3.0-or-later
// Mixed precision in the trainer: 16-bit parameters and gradients with fp32
// master weights. The ledger follows the ZeRO paper's 2Ψ + 2Ψ + 12Ψ split at
// every stage (and the estimator predicts it); an overflow on one rank's shard
// skips the step on every rank, leaving every byte of the model states as it
// was; the loss scale backs off and grows as torch GradScaler and DeepSpeed
// say; fp16 and bf16 train as fp32 does, in every parallel layout.
#include <QTest>
#include <cmath>

#include "engine/collecting_sink.h"
#include "estimate/memory_model.h"
#include "estimate/model_shape.h"
#include "events/event.h"
#include "model/model_config.h"
#include "train/trainer.h"

using namespace shardscope;
using shardscope::test::CollectingSink;

namespace {

RunConfig base_config(Precision precision) {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 20;
  c.batch = 8;
  c.seq = 32;
  c.lr = 3e-3f;
  c.threads = 2;
  c.precision = precision;
  return c;
}

std::vector<StepMetrics> run(const RunConfig& config, EventSink* sink = nullptr) {
  Trainer trainer(config, sink);
  std::vector<StepMetrics> steps;
  trainer.run([&](const StepMetrics& m) { steps.push_back(m); });
  return steps;
}

double mean_loss(const std::vector<StepMetrics>& steps, std::size_t last) {
  double sum = 0.0;
  for (std::size_t i = steps.size() - last; i < steps.size(); ++i) sum += steps[i].loss;
  return sum / static_cast<double>(last);
}

}  // namespace

class TestMixedTraining : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void ledger_follows_the_zero_paper_data();
  void ledger_follows_the_zero_paper();
  void overflow_on_one_shard_skips_the_step_on_every_rank_data();
  void overflow_on_one_shard_skips_the_step_on_every_rank();
  void scale_grows_again_after_the_window();
  void deepspeed_hysteresis_and_min_scale();
  void huge_initial_scale_backs_off_and_recovers();
  void every_layout_trains_like_one_rank_data();
  void every_layout_trains_like_one_rank();
  void fp32_reference_learns();
  void fp16_trains_like_fp32();
  void bf16_trains_like_fp32();

 private:
  // 300 steps of gpt-tiny at seq 64, evaluated at the end: one run per function (each ~1/3 of
  // the three runs the single function had), so no function nears Qt's 300 s watchdog under load.
  static std::vector<StepMetrics> run_300_steps(Precision precision);
  const std::vector<StepMetrics>& fp32_reference();
  void trains_like_fp32(Precision precision);
  std::vector<StepMetrics> fp32_;  // fp32_reference(): run once, shared by the three functions
};

void TestMixedTraining::ledger_follows_the_zero_paper_data() {
  QTest::addColumn<int>("stage");
  QTest::addColumn<int>("bf16");
  for (int stage : {0, 1, 2, 3}) {
    QTest::addRow("fp16 zero %d", stage) << stage << 0;
    QTest::addRow("bf16 zero %d", stage) << stage << 1;
  }
}

// ZeRO paper, fig. 1 (mixed-precision Adam, K = 12): parameters, gradients,
// optimizer states = 2Ψ 2Ψ 12Ψ | 2Ψ 2Ψ 12Ψ/Nd | 2Ψ 2Ψ/Nd 12Ψ/Nd | 2Ψ/Nd 2Ψ/Nd 12Ψ/Nd.
void TestMixedTraining::ledger_follows_the_zero_paper() {
  QFETCH(int, stage);
  QFETCH(int, bf16);
  const int Nd = 4;
  RunConfig c = base_config(bf16 ? Precision::bf16 : Precision::fp16);
  c.steps = 1;
  c.layout[Axis::dp] = Nd;
  c.zero_stage = stage;
  Trainer trainer(c);
  trainer.step();  // after a step every temporary buffer is released
  const std::int64_t psi = trainer.model().parameter_count();
  for (const auto& unit : trainer.model().layout().units()) QCOMPARE(unit.numel() % Nd, std::int64_t{0});
  const MemoryEstimate predicted = estimate_memory(model_shape_from_config(find_model_preset(c.model), c.model),
                                                   settings_for_run(c));
  for (int r = 0; r < Nd; ++r) {
    const MemoryBytes m = trainer.ledger(r).current();
    QCOMPARE(m[MemoryCategory::parameters], stage >= 3 ? 2 * psi / Nd : 2 * psi);
    QCOMPARE(m[MemoryCategory::gradients], stage >= 2 ? 2 * psi / Nd : 2 * psi);
    QCOMPARE(m[MemoryCategory::optimizer_states], stage >= 1 ? 12 * psi / Nd : 12 * psi);
    // The estimator's model states are the engine's bytes.
    for (MemoryCategory cat :
         {MemoryCategory::parameters, MemoryCategory::gradients, MemoryCategory::optimizer_states})
      QCOMPARE(predicted.ranks[static_cast<std::size_t>(r)].bytes[cat], m[cat]);
  }
}

void TestMixedTraining::overflow_on_one_shard_skips_the_step_on_every_rank_data() {
  QTest::addColumn<int>("zero");
  QTest::addColumn<int>("pp");
  QTest::newRow("zero 2, 4 ranks") << 2 << 1;
  QTest::newRow("zero 3, 4 ranks") << 3 << 1;
  QTest::newRow("zero 1, dp 2 x pp 2") << 1 << 2;
}

// Rank 2 finds an inf in its gradients at step 3. Every rank must skip that
// step: every byte of every rank's parameters, master weights and AdamW
// states stays as it was, the scale halves, and the rank that saw it says
// where.
void TestMixedTraining::overflow_on_one_shard_skips_the_step_on_every_rank() {
  QFETCH(int, zero);
  QFETCH(int, pp);
  RunConfig c = base_config(Precision::fp16);
  c.steps = 4;
  c.layout[Axis::dp] = 4 / pp;
  c.layout[Axis::pp] = pp;
  c.micro_batches = pp;
  c.zero_stage = zero;
  c.initial_scale_power = 8;  // low enough that nothing overflows by itself
  c.overflow_rank = 2;
  c.overflow_step = 3;
  CollectingSink sink;
  Trainer trainer(c, &sink);
  std::vector<StepMetrics> steps;
  steps.push_back(trainer.step());
  steps.push_back(trainer.step());
  std::vector<std::vector<unsigned char>> before;
  for (int r = 0; r < 4; ++r) before.push_back(trainer.model_state_bytes(r));
  steps.push_back(trainer.step());
  for (int r = 0; r < 4; ++r) {
    QVERIFY(!before[static_cast<std::size_t>(r)].empty());
    QVERIFY2(trainer.model_state_bytes(r) == before[static_cast<std::size_t>(r)],
             qPrintable(QString("rank %1 changed its model states in the skipped step").arg(r)));
  }
  steps.push_back(trainer.step());
  QVERIFY(trainer.model_state_bytes(0) != before[0]);  // the next step updates again
  QCOMPARE(steps[0].skipped, false);
  QCOMPARE(steps[1].skipped, false);
  QCOMPARE(steps[2].skipped, true);
  QCOMPARE(steps[3].skipped, false);
  QCOMPARE(steps[2].loss_scale, 256.0f);
  QCOMPARE(steps[3].loss_scale, 128.0f);
  QVERIFY(std::isnan(steps[2].grad_norm));
  int reports = 0;
  for (const Event& e : sink.events()) {
    if (e.kind != EventKind::overflow) continue;
    ++reports;
    QCOMPARE(e.rank, 2);
    QCOMPARE(e.step, std::int64_t{3});
    QCOMPARE(e.loss_scale, 256.0f);
    QVERIFY(e.skipped);
    QVERIFY2(e.text_view().find("(injected)") != std::string_view::npos, e.text.data());
  }
  QCOMPARE(reports, 1);
  int skipped_metrics = 0;
  for (const Event& e : sink.events())
    if (e.kind == EventKind::step_metrics && e.skipped) {
      ++skipped_metrics;
      QCOMPARE(e.step, std::int64_t{3});
    }
  QCOMPARE(skipped_metrics, 1);
}

// torch GradScaler: after an overflow the scale halves; after growth_interval
// clean steps in a row it doubles.
void TestMixedTraining::scale_grows_again_after_the_window() {
  RunConfig c = base_config(Precision::fp16);
  c.steps = 7;
  c.initial_scale_power = 8;
  c.scale_window = 3;
  c.overflow_rank = 0;
  c.overflow_step = 2;
  const auto steps = run(c);
  std::vector<float> scales;
  for (const auto& m : steps) scales.push_back(m.loss_scale);
  // 1 clean; 2 overflow (-> 128); 3, 4, 5 clean (the third grows: -> 256); 6, 7 clean.
  QCOMPARE(scales, (std::vector<float>{256, 256, 128, 128, 128, 256, 256}));
  for (std::size_t i = 0; i < steps.size(); ++i) QCOMPARE(steps[i].skipped, i == 1);
}

// DeepSpeed rules with hysteresis 2: the first overflow is absorbed (the step
// is skipped but the scale kept), later ones halve it, never below
// min_loss_scale. 2^40 overflows gpt-tiny's fp16 gradients at every scale down
// to the floor of 2^38, so every step here overflows.
void TestMixedTraining::deepspeed_hysteresis_and_min_scale() {
  RunConfig c = base_config(Precision::fp16);
  c.steps = 5;
  c.loss_scaler = LossScaleRules::deepspeed;
  c.initial_scale_power = 40;
  c.hysteresis = 2;
  c.min_loss_scale = std::ldexp(1.0f, 38);
  const auto steps = run(c);
  std::vector<float> scales;
  for (const auto& m : steps) scales.push_back(m.loss_scale);
  const float s = std::ldexp(1.0f, 40);
  QCOMPARE(scales, (std::vector<float>{s, s, s / 2, s / 4, s / 4}));
  for (const auto& m : steps) QVERIFY(m.skipped);
}

// A deliberately huge first scale: the run backs off by halving on each
// overflowing step until the gradients fit in fp16, then trains normally.
void TestMixedTraining::huge_initial_scale_backs_off_and_recovers() {
  RunConfig c = base_config(Precision::fp16);
  c.steps = 60;
  c.initial_scale_power = 40;
  const auto steps = run(c);
  int leading = 0, skipped = 0;
  while (leading < static_cast<int>(steps.size()) && steps[static_cast<std::size_t>(leading)].skipped) ++leading;
  for (const auto& m : steps) skipped += m.skipped ? 1 : 0;
  // Each skip halves the scale, from 2^40 to where fp16 holds the gradients
  // (~2^18 for gpt-tiny here); as the gradients change a few later overflows
  // may halve it again (real GradScaler runs show the same).
  QVERIFY2(leading >= 15 && skipped <= leading + 5,
           qPrintable(QString("%1 skipped steps at the start, %2 in all").arg(leading).arg(skipped)));
  for (std::size_t i = steps.size() - 20; i < steps.size(); ++i) QVERIFY(!steps[i].skipped);
  QCOMPARE(steps.back().loss_scale, std::ldexp(1.0f, 40 - skipped));  // no growth within the 2000-step window
  QVERIFY2(mean_loss(steps, 5) < steps.front().loss - 1.0,
           qPrintable(QString("loss %1 -> %2").arg(steps.front().loss).arg(mean_loss(steps, 5))));
}

void TestMixedTraining::every_layout_trains_like_one_rank_data() {
  QTest::addColumn<int>("bf16");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("naive");
  QTest::addColumn<int>("zero");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("accum");
  for (int bf16 : {0, 1}) {
    const char* p = bf16 ? "bf16" : "fp16";
    QTest::addRow("%s ddp 2", p) << bf16 << 2 << 0 << 0 << 1 << 1;
    QTest::addRow("%s naive 2", p) << bf16 << 2 << 1 << 0 << 1 << 1;
    QTest::addRow("%s zero 1", p) << bf16 << 4 << 0 << 1 << 1 << 1;
    QTest::addRow("%s zero 2 accum 2", p) << bf16 << 2 << 0 << 2 << 1 << 2;
    QTest::addRow("%s zero 3", p) << bf16 << 4 << 0 << 3 << 1 << 1;
    QTest::addRow("%s pp 2", p) << bf16 << 1 << 0 << 0 << 2 << 1;
    QTest::addRow("%s dp 2 x pp 2 zero 1", p) << bf16 << 2 << 0 << 1 << 2 << 1;
  }
}

// The same global batch in 16 bits on any layout follows the single-rank
// 16-bit run: the order of 16-bit roundings differs (each rank rounds its own
// gradient, the ring rounds each partial sum), so the tolerance is 16-bit
// sized, not the fp32 layouts' 5e-4.
void TestMixedTraining::every_layout_trains_like_one_rank() {
  QFETCH(int, bf16);
  QFETCH(int, dp);
  QFETCH(int, naive);
  QFETCH(int, zero);
  QFETCH(int, pp);
  QFETCH(int, accum);
  RunConfig one = base_config(bf16 ? Precision::bf16 : Precision::fp16);
  if (!bf16) one.initial_scale_power = 10;  // no overflow on any layout: the steps line up
  RunConfig c = one;
  c.layout[Axis::dp] = dp;
  c.dp_mode = naive ? DataParallelMode::naive : DataParallelMode::ddp;
  c.zero_stage = zero;
  c.layout[Axis::pp] = pp;
  c.micro_batches = pp;
  c.accum = accum;
  const auto want = run(one), got = run(c);
  QCOMPARE(got.size(), want.size());
  QCOMPARE(got.front().loss, want.front().loss);  // the first forward uses the same 16-bit weights
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    QVERIFY(!got[i].skipped);
    worst = std::max(worst, std::fabs(static_cast<double>(got[i].loss) - want[i].loss) / want[i].loss);
  }
  QVERIFY2(worst < (bf16 ? 2e-2 : 5e-3), qPrintable(QString("worst relative loss difference %1").arg(worst)));
}

std::vector<StepMetrics> TestMixedTraining::run_300_steps(Precision precision) {
  RunConfig c = base_config(precision);
  c.steps = 300;
  c.seq = 64;
  c.eval_every = 300;
  return run(c);
}

const std::vector<StepMetrics>& TestMixedTraining::fp32_reference() {
  if (fp32_.empty()) fp32_ = run_300_steps(Precision::fp32);
  return fp32_;
}

// The reference the 16-bit runs are held to: 300 fp32 steps learn (the loss
// falls by more than 2) and end with a held-out loss.
void TestMixedTraining::fp32_reference_learns() {
  const auto& fp32 = fp32_reference();
  QCOMPARE(fp32.size(), std::size_t{300});
  QVERIFY2(mean_loss(fp32, 20) < fp32.front().loss - 2.0,
           qPrintable(QString("loss %1 -> %2").arg(fp32.front().loss).arg(mean_loss(fp32, 20))));
  QVERIFY(fp32.back().eval_loss.has_value());
}

// 300 steps of gpt-tiny in 16 bits end within a few percent of fp32 (the mean
// loss of the last 20 steps, and the held-out loss).
void TestMixedTraining::trains_like_fp32(Precision precision) {
  const auto& fp32 = fp32_reference();
  const double reference = mean_loss(fp32, 20), reference_eval = *fp32.back().eval_loss;
  const auto steps = run_300_steps(precision);
  QCOMPARE(steps.size(), fp32.size());
  QVERIFY(steps.back().eval_loss.has_value());
  const double loss = mean_loss(steps, 20), eval = *steps.back().eval_loss;
  const QString report = QString("%1: train %2 vs fp32 %3, eval %4 vs %5")
                             .arg(QString::fromStdString(std::string(precision_name(precision))))
                             .arg(loss)
                             .arg(reference)
                             .arg(eval)
                             .arg(reference_eval);
  qInfo("%s", qPrintable(report));
  QVERIFY2(std::fabs(loss - reference) / reference < 0.03, qPrintable(report));
  QVERIFY2(std::fabs(eval - reference_eval) / reference_eval < 0.03, qPrintable(report));
}

// fp16 with the dynamic loss scale.
void TestMixedTraining::fp16_trains_like_fp32() {
  trains_like_fp32(Precision::fp16);
}

void TestMixedTraining::bf16_trains_like_fp32() {
  trains_like_fp32(Precision::bf16);
}

QTEST_GUILESS_MAIN(TestMixedTraining)
#include "test_mixed_training.moc"
