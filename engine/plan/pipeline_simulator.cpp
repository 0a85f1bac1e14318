// SPDX-License-Identifier: GPL-3.0-or-later
// simulate_pipeline_schedule (plan/pipeline_schedule.h): the stages running
// their action lists on a clock, for the bubble the schedules leave.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "plan/pipeline_schedule.h"
#include "plan/zb_v_schedule.h"

namespace shardscope {

namespace {

using Type = PipelineAction::Type;
using ActionKey = std::tuple<Type, int, int>;  // (action type, chunk, micro-batch)

ActionKey key_of(const PipelineAction& a) {
  return {a.type, a.chunk, a.micro_batch};
}

void check_times(double forward_time, double backward_time, double comm_time, double weight_time) {
  for (double t : {forward_time, backward_time, comm_time, weight_time})
    if (!std::isfinite(t) || t < 0) throw std::invalid_argument("pipeline simulation: times must be finite and >= 0");
}

// A model chunk on a stage: with p stages and chunks 0 .. c-1 each, the model
// runs (0, 0) .. (p-1, 0), (0, 1) .. (p-1, 1), ...: virtual stage chunk * p + stage
// (Megatron-LM's interleaved schedule; one chunk per stage: the plain pipeline).
struct Place {
  int stage = 0, chunk = 0;
};

// The places before and after (s, c) in the model, or nullopt at its ends
// (the first reads the batch, the last computes the loss).
std::optional<Place> upstream(int s, int c, int p, ChunkPlacement placement) {
  if (placement == ChunkPlacement::v_shape) {
    const auto v = v_place_before(s, c, p);
    return v ? std::optional<Place>(Place{v->stage, v->chunk}) : std::nullopt;
  }
  if (s > 0) return Place{s - 1, c};
  if (c > 0) return Place{p - 1, c - 1};
  return std::nullopt;
}
std::optional<Place> downstream(int s, int c, int p, int chunks, ChunkPlacement placement) {
  if (placement == ChunkPlacement::v_shape) {
    const auto v = v_place_after(s, c, p);
    return v ? std::optional<Place>(Place{v->stage, v->chunk}) : std::nullopt;
  }
  if (s < p - 1) return Place{s + 1, c};
  if (c < chunks - 1) return Place{0, c + 1};
  return std::nullopt;
}

int chunk_count(const PipelineSchedule& schedule) {
  int chunks = 1;
  for (const auto& list : schedule)
    for (const auto& a : list) chunks = std::max(chunks, a.chunk + 1);
  return chunks;
}

// What each stage's list holds, checked once: on its own stage, right peers, nothing twice.
std::vector<std::set<ActionKey>> check_action_lists(const PipelineSchedule& schedule, int chunks,
                                                    ChunkPlacement placement) {
  const int p = static_cast<int>(schedule.size());
  std::vector<std::set<ActionKey>> listed(schedule.size());
  for (int s = 0; s < p; ++s) {
    for (const auto& a : schedule[s]) {
      const std::string where = "pipeline schedule, stage " + std::to_string(s) + ", " + format_pipeline_action(a);
      if (a.stage != s) throw std::invalid_argument(where + ": the action says stage " + std::to_string(a.stage));
      if (a.micro_batch < 0) throw std::invalid_argument(where + ": negative micro-batch");
      if (a.chunk < 0) throw std::invalid_argument(where + ": negative chunk");
      const bool to_next = a.type == Type::send_activation || a.type == Type::recv_gradient;
      const bool to_previous = a.type == Type::recv_activation || a.type == Type::send_gradient;
      const std::optional<Place> peer = to_next       ? downstream(s, a.chunk, p, chunks, placement)
                                        : to_previous ? upstream(s, a.chunk, p, placement)
                                                      : std::nullopt;
      if ((!is_compute(a) && (!peer || a.peer_stage != peer->stage)) || (is_compute(a) && a.peer_stage != -1))
        throw std::invalid_argument(where + ": wrong peer stage");
      if (!listed[s].insert(key_of(a)).second) throw std::invalid_argument(where + ": appears twice");
    }
  }
  return listed;
}

struct Times {
  double forward = 0, backward = 0, comm = 0, weight = 0;
  ChunkPlacement placement = ChunkPlacement::round_robin;
};

// The stages running their lists with the rules of simulate_pipeline_schedule
// (pipeline_schedule.h): each stage one action at a time, in list order, each
// action starting once the stage is free and the action's inputs exist.
class PipelineSimulator {
 public:
  PipelineSimulator(const PipelineSchedule& schedule, Times times)
      : schedule_(schedule),
        p_(static_cast<int>(schedule.size())),
        chunks_(chunk_count(schedule)),
        times_(times),
        listed_(check_action_lists(schedule, chunks_, times.placement)),
        finished_(schedule.size()),
        clock_(schedule.size(), 0.0) {
    timeline_.spans.resize(schedule.size());
    timeline_.busy_time.assign(schedule.size(), 0.0);
    timeline_.peak_micro_batches_in_flight = peak_in_flight(schedule);
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
  std::optional<double> end_of(int s, Type type, int chunk, int mb) const {
    auto it = finished_[s].find({type, chunk, mb});
    return it == finished_[s].end() ? std::nullopt : std::optional<double>(it->second);
  }
  std::optional<double> end_of(Place place, Type type, int mb) const {
    return end_of(place.stage, type, place.chunk, mb);
  }

  std::optional<double> plus_comm(std::optional<double> t) const {
    return t ? std::optional<double>(*t + times_.comm) : t;
  }
  // Straight from another place's computation: comm later, or at once on the
  // same stage (the V's turn).
  std::optional<double> handed_over(int s, Place from, Type type, int mb) const {
    const std::optional<double> t = end_of(from, type, mb);
    return from.stage == s ? t : plus_comm(t);
  }

  // The input of F(mb) on chunk c of stage s: through its recv if the list
  // has one, else straight from the previous place's forward, comm later.
  std::optional<double> activation_ready(int s, int c, int mb) const {
    const std::optional<Place> from = upstream(s, c, p_, times_.placement);
    if (!from) return 0.0;  // the first stage's first chunk reads the batch itself
    if (listed_[s].contains({Type::recv_activation, c, mb})) return end_of(s, Type::recv_activation, c, mb);
    return handed_over(s, *from, Type::forward, mb);
  }

  std::optional<double> gradient_ready(int s, int c, int mb) const {
    const std::optional<Place> from = downstream(s, c, p_, chunks_, times_.placement);
    if (!from) return 0.0;  // the last stage's last chunk starts from its own loss
    if (listed_[s].contains({Type::recv_gradient, c, mb})) return end_of(s, Type::recv_gradient, c, mb);
    return handed_over(s, *from, Type::backward, mb);
  }

  // When the inputs of `a` on stage s exist, or nullopt while they do not yet.
  std::optional<double> inputs_ready(int s, const PipelineAction& a) const {
    const int mb = a.micro_batch, c = a.chunk;
    switch (a.type) {
      case Type::forward:
        return activation_ready(s, c, mb);
      case Type::backward: {
        auto own_forward = end_of(s, Type::forward, c, mb), gradient = gradient_ready(s, c, mb);
        if (!own_forward || !gradient) return std::nullopt;
        return std::max(*own_forward, *gradient);
      }
      case Type::weight_gradient:
        return end_of(s, Type::backward, c, mb);
      case Type::send_activation:
        return end_of(s, Type::forward, c, mb);
      case Type::send_gradient:
        return end_of(s, Type::backward, c, mb);
      case Type::recv_activation:  // the send of the place before ours
        return plus_comm(end_of(*upstream(s, c, p_, times_.placement), Type::send_activation, mb));
      case Type::recv_gradient:  // the send of the place after ours
        return plus_comm(end_of(*downstream(s, c, p_, chunks_, times_.placement), Type::send_gradient, mb));
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

  double duration(Type type) const {
    switch (type) {
      case Type::forward:
        return times_.forward;
      case Type::backward:
        return times_.backward;
      case Type::weight_gradient:
        return times_.weight;
      default:
        return 0;  // transfers: sends are posted, a recv's span is its wait
    }
  }

  // Runs `a` on stage s from when both the stage is free and its inputs are `ready`.
  void run_action(int s, const PipelineAction& a, double ready) {
    const double start = std::max(clock_[s], ready);
    PipelineSpan span{a, start, start + duration(a.type)};
    // A recv spans the wait: the stage sits in it until the data arrives.
    if (a.type == Type::recv_activation || a.type == Type::recv_gradient) span.start = clock_[s];
    if (is_compute(a)) timeline_.busy_time[s] += span.end - span.start;
    clock_[s] = span.end;
    finished_[s][key_of(a)] = span.end;
    timeline_.spans[s].push_back(span);
  }

  const PipelineSchedule& schedule_;
  const int p_, chunks_;
  const Times times_;
  const std::vector<std::set<ActionKey>> listed_;      // [stage] the actions its list holds
  std::vector<std::map<ActionKey, double>> finished_;  // [stage][(type, chunk, mb)]: when it ended (a send: was posted)
  std::vector<double> clock_;                          // [stage] when it is free
  PipelineTimeline timeline_;
};

}  // namespace

PipelineTimeline simulate_pipeline_schedule(const PipelineSchedule& schedule, double forward_time, double backward_time,
                                            double comm_time, double weight_time, ChunkPlacement placement) {
  check_times(forward_time, backward_time, comm_time, weight_time);
  const int p = static_cast<int>(schedule.size());
  if (p == 0) throw std::invalid_argument("pipeline simulation: the schedule has no stages");
  PipelineSimulator simulator(schedule, {forward_time, backward_time, comm_time, weight_time, placement});
  simulator.run_until_stuck();
  simulator.check_finished();
  return simulator.take_timeline();
}

}  // namespace shardscope
