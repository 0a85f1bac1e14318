// SPDX-License-Identifier: GPL-3.0-or-later
// Expert parallelism (parallel/expert_parallel.h): ep 2 and ep 4 train
// gpt-tiny-moe as one rank does with the same micro-batches (accumulation
// over dp x accum of them: each micro-batch routes, drops and weighs its
// load-balancing loss alone, on a rank or in an ep group alike); the drops
// reported equal a count from the routing; the all-to-all moves the routed
// rows between every pair of ranks and nothing else; E or dp not divisible
// by ep, and ep without experts, are refused naming --ep.
#include <QTest>
#include <cmath>
#include <map>
#include <vector>

#include "core/error.h"
#include "engine/collecting_sink.h"
#include "engine/moe_trace.h"
#include "model/mixture_of_experts.h"
#include "model/parameter_layout.h"
#include "train/trainer.h"

using namespace shardscope;
using testing::moe_trace_of;
using testing::worst_relative_difference;
using Trace = testing::MoeTrace;

namespace {

RunConfig moe_config(int dp, int ep, int accum) {
  RunConfig c;
  c.model = "gpt-tiny-moe";
  c.steps = 20;
  c.batch = 8;
  c.seq = 32;
  c.lr = 1e-3f;
  c.threads = 2;
  c.layout[Axis::dp] = dp;
  c.expert_parallel = ep;
  c.accum = accum;
  return c;
}

std::int64_t independent_drop_count(const MixtureOfExperts::Routing& r, int experts, int top_k) {
  std::vector<int> taken(static_cast<std::size_t>(experts), 0);
  std::int64_t dropped = 0;
  for (int j = 0; j < top_k; ++j)
    for (int n = 0; n < r.rows; ++n)
      if (taken[static_cast<std::size_t>(r.choice[static_cast<std::size_t>(n * top_k + j)])]++ >= r.capacity) ++dropped;
  return dropped;
}

}  // namespace

// 20 steps of dp ranks in ep groups (ZeRO stage zero_stage) against one rank.
static void compare_with_one_rank(int dp, int ep, Precision precision, int zero_stage);

class TestExpertParallel : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void matches_one_rank_data();
  void matches_one_rank();
  void matches_one_rank_zero1_data();
  void matches_one_rank_zero1();
  void all_to_all_moves_the_routed_rows();
  void ranks_hold_their_experts_only();
  void layouts_it_cannot_split_are_refused();
};

void TestExpertParallel::matches_one_rank_data() {
  QTest::addColumn<int>("ep");
  QTest::addColumn<int>("dp");
  QTest::addColumn<QString>("precision");
  QTest::newRow("ep 2 (dp 2)") << 2 << 2 << "fp32";
  QTest::newRow("ep 4 (dp 4)") << 4 << 4 << "fp32";
  QTest::newRow("dp 4 x ep 2") << 2 << 4 << "fp32";
  QTest::newRow("dp 4 x ep 2 fp16") << 2 << 4 << "fp16";
}

// 20 steps: dp ranks in groups of ep, each micro-batch's experts computed across
// its group, each rank holding E/ep experts (their gradients averaged over the
// dp/ep ranks holding them), against one rank accumulating the same dp micro-batches.
void TestExpertParallel::matches_one_rank() {
  QFETCH(int, ep);
  QFETCH(int, dp);
  QFETCH(QString, precision);
  compare_with_one_rank(dp, ep, parse_precision(qPrintable(precision)), 0);
}

void TestExpertParallel::matches_one_rank_zero1_data() {
  QTest::addColumn<int>("ep");
  QTest::addColumn<int>("dp");
  QTest::newRow("dp 2 x ep 2 ZeRO-1") << 2 << 2;
  QTest::newRow("dp 4 x ep 2 ZeRO-1") << 2 << 4;
}

// ZeRO-1 under expert parallelism: the dense parameters' AdamW states sharded
// over the dp ranks, the experts' over the ranks holding the same experts
// (parallel/zero_expert_parallel.h); the same losses as one rank.
void TestExpertParallel::matches_one_rank_zero1() {
  QFETCH(int, ep);
  QFETCH(int, dp);
  compare_with_one_rank(dp, ep, Precision::fp32, 1);
}

static void compare_with_one_rank(int dp, int ep, Precision precision, int zero_stage) {
  RunConfig one = moe_config(1, 1, dp), many = moe_config(dp, ep, 1);
  one.precision = many.precision = precision;
  many.zero_stage = zero_stage;
  // One DDP bucket: the dense gradients are averaged after backward in one ring,
  // whatever the layout's split into buckets. Top-k routing is discontinuous: a
  // near tie flips on the last bit of a logit. The ranks sum gradients in another
  // order than one rank accumulating (ring all-reduce, the experts' rows gathered
  // from several ranks), so the weights differ in their last bits, and a near tie
  // can route one choice elsewhere late in the run (ep 4: the 0.5 MiB buckets'
  // order of summation at step 13, and again once the small-T attention kernel
  // changed the rounding: loss 1.3e-4 from then on). So the figures are compared up
  // to the first step whose routing (each expert's kept choices, the drops) differs,
  // and that step must come late: a bug routes differently from the start.
  many.bucket_mb = 100;
  const double tolerance =
      many.precision == Precision::fp32 ? 2e-5 : 5e-3;  // 16 bits: test_mixed_training's fp16 tolerance, on the losses
  const Trace single = moe_trace_of(one);
  const Trace split = moe_trace_of(many);
  QCOMPARE(split.losses.size(), std::size_t{20});
  QCOMPARE(single.routing.size(), std::size_t{20});
  std::size_t same_routing = 0;  // steps before the first routing difference
  while (same_routing < 20 && split.routing[same_routing] == single.routing[same_routing] &&
         split.dropped[same_routing] == single.dropped[same_routing])
    ++same_routing;
  const bool fp32 = many.precision == Precision::fp32;
  if (fp32) {
    QVERIFY2(same_routing >= 10,
             qPrintable(QString("routing differs from one rank's at step %1").arg(same_routing + 1)));
    if (same_routing < 20)
      qInfo("%s: a choice routed elsewhere at step %zu (a near tie): compared over the %zu steps before it",
            QTest::currentDataTag(), same_routing + 1, same_routing);
  }
  const std::size_t compared = fp32 ? same_routing : 20;
  const double loss_error = worst_relative_difference(split.losses, single.losses, compared);
  const double norm_error = worst_relative_difference(split.norms, single.norms, compared);
  const double aux_error = worst_relative_difference(split.aux, single.aux, compared);
  std::int64_t dropped = 0;
  for (std::int64_t d : single.dropped) dropped += d;
  qInfo(
      "%s: worst relative difference over %zu steps: loss %.3g, gradient norm %.3g, aux loss %.3g; "
      "loss %.4f -> %.4f, aux loss %.4f -> %.4f, %lld choices dropped in all",
      QTest::currentDataTag(), compared, loss_error, norm_error, aux_error, split.losses.front(), split.losses.back(),
      split.aux.front(), split.aux.back(), static_cast<long long>(dropped));
  QVERIFY2(loss_error < tolerance, qPrintable(QString::number(loss_error)));
  if (fp32) {
    QVERIFY2(norm_error < 2e-5, qPrintable(QString::number(norm_error)));
    QVERIFY2(aux_error < 2e-5, qPrintable(QString::number(aux_error)));
    // each micro-batch drops what it drops on one rank (checked above, up to a late near tie)
  }
  QVERIFY(split.losses.back() < split.losses.front() - 0.3);
}

// dp 2 x ep 2, one step: per MoE layer a rank sends the other the rows of its
// kept choices for the other's experts (dispatch; backward: their outputs'
// gradients) and the outputs of its experts for the other's rows (combine;
// backward: their inputs' gradients), C floats each, plus the E/ep row counts.
void TestExpertParallel::all_to_all_moves_the_routed_rows() {
  RunConfig c = moe_config(2, 2, 1);
  c.steps = 1;
  test::CollectingSink sink;
  Trainer trainer(c, &sink);
  std::vector<StepMetrics> steps;
  trainer.run([&](const StepMetrics& m) { steps.push_back(m); });
  std::map<std::tuple<int, int, int>, std::int64_t> sent;  // (src, dst, unit) -> bytes
  for (const Event& e : sink.events())
    if (e.kind == EventKind::comm_span && e.op == CommOp::send && e.unit >= 1 && e.unit <= 4 &&
        e.purpose == CommPurpose::expert_parallel)
      sent[{e.src, e.dst, e.unit}] += e.bytes;
  const int C = 128, experts_per_rank = 2;
  std::int64_t dropped = 0;
  for (int src = 0; src < 2; ++src) {
    const MixtureOfExperts& moe = *trainer.model(src).mixture_of_experts();
    for (int l = 0; l < 4; ++l) {
      const MixtureOfExperts::Routing& r = moe.routing(l);
      dropped += independent_drop_count(r, 4, 2);
      const int dst = 1 - src;
      const MixtureOfExperts::Routing& back = trainer.model(dst).mixture_of_experts()->routing(l);
      // Rows src sends dst's experts (dispatch, and their outputs' gradients in backward), and rows
      // dst sent src's experts (their outputs in combine, their inputs' gradients in backward).
      const std::int64_t rows = r.expert_begin[static_cast<std::size_t>((dst + 1) * experts_per_rank)] -
                                r.expert_begin[static_cast<std::size_t>(dst * experts_per_rank)];
      const std::int64_t rows_back = back.expert_begin[static_cast<std::size_t>((src + 1) * experts_per_rank)] -
                                     back.expert_begin[static_cast<std::size_t>(src * experts_per_rank)];
      const std::int64_t expected = 4 * (2 * (rows + rows_back) * C + experts_per_rank);
      const std::int64_t measured = sent[{src, dst, 1 + l}];
      QVERIFY2(measured == expected, qPrintable(QString("rank %1 -> %2, layer %3: %4 bytes, formula %5 (%6 rows)")
                                                    .arg(src)
                                                    .arg(dst)
                                                    .arg(l)
                                                    .arg(measured)
                                                    .arg(expected)
                                                    .arg(rows)));
      if (l == 0)
        qInfo("rank %d -> rank %d, layer 0: %lld rows out, %lld back, %lld bytes = 4 (2 (out + back) C + E/ep)", src,
              dst, static_cast<long long>(rows), static_cast<long long>(rows_back), static_cast<long long>(measured));
    }
  }
  QCOMPARE(sent.size(), std::size_t{2 * 4});  // both directions, 4 MoE layers, nothing else
  QCOMPARE(steps.back().moe->dropped, dropped);
}

// Each rank stores its E/ep experts of every MoE layer, the rest whole: parameters,
// gradients and AdamW's two moments of (Ψ − Ψ_experts + Ψ_experts / ep) floats.
void TestExpertParallel::ranks_hold_their_experts_only() {
  const ModelConfig model = find_model_preset("gpt-tiny-moe");
  const std::int64_t whole = analytic_parameter_count(model);
  std::int64_t experts = 0;
  const ParameterLayout layout(model);
  for (const ParameterEntry& e : layout.entries()) experts += e.expert ? e.numel : 0;
  QCOMPARE(experts, std::int64_t{model.layers} * model.experts * (8LL * 128 * 128 + 5 * 128));
  RunConfig c = moe_config(4, 2, 1);
  c.steps = 1;
  Trainer trainer(c);
  trainer.step();
  for (int r = 0; r < 4; ++r) {
    QCOMPARE(trainer.model(r).parameter_count(), whole - experts + experts / 2);
    QCOMPARE(trainer.ledger(r).peak()[MemoryCategory::optimizer_states], 8 * (whole - experts + experts / 2));
    QCOMPARE(trainer.model(r).layout().find("layer0.mlp.experts.fc.weight").shape[0], 2);
  }
  // Ranks 0 and 2 hold experts 0 and 1, ranks 1 and 3 experts 2 and 3: the same values where they hold the same.
  const auto first_weight = [&](int r) {
    const ParameterEntry& e = trainer.model(r).layout().find("layer0.mlp.experts.fc.weight");
    return trainer.model(r).params()[e.offset];
  };
  QCOMPARE(first_weight(0), first_weight(2));
  QCOMPARE(first_weight(1), first_weight(3));
  QVERIFY(first_weight(0) != first_weight(1));
}

void TestExpertParallel::layouts_it_cannot_split_are_refused() {
  auto refused = [](RunConfig c, const char* fragment) {
    try {
      Trainer t(c);
      QFAIL(qPrintable(QString("accepted a config that should fail with '%1'").arg(fragment)));
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find(fragment) != std::string::npos, e.what());
    }
  };
  RunConfig c = moe_config(3, 3, 1);
  c.batch = 9;
  refused(c, "--ep 3: the 4 experts of gpt-tiny-moe do not split over 3 expert-parallel ranks");
  refused(moe_config(2, 4, 1), "--ep 4 does not divide --dp 2");
  c = moe_config(2, 2, 1);
  c.model = "gpt-tiny";
  refused(c, "--ep 2 needs a mixture-of-experts model; gpt-tiny has no experts");
  c = moe_config(4, 2, 1);
  c.zero_stage = 2;
  refused(c, "--ep 2 with --zero 2 is not built yet");
}

QTEST_GUILESS_MAIN(TestExpertParallel)
#include "test_expert_parallel.moc"
