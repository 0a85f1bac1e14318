// SPDX-License-Identifier: GPL-3.0-or-later
// Pipeline schedules: the textbook action lists of GPipe and 1F1B, where their
// transfers sit and how they pair up, and their simulated timing (the bubble
// (p-1)/(m+p-1) and the peak number of micro-batches in flight); actions with
// chunks and W phases, and the activation slots keyed by (chunk, micro-batch).
#include <QTest>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/memory_ledger.h"
#include "model/activation_slots.h"
#include "model/model.h"
#include "ops/backend.h"
#include "parallel/pipeline_parallel.h"
#include "plan/pipeline_schedule.h"

using namespace shardscope;
using Type = PipelineAction::Type;

namespace {

QString text(const PipelineSchedule& schedule, bool with_communication = false) {
  return QString::fromStdString(format_pipeline_schedule(schedule, with_communication));
}

bool near(double a, double b) {
  return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b));
}

QByteArray case_name(const char* kind, int p, int m, double tf, double tb) {
  return QByteArray(kind) + " p=" + QByteArray::number(p) + " m=" + QByteArray::number(m) +
         " tf=" + QByteArray::number(tf) + " tb=" + QByteArray::number(tb);
}

// Micro-batches of the actions of `type` with `peer`, in list order.
std::vector<int> transfers(const std::vector<PipelineAction>& list, Type type, int peer) {
  std::vector<int> micro_batches;
  for (const auto& a : list)
    if (a.type == type && a.peer_stage == peer) micro_batches.push_back(a.micro_batch);
  return micro_batches;
}

PipelineAction compute(Type type, int micro_batch, int stage = 0) {
  return {type, micro_batch, -1, stage};
}

}  // namespace

class TestPipelineSchedule : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void schedules_cannot_hang_under_nccl_rendezvous();
  void kind_names_round_trip();
  void gpipe_matches_textbook_order();
  void one_f_one_b_matches_textbook_order();
  void communication_is_written_out_in_place();
  void every_send_meets_its_recv_in_order();
  void gpipe_bubble_matches_formula();
  void one_f_one_b_has_the_gpipe_bubble();
  void peak_micro_batches_in_flight();
  void communication_time_lengthens_the_step();
  void edge_cases_one_stage_one_micro_batch_few_micro_batches();
  void invalid_inputs_throw();
  void simulator_rejects_deadlocks_and_malformed_lists();
  void actions_say_stage_chunk_micro_batch_and_phase();
  void peak_in_flight_is_what_the_simulator_finds();
  void weight_gradients_and_chunks_run_in_the_simulator();
  void activation_slots_are_keyed_by_chunk_and_micro_batch();
  void todays_schedules_fill_their_slots_as_modulo_did();
  void the_runtime_refuses_a_slot_never_filled_or_one_too_many();
};

void TestPipelineSchedule::kind_names_round_trip() {
  for (auto kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b})
    QVERIFY(parse_pipeline_schedule_kind(pipeline_schedule_name(kind)) == kind);
  QCOMPARE(QString(pipeline_schedule_name(PipelineScheduleKind::one_f_one_b)), QString("1f1b"));
  QCOMPARE(QString::fromStdString(describe_pipeline_action({Type::send_activation, 3, 2, 1})),
           QString("stage 1 sends the activation of micro-batch 3 to stage 2"));
}

// GPipe (Huang et al. 2019): all forwards, then all backwards, on every stage.
void TestPipelineSchedule::gpipe_matches_textbook_order() {
  QCOMPARE(text(make_pipeline_schedule(PipelineScheduleKind::gpipe, 4, 8)),
           QString("stage 0: F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7\n"
                   "stage 1: F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7\n"
                   "stage 2: F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7\n"
                   "stage 3: F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7\n"));
}

// 1F1B (Narayanan et al. 2021, Fig. 4 top): warm-up of p-s-1 forwards, steady F/B pairs, cool-down.
void TestPipelineSchedule::one_f_one_b_matches_textbook_order() {
  QCOMPARE(text(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, 4, 8)),
           QString("stage 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7\n"
                   "stage 1: F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7\n"
                   "stage 2: F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7\n"
                   "stage 3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7\n"));
}

// Every recv sits right before the compute that consumes it, every send right after the one that produced it.
void TestPipelineSchedule::communication_is_written_out_in_place() {
  QCOMPARE(text(make_pipeline_schedule(PipelineScheduleKind::gpipe, 2, 2), true),
           QString("stage 0: F0 sendA0->s1 F1 sendA1->s1 recvG0<-s1 B0 recvG1<-s1 B1\n"
                   "stage 1: recvA0<-s0 F0 recvA1<-s0 F1 B0 sendG0->s0 B1 sendG1->s0\n"));
  QCOMPARE(text(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, 3, 2), true),
           QString("stage 0: F0 sendA0->s1 F1 sendA1->s1 recvG0<-s1 B0 recvG1<-s1 B1\n"
                   "stage 1: recvA0<-s0 F0 sendA0->s2 recvA1<-s0 F1 sendA1->s2 recvG0<-s2 B0 sendG0->s0 "
                   "recvG1<-s2 B1 sendG1->s0\n"
                   "stage 2: recvA0<-s1 F0 B0 sendG0->s1 recvA1<-s1 F1 B1 sendG1->s1\n"));

  for (auto kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b}) {
    for (int p = 1; p <= 6; ++p) {
      for (int m = 1; m <= 9; ++m) {
        const PipelineSchedule schedule = make_pipeline_schedule(kind, p, m);
        QCOMPARE(int(schedule.size()), p);
        for (int s = 0; s < p; ++s) {
          const auto& list = schedule[std::size_t(s)];
          // m forwards, m backwards, and a recv + a send for each of them that has a neighbour.
          QCOMPARE(int(list.size()), 2 * m + 2 * m * (s > 0) + 2 * m * (s < p - 1));
          std::vector<int> forwards_seen(std::size_t(m), 0), backwards_seen(std::size_t(m), 0);
          for (std::size_t j = 0; j < list.size(); ++j) {
            const PipelineAction& a = list[j];
            const int i = a.micro_batch;
            if (a.type == Type::forward) {
              forwards_seen[std::size_t(i)]++;
              if (s > 0) QVERIFY(list[j - 1] == (PipelineAction{Type::recv_activation, i, s - 1, s}));
              if (s < p - 1) QVERIFY(list[j + 1] == (PipelineAction{Type::send_activation, i, s + 1, s}));
            } else if (a.type == Type::backward) {
              QCOMPARE(forwards_seen[std::size_t(i)], 1);  // B(i) after F(i)
              backwards_seen[std::size_t(i)]++;
              if (s < p - 1) QVERIFY(list[j - 1] == (PipelineAction{Type::recv_gradient, i, s + 1, s}));
              if (s > 0) QVERIFY(list[j + 1] == (PipelineAction{Type::send_gradient, i, s - 1, s}));
            }
          }
          QCOMPARE(forwards_seen, std::vector<int>(std::size_t(m), 1));
          QCOMPARE(backwards_seen, std::vector<int>(std::size_t(m), 1));
        }
      }
    }
  }
}

// Point-to-point messages are matched in order per (sender, receiver) pair
// (communicator.h), so each send must meet the recv of the same micro-batch.
void TestPipelineSchedule::every_send_meets_its_recv_in_order() {
  for (auto kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b}) {
    for (int p = 2; p <= 6; ++p) {
      for (int m = 1; m <= 9; ++m) {
        const PipelineSchedule schedule = make_pipeline_schedule(kind, p, m);
        for (int s = 0; s + 1 < p; ++s) {
          const auto& up = schedule[std::size_t(s)];
          const auto& down = schedule[std::size_t(s + 1)];
          const auto sent_down = transfers(up, Type::send_activation, s + 1);
          QCOMPARE(int(sent_down.size()), m);
          QCOMPARE(transfers(down, Type::recv_activation, s), sent_down);
          const auto sent_up = transfers(down, Type::send_gradient, s);
          QCOMPARE(int(sent_up.size()), m);
          QCOMPARE(transfers(up, Type::recv_gradient, s + 1), sent_up);
        }
      }
    }
  }
}

void TestPipelineSchedule::gpipe_bubble_matches_formula() {
  QVERIFY(near(gpipe_bubble_fraction(4, 8), 3.0 / 11.0));
  for (int p : {1, 2, 3, 4, 8}) {
    for (int m : {1, 2, 3, 4, 8, 16}) {
      for (auto [tf, tb] : {std::pair{1.0, 1.0}, std::pair{1.0, 2.0}, std::pair{0.5, 1.5}}) {
        const auto t = simulate_pipeline_schedule(make_pipeline_schedule(PipelineScheduleKind::gpipe, p, m), tf, tb);
        const QByteArray name = case_name("gpipe", p, m, tf, tb);
        QVERIFY2(near(t.makespan, (m + p - 1) * (tf + tb)), name);
        QVERIFY2(near(t.bubble_fraction, gpipe_bubble_fraction(p, m)), name);
        for (double busy : t.busy_time) QVERIFY2(near(busy, m * (tf + tb)), name);
      }
    }
  }
  // The exact spans for p = 2, m = 2, backward twice the forward.
  const auto t =
      simulate_pipeline_schedule(compute_only(make_pipeline_schedule(PipelineScheduleKind::gpipe, 2, 2)), 1.0, 2.0);
  const std::vector<std::vector<std::pair<double, double>>> expected = {
      {{0, 1}, {1, 2}, {5, 7}, {7, 9}},  // stage 0: F0 F1, waits for the gradients, B0 B1
      {{1, 2}, {2, 3}, {3, 5}, {5, 7}},  // stage 1: F0 F1 B0 B1
  };
  for (std::size_t s = 0; s < 2; ++s)
    for (std::size_t j = 0; j < 4; ++j) QCOMPARE((std::pair{t.spans[s][j].start, t.spans[s][j].end}), expected[s][j]);
}

// Narayanan et al. 2021: 1F1B only reorders the work; its bubble is GPipe's.
void TestPipelineSchedule::one_f_one_b_has_the_gpipe_bubble() {
  for (int p : {1, 2, 3, 4, 8}) {
    for (int m : {1, 2, 3, 4, 8, 16}) {
      for (auto [tf, tb] : {std::pair{1.0, 1.0}, std::pair{1.0, 2.0}, std::pair{0.5, 1.5}}) {
        const auto t =
            simulate_pipeline_schedule(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, p, m), tf, tb);
        const QByteArray name = case_name("1f1b", p, m, tf, tb);
        QVERIFY2(near(t.makespan, (m + p - 1) * (tf + tb)), name);
        QVERIFY2(near(t.bubble_fraction, gpipe_bubble_fraction(p, m)), name);
      }
    }
  }
}

// GPipe keeps every micro-batch's activations until the backwards start; 1F1B at most min(p - s, m).
void TestPipelineSchedule::peak_micro_batches_in_flight() {
  for (int p : {1, 2, 4, 5}) {
    for (int m : {1, 2, 3, 4, 8}) {
      const auto gpipe = simulate_pipeline_schedule(make_pipeline_schedule(PipelineScheduleKind::gpipe, p, m), 1, 2);
      const auto ofob =
          simulate_pipeline_schedule(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, p, m), 1, 2);
      for (int s = 0; s < p; ++s) {
        QCOMPARE(gpipe.peak_micro_batches_in_flight[std::size_t(s)], m);
        QCOMPARE(ofob.peak_micro_batches_in_flight[std::size_t(s)], std::min(p - s, m));
      }
    }
  }
}

// Each micro-batch crosses p - 1 links down and p - 1 back up along the
// critical path: GPipe's step grows by 2 (p - 1) c. Explicit transfers and the
// implied latency of a compute-only list give the same compute times.
void TestPipelineSchedule::communication_time_lengthens_the_step() {
  const double tf = 1.0, tb = 2.0, c = 0.25;
  for (int p : {1, 2, 4}) {
    for (int m : {1, 3, 8}) {
      for (auto kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b}) {
        const PipelineSchedule full = make_pipeline_schedule(kind, p, m);
        const auto with_transfers = simulate_pipeline_schedule(full, tf, tb, c);
        const auto implied = simulate_pipeline_schedule(compute_only(full), tf, tb, c);
        QVERIFY(near(with_transfers.makespan, implied.makespan));
        for (int s = 0; s < p; ++s) {
          std::vector<PipelineSpan> compute_spans;
          for (const auto& span : with_transfers.spans[std::size_t(s)])
            if (is_compute(span.action)) compute_spans.push_back(span);
          QCOMPARE(compute_spans.size(), implied.spans[std::size_t(s)].size());
          for (std::size_t j = 0; j < compute_spans.size(); ++j) {
            QVERIFY(compute_spans[j].action == implied.spans[std::size_t(s)][j].action);
            QVERIFY(near(compute_spans[j].start, implied.spans[std::size_t(s)][j].start));
          }
        }
        if (kind == PipelineScheduleKind::gpipe)
          QVERIFY(near(with_transfers.makespan, (m + p - 1) * (tf + tb) + 2 * (p - 1) * c));
        if (p > 1) QVERIFY(with_transfers.bubble_fraction > gpipe_bubble_fraction(p, m));
      }
    }
  }
}

void TestPipelineSchedule::edge_cases_one_stage_one_micro_batch_few_micro_batches() {
  // One stage: no neighbours, so no transfers and no bubble; 1F1B alternates from the start.
  QCOMPARE(text(make_pipeline_schedule(PipelineScheduleKind::gpipe, 1, 3), true),
           QString("stage 0: F0 F1 F2 B0 B1 B2\n"));
  QCOMPARE(text(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, 1, 3), true),
           QString("stage 0: F0 B0 F1 B1 F2 B2\n"));
  for (auto kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b}) {
    const auto t = simulate_pipeline_schedule(make_pipeline_schedule(kind, 1, 3), 1, 2, 5);
    QCOMPARE(t.bubble_fraction, 0.0);
    QCOMPARE(t.makespan, 9.0);
  }
  // One micro-batch: both kinds are the same F0 B0 chain, idle (p-1)/p of the time.
  for (int p : {2, 4}) {
    QCOMPARE(text(make_pipeline_schedule(PipelineScheduleKind::gpipe, p, 1), true),
             text(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, p, 1), true));
    const auto t = simulate_pipeline_schedule(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, p, 1), 1, 1);
    QVERIFY(near(t.bubble_fraction, double(p - 1) / p));
  }
  // Fewer micro-batches than stages: the warm-up is cut to m, so the upper stages run like GPipe.
  QCOMPARE(text(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, 4, 2)), QString("stage 0: F0 F1 B0 B1\n"
                                                                                          "stage 1: F0 F1 B0 B1\n"
                                                                                          "stage 2: F0 F1 B0 B1\n"
                                                                                          "stage 3: F0 B0 F1 B1\n"));
  const auto few = simulate_pipeline_schedule(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, 4, 2), 1, 2);
  QVERIFY(near(few.bubble_fraction, 3.0 / 5.0));
}

void TestPipelineSchedule::invalid_inputs_throw() {
  for (auto kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b}) {
    QVERIFY_THROWS_EXCEPTION(ConfigError, make_pipeline_schedule(kind, 0, 4));
    QVERIFY_THROWS_EXCEPTION(ConfigError, make_pipeline_schedule(kind, -2, 4));
    QVERIFY_THROWS_EXCEPTION(ConfigError, make_pipeline_schedule(kind, 4, 0));
  }
  QVERIFY_THROWS_EXCEPTION(ConfigError, gpipe_bubble_fraction(4, 0));
  try {
    parse_pipeline_schedule_kind("zero-bubble");
    QFAIL("parse accepted an unknown schedule");
  } catch (const ConfigError& e) {
    QVERIFY(std::string(e.what()).find("--schedule") != std::string::npos);
  }
  try {
    make_pipeline_schedule(PipelineScheduleKind::gpipe, 2, 0);
    QFAIL("accepted zero micro-batches");
  } catch (const ConfigError& e) {
    QVERIFY(std::string(e.what()).find("--micro-batches") != std::string::npos);
  }
  const PipelineSchedule ok = make_pipeline_schedule(PipelineScheduleKind::gpipe, 2, 2);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, simulate_pipeline_schedule(ok, -1, 1));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, simulate_pipeline_schedule(ok, 1, NAN));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, simulate_pipeline_schedule({}, 1, 1));
}

void TestPipelineSchedule::simulator_rejects_deadlocks_and_malformed_lists() {
  // Stage 0 waits for the gradient of micro-batch 0 before sending its activation: a cycle.
  const PipelineSchedule cycle = {
      {{Type::recv_gradient, 0, 1},
       compute(Type::forward, 0),
       {Type::send_activation, 0, 1},
       compute(Type::backward, 0)},
      {{Type::recv_activation, 0, 0, 1},
       compute(Type::forward, 0, 1),
       compute(Type::backward, 0, 1),
       {Type::send_gradient, 0, 0, 1}},
  };
  try {
    simulate_pipeline_schedule(cycle, 1, 1);
    QFAIL("the deadlocking schedule was accepted");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    QVERIFY2(what.find("stage 0 waits forever at action 0 (recvG0<-s1)") != std::string::npos, e.what());
    QVERIFY2(what.find("stage 1 waits forever at action 0 (recvA0<-s0)") != std::string::npos, e.what());
  }
  // Without transfers: stage 1 wants F1 first, which stage 0 only runs after B0, which needs stage 1's B0.
  const PipelineSchedule crossed = {
      {compute(Type::forward, 0), compute(Type::backward, 0), compute(Type::forward, 1), compute(Type::backward, 1)},
      {compute(Type::forward, 1, 1), compute(Type::forward, 0, 1), compute(Type::backward, 0, 1),
       compute(Type::backward, 1, 1)},
  };
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, simulate_pipeline_schedule(crossed, 1, 1));
  // A backward before its own forward, a send to the wrong stage, an action run twice.
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           simulate_pipeline_schedule({{compute(Type::backward, 0), compute(Type::forward, 0)}}, 1, 1));
  QVERIFY_THROWS_EXCEPTION(
      std::invalid_argument,
      simulate_pipeline_schedule({{compute(Type::forward, 0), {Type::send_activation, 0, 0}}}, 1, 1));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           simulate_pipeline_schedule({{compute(Type::forward, 0), compute(Type::forward, 0)}}, 1, 1));
}

// NCCL pairs each send with the peer's receive and blocks both until they
// meet. Run as the executor groups them (fuses_with_next), every schedule gets
// through; with every op alone, 1F1B's steady state hangs (stage s sends an
// activation while stage s+1 sends a gradient), which the check must see.
void TestPipelineSchedule::schedules_cannot_hang_under_nccl_rendezvous() {
  for (const PipelineScheduleKind kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b})
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 12; ++m) {
        const std::string problem = pipeline_schedule_rendezvous_problem(make_pipeline_schedule(kind, p, m));
        QVERIFY2(problem.empty(), qPrintable(QString("%1 p=%2 m=%3: %4")
                                                 .arg(pipeline_schedule_name(kind))
                                                 .arg(p)
                                                 .arg(m)
                                                 .arg(QString::fromStdString(problem))));
      }
  const std::string unfused =
      pipeline_schedule_rendezvous_problem(make_pipeline_schedule(PipelineScheduleKind::one_f_one_b, 2, 4), false);
  QVERIFY2(unfused.find("stage 0 waits on send to stage 1") != std::string::npos, unfused.c_str());
  QVERIFY2(unfused.find("stage 1 waits on send to stage 0") != std::string::npos, unfused.c_str());
}

// An action is (stage, chunk, micro-batch, phase): today's schedules put each
// on its own stage's list, on chunk 0; chunk 0 prints as it always did.
void TestPipelineSchedule::actions_say_stage_chunk_micro_batch_and_phase() {
  for (auto kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b}) {
    const PipelineSchedule schedule = make_pipeline_schedule(kind, 4, 6);
    for (int s = 0; s < 4; ++s)
      for (const PipelineAction& a : schedule[std::size_t(s)]) {
        QCOMPARE(a.stage, s);
        QCOMPARE(a.chunk, 0);
        QVERIFY(a.type != Type::weight_gradient);
      }
  }
  const auto fmt = [](const PipelineAction& a) { return QString::fromStdString(format_pipeline_action(a)); };
  QCOMPARE(fmt({Type::forward, 3, -1, 1, 0}), QString("F3"));
  QCOMPARE(fmt({Type::forward, 3, -1, 1, 1}), QString("F3.1"));
  QCOMPARE(fmt({Type::weight_gradient, 3, -1, 1, 0}), QString("W3"));
  QCOMPARE(fmt({Type::send_activation, 3, 0, 3, 1}), QString("sendA3.1->s0"));
  QVERIFY(is_compute({Type::weight_gradient, 0, -1, 0, 0}));
  QCOMPARE(QString::fromStdString(describe_pipeline_action({Type::weight_gradient, 2, -1, 1, 1})),
           QString("stage 1 runs the weight gradient of micro-batch 2 (model chunk 1)"));
  QCOMPARE(QString::fromStdString(describe_pipeline_action({Type::backward, 2, -1, 1, 0})),
           QString("stage 1 runs the backward of micro-batch 2"));
}

// The count the trainer and the estimator size activations by, against the
// simulated timeline: on each stage, the most micro-batches whose forward has
// started and whose backward has not ended, from the spans' times.
void TestPipelineSchedule::peak_in_flight_is_what_the_simulator_finds() {
  for (auto kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b}) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 12; ++m) {
        const PipelineSchedule schedule = make_pipeline_schedule(kind, p, m);
        const std::vector<int> peak = peak_in_flight(schedule);
        const PipelineTimeline t = simulate_pipeline_schedule(schedule, 1.0, 2.0, 0.25);
        QCOMPARE(t.peak_micro_batches_in_flight, peak);
        for (int s = 0; s < p; ++s) {
          std::vector<std::pair<double, int>> changes;  // (time, +1 at a forward's start, -1 at a backward's end)
          for (const PipelineSpan& span : t.spans[std::size_t(s)]) {
            if (span.action.type == Type::forward) changes.push_back({span.start, +1});
            if (span.action.type == Type::backward) changes.push_back({span.end, -1});
          }
          std::sort(changes.begin(), changes.end());  // at equal times the -1 (a backward ended) first
          int held = 0, most = 0;
          for (const auto& [time, change] : changes) most = std::max(most, held += change);
          const QByteArray name = case_name(pipeline_schedule_name(kind), p, m, 1, 2) + " s=" + QByteArray::number(s);
          QVERIFY2(peak[std::size_t(s)] == most, name);
          QVERIFY2(peak[std::size_t(s)] == peak_in_flight_closed_form(kind, p, s, m), name);
        }
      }
    }
  }
}

// W after B keeps the activations until W; chunks chain stage p-1 of chunk c
// to stage 0 of chunk c+1 (virtual stage c·p + s, Megatron's interleaving).
void TestPipelineSchedule::weight_gradients_and_chunks_run_in_the_simulator() {
  // One stage: F0 B0 F1 W0 B1 W1 holds micro-batch 0 until W0, so two at once.
  const std::vector<PipelineAction> split = {compute(Type::forward, 0),  compute(Type::backward, 0),
                                             compute(Type::forward, 1),  compute(Type::weight_gradient, 0),
                                             compute(Type::backward, 1), compute(Type::weight_gradient, 1)};
  QCOMPARE(peak_in_flight({split}), std::vector<int>{2});
  QCOMPARE(frees_activations(split), (std::vector<bool>{false, false, false, true, false, true}));
  const auto t = simulate_pipeline_schedule({split}, 1.0, 2.0, 0.0, 0.5);
  QVERIFY(near(t.makespan, 2 * (1.0 + 2.0 + 0.5)));
  QCOMPARE(t.bubble_fraction, 0.0);
  // W before its own B cannot run.
  QVERIFY_THROWS_EXCEPTION(
      std::invalid_argument,
      simulate_pipeline_schedule(
          {{compute(Type::forward, 0), compute(Type::weight_gradient, 0), compute(Type::backward, 0)}}, 1, 1));
  // Two stages, two chunks, one micro-batch: (0,0) (1,0) (0,1) (1,1) forward, back in reverse.
  const auto on = [](Type type, int stage, int chunk) { return PipelineAction{type, 0, -1, stage, chunk}; };
  const PipelineSchedule interleaved = {
      {on(Type::forward, 0, 0), on(Type::forward, 0, 1), on(Type::backward, 0, 1), on(Type::backward, 0, 0)},
      {on(Type::forward, 1, 0), on(Type::forward, 1, 1), on(Type::backward, 1, 1), on(Type::backward, 1, 0)},
  };
  const auto chained = simulate_pipeline_schedule(interleaved, 1.0, 2.0);
  QVERIFY(near(chained.makespan, 4 * 1.0 + 4 * 2.0));  // one virtual stage at a time
  QCOMPARE(peak_in_flight(interleaved), (std::vector<int>{2, 2}));
  QCOMPARE((std::pair{chained.spans[0][1].start, chained.spans[0][1].end}),
           (std::pair{2.0, 3.0}));  // F0.1 after s1's F0
  // The same with the transfers written out: stage 1's chunk 0 sends to stage 0's chunk 1.
  PipelineSchedule with_transfers = interleaved;
  with_transfers[0].insert(with_transfers[0].begin() + 1, PipelineAction{Type::send_activation, 0, 1, 0, 0});
  with_transfers[1].insert(with_transfers[1].begin(), PipelineAction{Type::recv_activation, 0, 0, 1, 0});
  with_transfers[1].insert(with_transfers[1].begin() + 2, PipelineAction{Type::send_activation, 0, 0, 1, 0});
  with_transfers[0].insert(with_transfers[0].begin() + 2, PipelineAction{Type::recv_activation, 0, 1, 0, 1});
  QVERIFY(near(simulate_pipeline_schedule(with_transfers, 1.0, 2.0).makespan, chained.makespan));
  // With one chunk the last stage sends its activation nowhere (no stage p).
  QVERIFY_THROWS_EXCEPTION(
      std::invalid_argument,
      simulate_pipeline_schedule(
          {{on(Type::forward, 0, 0)}, {on(Type::forward, 1, 0), {Type::send_activation, 0, 2, 1, 0}}}, 1, 1));
  // An action listed on a stage it does not name.
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, simulate_pipeline_schedule({{compute(Type::forward, 0, 1)}}, 1, 1));
}

// The slot table the model keeps: the lowest free slot for each key, and an
// error naming the key for a slot never filled, or one too many.
void TestPipelineSchedule::activation_slots_are_keyed_by_chunk_and_micro_batch() {
  ActivationSlots slots(2);
  QCOMPARE(slots.open({0, 0}), 0);
  QCOMPARE(slots.open({1, 0}), 1);
  QCOMPARE(slots.find({1, 0}), 1);
  const auto fails_naming = [](auto&& call, const char* key) {
    try {
      call();
    } catch (const std::logic_error& e) {
      return std::string(e.what()).find(key) != std::string::npos;
    }
    return false;
  };
  QVERIFY(fails_naming([&] { slots.find({0, 1}); }, "(chunk 0, micro-batch 1)"));  // never filled
  QVERIFY(fails_naming([&] { slots.open({0, 2}); }, "no free activation slot for (chunk 0, micro-batch 2)"));
  QVERIFY(fails_naming([&] { slots.open({1, 0}); }, "(chunk 1, micro-batch 0) opened twice"));
  QVERIFY(fails_naming([&] { slots.close({0, 3}); }, "(chunk 0, micro-batch 3)"));
  slots.close({0, 0});
  QVERIFY(fails_naming([&] { slots.find({0, 0}); }, "(chunk 0, micro-batch 0)"));  // freed
  QCOMPARE(slots.open({0, 2}), 0);
  QCOMPARE(slots.held(), (std::vector<ActivationKey>{{0, 2}, {1, 0}}));
  QVERIFY_THROWS_EXCEPTION(std::logic_error, slots.resize(3));  // keys still held
  slots.close_all();
  QVERIFY(slots.held().empty());
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, ActivationSlots{0});
}

// Run as the runtime does (parallel/pipeline_parallel.cpp: open at the recv of
// the input or the forward, free at the last backward phase), today's
// schedules fit in peak_in_flight slots and put micro-batch j in slot
// j % slots, as the engine did before slots had keys: the same buffers, the same memory.
void TestPipelineSchedule::todays_schedules_fill_their_slots_as_modulo_did() {
  for (auto kind : {PipelineScheduleKind::gpipe, PipelineScheduleKind::one_f_one_b}) {
    for (int p = 1; p <= 6; ++p) {
      for (int m = 1; m <= 9; ++m) {
        const PipelineSchedule schedule = make_pipeline_schedule(kind, p, m);
        const std::vector<int> peak = peak_in_flight(schedule);
        for (int s = 0; s < p; ++s) {
          const auto& list = schedule[std::size_t(s)];
          const std::vector<bool> frees = frees_activations(list);
          ActivationSlots slots(std::max(1, peak[std::size_t(s)]));
          for (std::size_t i = 0; i < list.size(); ++i) {
            const PipelineAction& a = list[i];
            const ActivationKey key = activation_key(a);
            if (a.type == Type::recv_gradient || a.type == Type::send_gradient) continue;
            const bool first = (a.type == Type::recv_activation || a.type == Type::forward) && !slots.holds(key);
            const int slot = first ? slots.open(key) : slots.find(key);
            QCOMPARE(slot, a.micro_batch % slots.size());
            if (frees[i]) slots.close(key);
          }
          QVERIFY(slots.held().empty());
        }
      }
    }
  }
}

// run_pipeline_stage on one stage of gpt-tiny: a list that uses a slot its
// forward never filled, or holds more micro-batches than the model has slots,
// stops with the key named; a chunk the runtime cannot run yet is refused.
void TestPipelineSchedule::the_runtime_refuses_a_slot_never_filled_or_one_too_many() {
  MemoryLedger ledger;
  auto backend = make_cpu_backend({1});
  auto model = make_model(find_model_preset("gpt-tiny"), *backend, ledger);
  model->init_weights(1);
  const int B = 1, T = 8;
  std::vector<std::int32_t> ids(B * T, 65), targets(B * T, 66);
  const auto run_list = [&](const std::vector<PipelineAction>& list) {
    const auto batch = [&](int) { return Batch{B, T, ids.data(), targets.data(), nullptr, nullptr}; };
    const PipelineStageRun run{*model, nullptr, 0, &list, batch, {}, B * T, 0, CommTag{}, nullptr, nullptr, Event{}};
    return run_pipeline_stage(run);
  };
  const auto fails_naming = [&](const std::vector<PipelineAction>& list, const char* text) {
    try {
      run_list(list);
    } catch (const std::logic_error& e) {
      if (std::string(e.what()).find(text) != std::string::npos) return true;
      qWarning("%s", e.what());
    }
    return false;
  };
  model->set_activation_slots(1);
  run_list({compute(Type::forward, 0), compute(Type::backward, 0), compute(Type::forward, 1),
            compute(Type::backward, 1)});  // one at a time: one slot is enough
  QVERIFY(fails_naming({compute(Type::forward, 0), compute(Type::backward, 1)},
                       "no activation slot holds (chunk 0, micro-batch 1)"));
  QVERIFY(fails_naming(
      {compute(Type::forward, 0), compute(Type::forward, 1), compute(Type::backward, 0), compute(Type::backward, 1)},
      "no free activation slot for (chunk 0, micro-batch 1)"));
  QVERIFY(fails_naming({compute(Type::forward, 0)}, "never frees the slot of (chunk 0, micro-batch 0)"));
  QVERIFY(fails_naming({{Type::forward, 0, -1, 0, 1}}, "model chunk 1"));
  // A W runs (zero-bubble schedules), but only after its B.
  run_list({compute(Type::forward, 0), compute(Type::backward, 0), compute(Type::weight_gradient, 0)});
  QVERIFY(fails_naming({compute(Type::forward, 0), compute(Type::weight_gradient, 0), compute(Type::backward, 0)},
                       "no weight gradients are owed"));
  // GPipe's two in flight fit in two slots, and the stage's activations are two micro-batches' worth.
  model->set_activation_slots(2);
  const std::int64_t before = ledger.current()[MemoryCategory::activations];
  run_list(
      {compute(Type::forward, 0), compute(Type::forward, 1), compute(Type::backward, 0), compute(Type::backward, 1)});
  QCOMPARE(ledger.current()[MemoryCategory::activations], 2 * before);
}

QTEST_GUILESS_MAIN(TestPipelineSchedule)
#include "test_pipeline_schedule.moc"
