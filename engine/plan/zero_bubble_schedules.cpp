// SPDX-License-Identifier: GPL-3.0-or-later
// ZB-H1 and ZB-H2 (zero_bubble_schedules.h). With T_F, T_B, T_W the times of
// F, B and W on one stage, 1F1B's bubble is (p-1)(T_F + T_B + T_W) per stage
// (its backward is B and W together); ZB-H1's is (p-1)(T_F + T_B - T_W), and
// ZB-H2's close to zero (Qi et al. 2024, sec. 3).
#include "plan/zero_bubble_schedules.h"

#include <algorithm>
#include <limits>

namespace shardscope {

namespace {

using Type = PipelineAction::Type;

PipelineAction compute(Type type, int stage, int micro_batch) {
  return {type, micro_batch, -1, stage};
}

}  // namespace

// Stage s of p runs
//   warm-up:   w = min(p - s - 1, m) forwards, as 1F1B;
//   steady:    m - w rounds F(w + k) B(k), then W(k - s) once k >= s;
//   cool-down: B(i) for the w micro-batches left, each followed by the next
//              owed W if it is s or more micro-batches old, then the rest.
// Delaying W by s lets the last micro-batch's B pass up the pipeline with no
// W in its way, which removes T_W from every stage's bubble twice over: the
// bubble drops from (p-1)(T_F + T_B + T_W) to (p-1)(T_F + T_B - T_W). Every
// stage then holds up to min(m, p) micro-batches (p - s + s), the most any
// 1F1B stage holds (its first): the paper's "same peak memory as 1F1B".
std::vector<std::vector<PipelineAction>> zb_h1_compute_lists(int stages, int micro_batches) {
  std::vector<std::vector<PipelineAction>> lists(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    auto& list = lists[static_cast<std::size_t>(s)];
    const int warmup = std::min(stages - s - 1, micro_batches);
    int next_w = 0;  // the oldest micro-batch whose W is owed
    for (int i = 0; i < warmup; ++i) list.push_back(compute(Type::forward, s, i));
    for (int k = 0; k < micro_batches - warmup; ++k) {
      list.push_back(compute(Type::forward, s, warmup + k));
      list.push_back(compute(Type::backward, s, k));
      if (k >= s) list.push_back(compute(Type::weight_gradient, s, next_w++));
    }
    for (int i = micro_batches - warmup; i < micro_batches; ++i) {
      list.push_back(compute(Type::backward, s, i));
      if (next_w <= i - s) list.push_back(compute(Type::weight_gradient, s, next_w++));
    }
    while (next_w < micro_batches) list.push_back(compute(Type::weight_gradient, s, next_w++));
  }
  return lists;
}

// A list scheduler on a clock where F, B and W each take one unit (the paper's
// T_F = T_B = T_W): each stage runs, of what it may run, whatever can start
// first, and at a tie the B of its oldest micro-batch (the stage above waits
// for it), else the next F while fewer than 2p - 1 micro-batches are in
// flight, else its oldest owed W. The stages fill the warm-up with forwards and the waits with W's;
// the order it finds is then the schedule, whatever the real times.
std::vector<std::vector<PipelineAction>> zb_h2_compute_lists(int stages, int micro_batches) {
  const int p = stages, m = micro_batches, cap = 2 * stages - 1;
  constexpr double kNotYet = -1;
  std::vector<std::vector<double>> forward_end(p, std::vector<double>(m, kNotYet));
  std::vector<std::vector<double>> backward_end(p, std::vector<double>(m, kNotYet));
  std::vector<int> forwards(p, 0), backwards(p, 0), weights(p, 0);
  std::vector<double> free_at(p, 0.0);
  std::vector<std::vector<PipelineAction>> lists(static_cast<std::size_t>(p));
  for (std::int64_t left = 3LL * p * m; left > 0; --left) {
    double best_start = std::numeric_limits<double>::infinity();
    int best_stage = -1;
    Type best_type = Type::forward;
    for (int s = 0; s < p; ++s) {
      const auto consider = [&](double start, Type type) {
        if (start < best_start) best_start = start, best_stage = s, best_type = type;
      };
      const int b = backwards[s], f = forwards[s];
      if (b < f && (s == p - 1 || backward_end[s + 1][b] != kNotYet))
        consider(std::max({free_at[s], forward_end[s][b], s == p - 1 ? 0.0 : backward_end[s + 1][b]}), Type::backward);
      if (f < m && f - weights[s] < cap && (s == 0 || forward_end[s - 1][f] != kNotYet))
        consider(std::max(free_at[s], s == 0 ? 0.0 : forward_end[s - 1][f]), Type::forward);
      if (weights[s] < b) consider(free_at[s], Type::weight_gradient);
    }
    const int s = best_stage;
    int& count = best_type == Type::forward ? forwards[s] : best_type == Type::backward ? backwards[s] : weights[s];
    lists[static_cast<std::size_t>(s)].push_back(compute(best_type, s, count));
    free_at[s] = best_start + 1;
    if (best_type == Type::forward) forward_end[s][count] = free_at[s];
    if (best_type == Type::backward) backward_end[s][count] = free_at[s];
    ++count;
  }
  return lists;
}

}  // namespace shardscope
