// SPDX-License-Identifier: GPL-3.0-or-later
// Interleaved 1F1B (Narayanan et al. 2021, Megatron-LM): v model chunks per
// stage, virtual stage c·p + s. Its action lists run every (chunk,
// micro-batch) forward once before its backward, cannot hang under NCCL's
// rendezvous, leave the bubble (p-1)/(v·m + p-1) on the simulator's clock,
// send v times 1F1B's point-to-point messages, and hold the activations the
// closed form says; the rules around it are refused by name.
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/cli_runner.h"
#include "clock/pipeline_bubble.h"
#include "config/run_config.h"
#include "core/error.h"
#include "engine/collecting_sink.h"
#include "engine/schedule_csv.h"
#include "plan/pipeline_schedule.h"
#include "plan/run_plan.h"
#include "plan/schedule_file.h"
#include "train/trainer.h"

using namespace shardscope;
using Type = PipelineAction::Type;

namespace {

constexpr auto kInterleaved = PipelineScheduleKind::interleaved_1f1b;

// The shapes Megatron's rule allows (m a multiple of p), small enough to run all.
std::vector<std::tuple<int, int, int>> shapes() {
  std::vector<std::tuple<int, int, int>> result;
  for (int p = 2; p <= 6; ++p)
    for (int v = 2; v <= 4; ++v)
      for (int m = p; m <= 4 * p; m += p) result.emplace_back(p, m, v);
  return result;
}

QByteArray where(int p, int m, int v) {
  return "p=" + QByteArray::number(p) + " m=" + QByteArray::number(m) + " v=" + QByteArray::number(v);
}

int point_to_point_messages(const PipelineSchedule& schedule) {
  int sends = 0;
  for (const auto& list : schedule)
    for (const auto& a : list) sends += a.type == Type::send_activation || a.type == Type::send_gradient;
  return sends;
}

RunConfig interleaved_config() {
  RunConfig c;
  c.model = "gpt-tiny";  // 4 layers: pp 2 x v 2 chunks of one layer
  c.batch = 8;
  c.seq = 32;
  c.layout[Axis::pp] = 2;
  c.micro_batches = 4;
  c.schedule = kInterleaved;
  c.virtual_stages = 2;
  return c;
}

void refused(const RunConfig& c, const char* fragment) {
  try {
    validate_run_config(c);
    QFAIL(qPrintable(QString("accepted a config that should fail with '%1'").arg(fragment)));
  } catch (const ConfigError& e) {
    QVERIFY2(std::string(e.what()).find(fragment) != std::string::npos, e.what());
  }
}

}  // namespace

class TestInterleavedSchedule : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void every_chunk_runs_each_micro_batch_forward_then_backward();
  void megatrons_order_on_two_stages();
  void cannot_hang_under_nccl_rendezvous();
  void bubble_is_p_minus_1_over_v_m_plus_p_minus_1();
  void sends_v_times_one_f_one_bs_messages();
  void peak_in_flight_matches_the_closed_form();
  void rules_are_refused_by_name();
  void the_schedule_command_prints_it();
  void a_schedule_file_is_the_schedule_it_writes();
  void a_bad_schedule_file_is_refused_naming_rank_and_action();
  void a_schedule_file_trains();
  void a_run_keeps_the_schedule_file_it_planned();
  void the_example_files_are_the_built_in_schedules();
};

void TestInterleavedSchedule::every_chunk_runs_each_micro_batch_forward_then_backward() {
  for (auto [p, m, v] : shapes()) {
    const PipelineSchedule schedule = make_pipeline_schedule(kInterleaved, p, m, v);
    QCOMPARE(int(schedule.size()), p);
    for (int s = 0; s < p; ++s) {
      std::map<std::tuple<int, int, int>, int> at;  // (phase, chunk, micro-batch) -> position
      const auto& list = schedule[std::size_t(s)];
      for (int i = 0; i < int(list.size()); ++i)
        if (is_compute(list[std::size_t(i)])) {
          const PipelineAction& a = list[std::size_t(i)];
          QVERIFY2(a.type != Type::weight_gradient, where(p, m, v));
          QVERIFY2(at.emplace(std::tuple{int(a.type), a.chunk, a.micro_batch}, i).second, where(p, m, v));
        }
      QCOMPARE(int(at.size()), 2 * v * m);
      for (int c = 0; c < v; ++c)
        for (int j = 0; j < m; ++j)
          QVERIFY2(at.at({int(Type::forward), c, j}) < at.at({int(Type::backward), c, j}), where(p, m, v));
    }
  }
}

// p 2, m 4, v 2: stage 1 warms up with (v-1)p = 2 forwards, stage 0 with
// 2(p-1) + 2 = 4: micro-batches 0 and 1 through chunk 0, then through chunk 1;
// backwards come in reverse chunk order. Chunk 1 of stage 0 receives from
// stage 1 (its chunk 0), round the ring.
void TestInterleavedSchedule::megatrons_order_on_two_stages() {
  const PipelineSchedule schedule = make_pipeline_schedule(kInterleaved, 2, 4, 2);
  const std::string text = format_pipeline_schedule(schedule);
  QVERIFY2(text.find("stage 0: F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3\n") != std::string::npos,
           text.c_str());
  QVERIFY2(text.find("stage 1: F0 F1 F0.1 B0.1 F1.1 B1.1 F2 B0 F3 B1 F2.1 B2.1 F3.1 B3.1 B2 B3\n") != std::string::npos,
           text.c_str());
  const std::string with = format_pipeline_schedule(schedule, true);
  QVERIFY2(with.find("recvA0.1<-s1 F0.1 sendA0.1->s1") != std::string::npos, with.c_str());
  QVERIFY2(with.find("recvG0.1<-s0") == std::string::npos, with.c_str());  // the model's end: the loss
}

void TestInterleavedSchedule::cannot_hang_under_nccl_rendezvous() {
  QByteArray hangs;
  for (auto [p, m, v] : shapes()) {
    const std::string problem = pipeline_schedule_rendezvous_problem(make_pipeline_schedule(kInterleaved, p, m, v));
    if (!problem.empty()) hangs += where(p, m, v) + ": " + QByteArray::fromStdString(problem) + "\n";
  }
  QVERIFY2(hangs.isEmpty(), hangs);
}

// Each action is one chunk, 1/v of a stage's layers: with equal chunk times
// the fill and drain last (p-1)(t_f + t_b) beside v·m(t_f + t_b) of work.
void TestInterleavedSchedule::bubble_is_p_minus_1_over_v_m_plus_p_minus_1() {
  for (auto [p, m, v] : shapes())
    for (double tb : {1.0, 2.0}) {
      const PipelineTimeline t = simulate_pipeline_schedule(make_pipeline_schedule(kInterleaved, p, m, v), 1.0, tb);
      const double formula = interleaved_bubble_fraction(p, m, v);
      QVERIFY2(std::abs(t.bubble_fraction - formula) < 1e-12,
               where(p, m, v) + " tb=" + QByteArray::number(tb) + ": simulated " +
                   QByteArray::number(t.bubble_fraction) + ", formula " + QByteArray::number(formula));
      QVERIFY2(t.bubble_fraction < gpipe_bubble_fraction(p, m), where(p, m, v));
    }
  QCOMPARE(interleaved_bubble_fraction(4, 8, 2), 3.0 / 19.0);
}

void TestInterleavedSchedule::sends_v_times_one_f_one_bs_messages() {
  for (auto [p, m, v] : shapes()) {
    const int plain = point_to_point_messages(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, p, m));
    QCOMPARE(plain, 2 * (p - 1) * m);
    // v·p - 1 boundaries between virtual stages, each crossed by m activations and m gradients.
    QCOMPARE(point_to_point_messages(make_pipeline_schedule(kInterleaved, p, m, v)), 2 * (v * p - 1) * m);
    QVERIFY2(point_to_point_messages(make_pipeline_schedule(kInterleaved, p, m, v)) > (v - 1) * plain, where(p, m, v));
  }
  // Per stage the count is exactly v times: every stage sends its own m per chunk both ways.
  const PipelineSchedule interleaved = make_pipeline_schedule(kInterleaved, 4, 8, 2);
  QCOMPARE(point_to_point_messages({interleaved[1]}),
           2 * point_to_point_messages({make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, 4, 8)[1]}));
}

void TestInterleavedSchedule::peak_in_flight_matches_the_closed_form() {
  for (auto [p, m, v] : shapes()) {
    const PipelineSchedule schedule = make_pipeline_schedule(kInterleaved, p, m, v);
    const std::vector<int> peak = peak_in_flight(schedule);
    QCOMPARE(simulate_pipeline_schedule(schedule, 1, 2).peak_micro_batches_in_flight, peak);
    for (int s = 0; s < p; ++s) QCOMPARE(peak[std::size_t(s)], peak_in_flight_closed_form(kInterleaved, p, s, m, v));
  }
  // p 4, m 8, v 2: stage s holds 2(p-s-1) + (v-1)p + 1 chunks' activations,
  // each a chunk of half the layers: 1F1B's first stage holds 4 whole-stage ones.
  QCOMPARE(peak_in_flight(make_pipeline_schedule(kInterleaved, 4, 8, 2)), (std::vector<int>{11, 9, 7, 5}));
}

void TestInterleavedSchedule::rules_are_refused_by_name() {
  RunConfig c = interleaved_config();
  validate_run_config(c);  // trains (test_interleaved_training)
  c.layout[Axis::tp] = 2;
  validate_run_config(c);  // tensor parallelism composes with it (test_tp_pipeline_schedules)
  c = interleaved_config();
  c.micro_batches = 3;
  c.batch = 6;
  refused(c, "--schedule interleaved-1f1b needs --micro-batches a multiple of --pp (got 3 and 2)");
  c = interleaved_config();
  c.virtual_stages = 1;
  refused(c, "--schedule interleaved-1f1b needs --virtual-stages 2 or more");
  c = interleaved_config();
  c.virtual_stages = 4;
  refused(c, "gpt-tiny's 4 layers do not split into --pp 2 x --virtual-stages 4 = 8 equal chunks");
  c = interleaved_config();
  c.schedule = PipelineScheduleKind::one_f_one_b;
  refused(c, "--virtual-stages 2 needs --schedule interleaved-1f1b (1f1b holds one model chunk per stage)");
  QCOMPARE(parse_pipeline_schedule_kind("interleaved-1f1b"), kInterleaved);
  QVERIFY_THROWS_EXCEPTION(ConfigError, make_pipeline_schedule(kInterleaved, 4, 6, 2));
  QVERIFY_THROWS_EXCEPTION(ConfigError, make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, 4, 8, 2));
}

void TestInterleavedSchedule::the_schedule_command_prints_it() {
  const CliResult r = run_cli(
      {"schedule", "--pp", "4", "--micro-batches", "8", "--schedule", "interleaved-1f1b", "--virtual-stages", "2"});
  QCOMPARE(r.code, 0);
  QVERIFY2(r.out.contains("stage 0: F0 F1 F2 F3 F0.1 F1.1 F2.1 F3.1 F4 F5 F6 B0.1 F7 B1.1"), qPrintable(r.out));
  QVERIFY2(r.out.contains("interleaved formula (p-1)/(v·m+p-1) = 15.8%"), qPrintable(r.out));
  QVERIFY2(r.out.contains("bubble 15.8%"), qPrintable(r.out));
  QVERIFY2(r.out.contains("micro-batches held at once per stage: 11 9 7 5"), qPrintable(r.out));
  const CliResult bad = run_cli(
      {"schedule", "--pp", "4", "--micro-batches", "6", "--schedule", "interleaved-1f1b", "--virtual-stages", "2"});
  QCOMPARE(bad.code, 2);
  QVERIFY2(bad.err.contains("--micro-batches a multiple of --pp (got 6 and 4)"), qPrintable(bad.err));
  const CliResult train = run_cli({"train", "--pp", "2", "--micro-batches", "2", "--schedule", "interleaved-1f1b",
                                   "--virtual-stages", "2", "--steps", "1"});
  QCOMPARE(train.code, 0);  // trains: test_interleaved_training
  const CliResult estimate =
      run_cli({"estimate", "--pp", "2", "--micro-batches", "4", "--schedule", "interleaved-1f1b"});
  QCOMPARE(estimate.code, 2);
  QVERIFY2(estimate.err.contains("--schedule interleaved-1f1b needs --virtual-stages 2 or more (got 1)"),
           qPrintable(estimate.err));
  const CliResult chunks = run_cli(
      {"estimate", "--pp", "2", "--micro-batches", "4", "--schedule", "interleaved-1f1b", "--virtual-stages", "2"});
  QCOMPARE(chunks.code, 0);
  QVERIFY2(chunks.out.contains("(p−1)/(v·m+p−1) = 1/9"), qPrintable(chunks.out));
}

// torch.distributed.pipelining's CSV: a row per rank, {stage}{F|B|I|W}{micro-batch}.
// 1F1B written by hand is make_pipeline_schedule's 1F1B, transfers included;
// interleaving written as its compute actions is the built-in one's.
void TestInterleavedSchedule::a_schedule_file_is_the_schedule_it_writes() {
  const ScheduleFile one = parse_schedule_csv("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n", "1f1b.csv");
  QCOMPARE(one.stages, 2);
  QCOMPARE(one.micro_batches, 2);
  QVERIFY(one.schedule == make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, 2, 2));
  const PipelineSchedule built_in = make_pipeline_schedule(kInterleaved, 2, 4, 2);
  std::string csv;
  for (const auto& list : compute_only(built_in)) {
    for (const auto& a : list)
      csv += std::to_string(a.chunk * 2 + a.stage) + (a.type == Type::forward ? "F" : "B") +
             std::to_string(a.micro_batch) + ",";
    csv += "\n";
  }
  const ScheduleFile interleaved = parse_schedule_csv(csv, "interleaved.csv");
  QCOMPARE(interleaved.virtual_stages, 2);
  QVERIFY(compute_only(interleaved.schedule) == compute_only(built_in));
  QCOMPARE(simulate_pipeline_schedule(interleaved.schedule, 1, 2).bubble_fraction,
           simulate_pipeline_schedule(built_in, 1, 2).bubble_fraction);
  // Split backwards: I, then W later.
  const ScheduleFile split = parse_schedule_csv("0F0, 0F1, 0I0, 0I1, 0W0, 0W1\n1F0,1I0,1F1,1I1,1W0,1W1", "zb.csv");
  QCOMPARE(peak_in_flight(split.schedule), (std::vector<int>{2, 2}));
}

void TestInterleavedSchedule::a_bad_schedule_file_is_refused_naming_rank_and_action() {
  const auto refused = [](const char* csv, const char* fragment) {
    try {
      parse_schedule_csv(csv, "s.csv");
      QFAIL(qPrintable(QString("accepted a file that should fail with '%1'").arg(fragment)));
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find(fragment) != std::string::npos, e.what());
    }
  };
  refused("0F0,0X0\n1F0,1B0", "--schedule-file s.csv: rank 0, action 1 '0X0' is not an action");
  refused("0B0,0F0\n1F0,1B0", "rank 0, action 0 '0B0': runs before the forward 0F0");
  refused("0F0,0B0,0F1,0B1\n1F0,1B0", "rank 1, micro-batch 1 of stage 1 has no forward (F)");
  refused("0F0,1B0\n1F0,1B0", "rank 0, action '1B0': stage 1 is on rank 1");
  refused("0F0,0I0\n1F0,1B0", "rank 0, action 1 '0I0': an input gradient with no W after it");
  refused("0F0,0W0,0I0\n1F0,1B0", "rank 0, action 1 '0W0': a weight gradient before its input gradient 0I0");
  refused("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0", "cannot finish (deadlock)");
  QTemporaryDir dir;
  const QString good = dir.filePath("good.csv"), bad = dir.filePath("bad.csv");
  for (const auto& [path, text] :
       {std::pair{good, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n"}, std::pair{bad, "0F0,0F1,0B0,0B1\n1F0,1B0,1B1\n"}}) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
  }
  const CliResult ok = run_cli({"schedule", "--schedule-file", good});
  QCOMPARE(ok.code, 0);
  QVERIFY2(ok.out.contains("stage 1: F0 B0 F1 B1") && ok.out.contains("p=2, m=2, v=1: modeled step"),
           qPrintable(ok.out));
  const CliResult no = run_cli({"schedule", "--schedule-file", bad});
  QCOMPARE(no.code, 2);
  QVERIFY2(no.err.contains("rank 1, action 2 '1B1': runs before the forward 1F1"), qPrintable(no.err));
}

namespace {
std::vector<float> losses_of(const RunConfig& config) {
  Trainer trainer(config);
  std::vector<float> losses;
  trainer.run([&](const StepMetrics& m) { losses.push_back(m.loss); });
  return losses;
}
}  // namespace

// 1F1B and ZB-H1 written by hand train with the built-in schedules' losses
// bit for bit (the same actions in the same order), and within 2e-5 of
// GPipe's; a file that does not fit the layout, or W's with --checkpoint, are refused.
void TestInterleavedSchedule::a_schedule_file_trains() {
  QTemporaryDir dir;
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 20;
  c.batch = 8;
  c.seq = 32;
  c.lr = 3e-3f;
  c.threads = 2;
  c.layout[Axis::pp] = 2;
  c.micro_batches = 4;
  c.schedule = PipelineScheduleKind::gpipe;
  const std::vector<float> gpipe = losses_of(c);
  for (PipelineScheduleKind kind : {PipelineScheduleKind::one_f_one_b, PipelineScheduleKind::zb_h1}) {
    const QString path = dir.filePath(QString(pipeline_schedule_name(kind)) + ".csv");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(testing::as_csv(make_pipeline_schedule(kind, 2, 4), testing::CsvLineEnd::comma));
    f.close();
    RunConfig built_in = c;
    built_in.schedule = kind;
    RunConfig from_file = c;
    from_file.schedule_file = path.toStdString();
    const std::vector<float> expected = losses_of(built_in), got = losses_of(from_file);
    QCOMPARE(got, expected);
    for (std::size_t i = 0; i < got.size(); ++i)
      QVERIFY2(std::abs(got[i] - gpipe[i]) <= 2e-5f * std::abs(gpipe[i]), pipeline_schedule_name(kind));
    if (kind == PipelineScheduleKind::zb_h1) {
      from_file.checkpoint = true;  // a split backward keeps the linears' inputs for W under checkpointing
      make_run_plan(from_file);
      from_file.layout[Axis::tp] = 2;
      make_run_plan(from_file);  // and with tensor parallelism (test_tp_pipeline_schedules trains it)
    }
  }
  RunConfig wrong = c;
  wrong.layout[Axis::pp] = 4;
  wrong.schedule_file = dir.filePath("1f1b.csv").toStdString();
  try {
    make_run_plan(wrong);
    QFAIL("a 2-row file accepted --pp 4");
  } catch (const ConfigError& e) {
    QVERIFY2(std::string(e.what()).find("has 2 rows (ranks), but --pp is 4") != std::string::npos, e.what());
  }
}

namespace {
// [stage] the forwards and backwards each stage ran, in its order, from the
// stage's compute spans (layer -1; the model's per-layer spans are left out).
PipelineSchedule schedule_that_ran(const std::vector<Event>& events, int stages) {
  PipelineSchedule ran(static_cast<std::size_t>(stages));
  for (const Event& e : events)
    if (e.kind == EventKind::compute_span && e.layer == -1 &&
        (e.compute == ComputeKind::forward || e.compute == ComputeKind::backward))
      ran[static_cast<std::size_t>(e.stage)].push_back(
          {.type = e.compute == ComputeKind::forward ? Type::forward : Type::backward,
           .micro_batch = e.micro_batch,
           .stage = e.stage});
  return ran;
}
}  // namespace

// The plan reads the --schedule-file once and the run takes its lists from the
// plan: the file rewritten as another valid schedule (GPipe) or deleted after
// make_run_plan, the trainer still runs the 1F1B it planned and reads nothing again.
void TestInterleavedSchedule::a_run_keeps_the_schedule_file_it_planned() {
  QTemporaryDir dir;
  const QString path = dir.filePath("planned.csv");
  const auto write = [&](const PipelineSchedule& schedule) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(testing::as_csv(schedule, testing::CsvLineEnd::bare));
  };
  const PipelineSchedule one_f_one_b = make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, 2, 4);
  const PipelineSchedule gpipe = make_pipeline_schedule(PipelineScheduleKind::gpipe, 2, 4);
  QVERIFY(compute_only(one_f_one_b) != compute_only(gpipe));  // the two runs can be told apart
  write(one_f_one_b);
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 1;
  c.batch = 8;
  c.seq = 32;
  c.threads = 2;
  c.layout[Axis::pp] = 2;
  c.micro_batches = 4;
  c.schedule = PipelineScheduleKind::gpipe;  // the file replaces it
  c.schedule_file = path.toStdString();
  const std::int64_t reads = schedule_files_read();
  const RunPlanPtr plan = make_run_plan(c);
  QCOMPARE(schedule_files_read() - reads, std::int64_t{1});
  QVERIFY(plan->pipeline_schedule() == one_f_one_b);
  for (const bool deleted : {false, true}) {
    if (deleted)
      QVERIFY(QFile::remove(path));
    else
      write(gpipe);
    test::CollectingSink sink;
    Trainer trainer(plan, &sink);
    int steps = 0;
    trainer.run([&](const StepMetrics&) { ++steps; });
    QCOMPARE(steps, 1);
    QVERIFY2(schedule_that_ran(sink.events(), 2) == compute_only(one_f_one_b), deleted ? "deleted" : "rewritten");
  }
  QCOMPARE(schedule_files_read() - reads, std::int64_t{1});
}

// resources/examples/schedules: the built-in schedules as files to start from.
void TestInterleavedSchedule::the_example_files_are_the_built_in_schedules() {
  const std::string dir = SHARDSCOPE_FIXTURES "/../../resources/examples/schedules/";
  const auto same = [&](const char* name, const PipelineSchedule& built_in) {
    const ScheduleFile file = load_schedule_file(dir + name);
    QVERIFY2(compute_only(file.schedule) == compute_only(built_in), name);
    QCOMPARE(peak_in_flight(file.schedule), peak_in_flight(built_in));
  };
  same("1f1b_pp4_m8.csv", make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, 4, 8));
  same("zb_h1_pp4_m8.csv", make_pipeline_schedule(PipelineScheduleKind::zb_h1, 4, 8));
  same("interleaved_1f1b_pp4_m8_v2.csv", make_pipeline_schedule(kInterleaved, 4, 8, 2));
}

QTEST_GUILESS_MAIN(TestInterleavedSchedule)
#include "test_interleaved_schedule.moc"
