// SPDX-License-Identifier: GPL-3.0-or-later
// Mixture-of-experts models on pipeline stages: every activation slot keeps
// its own routing of each MoE layer (model/mixture_of_experts.h, set_slots),
// so a stage with several micro-batches in flight backpropagates each through
// the experts it chose. 1F1B, GPipe, interleaved 1F1B, ZB-H1, ZB-H2 and ZB-V,
// with --checkpoint full, with dp × ep inside a stage and with ZeRO-1, train as
// one rank does with the same micro-batches: each micro-batch routes, drops and
// weighs its load-balancing loss alone wherever its layers live. The drops and
// the experts' loads (expert_load events) count each micro-batch once.
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <tuple>
#include <vector>

#include "engine/collecting_sink.h"
#include "engine/moe_trace.h"
#include "model/mixture_of_experts.h"
#include "train/expert_load_events.h"
#include "train/trainer.h"

using namespace shardscope;
using testing::moe_trace_of;
using testing::worst_relative_difference;
using Trace = testing::MoeTrace;

namespace {

// gpt-tiny-moe's shape (4 layers, 4 experts, top-2) as a Hugging Face config.json,
// with capacity factor E / k = 2: an expert has a place for every token of a
// forward, so nothing is dropped. A load-balancing coefficient of 0.1 (10x the
// preset's) makes its gradient, added on the stage holding each layer, weigh.
std::string no_drop_model(const QTemporaryDir& dir) {
  const std::string path = dir.filePath("config.json").toStdString();
  std::ofstream(path) << R"({"model_type": "gpt2", "vocab_size": 260, "n_positions": 256, "n_embd": 128,
    "n_layer": 4, "n_head": 4, "num_local_experts": 4, "num_experts_per_tok": 2, "capacity_factor": 2.0,
    "router_aux_loss_coef": 0.1})";
  return path;
}

RunConfig moe_run(const std::string& model, int dp, int accum, int micro_batches) {
  RunConfig c;
  c.model = model;
  c.steps = 20;
  c.batch = 8;
  c.seq = 32;
  c.lr = 1e-3f;
  c.threads = 1;
  c.layout[Axis::dp] = dp;
  c.accum = accum;
  c.micro_batches = micro_batches;
  c.bucket_mb = 100;  // one DDP bucket: the dense gradients summed in one ring, whatever the layout
  return c;
}

// Steps before the first whose routing (each expert's kept choices, the drops)
// differs. Top-k routing is discontinuous: where the stages sum a gradient in
// another order than one rank (the tied embedding's two copies, a data-parallel
// ring), a near tie may flip late in the run; a bug routes differently from the start.
std::size_t same_routing_steps(const Trace& a, const Trace& b) {
  std::size_t same = 0;
  while (same < a.routing.size() && same < b.routing.size() && a.routing[same] == b.routing[same] &&
         a.dropped[same] == b.dropped[same])
    ++same;
  return same;
}

}  // namespace

class TestMoePipeline : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void schedules_match_one_rank_data();
  void schedules_match_one_rank();
  void data_and_expert_parallel_stages_match_one_rank_data();
  void data_and_expert_parallel_stages_match_one_rank();
  void drops_and_expert_loads_match_one_rank();
  void one_stage_reports_its_own_layers();

 private:
  // The current data row's layout against one rank (the _data functions' rows).
  void compare_with_one_rank();
  QTemporaryDir dir_;
  std::map<std::tuple<int, int>, Trace> one_rank_;  // (accum, precision) -> the one-rank run
};

namespace {
void add_layout_columns() {
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("ep");
  QTest::addColumn<int>("zero");
  QTest::addColumn<QString>("schedule");
  QTest::addColumn<int>("virtual_stages");
  QTest::addColumn<bool>("checkpoint");
  QTest::addColumn<QString>("precision");
}
}  // namespace

// Each schedule on one data-parallel rank.
void TestMoePipeline::schedules_match_one_rank_data() {
  add_layout_columns();
  QTest::newRow("pp 2 1f1b") << 2 << 1 << 1 << 0 << "1f1b" << 1 << false << "fp32";
  QTest::newRow("pp 2 gpipe") << 2 << 1 << 1 << 0 << "gpipe" << 1 << false << "fp32";
  QTest::newRow("pp 2 interleaved v 2") << 2 << 1 << 1 << 0 << "interleaved-1f1b" << 2 << false << "fp32";
  QTest::newRow("pp 2 zb-h1") << 2 << 1 << 1 << 0 << "zb-h1" << 1 << false << "fp32";
  QTest::newRow("pp 2 zb-h2") << 2 << 1 << 1 << 0 << "zb-h2" << 1 << false << "fp32";
  QTest::newRow("pp 2 zb-v") << 2 << 1 << 1 << 0 << "zb-v" << 1 << false << "fp32";
  QTest::newRow("pp 2 checkpoint full") << 2 << 1 << 1 << 0 << "1f1b" << 1 << true << "fp32";
  QTest::newRow("pp 4 1f1b") << 4 << 1 << 1 << 0 << "1f1b" << 1 << false << "fp32";
}

// Data-parallel ranks per stage, an ep group among them, ZeRO-1, 16 bits.
void TestMoePipeline::data_and_expert_parallel_stages_match_one_rank_data() {
  add_layout_columns();
  QTest::newRow("pp 2 x dp 2 x ep 2") << 2 << 2 << 2 << 0 << "1f1b" << 1 << false << "fp32";
  QTest::newRow("pp 2 x dp 2 x ep 2 interleaved checkpoint")
      << 2 << 2 << 2 << 0 << "interleaved-1f1b" << 2 << true << "fp32";
  QTest::newRow("pp 2 x dp 2 x ep 2 zb-h1") << 2 << 2 << 2 << 0 << "zb-h1" << 1 << false << "fp32";
  QTest::newRow("pp 2 x dp 2 ZeRO-1") << 2 << 2 << 1 << 1 << "1f1b" << 1 << false << "fp32";
  QTest::newRow("pp 2 x dp 2 x ep 2 ZeRO-1") << 2 << 2 << 2 << 1 << "1f1b" << 1 << false << "fp32";
  QTest::newRow("pp 2 x dp 2 x ep 2 bf16") << 2 << 2 << 2 << 0 << "1f1b" << 1 << false << "bf16";
  QTest::newRow("pp 2 x dp 2 x ep 2 ZeRO-1 fp16") << 2 << 2 << 2 << 1 << "1f1b" << 1 << false << "fp16";
}

void TestMoePipeline::schedules_match_one_rank() {
  compare_with_one_rank();
}

void TestMoePipeline::data_and_expert_parallel_stages_match_one_rank() {
  compare_with_one_rank();
}

// 20 steps of m 4 micro-batches through the stages against one rank running the
// same micro-batches (accumulating dp x 4 of them): the capacity leaves nothing
// to drop, so every difference is the pipeline's. fp32: losses, gradient norms
// and load-balancing losses within 2e-5; 16 bits: the losses within 5e-3
// (test_mixed_training's tolerance: the stages round the tied embedding's two
// gradients apart, as a dense model's pipeline does).
void TestMoePipeline::compare_with_one_rank() {
  QFETCH(int, pp);
  QFETCH(int, dp);
  QFETCH(int, ep);
  QFETCH(int, zero);
  QFETCH(QString, schedule);
  QFETCH(int, virtual_stages);
  QFETCH(bool, checkpoint);
  QFETCH(QString, precision);
  QVERIFY(dir_.isValid());
  const std::string model = no_drop_model(dir_);
  const Precision bits = parse_precision(qPrintable(precision));
  RunConfig many = moe_run(model, dp, 1, 4);
  many.layout[Axis::pp] = pp;
  many.expert_parallel = ep;
  many.zero_stage = zero;
  many.schedule = parse_pipeline_schedule_kind(qPrintable(schedule));
  many.virtual_stages = virtual_stages;
  many.checkpoint = checkpoint;
  many.precision = bits;
  const auto key = std::make_tuple(dp, static_cast<int>(bits));
  if (!one_rank_.contains(key)) {
    RunConfig one = moe_run(model, 1, dp, 4);
    one.precision = bits;
    one_rank_[key] = moe_trace_of(one);
  }
  const Trace& single = one_rank_[key];
  const Trace split = moe_trace_of(many);
  QCOMPARE(split.losses.size(), std::size_t{20});
  std::int64_t dropped = 0;
  for (std::size_t i = 0; i < 20; ++i) dropped += split.dropped[i] + single.dropped[i];
  QCOMPARE(dropped, std::int64_t{0});  // capacity factor E / k: a place for every choice
  const bool fp32 = bits == Precision::fp32;
  const std::size_t same = same_routing_steps(split, single);
  if (fp32) QVERIFY2(same >= 10, qPrintable(QString("routing differs from one rank's at step %1").arg(same + 1)));
  const std::size_t compared = fp32 ? same : 20;
  const double loss_error = worst_relative_difference(split.losses, single.losses, compared);
  const double norm_error = worst_relative_difference(split.norms, single.norms, compared);
  const double aux_error = worst_relative_difference(split.aux, single.aux, compared);
  qInfo(
      "%s: worst relative difference over %zu steps (routing the same for %zu): loss %.3g, gradient norm %.3g, "
      "aux loss %.3g; loss %.4f -> %.4f",
      QTest::currentDataTag(), compared, same, loss_error, norm_error, aux_error, split.losses.front(),
      split.losses.back());
  QVERIFY2(loss_error < (fp32 ? 2e-5 : 5e-3), qPrintable(QString::number(loss_error)));
  if (fp32) {
    QVERIFY2(norm_error < 2e-5, qPrintable(QString::number(norm_error)));
    QVERIFY2(aux_error < 2e-5, qPrintable(QString::number(aux_error)));
  }
  QVERIFY(split.losses.back() < split.losses.front() - 0.3);
}

// gpt-tiny-moe's own capacity factor 1.25, tight enough to drop: a forward of a
// micro-batch's N tokens gives each expert ceil(1.25 N k / E) places, on one rank
// or on a stage, so the fair comparison is one rank running the same m 4
// micro-batches (not one forward of the whole batch, whose capacity is 4 times
// larger). Each step's drops and the experts' kept choices equal one rank's; the
// expert_load events of a step (per MoE layer and expert: kept, places, made,
// dropped) are one rank's: every micro-batch counted once, by the stage holding the layer.
void TestMoePipeline::drops_and_expert_loads_match_one_rank() {
  const auto loads = [](test::CollectingSink& sink) {
    std::vector<std::tuple<std::int64_t, int, int, std::int64_t, std::int64_t, std::int64_t, std::int64_t>> rows;
    for (const Event& e : sink.events())
      if (e.kind == EventKind::expert_load)
        rows.emplace_back(e.step, e.layer, e.expert, e.expert_tokens, e.expert_capacity, e.routed, e.dropped);
    std::sort(rows.begin(), rows.end());
    return rows;
  };
  for (const int dp : {1, 2}) {
    RunConfig one = moe_run("gpt-tiny-moe", 1, dp, 4), many = moe_run("gpt-tiny-moe", dp, 1, 4);
    one.steps = many.steps = 12;
    many.layout[Axis::pp] = 2;
    many.expert_parallel = dp;
    test::CollectingSink one_sink, many_sink;
    const Trace single = moe_trace_of(one, &one_sink);
    const Trace split = moe_trace_of(many, &many_sink);
    const std::size_t same = same_routing_steps(split, single);
    QVERIFY2(same >= 10, qPrintable(QString("dp %1: drops differ from one rank's at step %2: %3 against %4")
                                        .arg(dp)
                                        .arg(same + 1)
                                        .arg(split.dropped[same])
                                        .arg(single.dropped[same])));
    std::int64_t dropped = 0;
    for (std::size_t i = 0; i < same; ++i) dropped += single.dropped[i];
    QVERIFY(dropped > 0);  // the capacity binds
    const auto one_loads = loads(one_sink), many_loads = loads(many_sink);
    QCOMPARE(one_loads.size(), std::size_t{12 * 4 * 4});  // steps x MoE layers x experts
    QCOMPARE(many_loads.size(), one_loads.size());
    const auto first_differing = std::mismatch(one_loads.begin(), one_loads.end(), many_loads.begin());
    const std::int64_t differing_step =
        first_differing.first == one_loads.end() ? 13 : std::get<0>(*first_differing.first);
    QVERIFY2(differing_step > static_cast<std::int64_t>(same),
             qPrintable(QString("dp %1: the expert_load events differ at step %2").arg(dp).arg(differing_step)));
    qInfo("pp 2 x dp %d%s: drops and expert loads as one rank's over %zu of 12 steps, %lld choices dropped", dp,
          dp > 1 ? " x ep 2" : "", same, static_cast<long long>(dropped));
  }
}

// Ranks as processes report process 0's routing only: on pipeline stages, the
// MoE layers of its stage. The expert_load events made from stage 0's stats alone
// are the whole run's events of layers 0 and 1 (each micro-batch's forward counted
// once), and layers 2 and 3, routed on the other stage, get none.
void TestMoePipeline::one_stage_reports_its_own_layers() {
  RunConfig c = moe_run("gpt-tiny-moe", 1, 1, 4);
  c.steps = 1;
  c.layout[Axis::pp] = 2;
  test::CollectingSink sink;
  Trainer trainer(c, &sink);
  const StepMetrics whole = trainer.step();
  const ModelConfig model = trainer.model(0).config();
  const std::vector<Event> stage0 = expert_load_events(model, *trainer.model(0).moe_stats(), 1, 0);
  std::vector<Event> expected;
  for (const Event& e : sink.events())
    if (e.kind == EventKind::expert_load && e.layer < 2) expected.push_back(e);
  QCOMPARE(expected.size(), std::size_t{2 * 4});
  QCOMPARE(stage0.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    QCOMPARE(stage0[i].layer, expected[i].layer);
    QCOMPARE(stage0[i].expert, expected[i].expert);
    QCOMPARE(stage0[i].expert_tokens, expected[i].expert_tokens);
    QCOMPARE(stage0[i].expert_capacity, expected[i].expert_capacity);
    QCOMPARE(stage0[i].routed, expected[i].routed);
    QCOMPARE(stage0[i].dropped, expected[i].dropped);
  }
  // 4 micro-batches of 2 x 32 tokens: 40 places per forward (ceil(1.25 x 64 x 2 / 4)), 4 forwards.
  QCOMPARE(stage0.front().expert_capacity, std::int64_t{4 * 40});
  QCOMPARE(stage0.front().routed, std::int64_t{4 * 64 * 2});
  QCOMPARE(whole.moe->routed, std::int64_t{4 * 4 * 64 * 2});
}

QTEST_GUILESS_MAIN(TestMoePipeline)
#include "test_moe_pipeline.moc"
