// SPDX-License-Identifier: GPL-3.0-or-later
// The bytes an expert-parallel rank sends each other rank of its ep group per
// MoE layer per micro-batch (model/expert_parallel.cpp). Forward: the row
// counts per expert of the peer, E/ep values; the rows this rank routed to the
// peer's experts (dispatch, `out` rows of h values) and the outputs of the rows
// the peer routed to this rank's experts (combine, `back` rows). Backward: the
// same rows' gradients, the other way round. So, with e bytes a value,
//   pair = e · (E/ep + 2 · (out + back) · h)
// and with activation checkpointing the forward runs again before backward:
//   pair = e · (2 E/ep + 3 · (out + back) · h).
// out and back follow the routing. The estimator takes the capacity's bound,
// every expert receiving its capacity c = ceil(f·N·k/E) from every rank (routing
// uniform over the experts, none short): out = back = (E/ep) · c.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>

#include "events/event.h"
#include "plan/data_parallel_traffic.h"

namespace shardscope {

struct ExpertParallelTraffic {
  std::int64_t pair_bytes = 0;  // per ordered pair of ep ranks per MoE layer per micro-batch; 0 with ep 1
  std::int64_t rows = 0;        // out = back = (E/ep) · c
  std::string formula;          // "e · (E/ep + 4 · (E/ep) · c · h)"
  std::string values;           // "e = 4, E = 4, ep = 2, c = 320, h = 128"
};

// At the capacity's bound: capacity c rows for each of the peer's E/ep experts, both ways.
ExpertParallelTraffic expert_parallel_pair_traffic(int ep, int experts, int capacity, int hidden, int element_bytes = 4,
                                                   bool recompute = false);

// Bytes sent per (src, dst, unit, micro-batch) in step `step`, from the run's
// comm events (purpose expert_parallel, a layer's unit).
using ExpertParallelKey = std::tuple<int, int, int, int>;
std::map<ExpertParallelKey, std::int64_t> measure_expert_parallel_traffic(std::span<const Event> events,
                                                                          std::int64_t step);

// DDP under expert parallelism (the data-parallel gradient traffic): the
// dense gradients' ring all-reduce over the N data-parallel ranks, the
// experts' over the N/ep ranks holding the same experts (Ψ_e: the rank's E/ep
// experts of every MoE layer, Ψ_d the rest of the stage), g bytes a gradient:
//   2(N−1)/N · gΨ_d + 2(N/ep−1)/(N/ep) · gΨ_e
// ZeRO-1 (parallel/zero_expert_parallel.h): each kind reduce-scattered and
// all-gathered over its own group, padded to it (N' = N/ep, p bytes a parameter):
//   (N−1)/N · (g + p)Ψ_d' + (N'−1)/N' · (g + p)Ψ_e',  Ψ_d' = N·ceil(Ψ_d/N), Ψ_e' = N'·ceil(Ψ_e/N')
DataParallelTraffic expert_data_parallel_traffic(const ShardingRules& rules, int ep, std::int64_t dense,
                                                 std::int64_t experts);

}  // namespace shardscope
