// SPDX-License-Identifier: GPL-3.0-or-later
// The bytes every data-parallel rank sends per step, counted from the events
// of a real run, against the papers' formulas (plan/data_parallel_traffic.h)
// and the estimator's dp_bytes: DDP, ZeRO-1 and ZeRO-2 send 2(N−1)/N·Ψ'·b,
// ZeRO-3 1.5× that (plus the tied embeddings' extra gather), naive
// DataParallel's rank 0 moves (N−1)(p + g)Ψ.
#include <QTest>
#include <cmath>
#include <set>

#include "clock/schedule_summary.h"
#include "engine/collecting_sink.h"
#include "estimate/model_shape.h"
#include "estimate/time_model.h"
#include "plan/data_parallel_traffic.h"
#include "train/trainer.h"

using namespace shardscope;
using shardscope::test::CollectingSink;

namespace {

RunConfig config_of(int dp, int zero, bool naive, int accum = 1, const char* model = "gpt-tiny") {
  RunConfig c;
  c.model = model;
  c.steps = 2;
  c.batch = 8;
  c.seq = 32;
  c.threads = 2;
  c.layout[Axis::dp] = dp;
  c.zero_stage = zero;
  c.dp_mode = naive ? DataParallelMode::naive : DataParallelMode::ddp;
  c.accum = accum;
  c.bucket_mb = 0.5;  // several buckets
  return c;
}

struct Measured {
  MeasuredTraffic traffic;
  DataParallelTraffic formula;
  double estimated = 0;
  int buckets = 0;  // DDP buckets seen
};

// Step 2 of a run (step 1 is the same; 2 shows nothing carries over).
Measured measure(const RunConfig& c) {
  CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.step();
  trainer.step();
  const std::vector<Event> events = sink.events();
  const ShardingPlan plan = make_sharding_plan(c);
  Measured m;
  m.traffic = measure_data_parallel_traffic(events, 2, c.layout.dp());
  std::set<int> buckets;
  for (const Event& e : events)
    if (e.step == 2 && is_data_parallel_transfer(e, c.layout.dp()) && e.bucket >= 0) buckets.insert(e.bucket);
  m.buckets = static_cast<int>(buckets.size());
  m.formula = data_parallel_traffic(plan, plan.stage(0), static_cast<std::int64_t>(c.accum) * c.micro_batches,
                                    extra_embedding_gathers(trainer.model().config().kind));
  EstimateSettings s;
  s.layout[Axis::dp] = c.layout.dp();
  s.zero_stage = c.zero_stage;
  s.dp_mode = c.dp_mode;
  s.accum = c.accum;
  s.micro_batch_size = c.micro_batch_size();
  s.seq = c.seq;
  m.estimated = estimate_time(load_model_shape(c.model, nullptr), s, nullptr).dp_bytes;
  return m;
}

}  // namespace

class TestDataParallelTraffic : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void every_rank_sends_the_formula_data();
  void every_rank_sends_the_formula();
  void ddp_ranks_differ_only_by_uneven_ring_chunks();
  void naive_rank_0_moves_the_model_twice_per_peer();
  void accumulation_repeats_only_zero2_and_zero3_traffic();
  void evaluation_gathers_are_not_the_steps();
  void padded_shards_travel_whole();
};

void TestDataParallelTraffic::every_rank_sends_the_formula_data() {
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("zero");
  QTest::addColumn<QString>("model");
  QTest::addColumn<double>("ddp_multiple");  // the paper: × DDP's 2(N−1)/N·4Ψ
  for (int dp : {2, 4}) {
    for (int zero : {1, 2, 3}) {
      QTest::newRow(qPrintable(QString("zero-%1 x %2").arg(zero).arg(dp)))
          << dp << zero << "gpt-tiny" << (zero == 3 ? 1.5 : 1.0);
    }
  }
  QTest::newRow("bert zero-3 x 2") << 2 << 3 << "bert-tiny" << 1.5;
}

// ZeRO-1/2/3: every rank sends exactly the formula (Ψ' as the plan pads it),
// and the estimator says the same; ZeRO-1/2 send what DDP sends, ZeRO-3 1.5×
// that plus the tied embeddings' extra gathers.
void TestDataParallelTraffic::every_rank_sends_the_formula() {
  QFETCH(int, dp);
  QFETCH(int, zero);
  QFETCH(QString, model);
  QFETCH(double, ddp_multiple);
  const RunConfig c = config_of(dp, zero, false, 1, qPrintable(model));
  const Measured m = measure(c);
  QCOMPARE(static_cast<int>(m.traffic.sent.size()), dp);
  for (const auto& [rank, bytes] : m.traffic.sent)
    QVERIFY2(static_cast<double>(bytes) == m.formula.bytes,
             qPrintable(QString("rank %1 sent %2, formula %3 (%4)")
                            .arg(rank)
                            .arg(bytes)
                            .arg(m.formula.bytes, 0, 'f', 0)
                            .arg(QString::fromStdString(m.formula.formula))));
  QCOMPARE(m.estimated, m.formula.bytes);
  // Against DDP's 2(N−1)/N·4Ψ': the tiny models' units all divide by 4, so Ψ' = Ψ.
  const double psi = static_cast<double>(m.formula.travelling);
  const double ddp = 2.0 * (dp - 1) / dp * 4 * psi;
  const double embedding =
      zero == 3 ? extra_embedding_gathers(model == "bert-tiny" ? ModelKind::bert : ModelKind::gpt) * (dp - 1.0) / dp *
                      4 * static_cast<double>(make_sharding_plan(c).stage(0).units.front().numel)
                : 0.0;
  QCOMPARE(m.formula.bytes, ddp_multiple * ddp + embedding);
  QCOMPARE(m.formula.travelling, make_sharding_plan(c).stage(0).parameters());
}

// DDP's ring splits a bucket into N chunks, the first n mod N one element
// longer: the mean over the ranks is exactly 2(N−1)/N·4Ψ, and each rank is
// within 2 elements per bucket of it.
void TestDataParallelTraffic::ddp_ranks_differ_only_by_uneven_ring_chunks() {
  for (int dp : {2, 4}) {
    const Measured m = measure(config_of(dp, 0, false));
    QCOMPARE(static_cast<int>(m.traffic.sent.size()), dp);
    QVERIFY(m.buckets >= 2);
    std::int64_t total = 0;
    for (const auto& [rank, bytes] : m.traffic.sent) {
      total += bytes;
      QVERIFY(std::abs(static_cast<double>(bytes) - m.formula.bytes) < 2.0 * 4 * m.buckets);  // < 2 elements a bucket
    }
    QCOMPARE(static_cast<double>(total) / dp, m.formula.bytes);
    QCOMPARE(m.estimated, m.formula.bytes);
  }
}

// Rank 0 broadcasts the parameters to N−1 peers and receives N−1 gradients.
void TestDataParallelTraffic::naive_rank_0_moves_the_model_twice_per_peer() {
  for (int dp : {2, 4}) {
    const Measured m = measure(config_of(dp, 0, true));
    const double psi = static_cast<double>(m.formula.travelling);
    QCOMPARE(static_cast<double>(m.traffic.sent.at(0)), (dp - 1) * 4 * psi);
    QCOMPARE(static_cast<double>(m.traffic.received.at(0)), (dp - 1) * 4 * psi);
    QCOMPARE(static_cast<double>(m.traffic.sent.at(0) + m.traffic.received.at(0)), m.formula.bytes);
    QCOMPARE(m.estimated, m.formula.bytes);
  }
}

// With K micro-steps DDP and ZeRO-1 still synchronize once per step (no_sync
// before the last); ZeRO-2 reduce-scatters every micro-step, ZeRO-3 also
// gathers every micro-step.
void TestDataParallelTraffic::accumulation_repeats_only_zero2_and_zero3_traffic() {
  for (int zero : {1, 2, 3}) {
    const Measured once = measure(config_of(2, zero, false, 1));
    const Measured twice = measure(config_of(2, zero, false, 2));
    QCOMPARE(static_cast<double>(twice.traffic.sent.at(1)), twice.formula.bytes);
    QCOMPARE(twice.estimated, twice.formula.bytes);
    const double psi = static_cast<double>(once.formula.travelling);
    const double added = static_cast<double>(twice.traffic.sent.at(1) - once.traffic.sent.at(1));
    if (zero == 1) QCOMPARE(added, 0.0);
    if (zero == 2) QCOMPARE(added, 0.5 * 4 * psi);  // one more reduce-scatter of the gradients
    if (zero == 3) QCOMPARE(added, static_cast<double>(once.traffic.sent.at(1)));  // everything twice
  }
}

// ZeRO-3 gathers the parameters again to evaluate after a step; those
// transfers say so (purpose evaluation) and stay out of the step's bytes.
void TestDataParallelTraffic::evaluation_gathers_are_not_the_steps() {
  RunConfig c = config_of(2, 3, false);
  c.eval_every = 1;
  CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.run({});
  const std::vector<Event> events = sink.events();
  std::int64_t evaluation = 0;
  for (const Event& e : events)
    if (e.kind == EventKind::comm_span && e.step == 2 && e.purpose == CommPurpose::evaluation && e.src == 1)
      evaluation += e.bytes;
  QVERIFY(evaluation > 0);
  const ShardingPlan plan = make_sharding_plan(c);
  const DataParallelTraffic formula =
      data_parallel_traffic(plan, plan.stage(0), 1, extra_embedding_gathers(ModelKind::gpt));
  QCOMPARE(static_cast<double>(measure_data_parallel_traffic(events, 2, 2).sent.at(1)), formula.bytes);
}

// dp 5 does not divide gpt-tiny's units: ZeRO-1's flat shards and ZeRO-2/3's
// unit chunks travel padded, Ψ' > Ψ, and every rank sends exactly the formula
// with Ψ' (and the estimator says the same).
void TestDataParallelTraffic::padded_shards_travel_whole() {
  for (int zero : {1, 2, 3}) {
    RunConfig c = config_of(5, zero, false);
    c.batch = 10;
    const Measured m = measure(c);
    QVERIFY(m.formula.travelling > make_sharding_plan(c).stage(0).parameters());
    QCOMPARE(static_cast<int>(m.traffic.sent.size()), 5);
    for (const auto& [rank, bytes] : m.traffic.sent) QCOMPARE(static_cast<double>(bytes), m.formula.bytes);
    QCOMPARE(m.estimated, m.formula.bytes);
  }
}

QTEST_GUILESS_MAIN(TestDataParallelTraffic)
#include "test_data_parallel_traffic.moc"
