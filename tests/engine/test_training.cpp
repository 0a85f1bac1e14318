// SPDX-License-Identifier: GPL-3.0-or-later
// Training end to end on the shipped corpus, and the ledger's bytes against
// the analytic counts: parameters 4 B, gradients 4 B, AdamW states 8 B per parameter.
#include <QTest>

#include "core/memory_ledger.h"
#include "model/model.h"
#include "train/adamw.h"
#include "train/trainer.h"

using namespace shardscope;

class TestTraining : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void ledger_bytes_match_parameter_count_data();
  void ledger_bytes_match_parameter_count();
  void activation_bytes_match_layout();
  void gpt_tiny_loss_falls_on_default_corpus();
  void bert_tiny_loss_falls_on_default_corpus();
  void same_seed_same_run();
  void thread_count_does_not_change_the_run();
  void hidden_states_of_every_layer();
};

void TestTraining::ledger_bytes_match_parameter_count_data() {
  QTest::addColumn<QString>("preset");
  for (const char* p : {"gpt-tiny", "gpt-mini", "gpt2-124m", "bert-tiny", "bert-base"}) QTest::newRow(p) << p;
}

void TestTraining::ledger_bytes_match_parameter_count() {
  QFETCH(QString, preset);
  const ModelConfig config = find_model_preset(preset.toStdString());
  MemoryLedger ledger;
  auto backend = make_cpu_backend({1});
  auto model = make_model(config, *backend, ledger);
  AdamW optimizer(model->layout(), *backend, ledger, {});
  const std::int64_t n = analytic_parameter_count(config);
  QCOMPARE(model->parameter_count(), n);
  const MemoryBytes bytes = ledger.current();
  QCOMPARE(bytes[MemoryCategory::parameters], 4 * n);
  QCOMPARE(bytes[MemoryCategory::gradients], 4 * n);
  QCOMPARE(bytes[MemoryCategory::optimizer_states], 8 * n);
  QCOMPARE(bytes[MemoryCategory::activations], std::int64_t{0});  // nothing until the first forward
}

void TestTraining::activation_bytes_match_layout() {
  const ModelConfig config = find_model_preset("gpt-tiny");
  MemoryLedger ledger;
  auto backend = make_cpu_backend({1});
  auto model = make_model(config, *backend, ledger);
  const int B = 2, T = 16;
  std::vector<std::int32_t> ids(B * T, 65), targets(B * T, 66);
  model->forward(Batch{B, T, ids.data(), targets.data(), nullptr, nullptr});
  const std::int64_t C = config.channels, V = config.vocab, BT = B * T;
  // Per layer B T (16 C + 4) + B H T^2 floats; plus embeddings (BT C), final LN (BT (C + 2)),
  // logits (BT V) and per-position losses (BT).
  const std::int64_t floats = config.layers * Activations::layer_floats(config, B, T) + BT * C + BT * (C + 2) +
                              BT * V + BT;
  QCOMPARE(ledger.current()[MemoryCategory::activations], 4 * floats);
  QCOMPARE(Activations::layer_floats(config, B, T), BT * (16 * C + 4) + B * config.heads * T * T);
}

void TestTraining::gpt_tiny_loss_falls_on_default_corpus() {
  RunConfig config;
  config.model = "gpt-tiny";
  config.steps = 40;
  config.batch = 16;
  config.seq = 64;
  config.eval_every = 40;
  Trainer trainer(config);
  std::vector<StepMetrics> steps;
  trainer.run([&](const StepMetrics& m) { steps.push_back(m); });
  QCOMPARE(steps.size(), std::size_t{40});
  // A byte model starts near ln(260) = 5.56 and learns letter statistics fast.
  QVERIFY(std::fabs(steps.front().loss - std::log(260.0f)) < 0.2f);
  QVERIFY2(steps.back().loss < 0.72f * steps.front().loss,
           qPrintable(QString("loss %1 -> %2").arg(steps.front().loss).arg(steps.back().loss)));
  QVERIFY(steps.back().eval_loss.has_value());
  QVERIFY(*steps.back().eval_loss < 0.75f * steps.front().loss);
  QCOMPARE(steps.back().memory[MemoryCategory::parameters], 4 * analytic_parameter_count(trainer.model().config()));
  QVERIFY(steps.back().tokens_per_s > 0.0);
  QVERIFY(steps[5].lr > steps.back().lr);  // cosine decay
}

void TestTraining::bert_tiny_loss_falls_on_default_corpus() {
  RunConfig config;
  config.model = "bert-tiny";
  config.steps = 40;
  config.batch = 16;
  config.seq = 64;
  config.lr = 2e-3f;
  Trainer trainer(config);
  std::vector<float> losses;
  trainer.run([&](const StepMetrics& m) { losses.push_back(m.loss); });
  QVERIFY2(losses.back() < 0.8f * losses.front(),
           qPrintable(QString("MLM loss %1 -> %2").arg(losses.front()).arg(losses.back())));
}

void TestTraining::same_seed_same_run() {
  RunConfig config;
  config.steps = 3;
  config.batch = 4;
  config.seq = 32;
  std::vector<float> a, b;
  Trainer(config).run([&](const StepMetrics& m) { a.push_back(m.loss); });
  Trainer(config).run([&](const StepMetrics& m) { b.push_back(m.loss); });
  QCOMPARE(a, b);
  config.seed = 99;
  std::vector<float> c;
  Trainer(config).run([&](const StepMetrics& m) { c.push_back(m.loss); });
  QVERIFY(a != c);
}

// Reductions split over output elements and gemm parts fixed by the shape: a
// rank trains bit for bit the same with 1, 2 or 3 threads.
void TestTraining::thread_count_does_not_change_the_run() {
  RunConfig config;
  config.model = "gpt-tiny";
  config.steps = 3;
  config.batch = 8;
  config.seq = 32;
  config.eval_every = 3;
  config.eval_batches = 1;
  std::vector<float> losses[3], eval[3];
  std::vector<unsigned char> states[3];
  for (int t = 0; t < 3; ++t) {
    config.threads = t + 1;
    Trainer trainer(config);
    trainer.run([&](const StepMetrics& m) {
      losses[t].push_back(m.loss);
      if (m.eval_loss) eval[t].push_back(*m.eval_loss);
    });
    states[t] = trainer.model_state_bytes(0);
  }
  for (int t = 1; t < 3; ++t) {
    QCOMPARE(losses[t], losses[0]);
    QCOMPARE(eval[t], eval[0]);
    QVERIFY2(states[t] == states[0], qPrintable(QString("%1 threads: other model states").arg(t + 1)));
  }
  QCOMPARE(eval[0].size(), std::size_t{1});
}

void TestTraining::hidden_states_of_every_layer() {
  for (const char* preset : {"gpt-tiny", "bert-tiny"}) {
    const ModelConfig config = find_model_preset(preset);
    MemoryLedger ledger;
    auto backend = make_cpu_backend({1});
    auto model = make_model(config, *backend, ledger);
    model->init_weights(1);
    std::vector<std::int32_t> ids = {72, 101, 108, 108, 111, 33};
    model->forward(Batch{1, 6, ids.data(), nullptr, nullptr, nullptr});
    QCOMPARE(model->hidden_state_count(), config.layers + 1);
    for (int i = 0; i <= config.layers; ++i) {
      const Tensor h = model->hidden_state(i);
      QCOMPARE(h.shape, (Shape{1, 6, config.channels}));
      QVERIFY(std::isfinite(h.f32()[0]));
    }
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, model->hidden_state(config.layers + 1));
  }
}

QTEST_GUILESS_MAIN(TestTraining)
#include "test_training.moc"
