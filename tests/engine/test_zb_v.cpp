// SPDX-License-Identifier: GPL-3.0-or-later
// ZB-V (Qi et al. 2024, sec. 6): two model chunks per stage in a V, stage r
// holding chunks r and 2p − 1 − r, the backward split into B and W. The lists
// are checked on their own (every action once, FIFO channels, the simulator
// finishes them, activations in flight), then trained: the losses are GPipe's,
// and each stage holds as many (chunk, micro-batch) activations as the lists say.
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/cli_runner.h"
#include "clock/pipeline_bubble.h"
#include "clock/schedule_summary.h"
#include "clock/zb_v_bubble.h"
#include "config/run_config.h"
#include "core/error.h"
#include "engine/collecting_sink.h"
#include "engine/parallel_equivalence.h"
#include "engine/settled_measurement.h"
#include "estimate/memory_model.h"
#include "plan/pipeline_schedule.h"
#include "plan/run_plan.h"
#include "plan/schedule_file.h"
#include "plan/sharding_plan.h"
#include "plan/zb_v_schedule.h"
#include "train/trainer.h"

using namespace shardscope;
using shardscope::test::CollectingSink;
using shardscope::testing::first_miss;
using shardscope::testing::first_settled_measurement;
using shardscope::testing::losses_of;
using shardscope::testing::short_pipeline_run;
using Type = PipelineAction::Type;

namespace {

constexpr auto kZbV = PipelineScheduleKind::zb_v;

// The same run under GPipe and ZB-V: fp32 losses within 2e-5 relative.
void compare_with_gpipe(RunConfig c, const QString& what) {
  c.schedule = PipelineScheduleKind::gpipe;
  const std::vector<float> gpipe = losses_of(c);
  c.schedule = kZbV;
  const std::vector<float> v = losses_of(c);
  QCOMPARE(v.size(), gpipe.size());
  for (std::size_t i = 0; i < gpipe.size(); ++i)
    QVERIFY2(std::abs(v[i] - gpipe[i]) <= 2e-5f * std::abs(gpipe[i]),
             qPrintable(QString("%1 step %2: %3 vs gpipe %4").arg(what).arg(i).arg(v[i]).arg(gpipe[i])));
  QVERIFY2(gpipe.back() < gpipe.front(), qPrintable(what + ": it learns"));
}

void refused(const RunConfig& c, const char* fragment) {
  try {
    validate_run_config(c);
    QFAIL(qPrintable(QString("accepted a config that should fail with '%1'").arg(fragment)));
  } catch (const ConfigError& e) {
    QVERIFY2(std::string(e.what()).find(fragment) != std::string::npos, e.what());
  }
}

// (sender, receiver) -> the messages in the order one end posts or reads them.
using Channels = std::map<std::pair<int, int>, std::vector<std::tuple<bool, int>>>;

}  // namespace

class TestZbV : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void every_chunk_runs_f_b_w_once_in_micro_batch_order();
  void both_ends_of_a_channel_agree_on_its_order();
  void the_simulator_runs_the_lists_and_counts_their_activations();
  void the_v_places_its_chunks();
  void micro_batch_rules_are_refused_by_name();
  void losses_equal_gpipe_on_gpt();
  void losses_equal_gpipe_on_bert();
  void losses_equal_gpipe_with_ddp_and_zero1();
  void activations_in_flight_are_the_simulators();
  void unbuilt_combinations_are_refused_by_name();
  void the_cli_prints_and_trains_it();
  void measured_bubbles_at_pp4_m8_are_the_formulas();
  void the_example_file_is_the_built_in_schedule();
  void a_v_schedule_file_trains();
};

void TestZbV::every_chunk_runs_f_b_w_once_in_micro_batch_order() {
  for (int p = 2; p <= 6; ++p)
    for (int m = 2 * p - 1; m <= 2 * p + 5; ++m) {
      const PipelineSchedule schedule = make_pipeline_schedule(kZbV, p, m);
      for (const auto& list : schedule) {
        std::map<std::pair<Type, int>, int> next;  // (phase, chunk) -> the micro-batch it runs next
        for (const PipelineAction& a : list) {
          if (!is_compute(a)) continue;
          const std::pair<Type, int> key{a.type, a.chunk};
          QCOMPARE(a.micro_batch, next[key]++);
        }
        for (Type t : {Type::forward, Type::backward, Type::weight_gradient})
          for (int c : {0, 1}) QCOMPARE(next[std::pair(t, c)], m);
      }
    }
}

// In-process and MPI channels deliver in order: what stage s sends to stage t
// comes in the order t receives it (else a gradient would land in an activation).
void TestZbV::both_ends_of_a_channel_agree_on_its_order() {
  for (int p = 2; p <= 8; ++p)
    for (int m = 2 * p - 1; m <= 2 * p + 9; ++m) {
      Channels sent, received;
      for (const auto& list : make_pipeline_schedule(kZbV, p, m))
        for (const PipelineAction& a : list) {
          const bool gradient = a.type == Type::send_gradient || a.type == Type::recv_gradient;
          if (a.type == Type::send_activation || a.type == Type::send_gradient)
            sent[{a.stage, a.peer_stage}].emplace_back(gradient, a.micro_batch);
          if (a.type == Type::recv_activation || a.type == Type::recv_gradient)
            received[{a.peer_stage, a.stage}].emplace_back(gradient, a.micro_batch);
          QVERIFY(a.peer_stage != a.stage);  // the V's turn is no transfer
        }
      QVERIFY2(sent == received, qPrintable(QString("p %1 m %2").arg(p).arg(m)));
      // Twice 1F1B's messages: 2 chunks x (p - 1) boundaries x m, each way.
      std::size_t messages = 0;
      for (const auto& [channel, list] : sent) messages += list.size();
      QCOMPARE(int(messages), 2 * 2 * (p - 1) * m);
    }
}

// With T_F = T_B = T_W the V leaves only the pipeline's ends idle; each stage
// holds at most 2p half-stage activations (1F1B's stage 0: p whole ones).
void TestZbV::the_simulator_runs_the_lists_and_counts_their_activations() {
  for (int p = 2; p <= 8; ++p)
    for (int m : {2 * p - 1, 2 * p, 3 * p}) {
      const PipelineSchedule schedule = make_pipeline_schedule(kZbV, p, m);
      const PipelineTimeline t = simulate_pipeline_schedule(schedule, 1, 1, 0.1, 1, ChunkPlacement::v_shape);
      const std::vector<int> peak = peak_in_flight(schedule);
      for (int s = 0; s < p; ++s) {
        QCOMPARE(peak[std::size_t(s)], 2 * p);
        QCOMPARE(peak_in_flight_closed_form(kZbV, p, s, m), 2 * p);
      }
      QVERIFY(t.makespan > 0);
      // Round-robin peers do not fit a V: the simulator names the action.
      QVERIFY_THROWS_EXCEPTION(std::invalid_argument, simulate_pipeline_schedule(schedule, 1, 1, 0, 1));
    }
  const PipelineTimeline equal =
      simulate_pipeline_schedule(make_pipeline_schedule(kZbV, 4, 8), 1, 1, 0, 1, ChunkPlacement::v_shape);
  const PipelineTimeline one_f_one_b =
      simulate_pipeline_schedule(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, 4, 8), 2, 4);
  qInfo("pp 4 x m 8, T_F = T_B = T_W: zb-v bubble %.4f, 1f1b %.4f", equal.bubble_fraction, one_f_one_b.bubble_fraction);
  QVERIFY(equal.bubble_fraction < one_f_one_b.bubble_fraction / 2);
}

// gpt-tiny's 4 layers over pp 2 in a V: stage 0 holds layers 0 and 3, the
// embeddings and the head (one copy of the tied embedding), stage 1 layers 1 and 2.
void TestZbV::the_v_places_its_chunks() {
  RunConfig c = short_pipeline_run("gpt-tiny");
  c.schedule = kZbV;
  const ShardingPlan plan = make_sharding_plan(c);
  const std::string text = stage_parameters_text(plan);
  QVERIFY2(text.find("stage 0 embeddings + layers 0, 3 + head = ") != std::string::npos, text.c_str());
  QVERIFY2(text.find("stage 1 layers 1, 2 = ") != std::string::npos, text.c_str());
  c.schedule = PipelineScheduleKind::gpipe;
  const ShardingPlan gpipe = make_sharding_plan(c);
  const ModelConfig model = run_model_config(c);
  // GPipe's stages hold the tied embedding twice; the V once.
  QCOMPARE(plan.stage(0).parameters() + plan.stage(1).parameters() + std::int64_t(model.vocab) * model.channels,
           gpipe.stage(0).parameters() + gpipe.stage(1).parameters());
  const VPlace turn = *v_place_before(1, 1, 2);
  QCOMPARE(turn.stage, 1);
  QCOMPARE(turn.chunk, 0);
  QVERIFY(!v_place_after(0, 1, 2));
  QVERIFY(!v_place_before(0, 0, 2));
}

void TestZbV::micro_batch_rules_are_refused_by_name() {
  QVERIFY_THROWS_EXCEPTION(ConfigError, make_pipeline_schedule(kZbV, 4, 6));
  QVERIFY_THROWS_EXCEPTION(ConfigError, make_pipeline_schedule(kZbV, 1, 4));
  QVERIFY_THROWS_EXCEPTION(ConfigError, make_pipeline_schedule(kZbV, 2, 4, 2));
  RunConfig c = short_pipeline_run("gpt-tiny");
  c.schedule = kZbV;
  c.micro_batches = 2;
  refused(c, "--schedule zb-v needs --micro-batches at least 2 x --pp - 1 = 3 (got 2)");
  c.micro_batches = 4;
  c.layout[Axis::pp] = 4;
  c.batch = 8;
  c.micro_batches = 8;
  refused(c, "--schedule zb-v: gpt-tiny's 4 layers do not split into 2 x --pp 4 = 8 equal chunks");
}

void TestZbV::losses_equal_gpipe_on_gpt() {
  compare_with_gpipe(short_pipeline_run("gpt-tiny"), "gpt-tiny pp 2 zb-v");
}

void TestZbV::losses_equal_gpipe_on_bert() {
  compare_with_gpipe(short_pipeline_run("bert-mini"), "bert-mini (4 layers) pp 2 zb-v");
}

// dp 2 x pp 2: DDP's buckets start from the last W of the last micro-batch; then ZeRO-1.
void TestZbV::losses_equal_gpipe_with_ddp_and_zero1() {
  for (int zero : {0, 1}) {
    RunConfig c = short_pipeline_run("gpt-tiny");
    c.steps = 12;
    c.layout[Axis::dp] = 2;
    c.micro_batches = 4;
    c.bucket_mb = 0.5;
    c.zero_stage = zero;
    compare_with_gpipe(c, QString("gpt-tiny dp 2 x pp 2 zb-v zero %1").arg(zero));
  }
}

// Walking each stage's boxes (events with the chunk): an F opens a (chunk,
// micro-batch), its W closes it; the most open at once is peak_in_flight, and
// the estimator's simulation of the same layout (estimate --schedule zb-v).
void TestZbV::activations_in_flight_are_the_simulators() {
  RunConfig c = short_pipeline_run("gpt-tiny");
  c.steps = 1;
  c.schedule = kZbV;
  c.batch = 10;
  c.micro_batches = 5;
  CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.step();
  std::map<int, std::vector<Event>> boxes;
  int sends = 0;
  for (const Event& e : sink.events()) {
    if (e.kind == EventKind::comm_span && e.op == CommOp::send) ++sends;
    if (e.kind == EventKind::compute_span && e.layer == -1 &&
        (e.compute == ComputeKind::forward || e.compute == ComputeKind::weight_gradient))
      boxes[e.stage].push_back(e);
  }
  QCOMPARE(sends, 2 * 2 * (2 - 1) * 5);  // twice 1F1B's
  const std::vector<int> expected = peak_in_flight(make_pipeline_schedule(kZbV, 2, 5));
  const MemoryEstimate estimated =
      estimate_memory(model_shape_from_config(run_model_config(c), c.model), settings_for_run(c));
  QCOMPARE(int(boxes.size()), 2);
  for (auto& [stage, list] : boxes) {
    std::stable_sort(list.begin(), list.end(), [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
    std::set<std::pair<int, int>> open;
    std::size_t peak = 0;
    for (const Event& e : list) {
      QVERIFY2(e.chunk == 0 || e.chunk == 1, "the box names its model chunk");
      if (e.compute == ComputeKind::forward)
        open.insert({e.chunk, e.micro_batch});
      else
        QVERIFY(open.erase({e.chunk, e.micro_batch}) == 1);
      peak = std::max(peak, open.size());
    }
    QVERIFY(open.empty());
    QCOMPARE(int(list.size()), 2 * 2 * 5);  // F and W of 2 chunks x 5 micro-batches
    QCOMPARE(int(peak), expected[std::size_t(stage)]);
    QCOMPARE(int(peak), estimated.ranks[std::size_t(stage)].micro_batches_in_flight);  // dp 1: rank = stage
  }
}

void TestZbV::unbuilt_combinations_are_refused_by_name() {
  RunConfig c = short_pipeline_run("gpt-tiny");
  c.schedule = kZbV;
  validate_run_config(c);  // trains
  RunConfig tp = c;
  tp.layout[Axis::tp] = 2;
  validate_run_config(tp);  // trains too (test_tp_pipeline_schedules)
  RunConfig cuda = c;
  cuda.device = "cuda";
  refused(cuda, "--schedule zb-v with --device cuda is not built yet");
  RunConfig fp16 = c;
  fp16.precision = Precision::fp16;
  validate_run_config(fp16);  // the unit gradient stays bound from B to W (test_zero_bubble_mixed)
  RunConfig checkpoint = c;
  checkpoint.checkpoint = true;
  validate_run_config(checkpoint);  // B keeps what W needs (test_zero_bubble_mixed)
  RunConfig v2 = c;
  v2.virtual_stages = 2;
  refused(v2, "--virtual-stages 2 needs --schedule interleaved-1f1b");
}

void TestZbV::the_cli_prints_and_trains_it() {
  const CliResult printed = run_cli({"schedule", "--schedule", "zb-v", "--pp", "4", "--micro-batches", "8"});
  QCOMPARE(printed.code, 0);
  QVERIFY2(printed.out.contains("stage 0: F0 F1 F2 F3 F4 F5 F6 F0.1 B0.1 W0.1"), qPrintable(printed.out));
  QVERIFY2(printed.out.contains("2 chunks per stage in a V"), qPrintable(printed.out));
  const CliResult refused = run_cli({"schedule", "--schedule", "zb-v", "--pp", "4", "--micro-batches", "6"});
  QCOMPARE(refused.code, 2);
  QVERIFY2(refused.err.contains("--micro-batches at least 2 x --pp - 1 = 7 (got 6"), qPrintable(refused.err));
  const CliResult r = run_cli({"train", "--pp", "2", "--micro-batches", "4", "--batch", "8", "--seq", "32",
                               "--schedule", "zb-v", "--steps", "2"});
  QCOMPARE(r.code, 0);
  QVERIFY2(r.out.contains("step 2"), qPrintable(r.out));
}

// Issue 30's check on the virtual clock, pp 4 x m 8, on an 8-layer gpt-tiny
// (tests/fixtures/gpt_tiny_8_layers/config.json: p·v = 2p = 8 chunks):
// interleaved (v 2) idles within 5 points of its formula paced by the
// slowest stage, ZB-V within 8 points of its lists timed with the measured
// boxes (above its floor), and both less than 1F1B. Five flushes (steps 2-6),
// of which the summary takes the median: a flush whose boxes the machine's
// load slowed on the critical path idles up to 3 points more than the others,
// and a whole run up to 7 (settled_measurement.h).
// (ZB-H1 and ZB-H2 against 1F1B at pp 4 x m 8: test_zero_bubble.)
void TestZbV::measured_bubbles_at_pp4_m8_are_the_formulas() {
  const auto summary_of = [](PipelineScheduleKind kind, int v) {
    RunConfig c = short_pipeline_run(SHARDSCOPE_FIXTURES "/gpt_tiny_8_layers/config.json");
    c.batch = 16;
    c.seq = 64;
    c.layout[Axis::pp] = 4;
    c.micro_batches = 8;
    c.schedule = kind;
    c.virtual_stages = v;
    CollectingSink sink;
    Trainer trainer(c, &sink);
    for (int s = 0; s < 6; ++s) trainer.step();
    const std::vector<Event> events = sink.events();
    return *summarize_schedule(events, 1, 4, 8).bubble;
  };
  const QByteArray missed = first_settled_measurement([&] {
    const PipelineBubble f1b = summary_of(PipelineScheduleKind::one_f_one_b, 1);
    const PipelineBubble interleaved = summary_of(PipelineScheduleKind::interleaved_1f1b, 2);
    const PipelineBubble v = summary_of(kZbV, 1);
    const double interleaved_formula = interleaved_bubble_fraction(4, 8, 2);
    const double interleaved_paced = 1.0 - (1.0 - interleaved_formula) / interleaved.slowest_stage;
    // ZB-V's floor holds at T_F = T_B = T_W; with other times its fixed order
    // also waits inside the steady rounds, which the simulator of its lists
    // gives with the slowest stage's measured boxes (paced as the floor is).
    // The run idles more than that: +0.8 to +2.5 points quiet, +1.9 to +6.0
    // under two busy loops. The simulator gives every box the slowest stage's
    // mean and each transfer no time; the V's chunks differ (stage 0's second
    // chunk also runs the head) and it sends twice 1F1B's messages. 8 points:
    // 1F1B's order would idle 30%, 17 above.
    const double simulated =
        simulate_pipeline_schedule(make_pipeline_schedule(kZbV, 4, 8), v.slowest_forward_ns, v.slowest_backward_ns, 0,
                                   v.slowest_weight_ns, ChunkPlacement::v_shape)
            .bubble_fraction;
    const double simulated_paced = 1.0 - (1.0 - simulated) / v.slowest_stage;
    const double floor = zb_v_bubble_fraction(4, 8, v.forward_ns, v.backward_ns, v.weight_ns);
    const QByteArray numbers =
        "idle 1f1b " + QByteArray::number(f1b.idle) + ", interleaved " + QByteArray::number(interleaved.idle) +
        " (formula " + QByteArray::number(interleaved_formula) + ", paced " + QByteArray::number(interleaved_paced) +
        "), zb-v " + QByteArray::number(v.idle) + " (floor " + QByteArray::number(floor) + ", paced " +
        QByteArray::number(zb_v_bubble_paced(v)) + ", its lists simulated and paced " +
        QByteArray::number(simulated_paced) + ", slowest stage " + QByteArray::number(v.slowest_stage_index) + " " +
        QByteArray::number(v.slowest_stage) + "x; T_F " + QByteArray::number(v.forward_ns / 1e6) + " ms, T_B " +
        QByteArray::number(v.backward_ns / 1e6) + " ms, T_W " + QByteArray::number(v.weight_ns / 1e6) + " ms)";
    qInfo("%s", numbers.constData());
    return first_miss({{v.virtual_stages == 2 && interleaved.virtual_stages == 2, "2 chunks per stage"},
                       {std::abs(interleaved.idle - interleaved_paced) < 0.05, "interleaved within 5 points"},
                       {std::abs(v.idle - simulated_paced) < 0.08, "zb-v within 8 points of its lists"},
                       {v.idle > floor, "zb-v above its floor"},
                       {v.idle < f1b.idle && interleaved.idle < f1b.idle, "both below 1f1b"}},
                      numbers);
  });
  QVERIFY2(missed.isEmpty(), missed.constData());
}

// resources/examples/schedules/zb_v_pp4_m8.csv: torch's "v" stages (rank r:
// stages r and 2p − 1 − r), read back as the built-in lists, transfers and all.
void TestZbV::the_example_file_is_the_built_in_schedule() {
  const ScheduleFile file =
      load_schedule_file(SHARDSCOPE_FIXTURES "/../../resources/examples/schedules/zb_v_pp4_m8.csv");
  QVERIFY(file.placement == ChunkPlacement::v_shape);
  QCOMPARE(file.virtual_stages, 2);
  QVERIFY(file.schedule == make_pipeline_schedule(kZbV, 4, 8));
}

// The built-in pp 2 x m 4 lists written as a CSV train to the built-in's
// losses bit for bit with --schedule zb-v; without it the file is refused by name.
void TestZbV::a_v_schedule_file_trains() {
  const int p = 2, m = 4;
  QByteArray csv;
  for (const auto& list : compute_only(make_pipeline_schedule(kZbV, p, m))) {
    for (const PipelineAction& a : list)
      csv += QByteArray::number(a.chunk == 0 ? a.stage : 2 * p - 1 - a.stage) +
             (a.type == Type::forward    ? "F"
              : a.type == Type::backward ? "I"
                                         : "W") +
             QByteArray::number(a.micro_batch) + ",";
    csv += "\n";
  }
  QTemporaryDir dir;
  const QString path = dir.filePath("zb_v_pp2_m4.csv");
  QFile out(path);
  QVERIFY(out.open(QIODevice::WriteOnly));
  out.write(csv);
  out.close();
  RunConfig built_in = short_pipeline_run("gpt-tiny");
  built_in.steps = 8;
  built_in.schedule = kZbV;
  RunConfig from_file = built_in;
  from_file.schedule_file = path.toStdString();
  QCOMPARE(losses_of(from_file), losses_of(built_in));
  from_file.schedule = PipelineScheduleKind::one_f_one_b;
  try {
    make_run_plan(from_file);
    QFAIL("a V file trained without --schedule zb-v");
  } catch (const ConfigError& e) {
    QVERIFY2(std::string(e.what()).find("places two chunks per rank in a V (rank r: stages r and 2p - 1 - r): give "
                                        "--schedule zb-v") != std::string::npos,
             e.what());
  }
}

QTEST_GUILESS_MAIN(TestZbV)
#include "test_zb_v.moc"
