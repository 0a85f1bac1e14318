// SPDX-License-Identifier: GPL-3.0-or-later
// Expert parallelism's communication (GShard, Lepikhin et al. 2020; Megatron-LM
// and torchtitan's EP): the all-to-all the MoE layers call
// (model/mixture_of_experts.h) over the rank's expert-parallel group, ep
// consecutive data-parallel ranks of one stage. Expert parallelism borrows
// the dp ranks, as Megatron-LM and torchtitan do: the world stays dp x pp x tp,
// each ep group's ranks read different data and share the experts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "layout/grid.h"
#include "model/mixture_of_experts.h"
#include "model/parameter_layout.h"
#include "parallel/communicator.h"

namespace shardscope {

// The global ranks of `rank`'s expert-parallel group: the ep data-parallel
// ranks [ep floor(d / ep), ep floor(d / ep) + ep) of its stage and tp rank,
// where d is its dp coordinate.
std::vector<int> expert_parallel_group(const Grid& grid, int rank, int ep);

// The global ranks that hold the same experts as `rank` (Megatron-LM's
// expert-data-parallel group): the dp/ep data-parallel ranks of its stage and
// tp rank at the same place in their ep groups (dp coordinate = d mod ep).
// Expert gradients are averaged over it; dense ones over the whole dp group.
std::vector<int> expert_data_parallel_group(const Grid& grid, int rank, int ep);

// The squares of the gradients in the flat range [begin, end) for the global
// norm: the replicated parameters' from this rank (every ep rank has the same),
// the experts' summed over the ep group (each holds other experts), so every
// expert counts once. `squares(offset, count)` as tensor_parallel_sum_of_squares'.
float expert_parallel_sum_of_squares(const ParameterLayout& layout, std::int64_t begin, std::int64_t end,
                                     const std::function<double(std::int64_t, std::int64_t)>& squares, Communicator& ep,
                                     const CommTag& tag);

// The model's ExpertParallelGroup over `ep`. Its all-to-all is ep - 1 pairwise
// exchanges (step s: send to rank + s, receive from rank - s), each a send and
// a receive tagged with the layer's unit, so the events give the bytes between
// every pair of ranks.
std::unique_ptr<ExpertParallelGroup> make_expert_parallel_group(Communicator& ep);

}  // namespace shardscope
