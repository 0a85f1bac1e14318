// SPDX-License-Identifier: GPL-3.0-or-later
// Predicted equals measured: for every layout the engine can train, in fp32 and
// in mixed precision, the estimator's bytes equal the ledger's peak bytes of a
// real Trainer step, per rank and per category, exactly. A layout the engine
// refuses is skipped with the engine's reason and counts once it runs it.
#include <QTest>

#include "estimate/memory_model.h"
#include "train/trainer.h"

using namespace shardscope;

class TestEstimateLedger : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void predicted_equals_measured_data();
  void predicted_equals_measured();
};

void TestEstimateLedger::predicted_equals_measured_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("zero");
  QTest::addColumn<int>("naive");
  QTest::addColumn<int>("checkpoint");
  QTest::addColumn<int>("accum");
  QTest::addColumn<int>("micro_batches");
  QTest::addColumn<int>("gpipe");
  QTest::addColumn<QString>("precision");
  //                                              dp  pp zero naive ckpt accum m gpipe
  QTest::newRow("gpt dp1") << "gpt-tiny" << 1 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt dp1 ckpt") << "gpt-tiny" << 1 << 1 << 0 << 0 << 1 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt ddp2") << "gpt-tiny" << 2 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt ddp4 accum2") << "gpt-tiny" << 4 << 1 << 0 << 0 << 0 << 2 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero1 dp2") << "gpt-tiny" << 2 << 1 << 1 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero1 dp4 ckpt") << "gpt-tiny" << 4 << 1 << 1 << 0 << 1 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero1 dp5 padded") << "gpt-tiny" << 5 << 1 << 1 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt naive2") << "gpt-tiny" << 2 << 1 << 0 << 1 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt naive4 ckpt") << "gpt-tiny" << 4 << 1 << 0 << 1 << 1 << 1 << 1 << 0 << "fp32";
  QTest::newRow("bert dp1") << "bert-tiny" << 1 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("bert ddp2 ckpt") << "bert-tiny" << 2 << 1 << 0 << 0 << 1 << 1 << 1 << 0 << "fp32";
  QTest::newRow("bert zero1 dp8 padded") << "bert-tiny" << 8 << 1 << 1 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("bert naive4") << "bert-tiny" << 4 << 1 << 0 << 1 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt pp2 1f1b m4") << "gpt-tiny" << 1 << 2 << 0 << 0 << 0 << 1 << 4 << 0 << "fp32";
  QTest::newRow("gpt pp2 gpipe m4") << "gpt-tiny" << 1 << 2 << 0 << 0 << 0 << 1 << 4 << 1 << "fp32";
  QTest::newRow("gpt dp2 pp2 zero1 ckpt") << "gpt-tiny" << 2 << 2 << 1 << 0 << 1 << 2 << 2 << 0 << "fp32";
  QTest::newRow("bert pp2 m2") << "bert-tiny" << 1 << 2 << 0 << 0 << 0 << 1 << 2 << 0 << "fp32";
  QTest::newRow("gpt zero2 dp2") << "gpt-tiny" << 2 << 1 << 2 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero3 dp4") << "gpt-tiny" << 4 << 1 << 3 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("bert zero3 dp2 ckpt") << "bert-tiny" << 2 << 1 << 3 << 0 << 1 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero2 dp1 accum2") << "gpt-tiny" << 1 << 1 << 2 << 0 << 0 << 2 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero3 dp3 padded") << "gpt-tiny" << 3 << 1 << 3 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("bert zero2 dp8 padded") << "bert-tiny" << 8 << 1 << 2 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero3 dp5 padded ckpt accum2") << "gpt-tiny" << 5 << 1 << 3 << 0 << 1 << 2 << 1 << 0 << "fp32";
  // Mixed precision: fp32 activations, 16-bit parameters and gradients, fp32 working copies.
  QTest::newRow("gpt dp1 bf16") << "gpt-tiny" << 1 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("gpt dp1 ckpt fp16") << "gpt-tiny" << 1 << 1 << 0 << 0 << 1 << 1 << 1 << 0 << "fp16";
  QTest::newRow("gpt ddp2 bf16") << "gpt-tiny" << 2 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("gpt ddp4 accum2 fp16") << "gpt-tiny" << 4 << 1 << 0 << 0 << 0 << 2 << 1 << 0 << "fp16";
  QTest::newRow("gpt zero1 dp2 bf16") << "gpt-tiny" << 2 << 1 << 1 << 0 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("gpt zero1 dp4 ckpt fp16") << "gpt-tiny" << 4 << 1 << 1 << 0 << 1 << 1 << 1 << 0 << "fp16";
  QTest::newRow("gpt zero1 dp5 padded bf16") << "gpt-tiny" << 5 << 1 << 1 << 0 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("gpt naive2 fp16") << "gpt-tiny" << 2 << 1 << 0 << 1 << 0 << 1 << 1 << 0 << "fp16";
  QTest::newRow("gpt naive4 ckpt bf16") << "gpt-tiny" << 4 << 1 << 0 << 1 << 1 << 1 << 1 << 0 << "bf16";
  QTest::newRow("bert dp1 fp16") << "bert-tiny" << 1 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "fp16";
  QTest::newRow("bert ddp2 ckpt bf16") << "bert-tiny" << 2 << 1 << 0 << 0 << 1 << 1 << 1 << 0 << "bf16";
  QTest::newRow("bert zero1 dp8 padded fp16") << "bert-tiny" << 8 << 1 << 1 << 0 << 0 << 1 << 1 << 0 << "fp16";
  QTest::newRow("bert naive4 bf16") << "bert-tiny" << 4 << 1 << 0 << 1 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("gpt pp2 1f1b m4 fp16") << "gpt-tiny" << 1 << 2 << 0 << 0 << 0 << 1 << 4 << 0 << "fp16";
  QTest::newRow("gpt pp2 gpipe m4 bf16") << "gpt-tiny" << 1 << 2 << 0 << 0 << 0 << 1 << 4 << 1 << "bf16";
  QTest::newRow("gpt dp2 pp2 zero1 ckpt fp16") << "gpt-tiny" << 2 << 2 << 1 << 0 << 1 << 2 << 2 << 0 << "fp16";
  QTest::newRow("bert pp2 m2 bf16") << "bert-tiny" << 1 << 2 << 0 << 0 << 0 << 1 << 2 << 0 << "bf16";
  QTest::newRow("gpt zero2 dp2 fp16") << "gpt-tiny" << 2 << 1 << 2 << 0 << 0 << 1 << 1 << 0 << "fp16";
  QTest::newRow("gpt zero3 dp4 bf16") << "gpt-tiny" << 4 << 1 << 3 << 0 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("bert zero3 dp2 ckpt fp16") << "bert-tiny" << 2 << 1 << 3 << 0 << 1 << 1 << 1 << 0 << "fp16";
  QTest::newRow("gpt zero2 dp1 accum2 bf16") << "gpt-tiny" << 1 << 1 << 2 << 0 << 0 << 2 << 1 << 0 << "bf16";
  QTest::newRow("gpt zero3 dp3 padded fp16") << "gpt-tiny" << 3 << 1 << 3 << 0 << 0 << 1 << 1 << 0 << "fp16";
  QTest::newRow("bert zero2 dp8 padded bf16") << "bert-tiny" << 8 << 1 << 2 << 0 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("gpt zero3 dp5 padded ckpt accum2 fp16") << "gpt-tiny" << 5 << 1 << 3 << 0 << 1 << 2 << 1 << 0 << "fp16";
}

// One optimizer step of the real Trainer; every rank's ledger peak, category by
// category, must equal the prediction. A failure names the side that moved.
void TestEstimateLedger::predicted_equals_measured() {
  QFETCH(QString, model);
  QFETCH(int, dp);
  QFETCH(int, pp);
  QFETCH(int, zero);
  QFETCH(int, naive);
  QFETCH(int, checkpoint);
  QFETCH(int, accum);
  QFETCH(int, micro_batches);
  QFETCH(int, gpipe);
  QFETCH(QString, precision);
  EstimateSettings s;
  s.precision = parse_precision(qPrintable(precision));
  s.dp = dp;
  s.pp = pp;
  s.zero_stage = zero;
  s.dp_mode = naive ? DataParallelMode::naive : DataParallelMode::ddp;
  s.recompute = checkpoint ? Recompute::full : Recompute::none;
  s.accum = accum;
  s.micro_batches = micro_batches;
  s.schedule = gpipe ? PipelineScheduleKind::gpipe : PipelineScheduleKind::one_f_one_b;
  s.micro_batch = 2;
  s.seq = 32;
  const ModelShape shape = model_shape_from_config(find_model_preset(qPrintable(model)), qPrintable(model));
  const std::string gap = engine_gap(shape, s);
  if (!gap.empty()) QSKIP(qPrintable(QString::fromStdString("the engine cannot run this yet: " + gap)));
  const MemoryEstimate predicted = estimate_memory(shape, s);
  QVERIFY(predicted.engine_exact);
  RunConfig run = to_run_config(shape, s);
  run.threads = 2;
  Trainer trainer(run);
  trainer.step();
  QCOMPARE(static_cast<int>(predicted.ranks.size()), trainer.world_size());
  for (const RankMemory& r : predicted.ranks) {
    const MemoryBytes measured = trainer.ledger(r.rank).peak();
    for (MemoryCategory c : kAllMemoryCategories) {
      if (measured[c] == r.bytes[c]) continue;
      QFAIL(qPrintable(QString("rank %1 %2: estimator predicts %3 (%4), the engine's ledger measured %5 (%6). If the "
                               "engine's allocation changed on purpose, update engine/estimate; otherwise the engine "
                               "drifted from its documented layout.")
                           .arg(r.rank)
                           .arg(QString::fromStdString(std::string(memory_category_name(c))))
                           .arg(r.bytes[c])
                           .arg(QString::fromStdString(r.formula(c)))
                           .arg(measured[c])
                           .arg(measured[c] > r.bytes[c] ? "more" : "less")));
    }
  }
}

QTEST_GUILESS_MAIN(TestEstimateLedger)
#include "test_estimate_ledger.moc"
