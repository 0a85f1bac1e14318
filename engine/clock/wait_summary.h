// SPDX-License-Identifier: GPL-3.0-or-later
// Who waited for whom. On the virtual clock a rank that reaches a collective
// or a receive before its peers idles until they get there, and the
// communicator says so with a wait_span event naming the rank it waited for
// (parallel/in_process_communicator.h: a delay passed round a ring keeps the
// name of the rank that caused it). Summed per (waiter, waited-for) pair, a
// straggler (--slow-rank) is the rank the others' waits point at; in a
// pipeline, the earlier stages are what the later ones wait for in the bubble.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "events/event.h"

namespace shardscope {

struct RankWaits {
  std::map<std::pair<int, int>, std::int64_t> ns;  // (waiter, waited for) -> ns, summed over the steps
  std::int64_t first_step = 0, last_step = 0;      // the steps summed (0, 0: none)

  void add(const Event& wait_span);
  std::int64_t steps() const { return last_step >= first_step && first_step > 0 ? last_step - first_step + 1 : 0; }
  std::int64_t waited_ns(int waiter) const;       // all its waits
  std::int64_t waited_for_ns(int culprit) const;  // every other rank's waits for it
  std::int64_t total_ns() const;
  // The rank the others waited for longest (-1: no waits).
  int most_waited_for() const;
};

// Each rank's time per step over steps first..last, from its whole-stage
// compute spans and optimizer: the compute, and the window from its first
// start to its last end (window − compute: the time its compute stream idled).
struct RankStepTimes {
  std::vector<double> compute_ns, window_ns;  // [rank], per step on average
};
RankStepTimes rank_step_times(std::span<const Event> events, int world_size, std::int64_t first_step,
                              std::int64_t last_step);

// The closing lines, in English, per step on average: who held the others up
// and how long each rank waited, e.g.
//   waits: per step (steps 2-20) the ranks' collectives and receives waited 137.8 ms in all for other
//   ranks (...); 100% of it for rank 3, whose compute takes 3x as long (--slow-rank 3:3)
//   rank 0 waited 46.0 ms (for rank 3: 46.0 ms) ...
// A wait on DDP's communication stream lies beside the rank's own backward, so
// a rank's waits may exceed the time its compute stream idled.
// (a line per rank only where one rank has most of the waits, or is the --slow-rank).
// slow_rank/slow_factor: the run's --slow-rank (-1: none). Empty without waits.
// times: rank_step_times' (empty: not said); with a straggler, its compute
// beside the others', and the time the others idle beside (F − 1) × their compute.
std::vector<std::string> wait_summary_lines(const RankWaits& waits, int world_size, int slow_rank, double slow_factor,
                                            const RankStepTimes& times = {});

}  // namespace shardscope
