// SPDX-License-Identifier: GPL-3.0-or-later
// Zero-bubble pipelines (Qi et al. 2024): the backward split into B and W gives
// the same gradient bits as the whole backward; ZB-H1 and ZB-H2 are action
// lists that cannot hang, hold the micro-batches the paper says, and leave the
// bubbles its formulas give on the simulator's clock; trained for real, their
// losses are GPipe's, and their W's are events the timeline can draw.
#include <QTest>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "cli/cli_runner.h"
#include "clock/pipeline_bubble.h"
#include "clock/schedule_summary.h"
#include "config/run_config.h"
#include "core/error.h"
#include "core/memory_ledger.h"
#include "engine/collecting_sink.h"
#include "engine/settled_measurement.h"
#include "estimate/memory_model.h"
#include "model/model.h"
#include "ops/backend.h"
#include "plan/pipeline_schedule.h"
#include "train/trainer.h"

using namespace shardscope;
using shardscope::test::CollectingSink;
using Type = PipelineAction::Type;

namespace {

constexpr PipelineScheduleKind kZeroBubble[] = {PipelineScheduleKind::zb_h1, PipelineScheduleKind::zb_h2};

RunConfig base_config() {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 20;
  c.batch = 8;
  c.seq = 32;
  c.lr = 3e-3f;
  c.threads = 2;
  return c;
}

std::vector<float> losses_of(const RunConfig& config) {
  Trainer trainer(config);
  std::vector<float> losses;
  trainer.run([&](const StepMetrics& m) { losses.push_back(m.loss); });
  return losses;
}

// The gradients after two micro-batches of `model_name`, each backward whole
// or split into B and W (both B's first, then both W's, as a schedule may).
std::vector<float> gradients_after_two_micro_batches(const char* model_name, bool split, std::int64_t* kept_bytes) {
  MemoryLedger ledger;
  auto backend = make_cpu_backend({2});
  auto model = make_model(find_model_preset(model_name), *backend, ledger);
  model->init_weights(7);
  model->zero_grads();
  model->set_activation_slots(2);
  const int B = 2, T = 16;
  std::vector<std::int32_t> ids(B * T), targets(B * T);
  for (int mb = 0; mb < 2; ++mb) {
    for (int i = 0; i < B * T; ++i) {
      ids[std::size_t(i)] = (i * 7 + mb * 13) % 60 + 1;
      targets[std::size_t(i)] = (i * 5 + mb * 3) % 60 + 1;
    }
    model->open_slot({0, mb});
    model->forward(Batch{B, T, ids.data(), targets.data(), nullptr, nullptr});
    const std::int64_t before = ledger.current()[MemoryCategory::activations];
    if (split) {
      model->backward_input(2.0 * B * T);
      *kept_bytes = ledger.current()[MemoryCategory::activations] - before;
    } else {
      model->backward(2.0 * B * T);
    }
  }
  if (split)
    for (int mb = 0; mb < 2; ++mb) {
      model->use_slot({0, mb});
      if (!model->weights_pending()) throw std::logic_error("B kept nothing for W");
      model->backward_weights();
      if (model->weights_pending()) throw std::logic_error("W left weight gradients owed");
    }
  return std::vector<float>(model->grads(), model->grads() + model->parameter_count());
}

}  // namespace

class TestZeroBubble : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void split_backward_gives_the_same_gradient_bits();
  void schedules_run_every_phase_once_in_order();
  void schedules_cannot_hang_under_nccl_rendezvous();
  void peak_in_flight_follows_the_paper();
  void bubbles_follow_the_formulas();
  void losses_equal_gpipe();
  void losses_equal_gpipe_with_ddp();
  void weight_gradients_are_events();
  void activations_in_flight_from_events_are_the_estimators();
  void measured_bubble_is_the_formula_paced_by_the_slowest_stage();
  void unbuilt_combinations_are_refused_by_name();
  void the_schedule_command_prints_them();
};

void TestZeroBubble::split_backward_gives_the_same_gradient_bits() {
  for (const char* name : {"gpt-tiny", "bert-tiny"}) {
    std::int64_t kept = 0;
    const std::vector<float> whole = gradients_after_two_micro_batches(name, false, &kept);
    const std::vector<float> split = gradients_after_two_micro_batches(name, true, &kept);
    QCOMPARE(split.size(), whole.size());
    QVERIFY2(std::memcmp(split.data(), whole.data(), whole.size() * sizeof(float)) == 0, name);
    // B keeps each layer's four linear output gradients, 9C floats per token, on the ledger until W.
    const ModelConfig config = find_model_preset(name);
    QCOMPARE(kept, std::int64_t{4} * config.layers * 2 * 16 * 9 * config.channels);
  }
}

void TestZeroBubble::schedules_run_every_phase_once_in_order() {
  for (PipelineScheduleKind kind : kZeroBubble)
    for (int p : {1, 2, 3, 4, 6})
      for (int m : {1, 2, 3, 5, 8, 12}) {
        const PipelineSchedule schedule = make_pipeline_schedule(kind, p, m);
        for (int s = 0; s < p; ++s) {
          std::map<std::pair<int, int>, int> at;  // (phase, micro-batch) -> position
          int last_w = -1;
          const auto& list = schedule[std::size_t(s)];
          for (int i = 0; i < int(list.size()); ++i) {
            if (!is_compute(list[std::size_t(i)])) continue;
            const PipelineAction& a = list[std::size_t(i)];
            QVERIFY(at.emplace(std::pair{int(a.type), a.micro_batch}, i).second);
            if (a.type == Type::weight_gradient) {
              QCOMPARE(a.micro_batch, last_w + 1);  // W's in micro-batch order: W(m-1) makes the step's last gradients
              last_w = a.micro_batch;
            }
          }
          for (int j = 0; j < m; ++j) {
            const int f = at.at({int(Type::forward), j}), b = at.at({int(Type::backward), j});
            QVERIFY(f < b && b < at.at({int(Type::weight_gradient), j}));
          }
          QCOMPARE(int(at.size()), 3 * m);
        }
      }
}

void TestZeroBubble::schedules_cannot_hang_under_nccl_rendezvous() {
  for (PipelineScheduleKind kind : kZeroBubble)
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 16; ++m) {
        const std::string problem = pipeline_schedule_rendezvous_problem(make_pipeline_schedule(kind, p, m));
        QVERIFY2(problem.empty(), qPrintable(QString("%1 p=%2 m=%3: %4")
                                                 .arg(pipeline_schedule_name(kind))
                                                 .arg(p)
                                                 .arg(m)
                                                 .arg(QString::fromStdString(problem))));
      }
}

// ZB-H1 holds min(m, p) on every stage, the most 1F1B holds on any (its first
// stage); ZB-H2 up to 2p - 1. The closed forms (the estimator's, for
// schedules too large to build) agree with the lists.
void TestZeroBubble::peak_in_flight_follows_the_paper() {
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 20; ++m) {
      const std::vector<int> h1 = peak_in_flight(make_pipeline_schedule(PipelineScheduleKind::zb_h1, p, m));
      const std::vector<int> h2 = peak_in_flight(make_pipeline_schedule(PipelineScheduleKind::zb_h2, p, m));
      const std::vector<int> f1b = peak_in_flight(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, p, m));
      QCOMPARE(*std::max_element(h1.begin(), h1.end()), *std::max_element(f1b.begin(), f1b.end()));
      QVERIFY(*std::max_element(h2.begin(), h2.end()) <= 2 * p - 1);
      for (int s = 0; s < p; ++s) {
        QCOMPARE(h1[std::size_t(s)], peak_in_flight_closed_form(PipelineScheduleKind::zb_h1, p, s, m));
        QCOMPARE(h2[std::size_t(s)], peak_in_flight_closed_form(PipelineScheduleKind::zb_h2, p, s, m));
      }
    }
  QCOMPARE(peak_in_flight(make_pipeline_schedule(PipelineScheduleKind::zb_h1, 4, 8)), (std::vector<int>{4, 4, 4, 4}));
  QCOMPARE(peak_in_flight(make_pipeline_schedule(PipelineScheduleKind::zb_h2, 4, 8)), (std::vector<int>{7, 7, 7, 7}));
}

// On the simulator's clock (free transfers), p 4 x m 8: ZB-H1's bubble is its
// formula (p-1)(T_F + T_B - T_W) exactly, ZB-H2's its floor (p-1) T_F (the
// step's ends only); both are below 1F1B's, whose backward is B and W
// together, and 1F1B's equals GPipe's.
void TestZeroBubble::bubbles_follow_the_formulas() {
  const int p = 4, m = 8;
  const auto bubble = [&](PipelineScheduleKind kind, double tf, double tb, double tw) {
    const PipelineSchedule schedule = make_pipeline_schedule(kind, p, m);
    const bool split = kind == PipelineScheduleKind::zb_h1 || kind == PipelineScheduleKind::zb_h2;
    return split ? simulate_pipeline_schedule(schedule, tf, tb, 0, tw).bubble_fraction
                 : simulate_pipeline_schedule(schedule, tf, tb + tw).bubble_fraction;
  };
  for (auto [tf, tb, tw] : {std::tuple{1.0, 1.0, 1.0}, std::tuple{1.0, 2.0, 1.0}, std::tuple{1.0, 1.0, 0.5}}) {
    const double h1 = bubble(PipelineScheduleKind::zb_h1, tf, tb, tw);
    const double h2 = bubble(PipelineScheduleKind::zb_h2, tf, tb, tw);
    const double f1b = bubble(PipelineScheduleKind::one_f_one_b, tf, tb, tw);
    const double gpipe = bubble(PipelineScheduleKind::gpipe, tf, tb, tw);
    const QByteArray where = "T_F " + QByteArray::number(tf) + " T_B " + QByteArray::number(tb) + " T_W " +
                             QByteArray::number(tw) + ": zb-h2 " + QByteArray::number(h2) + " zb-h1 " +
                             QByteArray::number(h1) + " 1f1b " + QByteArray::number(f1b) + " gpipe " +
                             QByteArray::number(gpipe);
    QVERIFY2(std::abs(h1 - zb_h1_bubble_fraction(p, m, tf, tb, tw)) < 1e-12, where);
    QVERIFY2(std::abs(h2 - zb_h2_bubble_fraction(p, m, tf, tb, tw)) < 1e-12, where);  // the parallelogram
    QVERIFY2(h2 <= h1 + 1e-12 && h1 < f1b, where);
    QVERIFY2(std::abs(f1b - gpipe) < 1e-12 && std::abs(gpipe - gpipe_bubble_fraction(p, m)) < 1e-12, where);
  }
  // With B costing twice F and W, ZB-H2 fills the warm-up as well: well below ZB-H1.
  QVERIFY(bubble(PipelineScheduleKind::zb_h2, 1, 2, 1) < 0.6 * bubble(PipelineScheduleKind::zb_h1, 1, 2, 1));
}

// fp32, 20 steps of gpt-tiny: W adds the same gradients in the same
// micro-batch order as a whole backward, so the losses are GPipe's.
void TestZeroBubble::losses_equal_gpipe() {
  struct Case {
    int pp, micro_batches, seq;
    const char* model;
  };
  for (const Case& k : {Case{2, 4, 32, "gpt-tiny"}, Case{4, 8, 16, "gpt-tiny"}, Case{2, 4, 32, "bert-tiny"}}) {
    RunConfig c = base_config();
    c.model = k.model;
    c.layout[Axis::pp] = k.pp;
    c.micro_batches = k.micro_batches;
    c.seq = k.seq;
    c.steps = k.pp == 4 ? 12 : 20;
    c.schedule = PipelineScheduleKind::gpipe;
    const std::vector<float> gpipe = losses_of(c);
    for (PipelineScheduleKind kind : kZeroBubble) {
      c.schedule = kind;
      const std::vector<float> zb = losses_of(c);
      QCOMPARE(zb.size(), gpipe.size());
      for (std::size_t i = 0; i < zb.size(); ++i)
        QVERIFY2(std::abs(zb[i] - gpipe[i]) <= 2e-5f * std::abs(gpipe[i]),
                 qPrintable(QString("%1 %2 pp %3 step %4: %5 vs gpipe %6")
                                .arg(pipeline_schedule_name(kind))
                                .arg(k.model)
                                .arg(k.pp)
                                .arg(i)
                                .arg(zb[i])
                                .arg(gpipe[i])));
    }
  }
}

// dp 2 x pp 2 under DDP, several buckets: the buckets start from W (the last
// micro-batch's) and carry the same sums; and with ZeRO-1 on top.
void TestZeroBubble::losses_equal_gpipe_with_ddp() {
  for (int zero : {0, 1}) {
    RunConfig c = base_config();
    c.layout[Axis::dp] = 2;
    c.layout[Axis::pp] = 2;
    c.micro_batches = 2;
    c.bucket_mb = 0.5;
    c.zero_stage = zero;
    c.schedule = PipelineScheduleKind::gpipe;
    const std::vector<float> gpipe = losses_of(c);
    for (PipelineScheduleKind kind : kZeroBubble) {
      c.schedule = kind;
      const std::vector<float> zb = losses_of(c);
      QCOMPARE(zb.size(), gpipe.size());
      for (std::size_t i = 0; i < zb.size(); ++i)
        QVERIFY2(std::abs(zb[i] - gpipe[i]) <= 2e-5f * std::abs(gpipe[i]),
                 qPrintable(QString("%1 zero %2 step %3: %4 vs %5")
                                .arg(pipeline_schedule_name(kind))
                                .arg(zero)
                                .arg(i)
                                .arg(zb[i])
                                .arg(gpipe[i])));
    }
  }
}

// One W box per (stage, micro-batch) beside the F and B boxes, and one W span
// per layer, as the timeline reads compute spans; the run summary reads them.
void TestZeroBubble::weight_gradients_are_events() {
  RunConfig c = base_config();
  c.steps = 1;
  c.layout[Axis::pp] = 2;
  c.micro_batches = 4;
  c.schedule = PipelineScheduleKind::zb_h1;
  CollectingSink sink;
  Trainer trainer(c, &sink);
  trainer.step();
  std::map<std::tuple<int, int, int>, int> boxes;  // (stage, micro-batch, compute kind)
  int layer_spans = 0;
  for (const Event& e : sink.events()) {
    if (e.kind != EventKind::compute_span || e.compute == ComputeKind::optimizer) continue;
    if (e.layer == -1) ++boxes[{e.stage, e.micro_batch, int(e.compute)}];
    if (e.layer >= 0 && e.compute == ComputeKind::weight_gradient) ++layer_spans;
  }
  QCOMPARE(int(boxes.size()), 2 * 4 * 3);
  for (const auto& [key, count] : boxes) QCOMPARE(count, 1);
  QCOMPARE(layer_spans, 4 * find_model_preset("gpt-tiny").layers);  // every layer's W, every micro-batch
  // The run summary counts the W boxes as busy time and prints the zero-bubble
  // formulas with the measured T_F, T_B and T_W.
  const std::vector<Event> events = sink.events();
  const ScheduleSummary summary = summarize_schedule(events, 1, 2, 4);
  QVERIFY(summary.bubble.has_value());
  QVERIFY(summary.bubble->forward_ns > 0 && summary.bubble->backward_ns > 0 && summary.bubble->weight_ns > 0);
  std::int64_t boxes_ns = 0;
  for (const Event& e : events)
    if (e.kind == EventKind::compute_span && e.layer == -1 && e.compute != ComputeKind::optimizer)
      boxes_ns += e.end_ns - e.start_ns;
  QCOMPARE(summary.bubble->stage_busy_ns[0] + summary.bubble->stage_busy_ns[1], boxes_ns);
  const std::vector<std::string> lines = schedule_summary_lines(summary, "virtual");
  QCOMPARE(int(lines.size()), 2);
  QVERIFY2(lines[1].starts_with("zero bubble, with the measured T_F "), lines[1].c_str());
}

// The must-show at pp 4 x m 8: walking each stage's boxes of a real step
// (an F opens a micro-batch, its last backward phase, W or an unsplit B, closes
// it), the most open at once is the estimator's simulation of the same layout,
// stage by stage: ZB-H1 holds 1F1B's p on stage 0 and ZB-H2 at most 2p - 1.
void TestZeroBubble::activations_in_flight_from_events_are_the_estimators() {
  const int p = 4, m = 8;
  std::map<PipelineScheduleKind, std::vector<int>> held;  // [schedule][stage] from the events
  for (const PipelineScheduleKind kind :
       {PipelineScheduleKind::one_f_one_b, PipelineScheduleKind::zb_h1, PipelineScheduleKind::zb_h2}) {
    RunConfig c = base_config();
    c.steps = 1;
    c.layout[Axis::pp] = p;
    c.micro_batches = m;
    c.schedule = kind;
    CollectingSink sink;
    Trainer trainer(c, &sink);
    trainer.step();
    const bool split = kind != PipelineScheduleKind::one_f_one_b;
    const ComputeKind closes = split ? ComputeKind::weight_gradient : ComputeKind::backward;
    std::map<int, std::vector<Event>> boxes;  // stage -> its F and closing boxes
    for (const Event& e : sink.events())
      if (e.kind == EventKind::compute_span && e.layer == -1 &&
          (e.compute == ComputeKind::forward || e.compute == closes))
        boxes[e.stage].push_back(e);
    const MemoryEstimate estimated =
        estimate_memory(model_shape_from_config(run_model_config(c), c.model), settings_for_run(c));
    QCOMPARE(int(boxes.size()), p);
    for (auto& [stage, list] : boxes) {
      std::stable_sort(list.begin(), list.end(),
                       [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
      std::set<int> open;
      std::size_t peak = 0;
      for (const Event& e : list) {
        if (e.compute == ComputeKind::forward)
          open.insert(e.micro_batch);
        else
          QVERIFY(open.erase(e.micro_batch) == 1);
        peak = std::max(peak, open.size());
      }
      QVERIFY(open.empty());
      QCOMPARE(int(peak), estimated.ranks[std::size_t(stage)].micro_batches_in_flight);  // dp 1: rank = stage
      held[kind].push_back(int(peak));
    }
  }
  QCOMPARE(held[PipelineScheduleKind::zb_h1][0], held[PipelineScheduleKind::one_f_one_b][0]);
  for (int n : held[PipelineScheduleKind::zb_h2]) QVERIFY(n <= 2 * p - 1);
}

// pp 4 x m 8 on the virtual clock: gpt-tiny's stages are unequal (the last
// holds the head), so the step is paced by the slowest stage; the zero-bubble
// formulas with its measured T_F, T_B, T_W, the other stages idling the
// difference, give the idle time within 5 points (with the mean stage's
// times ZB-H1's formula was ~9 points below it). ZB-H1 idles less than 1F1B,
// ZB-H2 less than ZB-H1. Six steps after the first: the summary takes the
// median of their flushes, so one flush whose boxes the machine's load made
// slow at the wrong moment does not decide it (with two busy loops beside it
// one flush of three read ZB-H2 3 points above its formula, level with ZB-H1).
void TestZeroBubble::measured_bubble_is_the_formula_paced_by_the_slowest_stage() {
  const auto summary_of = [](PipelineScheduleKind kind) {
    RunConfig c = base_config();
    c.steps = 7;
    c.batch = 16;
    c.layout[Axis::pp] = 4;
    c.micro_batches = 8;
    c.schedule = kind;
    CollectingSink sink;
    Trainer trainer(c, &sink);
    for (int s = 0; s < 7; ++s) trainer.step();
    const std::vector<Event> events = sink.events();
    return *summarize_schedule(events, 1, 4, 8).bubble;
  };
  const QByteArray missed = testing::first_settled_measurement([&] {
    const PipelineBubble f1b = summary_of(PipelineScheduleKind::one_f_one_b);
    const PipelineBubble h1 = summary_of(PipelineScheduleKind::zb_h1);
    const PipelineBubble h2 = summary_of(PipelineScheduleKind::zb_h2);
    const QByteArray numbers = "idle 1f1b " + QByteArray::number(f1b.idle) + ", zb-h1 " + QByteArray::number(h1.idle) +
                               " (paced formula " + QByteArray::number(zb_h1_bubble_paced(h1)) + "), zb-h2 " +
                               QByteArray::number(h2.idle) + " (paced formula " +
                               QByteArray::number(zb_h2_bubble_paced(h2)) + "), zb-h1's slowest stage " +
                               QByteArray::number(h1.slowest_stage_index);
    qInfo("%s", numbers.constData());
    return testing::first_miss({{std::abs(h1.idle - zb_h1_bubble_paced(h1)) < 0.05, "zb-h1 within 5 points"},
                                {std::abs(h2.idle - zb_h2_bubble_paced(h2)) < 0.05, "zb-h2 within 5 points"},
                                {h2.idle < h1.idle && h1.idle < f1b.idle, "zb-h2 < zb-h1 < 1f1b"},
                                {h1.slowest_stage_index == 3, "the head's stage is the slowest"}},
                               numbers);
  });
  QVERIFY2(missed.isEmpty(), missed.constData());
}

void TestZeroBubble::unbuilt_combinations_are_refused_by_name() {
  const auto refused = [](RunConfig c, const char* fragment) {
    try {
      validate_run_config(c);
      QFAIL(qPrintable(QString("accepted a config that should fail with '%1'").arg(fragment)));
    } catch (const ConfigError& e) {
      QVERIFY2(std::string(e.what()).find(fragment) != std::string::npos, e.what());
    }
  };
  RunConfig c = base_config();
  c.schedule = PipelineScheduleKind::zb_h1;
  validate_run_config(c);
  c.zero_stage = 2;
  validate_run_config(c);  // pp 1: the reduce-scatter starts from W (test_zero_bubble_mixed)
  c.layout[Axis::pp] = 2;
  refused(c, "--zero 2 with --pp 2 is refused");
  c = base_config();
  c.schedule = PipelineScheduleKind::zb_h2;
  c.precision = Precision::fp16;
  validate_run_config(c);  // the unit gradient stays bound from B to W (test_zero_bubble_mixed)
  c = base_config();
  c.schedule = PipelineScheduleKind::zb_h1;
  c.checkpoint = true;
  validate_run_config(c);  // B keeps what W needs (test_zero_bubble_mixed)
  QCOMPARE(parse_pipeline_schedule_kind("zb-h2"), PipelineScheduleKind::zb_h2);
}

// shardscope-cli schedule: the grid with W's, the simulated bubble beside the
// formula (T_F = T_B = T_W = 1 by default: --backward-time 2, half of it W),
// the in-flight counts; a W longer than the backward is refused by name.
void TestZeroBubble::the_schedule_command_prints_them() {
  const CliResult h1 = run_cli({"schedule", "--pp", "4", "--micro-batches", "8", "--schedule", "zb-h1"});
  QCOMPARE(h1.code, 0);
  QVERIFY2(h1.out.contains("stage 3: F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1"), qPrintable(h1.out));
  QVERIFY2(h1.out.contains("zb-h1, p=4, m=8: modeled step 27.0 time units, bubble 11.1%"), qPrintable(h1.out));
  QVERIFY2(h1.out.contains("T_F=1, T_B=1, T_W=1: ZB-H1 formula") && h1.out.contains("= 11.1%"), qPrintable(h1.out));
  QVERIFY2(h1.out.contains("micro-batches held at once per stage: 4 4 4 4"), qPrintable(h1.out));
  const CliResult h2 = run_cli({"schedule", "--pp", "4", "--micro-batches", "8", "--schedule", "zb-h2",
                                "--backward-time", "3", "--weight-time", "1"});
  QCOMPARE(h2.code, 0);
  QVERIFY2(h2.out.contains("bubble 8.6%") && h2.out.contains("ZB-H2 floor"), qPrintable(h2.out));
  QVERIFY2(h2.out.contains("micro-batches held at once per stage: 7 7 7 7"), qPrintable(h2.out));
  const CliResult bad = run_cli({"schedule", "--schedule", "zb-h1", "--weight-time", "3"});
  QCOMPARE(bad.code, 2);
  QVERIFY2(bad.err.contains("--weight-time 3 is not in [0, --backward-time 2]"), qPrintable(bad.err));
}

QTEST_GUILESS_MAIN(TestZeroBubble)
#include "test_zero_bubble.moc"
