// SPDX-License-Identifier: GPL-3.0-or-later
// Context parallelism (ring attention, model/context_parallel.h): each cp rank
// holds seq / cp tokens of every sequence, attention passes key/value blocks
// round the cp ring and merges the partial results by their log-sum-exp. The
// run trains the single-rank model (fp32 losses and gradient norms within 2e-5
// relative over 20 steps), with the zig-zag split and without, alone and with
// data parallelism; each rank sends the formula's bytes per layer and
// micro-batch, every transfer naming its layer, pass, ranks and block; what is
// not built yet is refused naming --cp.
#include <QTest>
#include <cmath>
#include <set>
#include <vector>

#include "core/error.h"
#include "engine/collecting_sink.h"
#include "engine/ledger_check.h"
#include "engine/parallel_equivalence.h"
#include "estimate/memory_model.h"
#include "estimate/model_shape.h"
#include "plan/context_parallel_traffic.h"
#include "train/run_device_models.h"
#include "train/trainer.h"

using namespace shardscope;
using namespace shardscope::testing;

namespace {

RunConfig base_config(int cp, const char* split = "zigzag", const char* model = "gpt-tiny") {
  RunConfig c = short_run(model);
  c.layout[Axis::cp] = cp;
  c.cp_split = split;
  return c;
}

// The same run on one rank: `tolerance` on the losses (and, in fp32, the gradient norms).
// Evaluation too (every 10 steps): each cp rank scores its tokens of the validation sequences.
void expect_single_rank(RunConfig split_config, const char* tag, double tolerance = 2e-5) {
  split_config.eval_every = 10;
  split_config.eval_batches = 2;
  RunConfig one = split_config;
  one.layout = Layout{};
  one.zero_stage = 0;
  one.sequence_parallel = false;
  one.micro_batches = 1;
  const Trace single = trace_of(one);
  const Trace split = trace_of(split_config);
  QCOMPARE(split.losses.size(), std::size_t{20});
  QCOMPARE(split.losses.size(), single.losses.size());
  const double loss_error = worst_relative_difference(split.losses, single.losses);
  const double norm_error = worst_relative_difference(split.norms, single.norms);
  qInfo("%s: worst relative difference over 20 steps: loss %.3g, gradient norm %.3g", tag, loss_error, norm_error);
  QVERIFY2(loss_error < tolerance, qPrintable(QString::number(loss_error)));
  QCOMPARE(split.evals.size(), std::size_t{2});
  QVERIFY2(worst_relative_difference(split.evals, single.evals) < tolerance, tag);
  if (split_config.precision == Precision::fp32)
    QVERIFY2(norm_error < tolerance, qPrintable(QString::number(norm_error)));
  QVERIFY(split.losses.back() < split.losses.front() - 0.5);  // it trains
}

}  // namespace

class TestContextParallel : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void positions_of_the_splits();
  void losses_and_norms_match_single_rank_data();
  void losses_and_norms_match_single_rank();
  void bert_matches_single_rank_data();
  void bert_matches_single_rank();
  void with_data_parallel_checkpointing_and_16_bit_data();
  void with_data_parallel_checkpointing_and_16_bit();
  void with_pipelines_data();
  void with_pipelines();
  void sixteen_bit_trains_like_one_rank_data();
  void sixteen_bit_trains_like_one_rank();
  void with_tensor_parallelism_data();
  void with_tensor_parallelism();
  void ring_sends_the_formula_bytes_and_names_each_block();
  void transfers_take_the_link_time_inside_their_layer();
  void ledger_equals_the_estimator_data();
  void ledger_equals_the_estimator();
  void layouts_not_built_are_refused();
};

// Zig-zag: rank i holds chunks i and 2 cp − 1 − i; contiguous: the i-th s / cp tokens.
void TestContextParallel::positions_of_the_splits() {
  std::vector<int> seen;
  for (int rank = 0; rank < 4; ++rank)
    for (int t = 0; t < 4; ++t) seen.push_back(context_parallel_position(t, 4, rank, 4, true));
  QCOMPARE(seen, (std::vector<int>{0, 1, 14, 15, 2, 3, 12, 13, 4, 5, 10, 11, 6, 7, 8, 9}));
  QCOMPARE(context_parallel_position(3, 4, 2, 4, false), 11);
}

void TestContextParallel::losses_and_norms_match_single_rank_data() {
  QTest::addColumn<int>("cp");
  QTest::addColumn<QString>("split");
  QTest::newRow("cp 2 zigzag") << 2 << "zigzag";
  QTest::newRow("cp 2 contiguous") << 2 << "contiguous";
  QTest::newRow("cp 4 zigzag") << 4 << "zigzag";
  QTest::newRow("cp 4 contiguous") << 4 << "contiguous";
}

// BERT's attention is not causal: each block's keys are masked by the padding alone.
void TestContextParallel::bert_matches_single_rank_data() {
  QTest::addColumn<int>("cp");
  QTest::addColumn<QString>("split");
  QTest::newRow("bert-tiny cp 2") << 2 << "contiguous";
  QTest::newRow("bert-tiny cp 4 zigzag") << 4 << "zigzag";
}

// fp32: the ring's blocks merged by log-sum-exp, dQ, dK, dV per block from the
// saved log-sum-exp, the gradients summed over the cp group reproduce one rank
// within 2e-5.
void TestContextParallel::losses_and_norms_match_single_rank() {
  QFETCH(int, cp);
  QFETCH(QString, split);
  const std::string name = split.toStdString();
  const bool bert = QString(QTest::currentDataTag()).startsWith("bert");
  expect_single_rank(base_config(cp, name.c_str(), bert ? "bert-tiny" : "gpt-tiny"), QTest::currentDataTag());
}

void TestContextParallel::bert_matches_single_rank() {
  losses_and_norms_match_single_rank();
}

void TestContextParallel::with_data_parallel_checkpointing_and_16_bit_data() {
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("zero");
  QTest::addColumn<bool>("checkpoint");
  QTest::addColumn<int>("precision");
  const int fp32 = int(Precision::fp32);
  QTest::newRow("dp 2 x cp 2, DDP") << 2 << 0 << false << fp32;
  QTest::newRow("dp 2 x cp 2, ZeRO-1") << 2 << 1 << false << fp32;
  QTest::newRow("dp 2 x cp 2, ZeRO-2") << 2 << 2 << false << fp32;
  QTest::newRow("dp 2 x cp 2, ZeRO-3") << 2 << 3 << false << fp32;
  QTest::newRow("dp 2 x cp 2, ZeRO-3, checkpointing") << 2 << 3 << true << fp32;
  QTest::newRow("cp 2, activation checkpointing") << 1 << 0 << true << fp32;
}

void TestContextParallel::sixteen_bit_trains_like_one_rank_data() {
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("zero");
  QTest::addColumn<bool>("checkpoint");
  QTest::addColumn<int>("precision");
  QTest::newRow("cp 2, bf16") << 1 << 0 << false << int(Precision::bf16);
  QTest::newRow("cp 2, fp16") << 1 << 0 << false << int(Precision::fp16);
  QTest::newRow("dp 2 x cp 2, ZeRO-3, bf16") << 2 << 3 << false << int(Precision::bf16);
}

void TestContextParallel::with_tensor_parallelism_data() {
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("cp");
  QTest::addColumn<bool>("sequence_parallel");
  QTest::newRow("tp 2 x cp 2") << 1 << 2 << false;
  QTest::newRow("dp 2 x tp 2 x cp 2") << 2 << 2 << false;
  QTest::newRow("tp 2 x cp 4, sequence parallel") << 1 << 4 << true;
  QTest::newRow("dp 2 x tp 2 x cp 2, sequence parallel") << 2 << 2 << true;
  QTest::newRow("dp 2 x tp 2 x cp 2, ZeRO-2") << 2 << 2 << false;
  QTest::newRow("dp 2 x tp 2 x cp 2, ZeRO-3") << 2 << 2 << false;
  QTest::newRow("bert-tiny tp 2 x cp 2, sequence parallel") << 1 << 2 << true;
}

void TestContextParallel::with_pipelines_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("schedule");
  QTest::addColumn<bool>("checkpoint");
  const int gpipe = int(PipelineScheduleKind::gpipe), one_f_one_b = int(PipelineScheduleKind::one_f_one_b);
  QTest::newRow("pp 2 x cp 2, 1F1B") << "gpt-tiny" << one_f_one_b << false;
  QTest::newRow("pp 2 x cp 2, GPipe, checkpointing") << "gpt-tiny" << gpipe << true;
  QTest::newRow("bert-tiny pp 2 x cp 2, 1F1B") << "bert-tiny" << one_f_one_b << false;
}

// The cp sum beside DDP's all-reduce, before ZeRO-1's reduce-scatter or after
// ZeRO-2/3's (over the packed chunks, which cp peers share), the
// recompute's second forward ring, 16-bit gradients summed over cp: fp32
// within 2e-5 of one rank, bf16 and fp16 within test_mixed_training's 2e-2 and 5e-3.
void TestContextParallel::with_data_parallel_checkpointing_and_16_bit() {
  QFETCH(int, dp);
  QFETCH(int, zero);
  QFETCH(bool, checkpoint);
  QFETCH(int, precision);
  RunConfig c = base_config(2);
  c.layout[Axis::dp] = dp;
  c.zero_stage = zero;
  c.checkpoint = checkpoint;
  c.precision = static_cast<Precision>(precision);
  const double tolerance = c.precision == Precision::bf16 ? 2e-2 : c.precision == Precision::fp16 ? 5e-3 : 2e-5;
  expect_single_rank(c, QTest::currentDataTag(), tolerance);
}

void TestContextParallel::sixteen_bit_trains_like_one_rank() {
  with_data_parallel_checkpointing_and_16_bit();
}

// Each tp rank's ring carries its heads' keys and values (h / tp channels);
// the vocabulary-parallel embedding adds global positions; sequence
// parallelism splits the rank's seq / cp tokens further over tp.
void TestContextParallel::with_tensor_parallelism() {
  QFETCH(int, dp);
  QFETCH(int, cp);
  QFETCH(bool, sequence_parallel);
  const bool bert = QString(QTest::currentDataTag()).startsWith("bert");
  RunConfig c = base_config(cp, "zigzag", bert ? "bert-tiny" : "gpt-tiny");
  c.layout[Axis::dp] = dp;
  c.layout[Axis::tp] = 2;
  c.sequence_parallel = sequence_parallel;
  const QString tag = QTest::currentDataTag();
  c.zero_stage = tag.endsWith("ZeRO-2") ? 2 : tag.endsWith("ZeRO-3") ? 3 : 0;
  expect_single_rank(c, QTest::currentDataTag());
}

// A stage passes this cp rank's T / cp tokens of every sequence to the same cp
// rank of the next stage (and their gradient back); the tied embedding's copies
// are summed between the first and last stage of each cp rank, then over cp.
void TestContextParallel::with_pipelines() {
  QFETCH(QString, model);
  QFETCH(int, schedule);
  QFETCH(bool, checkpoint);
  const std::string name = model.toStdString();
  RunConfig c = base_config(2, "zigzag", name.c_str());
  c.layout[Axis::pp] = 2;
  c.micro_batches = 2;
  c.schedule = static_cast<PipelineScheduleKind>(schedule);
  c.checkpoint = checkpoint;
  expect_single_rank(c, QTest::currentDataTag());
}

// Per layer and micro-batch each rank sends (cp − 1) key/value blocks forward
// and (cp − 1) + cp backward (the blocks again, and their dK, dV accumulators
// home), each 2·b·(s/cp)·h · e bytes; every transfer names its layer, pass,
// block (the cp rank whose tokens it holds) and its ring neighbours.
void TestContextParallel::ring_sends_the_formula_bytes_and_names_each_block() {
  RunConfig c = base_config(4);
  c.steps = 2;
  test::CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.run([](const StepMetrics&) {});
  const std::vector<Event> events = sink.events();
  const ContextParallelTraffic formula = context_parallel_layer_traffic(4, c.micro_batch_size(), c.seq, 128);
  QCOMPARE(formula.block_bytes, std::int64_t{2 * 8 * 8 * 128 * 4});
  const auto sent = measure_context_parallel_traffic(events, 2);
  QCOMPARE(sent.size(), std::size_t{4 * 4 * 2});  // 4 ranks x 4 layers x 2 passes
  for (const auto& [key, bytes] : sent)
    QCOMPARE(bytes, std::get<3>(key) == ComputeKind::forward ? formula.forward_bytes : formula.backward_bytes);
  std::set<int> blocks;
  for (const Event& e : events) {
    if (e.kind != EventKind::comm_span || e.purpose != CommPurpose::context_parallel || e.layer < 0) continue;
    QCOMPARE(e.dst, (e.src + 1) % 4);  // the cp ring: ranks 0..3 with dp 1
    QVERIFY(e.step >= 1 && e.unit == e.layer + 1 && e.ring_step >= 0 && e.ring_step < 4);
    QVERIFY(e.phase == RingPhase::all_gather ||
            (e.phase == RingPhase::reduce_scatter && e.compute == ComputeKind::backward));
    QCOMPARE(e.chunk, (e.src - e.ring_step + 4) % 4);  // at ring step j a rank passes on cp rank (r − j)'s block
    blocks.insert(e.chunk);
  }
  QCOMPARE(blocks.size(), std::size_t{4});
  qInfo("cp 4, b 8, s 32, h 128: %lld bytes forward, %lld backward per rank per layer per micro-batch (%s with %s)",
        static_cast<long long>(formula.forward_bytes), static_cast<long long>(formula.backward_bytes),
        formula.formula.c_str(), formula.values.c_str());
}

// The virtual clock under a GPU profile: a block exchange is a call on the
// rank's compute stream between two block computations (this engine does not
// overlap it with the next block as real ring attention does), so each
// transfer lies inside its layer's forward, backward or recompute span and
// takes at least the profile's link time for its bytes (H100: NVLink).
void TestContextParallel::transfers_take_the_link_time_inside_their_layer() {
  RunConfig c = base_config(2);
  c.steps = 2;
  c.gpu_profile = "H100";
  c.checkpoint = true;
  const LinkModel link = run_link_model(c);
  test::CollectingSink sink;
  Trainer(c, &sink).run([](const StepMetrics&) {});
  const std::vector<Event> events = sink.events();
  int transfers = 0, inside = 0;
  for (const Event& e : events) {
    if (e.step != 2 || e.kind != EventKind::comm_span || e.purpose != CommPurpose::context_parallel || e.layer < 0)
      continue;
    ++transfers;
    QVERIFY2(e.end_ns - e.start_ns >= link.transfer_ns(e.bytes),
             qPrintable(QString("%1 bytes in %2 ns").arg(e.bytes).arg(e.end_ns - e.start_ns)));
    for (const Event& span : events)
      if (span.kind == EventKind::compute_span && span.step == e.step && span.rank == e.src && span.layer == e.layer &&
          span.start_ns <= e.start_ns && e.end_ns <= span.end_ns) {
        ++inside;
        break;
      }
  }
  qInfo("cp 2, H100 profile (%s), checkpointing: %d of %d ring transfers inside their layer's span",
        link.describe().c_str(), inside, transfers);
  QCOMPARE(transfers, 2 * 4 * (1 + 1 + 1 + 2));  // 2 ranks x 4 layers x (forward, recompute, backward KV + 2 dKV)
  QCOMPARE(inside, transfers);
}

void TestContextParallel::ledger_equals_the_estimator_data() {
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("cp");
  QTest::addColumn<int>("tp");
  QTest::addColumn<int>("zero");
  QTest::addColumn<bool>("checkpoint");
  QTest::addColumn<QString>("precision");
  QTest::newRow("cp 2") << 1 << 2 << 1 << 0 << false << "fp32";
  QTest::newRow("cp 4") << 1 << 4 << 1 << 0 << false << "fp32";
  QTest::newRow("dp 2 x cp 2, ZeRO-1") << 2 << 2 << 1 << 1 << false << "fp32";
  QTest::newRow("dp 2 x cp 2, ZeRO-2") << 2 << 2 << 1 << 2 << false << "fp32";
  QTest::newRow("dp 2 x cp 2, ZeRO-3") << 2 << 2 << 1 << 3 << false << "fp32";
  QTest::newRow("dp 2 x tp 2 x cp 2, ZeRO-3, checkpointing") << 2 << 2 << 2 << 3 << true << "fp32";
  QTest::newRow("dp 2 x tp 2 x cp 2, checkpointing") << 2 << 2 << 2 << 0 << true << "fp32";
  QTest::newRow("cp 2, bf16") << 1 << 2 << 1 << 0 << false << "bf16";
  QTest::newRow("bert-tiny cp 2") << 1 << 2 << 1 << 0 << false << "fp32";
  QTest::newRow("pp 2 x cp 2, 1F1B m 2") << 1 << 2 << 1 << 0 << false << "fp32";
}

// Each rank's activations and workspace at seq / cp tokens, and the 4 key/value
// blocks in flight in its communication buffers: the estimator's per-rank bytes
// equal the ledger's peaks, category by category.
void TestContextParallel::ledger_equals_the_estimator() {
  QFETCH(int, dp);
  QFETCH(int, cp);
  QFETCH(int, tp);
  QFETCH(int, zero);
  QFETCH(bool, checkpoint);
  QFETCH(QString, precision);
  EstimateSettings s;
  s.precision = parse_precision(qPrintable(precision));
  s.layout[Axis::dp] = dp;
  s.layout[Axis::cp] = cp;
  s.layout[Axis::tp] = tp;
  s.zero_stage = zero;
  s.recompute = checkpoint ? Recompute::full : Recompute::none;
  s.activations = ActivationMode::shardscope;
  s.micro_batch_size = 4;
  s.seq = 32;
  if (QString(QTest::currentDataTag()).startsWith("pp 2")) {
    s.layout[Axis::pp] = 2;
    s.micro_batches = 2;
  }
  const char* model = QString(QTest::currentDataTag()).startsWith("bert") ? "bert-tiny" : "gpt-tiny";
  const ModelShape shape = model_shape_from_config(find_model_preset(model), model);
  const MemoryEstimate predicted = estimate_memory(shape, s);
  QVERIFY2(predicted.engine_exact, predicted.basis.c_str());
  RunConfig run = to_run_config(shape, s);
  run.threads = 2;
  Trainer trainer(run);
  trainer.step();
  const QString mismatch = ledger_mismatch(predicted, trainer);
  QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
  const RankMemory& first = predicted.ranks.front();
  qInfo("%s: rank 0 activations %lld B, communication %lld B (%s)", QTest::currentDataTag(),
        static_cast<long long>(first.bytes[MemoryCategory::activations]),
        static_cast<long long>(first.bytes[MemoryCategory::communication]),
        first.formula(MemoryCategory::communication).c_str());
}

void TestContextParallel::layouts_not_built_are_refused() {
  auto refused = [](RunConfig c, const char* fragment) {
    try {
      Trainer t(c);
      QFAIL(qPrintable(QString("accepted a config that should fail with '%1'").arg(fragment)));
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find(fragment) != std::string::npos, e.what());
    }
  };
  RunConfig c = base_config(4);
  c.seq = 28;
  refused(c, "--cp 4: --seq 28 does not split into 8 equal chunks");
  c = base_config(3, "contiguous");
  c.seq = 32;
  refused(c, "--cp 3: --seq 32 does not split into 3 equal chunks");
  c = base_config(4);
  c.seq = 40;  // 10 tokens per cp rank in 2 chunks of 5
  c.layout[Axis::tp] = 4;
  c.sequence_parallel = true;
  refused(c, "--sequence-parallel with --cp 4: the 10 tokens per cp rank (--seq 40 / 4) do not split over --tp 4");
  c = base_config(2);
  c.layout[Axis::dp] = 2;
  c.dp_mode = DataParallelMode::naive;
  refused(c, "--cp 2 with --dp-mode naive is not built yet");
}

QTEST_GUILESS_MAIN(TestContextParallel)
#include "test_context_parallel.moc"
