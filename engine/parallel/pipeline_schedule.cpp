// SPDX-License-Identifier: GPL-3.0-or-later
#include "parallel/pipeline_schedule.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/error.h"

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
  if (stage > 0) list.push_back({Type::recv_activation, micro_batch, stage - 1});
  list.push_back({Type::forward, micro_batch, -1});
  if (stage < stages - 1) list.push_back({Type::send_activation, micro_batch, stage + 1});
}

// B(i) and the transfers it implies: the gradient w.r.t. our output comes from
// the next stage, the gradient w.r.t. our input goes to the previous one.
void add_backward(std::vector<PipelineAction>& list, int stage, int stages, int micro_batch) {
  if (stage < stages - 1) list.push_back({Type::recv_gradient, micro_batch, stage + 1});
  list.push_back({Type::backward, micro_batch, -1});
  if (stage > 0) list.push_back({Type::send_gradient, micro_batch, stage - 1});
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

}  // namespace

bool is_compute(const PipelineAction& action) {
  return action.type == Type::forward || action.type == Type::backward;
}

PipelineSchedule make_pipeline_schedule(PipelineScheduleKind kind, int stages, int micro_batches) {
  check_shape(stages, micro_batches);
  PipelineSchedule schedule;
  for (int stage = 0; stage < stages; ++stage)
    schedule.push_back(kind == PipelineScheduleKind::gpipe ? gpipe_stage(stage, stages, micro_batches)
                                                           : one_f_one_b_stage(stage, stages, micro_batches));
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
  const std::string mb = std::to_string(a.micro_batch), peer = std::to_string(a.peer_stage);
  switch (a.type) {
    case Type::forward:
      return "F" + mb;
    case Type::backward:
      return "B" + mb;
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

std::string describe_pipeline_action(const PipelineAction& a, int stage) {
  const std::string who = "stage " + std::to_string(stage), mb = " of micro-batch " + std::to_string(a.micro_batch);
  const std::string peer = " stage " + std::to_string(a.peer_stage);
  switch (a.type) {
    case Type::forward:
      return who + " runs the forward" + mb;
    case Type::backward:
      return who + " runs the backward" + mb;
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

namespace {

using ActionKey = std::pair<Type, int>;  // (action type, micro-batch)

void check_times(double forward_time, double backward_time, double comm_time) {
  for (double t : {forward_time, backward_time, comm_time})
    if (!std::isfinite(t) || t < 0) throw std::invalid_argument("pipeline simulation: times must be finite and >= 0");
}

// What each stage's list holds, checked once: right peers, nothing twice.
std::vector<std::set<ActionKey>> check_action_lists(const PipelineSchedule& schedule) {
  const int p = static_cast<int>(schedule.size());
  std::vector<std::set<ActionKey>> listed(schedule.size());
  for (int s = 0; s < p; ++s) {
    for (const auto& a : schedule[s]) {
      const std::string where = "pipeline schedule, stage " + std::to_string(s) + ", " + format_pipeline_action(a);
      const bool downstream = a.type == Type::send_activation || a.type == Type::recv_gradient;
      const bool upstream = a.type == Type::recv_activation || a.type == Type::send_gradient;
      if (a.micro_batch < 0) throw std::invalid_argument(where + ": negative micro-batch");
      if ((downstream && a.peer_stage != s + 1) || (upstream && a.peer_stage != s - 1) ||
          (!is_compute(a) && (a.peer_stage < 0 || a.peer_stage >= p)))
        throw std::invalid_argument(where + ": wrong peer stage");
      if (!listed[s].insert({a.type, a.micro_batch}).second) throw std::invalid_argument(where + ": appears twice");
    }
  }
  return listed;
}

// The stages running their lists with the rules of simulate_pipeline_schedule
// (pipeline_schedule.h): each stage one action at a time, in list order, each
// action starting once the stage is free and the action's inputs exist.
class PipelineSimulator {
 public:
  PipelineSimulator(const PipelineSchedule& schedule, double forward_time, double backward_time, double comm_time)
      : schedule_(schedule),
        p_(static_cast<int>(schedule.size())),
        forward_time_(forward_time),
        backward_time_(backward_time),
        comm_time_(comm_time),
        listed_(check_action_lists(schedule)),
        finished_(schedule.size()),
        clock_(schedule.size(), 0.0),
        in_flight_(schedule.size(), 0) {
    timeline_.spans.resize(schedule.size());
    timeline_.busy_time.assign(schedule.size(), 0.0);
    timeline_.peak_micro_batches_in_flight.assign(schedule.size(), 0);
  }

  // Sweep the stages, running every action whose inputs exist. Start times
  // depend only on finished actions, so the sweep order does not change them;
  // a sweep that runs nothing while actions remain means nothing ever will.
  void run_until_stuck() {
    for (bool progress = true; progress;) {
      progress = false;
      for (int s = 0; s < p_; ++s) progress = run_ready_actions(s) || progress;
    }
  }

  // Throws, naming the action each unfinished stage waits at forever.
  void check_finished() const {
    std::string stuck;
    for (int s = 0; s < p_; ++s) {
      const std::size_t done = timeline_.spans[s].size();
      if (done == schedule_[s].size()) continue;
      stuck.append(stuck.empty() ? "" : ", ").append("stage " + std::to_string(s));
      stuck.append(" waits forever at action " + std::to_string(done) + " (" +
                   format_pipeline_action(schedule_[s][done]) + ")");
    }
    if (!stuck.empty()) throw std::invalid_argument("pipeline schedule cannot finish (deadlock): " + stuck);
  }

  // Hands over the spans with the makespan and the bubble, 1 - Σ busy / (p · makespan).
  PipelineTimeline take_timeline() {
    double total_busy = 0;
    for (int s = 0; s < p_; ++s) {
      timeline_.makespan = std::max(timeline_.makespan, clock_[s]);
      total_busy += timeline_.busy_time[s];
    }
    if (timeline_.makespan > 0) timeline_.bubble_fraction = 1.0 - total_busy / (p_ * timeline_.makespan);
    return std::move(timeline_);
  }

 private:
  // When stage s ended that action (for a send: posted it), nullopt while it has not.
  std::optional<double> end_of(int s, Type type, int mb) const {
    auto it = finished_[s].find({type, mb});
    return it == finished_[s].end() ? std::nullopt : std::optional<double>(it->second);
  }

  std::optional<double> plus_comm(std::optional<double> t) const {
    return t ? std::optional<double>(*t + comm_time_) : t;
  }

  // The input of F(mb) on stage s: through its recv if the list has one, else
  // straight from the previous stage's forward, comm_time later.
  std::optional<double> activation_ready(int s, int mb) const {
    if (s == 0) return 0.0;  // the first stage reads the batch itself
    if (listed_[s].contains({Type::recv_activation, mb})) return end_of(s, Type::recv_activation, mb);
    return plus_comm(end_of(s - 1, Type::forward, mb));
  }

  std::optional<double> gradient_ready(int s, int mb) const {
    if (s == p_ - 1) return 0.0;  // the last stage starts from its own loss
    if (listed_[s].contains({Type::recv_gradient, mb})) return end_of(s, Type::recv_gradient, mb);
    return plus_comm(end_of(s + 1, Type::backward, mb));
  }

  // When the inputs of `a` on stage s exist, or nullopt while they do not yet.
  std::optional<double> inputs_ready(int s, const PipelineAction& a) const {
    const int mb = a.micro_batch;
    switch (a.type) {
      case Type::forward:
        return activation_ready(s, mb);
      case Type::backward: {
        auto own_forward = end_of(s, Type::forward, mb), gradient = gradient_ready(s, mb);
        if (!own_forward || !gradient) return std::nullopt;
        return std::max(*own_forward, *gradient);
      }
      case Type::send_activation:
        return end_of(s, Type::forward, mb);
      case Type::send_gradient:
        return end_of(s, Type::backward, mb);
      case Type::recv_activation:
        return plus_comm(end_of(a.peer_stage, Type::send_activation, mb));
      case Type::recv_gradient:
        return plus_comm(end_of(a.peer_stage, Type::send_gradient, mb));
    }
    return std::nullopt;
  }

  // Runs stage s's next actions while their inputs exist; true if it ran any.
  bool run_ready_actions(int s) {
    bool ran = false;
    while (timeline_.spans[s].size() < schedule_[s].size()) {
      const PipelineAction& a = schedule_[s][timeline_.spans[s].size()];
      const std::optional<double> ready = inputs_ready(s, a);
      if (!ready) break;
      run_action(s, a, *ready);
      ran = true;
    }
    return ran;
  }

  // Runs `a` on stage s from when both the stage is free and its inputs are `ready`.
  void run_action(int s, const PipelineAction& a, double ready) {
    const double start = std::max(clock_[s], ready);
    PipelineSpan span{a, start, start};
    // A recv spans the wait: the stage sits in it until the data arrives.
    if (a.type == Type::recv_activation || a.type == Type::recv_gradient) span.start = clock_[s];
    if (a.type == Type::forward) {
      span.end += forward_time_;
      in_flight_[s]++;  // its activations are kept for the backward
    } else if (a.type == Type::backward) {
      span.end += backward_time_;
      in_flight_[s]--;
    }
    if (is_compute(a)) timeline_.busy_time[s] += span.end - span.start;
    timeline_.peak_micro_batches_in_flight[s] = std::max(timeline_.peak_micro_batches_in_flight[s], in_flight_[s]);
    clock_[s] = span.end;
    finished_[s][{a.type, a.micro_batch}] = span.end;
    timeline_.spans[s].push_back(span);
  }

  const PipelineSchedule& schedule_;
  const int p_;
  const double forward_time_, backward_time_, comm_time_;
  const std::vector<std::set<ActionKey>> listed_;      // [stage] the actions its list holds
  std::vector<std::map<ActionKey, double>> finished_;  // [stage][(type, mb)]: when it ended (a send: was posted)
  std::vector<double> clock_;                          // [stage] when it is free
  std::vector<int> in_flight_;                         // [stage] micro-batches with F done, B not yet
  PipelineTimeline timeline_;
};

}  // namespace

PipelineTimeline simulate_pipeline_schedule(const PipelineSchedule& schedule, double forward_time, double backward_time,
                                            double comm_time) {
  check_times(forward_time, backward_time, comm_time);
  const int p = static_cast<int>(schedule.size());
  if (p == 0) throw std::invalid_argument("pipeline simulation: the schedule has no stages");
  PipelineSimulator simulator(schedule, forward_time, backward_time, comm_time);
  simulator.run_until_stuck();
  simulator.check_finished();
  return simulator.take_timeline();
}

}  // namespace shardscope

namespace shardscope {

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

std::string pipeline_schedule_rendezvous_problem(const PipelineSchedule& schedule, bool fused) {
  using Type = PipelineAction::Type;
  struct Op {
    bool send;
    int peer;
  };
  const auto stages = static_cast<int>(schedule.size());
  // Each stage's point-to-point items in order: one op, or a fused send + receive.
  std::vector<std::vector<std::vector<Op>>> items(schedule.size());
  for (int s = 0; s < stages; ++s) {
    const auto& actions = schedule[static_cast<std::size_t>(s)];
    for (std::size_t i = 0; i < actions.size(); ++i) {
      const Type t = actions[i].type;
      if (is_compute(actions[i])) continue;
      const bool send = t == Type::send_activation || t == Type::send_gradient;
      std::vector<Op> item{{send, actions[i].peer_stage}};
      if (fused && fuses_with_next(actions, i)) {
        item.push_back({false, actions[i + 1].peer_stage});
        ++i;
      }
      items[static_cast<std::size_t>(s)].push_back(item);
    }
  }
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
