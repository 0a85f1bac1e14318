// SPDX-License-Identifier: GPL-3.0-or-later
// Pipeline-parallel schedules as plain data: for each stage, the exact list of
// actions it runs in one optimizer step (forwards, backwards and the
// point-to-point transfers they imply). One list, several readers: the
// runtime executes it (parallel/pipeline_parallel.h), simulate_pipeline_schedule
// times it (the bubble), peak_in_flight counts the activations it holds (the
// trainer's slots, the estimator's memory), and `shardscope-cli schedule`
// prints it. As torch.distributed.pipelining's
// _Action(stage_index, computation_type, microbatch_index), an action says
// (stage, chunk, micro-batch, phase): a stage may hold several model chunks
// (Megatron-LM's interleaved schedule, virtual stage chunk * p + stage), and a
// backward may split into B, the input gradient, and W, the weight gradient
// (zero-bubble schedules: ZB-H1 and ZB-H2, plan/zero_bubble_schedules.h).
// GPipe, 1F1B and the ZB-H's use chunk 0; ZB-V places two chunks per stage
// in a V (plan/zb_v_schedule.h, ChunkPlacement).
//
// Notation (format_pipeline_schedule): F3 / B3 / W3 are the forward / backward
// / weight gradient of micro-batch 3; sendA3->s2 sends its activation to stage
// 2, recvA3<-s0 receives it from stage 0; sendG3->s0 / recvG3<-s2 do the same
// for its gradient. An action on chunk c > 0 carries ".c" after the
// micro-batch: F3.1, sendA3.1->s0.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "clock/pipeline_bubble.h"  // gpipe_bubble_fraction, beside the schedules it bounds
#include "config/run_choices.h"
#include "model/activation_slots.h"  // ActivationKey

namespace shardscope {

struct PipelineAction {
  enum class Type {
    forward,          // F: run this chunk's layers forward on the micro-batch, keep its activations
    backward,         // B: run them backward (input gradient, and weight gradient unless a W follows);
                      //    frees the micro-batch's activations unless a W still needs them
    weight_gradient,  // W: the weight gradient alone, after B (zero-bubble schedules)
    send_activation,  // this stage's output activation -> next stage (peer = stage + 1)
    recv_activation,  // previous stage's output activation <- peer = stage - 1, the input of our forward
    send_gradient,    // gradient w.r.t. this stage's input -> previous stage (peer = stage - 1)
    recv_gradient,    // gradient w.r.t. our output <- next stage (peer = stage + 1), the input of our backward
  };  // with chunks, "next" is the next place in the model: after stage p - 1 of chunk c, stage 0 of chunk c + 1
  Type type = Type::forward;
  int micro_batch = 0;  // index within the step's m micro-batches
  int peer_stage = -1;  // the other end of a transfer; -1 for compute
  int stage = 0;        // the stage that runs it (its list's index in the schedule)
  int chunk = 0;        // which of the stage's model chunks (virtual stages); 0 while a stage holds one

  friend bool operator==(const PipelineAction&, const PipelineAction&) = default;
};

// schedule[stage] is that stage's action list, in the order it runs them;
// every action in it has .stage == stage.
using PipelineSchedule = std::vector<std::vector<PipelineAction>>;

// The activation slot an action's micro-batch uses on its stage (model/activation_slots.h).
inline ActivationKey activation_key(const PipelineAction& action) {
  return {action.chunk, action.micro_batch};
}

// [i] whether list[i] is the last backward phase of its (chunk, micro-batch):
// a W, or a B with no W of the same key in the list. After it the stage no
// longer needs the micro-batch's activations (the gradient it may still send
// lives in the model's shared scratch), so their slot is free again.
std::vector<bool> frees_activations(const std::vector<PipelineAction>& list);

bool is_compute(const PipelineAction& action);  // forward, backward or weight gradient

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
// virtual_stages (v) is interleaved 1F1B's chunks per stage; the other kinds
// take 1 (plan/interleaved_schedule.h says which v and m it refuses).
PipelineSchedule make_pipeline_schedule(PipelineScheduleKind kind, int stages, int micro_batches,
                                        int virtual_stages = 1);

// The same lists with the transfers removed (only F, B and W).
PipelineSchedule compute_only(const PipelineSchedule& schedule);

// [stage] the most micro-batches whose activations the stage holds at once:
// walking its list, an F opens an (chunk, micro-batch) and its last backward
// phase (W if the list has one for it, else B) closes it. The one count the
// trainer sizes its activation slots by, the estimator's activation memory
// multiplies by, and the simulator reports. 0 for an empty list.
std::vector<int> peak_in_flight(const PipelineSchedule& schedule);
// The same count in closed form for today's schedules (chunk 0), for
// schedules too large to build: GPipe holds all m; 1F1B lets stage s run at
// most p - s forwards ahead (Narayanan et al. 2021), min(m, p - s); ZB-H1
// holds min(m, p) on every stage, ZB-H2 min(m, 2p - 1); interleaved 1F1B its
// warm-up plus one, min(2(p - s - 1) + (v - 1)p + 1, v·m) (chunk, micro-batch) pairs.
int peak_in_flight_closed_form(PipelineScheduleKind kind, int stages, int stage, int micro_batches,
                               int virtual_stages = 1);

// One token per action, e.g. "F3", "sendA3->s2" (notation above).
std::string format_pipeline_action(const PipelineAction& action);
// A sentence for tooltips and logs, e.g. "stage 1 sends the activation of micro-batch 3 to stage 2".
std::string describe_pipeline_action(const PipelineAction& action);
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
  std::vector<double> busy_time;                  // [stage] time in F, B and W
  double bubble_fraction = 0;                     // 1 - sum(busy_time) / (stages * makespan)
  std::vector<int> peak_micro_batches_in_flight;  // [stage] peak_in_flight(schedule)
};

// Runs the lists as the ranks would: each stage one action at a time in list
// order, each action starting once the stage is free and its inputs exist:
//   F(i) on s > 0 needs the activation of i from s - 1, B(i) on s < p - 1 the
//   gradient of i from s + 1, and B(i) needs F(i) on its own stage, W(i) B(i);
//   with chunks, the stage before chunk c of stage 0 is chunk c - 1 of stage
//   p - 1 (Megatron's interleaving: virtual stage c * p + s);
//   a recv ends comm_time after the matching send was posted;
//   sends are asynchronous (post and go on, zero stage time).
// A list without transfers (compute_only) is run with comm_time as the latency
// between the producing and the consuming compute. B takes backward_time, W
// weight_time. Throws std::invalid_argument for a negative or non-finite time,
// an action listed on another stage, a transfer to the wrong peer, an action
// run twice, and a schedule that cannot finish (a deadlock, or an input never
// produced), naming the stuck action of every unfinished stage.
// placement says where each stage's chunks sit in the model: round-robin
// (virtual stage chunk·p + stage, as above) or ZB-V's V (chunk 0 = virtual
// stage s, chunk 1 = 2p - 1 - s; plan/zb_v_schedule.h), whose last stage hands
// its chunk 0's output to its chunk 1 with no transfer and no comm_time.
enum class ChunkPlacement { round_robin, v_shape };
ChunkPlacement chunk_placement(PipelineScheduleKind kind);  // v_shape for zb-v
PipelineTimeline simulate_pipeline_schedule(const PipelineSchedule& schedule, double forward_time, double backward_time,
                                            double comm_time = 0, double weight_time = 0,
                                            ChunkPlacement placement = ChunkPlacement::round_robin);

}  // namespace shardscope
