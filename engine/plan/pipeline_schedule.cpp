// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/pipeline_schedule.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "plan/interleaved_schedule.h"
#include "plan/zb_v_schedule.h"
#include "plan/zero_bubble_schedules.h"

namespace shardscope {

namespace {

using Type = PipelineAction::Type;

void check_shape(int stages, int micro_batches) {
  if (stages < 1) throw ConfigError("--pp must be at least 1 (got " + std::to_string(stages) + ")");
  if (micro_batches < 1)
    throw ConfigError("--micro-batches must be at least 1 (got " + std::to_string(micro_batches) + ")");
}

// F(i) and the transfers it implies: its input activation comes from the
// previous stage, its output activation goes to the next one.
void add_forward(std::vector<PipelineAction>& list, int stage, int stages, int micro_batch) {
  if (stage > 0) list.push_back({Type::recv_activation, micro_batch, stage - 1, stage});
  list.push_back({Type::forward, micro_batch, -1, stage});
  if (stage < stages - 1) list.push_back({Type::send_activation, micro_batch, stage + 1, stage});
}

// B(i) and the transfers it implies: the gradient w.r.t. our output comes from
// the next stage, the gradient w.r.t. our input goes to the previous one.
void add_backward(std::vector<PipelineAction>& list, int stage, int stages, int micro_batch) {
  if (stage < stages - 1) list.push_back({Type::recv_gradient, micro_batch, stage + 1, stage});
  list.push_back({Type::backward, micro_batch, -1, stage});
  if (stage > 0) list.push_back({Type::send_gradient, micro_batch, stage - 1, stage});
}

// GPipe (Huang et al. 2019), "all forward, all backward": every stage runs
//   fill:  the m forwards F0 .. F(m-1), activations flowing down the pipeline;
//   drain: the m backwards B0 .. B(m-1), gradients flowing back up.
// Every stage holds the activations of all m micro-batches at the turn. The
// backwards run in micro-batch order, as in PyTorch's ScheduleGPipe and
// picotron's AFAB step (GPipe's Fig. 2 draws them in reverse order, which
// changes neither the bubble nor the peak memory).
std::vector<PipelineAction> gpipe_stage(int stage, int stages, int micro_batches) {
  std::vector<PipelineAction> list;
  for (int i = 0; i < micro_batches; ++i) add_forward(list, stage, stages, i);
  for (int i = 0; i < micro_batches; ++i) add_backward(list, stage, stages, i);
  return list;
}

// 1F1B as in PipeDream-Flush (Narayanan et al. 2021, Megatron-LM's default
// non-interleaved schedule). Stage s of p runs
//   warm-up:   w = min(p - s - 1, m) forwards F0 .. F(w-1), so that the stages
//              below it have work by the time its first gradient comes back;
//   steady:    m - w rounds of one forward and one backward, F(w + k) B(k);
//   cool-down: the w backwards left, B(m - w) .. B(m - 1).
// Same bubble as GPipe, but stage s holds at most min(p - s, m) micro-batches'
// activations instead of m, because each backward frees one before the next forward.
std::vector<PipelineAction> one_f_one_b_stage(int stage, int stages, int micro_batches) {
  std::vector<PipelineAction> list;
  const int warmup = std::min(stages - stage - 1, micro_batches);
  for (int i = 0; i < warmup; ++i) add_forward(list, stage, stages, i);
  for (int k = 0; k < micro_batches - warmup; ++k) {
    add_forward(list, stage, stages, warmup + k);
    add_backward(list, stage, stages, k);
  }
  for (int i = micro_batches - warmup; i < micro_batches; ++i) add_backward(list, stage, stages, i);
  return list;
}

// A compute-only list with the transfers each action implies (add_forward,
// add_backward; a W reads and sends nothing).
std::vector<PipelineAction> with_transfers(const std::vector<PipelineAction>& compute, int stage, int stages) {
  std::vector<PipelineAction> list;
  for (const PipelineAction& a : compute) {
    if (a.type == Type::forward)
      add_forward(list, stage, stages, a.micro_batch);
    else if (a.type == Type::backward)
      add_backward(list, stage, stages, a.micro_batch);
    else
      list.push_back(a);
  }
  return list;
}

std::vector<PipelineAction> stage_list(PipelineScheduleKind kind, int stage, int stages, int micro_batches) {
  switch (kind) {
    case PipelineScheduleKind::gpipe:
      return gpipe_stage(stage, stages, micro_batches);
    case PipelineScheduleKind::one_f_one_b:
      return one_f_one_b_stage(stage, stages, micro_batches);
    case PipelineScheduleKind::zb_h1:
    case PipelineScheduleKind::zb_h2:
    case PipelineScheduleKind::interleaved_1f1b:
    case PipelineScheduleKind::zb_v:
      break;  // generated for all stages at once (make_pipeline_schedule)
  }
  return {};
}

}  // namespace

ChunkPlacement chunk_placement(PipelineScheduleKind kind) {
  return kind == PipelineScheduleKind::zb_v ? ChunkPlacement::v_shape : ChunkPlacement::round_robin;
}

bool is_compute(const PipelineAction& action) {
  return action.type == Type::forward || action.type == Type::backward || action.type == Type::weight_gradient;
}

PipelineSchedule make_pipeline_schedule(PipelineScheduleKind kind, int stages, int micro_batches, int virtual_stages) {
  check_shape(stages, micro_batches);
  if (kind == PipelineScheduleKind::interleaved_1f1b)
    return interleaved_schedule(stages, micro_batches, virtual_stages);
  if (kind == PipelineScheduleKind::zb_v && virtual_stages == 1) return zb_v_schedule(stages, micro_batches);
  if (virtual_stages != 1)
    throw ConfigError("--virtual-stages " + std::to_string(virtual_stages) + " needs --schedule interleaved-1f1b (" +
                      pipeline_schedule_name(kind) + " holds one model chunk per stage)");
  PipelineSchedule schedule;
  if (kind == PipelineScheduleKind::zb_h1 || kind == PipelineScheduleKind::zb_h2) {
    // The zero-bubble generators place the computations (one list for all
    // stages: ZB-H2's depend on each other); the transfers follow from them.
    const auto compute = kind == PipelineScheduleKind::zb_h1 ? zb_h1_compute_lists(stages, micro_batches)
                                                             : zb_h2_compute_lists(stages, micro_batches);
    for (int stage = 0; stage < stages; ++stage)
      schedule.push_back(with_transfers(compute[static_cast<std::size_t>(stage)], stage, stages));
    return schedule;
  }
  for (int stage = 0; stage < stages; ++stage) schedule.push_back(stage_list(kind, stage, stages, micro_batches));
  return schedule;
}

PipelineSchedule compute_only(const PipelineSchedule& schedule) {
  PipelineSchedule result(schedule.size());
  for (std::size_t s = 0; s < schedule.size(); ++s)
    for (const auto& action : schedule[s])
      if (is_compute(action)) result[s].push_back(action);
  return result;
}

std::string format_pipeline_action(const PipelineAction& a) {
  std::string mb = std::to_string(a.micro_batch);
  if (a.chunk != 0) mb.append(".").append(std::to_string(a.chunk));  // appended: GCC 12's -Wrestrict misreads the sum
  const std::string peer = std::to_string(a.peer_stage);
  switch (a.type) {
    case Type::forward:
      return "F" + mb;
    case Type::backward:
      return "B" + mb;
    case Type::weight_gradient:
      return "W" + mb;
    case Type::send_activation:
      return "sendA" + mb + "->s" + peer;
    case Type::recv_activation:
      return "recvA" + mb + "<-s" + peer;
    case Type::send_gradient:
      return "sendG" + mb + "->s" + peer;
    case Type::recv_gradient:
      return "recvG" + mb + "<-s" + peer;
  }
  return "?";
}

std::string describe_pipeline_action(const PipelineAction& a) {
  const std::string who = "stage " + std::to_string(a.stage);
  const std::string mb = " of micro-batch " + std::to_string(a.micro_batch) +
                         (a.chunk == 0 ? "" : " (model chunk " + std::to_string(a.chunk) + ")");
  const std::string peer = " stage " + std::to_string(a.peer_stage);
  switch (a.type) {
    case Type::forward:
      return who + " runs the forward" + mb;
    case Type::backward:
      return who + " runs the backward" + mb;
    case Type::weight_gradient:
      return who + " runs the weight gradient" + mb;
    case Type::send_activation:
      return who + " sends the activation" + mb + " to" + peer;
    case Type::recv_activation:
      return who + " receives the activation" + mb + " from" + peer;
    case Type::send_gradient:
      return who + " sends the input gradient" + mb + " to" + peer;
    case Type::recv_gradient:
      return who + " receives the output gradient" + mb + " from" + peer;
  }
  return "?";
}

std::vector<bool> frees_activations(const std::vector<PipelineAction>& list) {
  std::set<ActivationKey> with_weight_gradient;
  for (const PipelineAction& a : list)
    if (a.type == Type::weight_gradient) with_weight_gradient.insert(activation_key(a));
  std::vector<bool> frees(list.size(), false);
  for (std::size_t i = 0; i < list.size(); ++i)
    frees[i] = list[i].type == Type::weight_gradient ||
               (list[i].type == Type::backward && !with_weight_gradient.contains(activation_key(list[i])));
  return frees;
}

std::vector<int> peak_in_flight(const PipelineSchedule& schedule) {
  std::vector<int> peak(schedule.size(), 0);
  for (std::size_t s = 0; s < schedule.size(); ++s) {
    const std::vector<bool> frees = frees_activations(schedule[s]);
    int held = 0;
    for (std::size_t i = 0; i < schedule[s].size(); ++i) {
      if (schedule[s][i].type == Type::forward) peak[s] = std::max(peak[s], ++held);
      if (frees[i]) --held;
    }
  }
  return peak;
}

int peak_in_flight_closed_form(PipelineScheduleKind kind, int stages, int stage, int micro_batches,
                               int virtual_stages) {
  switch (kind) {
    case PipelineScheduleKind::interleaved_1f1b:
      return interleaved_peak_in_flight(stages, stage, micro_batches, virtual_stages);
    case PipelineScheduleKind::gpipe:
      return micro_batches;
    case PipelineScheduleKind::one_f_one_b:
      break;
    case PipelineScheduleKind::zb_h1:  // W delayed s rounds on stage s: p - s + s
      return std::max(1, std::min(micro_batches, stages));
    case PipelineScheduleKind::zb_h2:  // the greedy clock's cap
      return std::max(1, std::min(micro_batches, 2 * stages - 1));
    case PipelineScheduleKind::zb_v:  // 2p - 1 forwards in the warm-up, then one more before each W
      return std::max(1, std::min(2 * micro_batches, 2 * stages));
  }
  return std::max(1, std::min(micro_batches, stages - stage));
}

std::string format_pipeline_schedule(const PipelineSchedule& schedule, bool with_communication) {
  std::string text;
  for (std::size_t s = 0; s < schedule.size(); ++s) {
    text.append("stage ").append(std::to_string(s)).append(":");
    for (const auto& action : schedule[s])
      if (with_communication || is_compute(action)) text.append(" ").append(format_pipeline_action(action));
    text.append("\n");
  }
  return text;
}

bool fuses_with_next(const std::vector<PipelineAction>& actions, std::size_t i) {
  using Type = PipelineAction::Type;
  if (i + 1 >= actions.size()) return false;
  const Type a = actions[i].type, b = actions[i + 1].type;
  // Only the exchanges of opposite directions, whose buffers differ: a gradient
  // sent back and the next activation received (the stage's input), or an
  // activation sent on and a gradient received. A gradient sent back and one
  // received from the next stage share the model's gradient scratch, so they
  // stay in order (and, flowing one way in the cool-down, cannot hang).
  return (a == Type::send_activation && b == Type::recv_gradient) ||
         (a == Type::send_gradient && b == Type::recv_activation);
}

namespace {
struct RendezvousOp {
  bool send;
  int peer;
};

// Each stage's point-to-point items in order: one op, or a fused send +
// receive; in a list with model chunks (interleaved_schedule.h) every run of
// transfers between two computations, posted as one group as Megatron-LM does.
std::vector<std::vector<std::vector<RendezvousOp>>> rendezvous_items(const PipelineSchedule& schedule, bool fused) {
  const auto is_send = [](Type t) { return t == Type::send_activation || t == Type::send_gradient; };
  std::vector<std::vector<std::vector<RendezvousOp>>> items(schedule.size());
  for (std::size_t s = 0; s < schedule.size(); ++s) {
    const auto& actions = schedule[s];
    const bool grouped =
        fused && std::any_of(actions.begin(), actions.end(), [](const PipelineAction& a) { return a.chunk > 0; });
    for (std::size_t i = 0; i < actions.size(); ++i) {
      if (is_compute(actions[i])) continue;
      std::vector<RendezvousOp> item{{is_send(actions[i].type), actions[i].peer_stage}};
      if (grouped) {
        for (; i + 1 < actions.size() && !is_compute(actions[i + 1]); ++i)
          item.push_back({is_send(actions[i + 1].type), actions[i + 1].peer_stage});
      } else if (fused && fuses_with_next(actions, i)) {
        item.push_back({false, actions[i + 1].peer_stage});
        ++i;
      }
      items[s].push_back(item);
    }
  }
  return items;
}
}  // namespace

std::string pipeline_schedule_rendezvous_problem(const PipelineSchedule& schedule, bool fused) {
  using Op = RendezvousOp;
  const auto stages = static_cast<int>(schedule.size());
  const std::vector<std::vector<std::vector<Op>>> items = rendezvous_items(schedule, fused);
  // Each stage posts its next item; a send meets the peer's posted receive
  // from this stage (and the reverse). An item completes when all its ops have
  // met theirs; then the stage posts its next. Stop when nothing moves.
  std::vector<std::size_t> at(schedule.size(), 0);
  std::vector<std::vector<bool>> met(schedule.size());
  const auto post = [&](int s) {
    const auto& list = items[static_cast<std::size_t>(s)];
    const std::size_t k = at[static_cast<std::size_t>(s)];
    met[static_cast<std::size_t>(s)].assign(k < list.size() ? list[k].size() : 0, false);
  };
  for (int s = 0; s < stages; ++s) post(s);
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < stages; ++s) {
      const auto us = static_cast<std::size_t>(s);
      if (at[us] >= items[us].size()) continue;
      const auto& mine = items[us][at[us]];
      for (std::size_t i = 0; i < mine.size(); ++i) {
        if (met[us][i]) continue;
        const auto up = static_cast<std::size_t>(mine[i].peer);
        if (up >= items.size() || at[up] >= items[up].size()) continue;
        const auto& theirs = items[up][at[up]];
        for (std::size_t j = 0; j < theirs.size(); ++j) {
          if (met[up][j] || theirs[j].peer != s || theirs[j].send == mine[i].send) continue;
          met[us][i] = met[up][j] = true;
          progress = true;
          break;
        }
      }
    }
    for (int s = 0; s < stages; ++s) {
      const auto us = static_cast<std::size_t>(s);
      if (at[us] >= items[us].size()) continue;
      bool done = true;
      for (const bool m : met[us]) done = done && m;
      if (done) {
        ++at[us];
        post(s);
        progress = true;
      }
    }
  }
  std::string problem;
  for (int s = 0; s < stages; ++s) {
    const auto& list = items[static_cast<std::size_t>(s)];
    const std::size_t k = at[static_cast<std::size_t>(s)];
    if (k >= list.size()) continue;
    problem += "stage " + std::to_string(s) + " waits on";
    for (const Op& op : list[k])
      problem += std::string(op.send ? " send to " : " receive from ") + "stage " + std::to_string(op.peer);
    problem += "; ";
  }
  return problem;
}

}  // namespace shardscope
