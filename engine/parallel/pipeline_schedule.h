// SPDX-License-Identifier: GPL-3.0-or-later
// Pipeline-parallel schedules as plain data: for each stage, the exact list of
// actions it runs in one optimizer step (forwards, backwards and the
// point-to-point transfers they imply). The engine executes these lists, the
// GUI draws them, and simulate_pipeline_schedule times them to show the bubble.
//
// Notation (format_pipeline_schedule): F3 / B3 are the forward / backward of
// micro-batch 3; sendA3->s2 sends its activation to stage 2, recvA3<-s0 receives
// it from stage 0; sendG3->s0 / recvG3<-s2 do the same for its gradient.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "clock/pipeline_bubble.h"  // gpipe_bubble_fraction, beside the schedules it bounds
#include "config/run_choices.h"

namespace shardscope {


struct PipelineAction {
  enum class Type {
    forward,          // run this stage's layers forward on the micro-batch, keep its activations
    backward,         // run them backward, free the micro-batch's activations
    send_activation,  // this stage's output activation -> next stage (peer = stage + 1)
    recv_activation,  // previous stage's output activation <- peer = stage - 1, the input of our forward
    send_gradient,    // gradient w.r.t. this stage's input -> previous stage (peer = stage - 1)
    recv_gradient,    // gradient w.r.t. our output <- next stage (peer = stage + 1), the input of our backward
  };
  Type type = Type::forward;
  int micro_batch = 0;
  int peer_stage = -1;  // the other end of a transfer; -1 for forward and backward

  friend bool operator==(const PipelineAction&, const PipelineAction&) = default;
};

// schedule[stage] is that stage's action list, in the order it runs them.
using PipelineSchedule = std::vector<std::vector<PipelineAction>>;

bool is_compute(const PipelineAction& action);  // forward or backward

// Whether actions[i], a send, and actions[i + 1], a receive the other way
// (send activation + receive gradient, or send gradient + receive activation),
// go out as one grouped exchange (Communicator::send_recv). NCCL pairs a send with the
// peer's receive in order and blocks both until they meet: in 1F1B's steady
// state stage s sends an activation forward while stage s+1 sends a gradient
// back, and separately each would wait for the other's receive forever.
// Grouped, both directions proceed together (Megatron-LM's
// send_forward_recv_backward).
// pipeline_schedule_rendezvous_problem checks a schedule cannot hang this way.
bool fuses_with_next(const std::vector<PipelineAction>& actions, std::size_t i);

// Simulates the schedule's point-to-point operations with NCCL's semantics
// (a send completes only together with the peer's matching receive, in order
// per pair of stages; a fused send + receive is one group that completes when
// both have met their matches). Returns an empty string when every stage gets
// through its list, else which operations were left waiting on which stage.
// fused: group as fuses_with_next says (false: every op alone, to show the hang).
std::string pipeline_schedule_rendezvous_problem(const PipelineSchedule& schedule, bool fused = true);

// The schedule of one optimizer step over `stages` stages and `micro_batches`
// micro-batches, communication included (see the .cpp for the phases of each
// kind). Throws ConfigError naming --pp or --micro-batches unless both are >= 1.
// Between two stages the sends and the recvs come in the same micro-batch
// order, so in-order point-to-point matching pairs them. An executor must not
// block a send until the peer receives: in 1F1B's steady state stage s sends
// A(w+k) down while stage s+1 sends G(k) up, each before its recv. Post sends
// asynchronously, or fuse a send with the next recv (Megatron's
// send_forward_recv_backward).
PipelineSchedule make_pipeline_schedule(PipelineScheduleKind kind, int stages, int micro_batches);

// The same lists with the transfers removed (only F and B).
PipelineSchedule compute_only(const PipelineSchedule& schedule);

// One token per action, e.g. "F3", "sendA3->s2" (notation above).
std::string format_pipeline_action(const PipelineAction& action);
// A sentence for tooltips and logs, e.g. "stage 1 sends the activation of micro-batch 3 to stage 2".
std::string describe_pipeline_action(const PipelineAction& action, int stage);
// One line per stage, "stage 0: F0 F1 B0 B1\n"; transfers are shown only if asked.
std::string format_pipeline_schedule(const PipelineSchedule& schedule, bool with_communication = false);

// When a stage ran one of its actions (times in the units given to the simulator).
struct PipelineSpan {
  PipelineAction action;
  double start = 0;
  double end = 0;
};

struct PipelineTimeline {
  std::vector<std::vector<PipelineSpan>> spans;   // [stage][i] times schedule[stage][i]
  double makespan = 0;                            // end of the last action of any stage
  std::vector<double> busy_time;                  // [stage] time in forwards and backwards
  double bubble_fraction = 0;                     // 1 - sum(busy_time) / (stages * makespan)
  std::vector<int> peak_micro_batches_in_flight;  // [stage] most micro-batches with F done, B not yet
};

// Runs the lists as the ranks would: each stage one action at a time in list
// order, each action starting once the stage is free and its inputs exist:
//   F(i) on s > 0 needs the activation of i from s - 1, B(i) on s < p - 1 the
//   gradient of i from s + 1, and B(i) needs F(i) on its own stage;
//   a recv ends comm_time after the matching send was posted;
//   sends are asynchronous (post and go on, zero stage time).
// A list without transfers (compute_only) is run with comm_time as the latency
// between the producing and the consuming compute. Throws std::invalid_argument
// for a negative or non-finite time, a transfer to the wrong peer, an action run
// twice, and a schedule that cannot finish (a deadlock, or an input never produced),
// naming the stuck action of every unfinished stage.
PipelineTimeline simulate_pipeline_schedule(const PipelineSchedule& schedule, double forward_time, double backward_time,
                                            double comm_time = 0);

}  // namespace shardscope
