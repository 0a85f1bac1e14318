// SPDX-License-Identifier: GPL-3.0-or-later
// Tensor parallelism (Megatron-LM) against the single-rank run, GPT and BERT: tp ranks start
// with the slices of the one model's initialisation and train the same model,
// so the fp32 losses and gradient norms match it within float tolerance, with
// DDP and pipelines too; its collectives send the bytes of the formula and the
// ledger holds the slices; the layouts it cannot split, or does not combine
// with yet, are refused naming --tp.
#include <QTest>
#include <cmath>
#include <vector>

#include "clock/schedule_summary.h"
#include "core/error.h"
#include "engine/collecting_sink.h"
#include "model/parameter_layout.h"
#include "plan/tensor_parallel_traffic.h"
#include "train/trainer.h"

using namespace shardscope;

namespace {

// Short sequences and a small batch: 20 steps of gpt-tiny in a few seconds
// (batch 4 wobbles more: a step whose gradient norm jumps magnifies float noise).
RunConfig base_config(int tp, const char* model = "gpt-tiny") {
  RunConfig c;
  c.model = model;
  c.steps = 20;
  c.batch = 8;
  c.seq = 32;
  c.lr = 1e-3f;  // 3e-3 spikes at step 11 of this tiny batch, which magnifies float noise 100-fold
  c.threads = 2;
  c.layout[Axis::tp] = tp;
  return c;
}

struct Trace {
  std::vector<double> losses, norms;
};

Trace trace_of(const RunConfig& config) {
  Trainer trainer(config);
  Trace trace;
  trainer.run([&](const StepMetrics& m) {
    trace.losses.push_back(m.loss);
    trace.norms.push_back(m.grad_norm);
  });
  return trace;
}

double worst_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]) / std::fabs(b[i]));
  return worst;
}

}  // namespace

class TestTensorParallel : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void ranks_start_with_slices_of_the_single_rank_model();
  void losses_and_norms_match_single_rank_data();
  void losses_and_norms_match_single_rank();
  void with_data_and_pipeline_parallelism_data();
  void with_data_and_pipeline_parallelism();
  void evaluation_matches_single_rank();
  void init_from_a_hugging_face_model_splits_its_weights();
  void sixteen_bit_trains_like_one_rank_data();
  void sixteen_bit_trains_like_one_rank();
  void an_overflow_on_one_tp_rank_skips_the_step_everywhere();
  void traffic_and_memory_follow_the_formulas();
  void layouts_it_cannot_split_are_refused();
};

// Every parameter of tp rank r is slice r of the single-rank model's (the
// split ones) or equal to it (the replicated ones), and the slices cover it.
void TestTensorParallel::ranks_start_with_slices_of_the_single_rank_model() {
  RunConfig one = base_config(1);
  const Trainer single(one);
  const Model& whole = single.model(0);
  RunConfig two = base_config(2);
  const Trainer split(two);
  std::int64_t held = 0;
  for (int r = 0; r < 2; ++r) {
    const Model& part = split.model(r);
    QCOMPARE(part.stage().tp_rank, r);
    for (const ParameterEntry& e : part.layout().entries()) {
      const ParameterEntry& full = whole.layout().find(e.name);
      QCOMPARE(e.full_shape, full.shape);
      std::vector<float> expected(static_cast<std::size_t>(e.numel));
      take_tensor_slice(e, r, 2, whole.params() + full.offset, expected.data());
      const std::vector<float> actual(part.params() + e.offset, part.params() + e.offset + e.numel);
      QVERIFY2(actual == expected, e.name.c_str());
      if (e.split != TensorSplit::replicated || r == 0) held += e.numel;
    }
  }
  QCOMPARE(held, whole.parameter_count());  // each parameter on exactly one rank, or replicated
  const ParameterEntry& qkv = split.model(0).layout().find("layer0.attn.qkv.weight");
  QCOMPARE(qkv.shape, (Shape{3 * 128 / 2, 128}));
  QCOMPARE(split.model(1).layout().find("layer0.mlp.proj.weight").shape, (Shape{128, 4 * 128 / 2}));
  QCOMPARE(split.model(1).layout().find("embed.tokens").shape, (Shape{260 / 2, 128}));
  QCOMPARE(split.model(1).layout().find("layer0.ln1.weight").split, TensorSplit::replicated);
}

void TestTensorParallel::losses_and_norms_match_single_rank_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("tp");
  QTest::newRow("gpt-tiny tp 2") << "gpt-tiny" << 2;
  QTest::newRow("gpt-tiny tp 4") << "gpt-tiny" << 4;
  QTest::newRow("bert-tiny tp 2") << "bert-tiny" << 2;  // its 2 heads: tp 4 is refused
  QTest::newRow("bert-mini tp 4") << "bert-mini" << 4;
}

// fp32, 20 steps: the column- and row-parallel layers, the vocabulary-parallel
// embedding and loss, and the gradient norm that counts replicated parameters
// once reproduce the single rank within 2e-5 relative.
void TestTensorParallel::losses_and_norms_match_single_rank() {
  QFETCH(QString, model);
  QFETCH(int, tp);
  const std::string name = model.toStdString();
  const Trace single = trace_of(base_config(1, name.c_str()));
  const Trace split = trace_of(base_config(tp, name.c_str()));
  QCOMPARE(split.losses.size(), std::size_t{20});
  QCOMPARE(split.losses.size(), single.losses.size());
  const double loss_error = worst_relative_difference(split.losses, single.losses);
  const double norm_error = worst_relative_difference(split.norms, single.norms);
  qInfo("%s: worst relative difference over 20 steps: loss %.3g, gradient norm %.3g", QTest::currentDataTag(),
        loss_error, norm_error);
  QVERIFY2(loss_error < 2e-5, qPrintable(QString::number(loss_error)));
  QVERIFY2(norm_error < 2e-5, qPrintable(QString::number(norm_error)));
  QVERIFY(split.losses.back() < split.losses.front() - 0.5);  // it trains
}

void TestTensorParallel::with_data_and_pipeline_parallelism_data() {
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("schedule");
  QTest::addColumn<int>("zero");
  QTest::addColumn<bool>("checkpoint");
  const int gpipe = int(PipelineScheduleKind::gpipe), one_f_one_b = int(PipelineScheduleKind::one_f_one_b);
  QTest::newRow("dp 2 x tp 2, DDP") << 2 << 1 << one_f_one_b << 0 << false;
  QTest::newRow("tp 2 x pp 2, GPipe") << 1 << 2 << gpipe << 0 << false;
  QTest::newRow("tp 2 x pp 2, 1F1B") << 1 << 2 << one_f_one_b << 0 << false;
  QTest::newRow("dp 2 x tp 2 x pp 2, ZeRO-1, 1F1B") << 2 << 2 << one_f_one_b << 1 << false;
  QTest::newRow("tp 2, activation checkpointing") << 1 << 1 << one_f_one_b << 0 << true;
  QTest::newRow("dp 2 x tp 2, ZeRO-2") << 2 << 1 << one_f_one_b << 2 << false;
  QTest::newRow("dp 2 x tp 2, ZeRO-3, checkpointing") << 2 << 1 << one_f_one_b << 3 << true;
}

// dp groups are the ranks with the same tp index (DDP averages each tp
// slice over its replicas); a pipeline's stages pass whole activations
// between the same tp ranks, and the tied embedding's slices are summed
// between the first and the last stage of each tp rank. ZeRO-1 shards each
// tp slice's optimizer states over its dp group, ZeRO-2/3 each slice's units
// (the norm then counts the chunks' replicated parameters once over tp).
void TestTensorParallel::with_data_and_pipeline_parallelism() {
  QFETCH(int, dp);
  QFETCH(int, pp);
  QFETCH(int, schedule);
  QFETCH(int, zero);
  QFETCH(bool, checkpoint);
  const Trace single = trace_of(base_config(1));
  RunConfig c = base_config(2);
  c.layout[Axis::dp] = dp;
  c.layout[Axis::pp] = pp;
  c.micro_batches = pp > 1 ? 2 : 1;
  c.schedule = static_cast<PipelineScheduleKind>(schedule);
  c.zero_stage = zero;
  c.checkpoint = checkpoint;  // the recompute repeats the layer's forward all-reduces
  const Trace split = trace_of(c);
  QCOMPARE(split.losses.size(), single.losses.size());
  const double loss_error = worst_relative_difference(split.losses, single.losses);
  const double norm_error = worst_relative_difference(split.norms, single.norms);
  qInfo("%s: worst relative difference over 20 steps: loss %.3g, gradient norm %.3g", QTest::currentDataTag(),
        loss_error, norm_error);
  QVERIFY2(loss_error < 2e-5, qPrintable(QString::number(loss_error)));
  QVERIFY2(norm_error < 2e-5, qPrintable(QString::number(norm_error)));
}

// Evaluation runs the same collectives forward only; the validation loss is
// counted once per tp group (tp rank 0 of the last stage).
void TestTensorParallel::evaluation_matches_single_rank() {
  const auto eval_losses = [](RunConfig c) {
    c.steps = 10;
    c.eval_every = 5;
    c.eval_batches = 2;
    Trainer trainer(c);
    std::vector<double> losses;
    trainer.run([&](const StepMetrics& m) {
      if (m.eval_loss) losses.push_back(*m.eval_loss);
    });
    return losses;
  };
  RunConfig c = base_config(2);
  c.layout[Axis::pp] = 2;
  c.micro_batches = 2;
  const std::vector<double> single = eval_losses(base_config(1)), split = eval_losses(c);
  QCOMPARE(split.size(), std::size_t{2});
  QCOMPARE(split.size(), single.size());
  QVERIFY2(worst_relative_difference(split, single) < 2e-5,
           qPrintable(QString::number(worst_relative_difference(split, single))));
}

// --init-from: each tp rank takes its slices of the pretrained tensors
// (Model::init_unit cuts the whole model's values), GPT and BERT alike.
void TestTensorParallel::init_from_a_hugging_face_model_splits_its_weights() {
  for (const char* model : {"gpt2_tiny", "bert_tiny"}) {
    RunConfig one = base_config(1);
    one.init_from = std::string(SHARDSCOPE_FIXTURES) + "/hf/" + model;
    one.seq = 16;  // its 32 positions
    RunConfig two = one;
    two.layout[Axis::tp] = 2;
    const Trace single = trace_of(one), split = trace_of(two);
    QCOMPARE(split.losses.front(), single.losses.front());
    const double error = worst_relative_difference(split.losses, single.losses);
    qInfo("--init-from %s, tp 2: worst relative loss difference over 20 steps %.3g", model, error);
    QVERIFY2(error < 2e-5, qPrintable(QString::number(error)));
  }
}

void TestTensorParallel::sixteen_bit_trains_like_one_rank_data() {
  QTest::addColumn<int>("precision");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("pp");
  QTest::newRow("bf16 tp 2") << int(Precision::bf16) << 1 << 1;
  QTest::newRow("fp16 tp 2") << int(Precision::fp16) << 1 << 1;
  QTest::newRow("bf16 dp 2 x tp 2 x pp 2, ZeRO-1") << int(Precision::bf16) << 2 << 2;
  QTest::newRow("fp16 dp 2 x tp 2, ZeRO-3") << int(Precision::fp16) << 2 << 1;
}

// Mixed precision: the 16-bit copies of each slice, fp32 masters and the
// loss scale work as on one rank; the 16-bit roundings fall differently, so
// the tolerance is test_mixed_training's (bf16 2e-2, fp16 5e-3), and the
// ledger holds what the plan counts for the slices.
void TestTensorParallel::sixteen_bit_trains_like_one_rank() {
  QFETCH(int, precision);
  QFETCH(int, dp);
  QFETCH(int, pp);
  RunConfig one = base_config(1);
  one.precision = static_cast<Precision>(precision);
  RunConfig c = one;
  c.layout[Axis::tp] = 2;
  c.layout[Axis::dp] = dp;
  c.layout[Axis::pp] = pp;
  c.micro_batches = pp;
  c.zero_stage = dp > 1 ? (pp > 1 ? 1 : 3) : 0;
  const Trace single = trace_of(one);
  Trainer trainer(c);
  Trace split;
  trainer.run([&](const StepMetrics& m) { split.losses.push_back(m.loss); });
  QCOMPARE(split.losses.size(), single.losses.size());
  QCOMPARE(split.losses.front(), single.losses.front());  // the same 16-bit weights, sliced
  const double error = worst_relative_difference(split.losses, single.losses);
  qInfo("%s: worst relative loss difference over 20 steps %.3g", QTest::currentDataTag(), error);
  QVERIFY2(error < (c.precision == Precision::bf16 ? 2e-2 : 5e-3), qPrintable(QString::number(error)));
  for (int r = 0; r < c.world_size(); ++r)
    for (const MemoryCategory m :
         {MemoryCategory::parameters, MemoryCategory::gradients, MemoryCategory::optimizer_states})
      QCOMPARE(trainer.ledger(r).current()[m], trainer.plan().rank(r).model_state_bytes[m]);
}

// fp16: an overflow injected on tp rank 1 alone skips the step on every rank
// (one verdict for the world), and the scale halves.
void TestTensorParallel::an_overflow_on_one_tp_rank_skips_the_step_everywhere() {
  RunConfig c = base_config(2);
  c.precision = Precision::fp16;
  c.steps = 3;
  c.overflow_rank = 1;
  c.overflow_step = 2;
  Trainer trainer(c);
  std::vector<StepMetrics> steps;
  trainer.run([&](const StepMetrics& m) { steps.push_back(m); });
  QCOMPARE(steps.size(), std::size_t{3});
  QVERIFY(!steps[0].skipped);
  QVERIFY(steps[1].skipped);
  QVERIFY(!steps[2].skipped);
  QCOMPARE(steps[2].loss_scale, steps[1].loss_scale / 2);
}

// The events of every layer's f and g: each rank sends 4 · 2(t−1)/t · b·s·h · 4
// bytes per layer per micro-batch; the ledger holds the tp slice's model
// states, as the sharding plan counts them (Ψ per tp rank, not the model's).
void TestTensorParallel::traffic_and_memory_follow_the_formulas() {
  RunConfig c = base_config(2);
  c.layout[Axis::pp] = 2;
  c.micro_batches = 2;
  c.steps = 2;
  test::CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.run([](const StepMetrics&) {});
  const std::vector<Event> events = sink.events();
  const LayerTraffic sent = measure_tensor_parallel_traffic(events, 2);
  const TensorParallelTraffic formula = tensor_parallel_layer_traffic(2, c.micro_batch_size(), c.seq, 128);
  QCOMPARE(formula.bytes, std::int64_t{4 * 2 * 1 * (4 * 32 * 128 * 4) / 2});
  QCOMPARE(sent.size(), std::size_t{4 * 2 * 2});  // 4 ranks x 2 layers of their stage x 2 micro-batches
  for (const auto& [key, bytes] : sent) {
    const auto [rank, unit, micro_batch] = key;
    QVERIFY2(bytes == formula.bytes, qPrintable(QString("rank %1 unit %2 micro-batch %3: %4 bytes, formula %5")
                                                    .arg(rank)
                                                    .arg(unit)
                                                    .arg(micro_batch)
                                                    .arg(bytes)
                                                    .arg(formula.bytes)));
  }
  qInfo("tp 2 x pp 2: %lld bytes sent per rank per layer per micro-batch (%s with %s)",
        static_cast<long long>(formula.bytes), formula.formula.c_str(), formula.values.c_str());
  const ShardingPlan& plan = trainer.plan();
  for (int r = 0; r < 4; ++r)
    for (const MemoryCategory m :
         {MemoryCategory::parameters, MemoryCategory::gradients, MemoryCategory::optimizer_states})
      QCOMPARE(trainer.ledger(r).current()[m], plan.rank(r).model_state_bytes[m]);
  // Stage 0 of a tp rank: half of every split matrix, the replicated parameters whole.
  QCOMPARE(plan.rank(0).stage_parameters, trainer.model(0).parameter_count());
  RunConfig one = c;
  one.layout[Axis::tp] = 1;
  QVERIFY(plan.rank(0).stage_parameters < make_sharding_plan(one).rank(0).stage_parameters);

  // Activation checkpointing: the recompute runs each layer's 2 forward all-reduces again.
  RunConfig recomputed = base_config(2);
  recomputed.checkpoint = true;
  recomputed.steps = 2;
  test::CollectingSink recompute_sink;
  Trainer(recomputed, &recompute_sink).run([](const StepMetrics&) {});
  const TensorParallelTraffic six =
      tensor_parallel_layer_traffic(2, recomputed.micro_batch_size(), recomputed.seq, 128, 4, /*recompute=*/true);
  QCOMPARE(six.bytes, formula.bytes * 2 * 6 / 4);  // micro-batch 8 instead of 4, 6 all-reduces instead of 4
  const std::vector<Event> recompute_events = recompute_sink.events();
  const LayerTraffic recompute_sent = measure_tensor_parallel_traffic(recompute_events, 2);
  QCOMPARE(recompute_sent.size(), std::size_t{2 * 4});  // 2 ranks x 4 layers x 1 micro-batch
  for (const auto& [key, bytes] : recompute_sent) QCOMPARE(bytes, six.bytes);
}

void TestTensorParallel::layouts_it_cannot_split_are_refused() {
  auto refused = [](RunConfig c, const char* fragment) {
    try {
      Trainer t(c);
      QFAIL(qPrintable(QString("accepted a config that should fail with '%1'").arg(fragment)));
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find(fragment) != std::string::npos, e.what());
    }
  };
  refused(base_config(3), "--tp 3: the 4 attention heads of gpt-tiny do not split over 3 tensor-parallel ranks");
  RunConfig c = base_config(2);
  refused(base_config(4, "bert-tiny"), "--tp 4: the 2 attention heads of bert-tiny do not split over 4");
  c = base_config(2);
  c.dp_mode = DataParallelMode::naive;
  refused(c, "--tp 2 with --dp-mode naive is refused");
  // --device cuda trains tensor parallelism (test_cuda_training's tensor_parallel_follows_cpu_ranks).
  c = base_config(2);
  c.ranks = 3;
  refused(c, "--ranks 3 does not equal --dp 1 x --pp 1 x --tp 2 = 2");
}

QTEST_GUILESS_MAIN(TestTensorParallel)
#include "test_tensor_parallel.moc"
