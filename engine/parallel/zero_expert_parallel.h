// SPDX-License-Identifier: GPL-3.0-or-later
// ZeRO-1 under expert parallelism. A rank's flat parameters mix two kinds: the
// dense ones (attention, norms, routers, embeddings), replicated on all Nd
// data-parallel ranks, and its E/ep experts of each MoE layer, replicated only
// on the Nd/ep ranks at the same place in their ep groups (the
// expert-data-parallel group, parallel/expert_parallel.h). As DeepSpeed-MoE
// and Megatron's distributed optimizer do, each kind is sharded over the
// ranks that hold it: the dense parameters' optimizer states over Nd, the
// experts' over Nd/ep. Per rank, in fp32:
//   4Ψ + 4Ψ + 8Ψ_d/Nd + 8Ψ_e/(Nd/ep)   (Ψ = Ψ_d + Ψ_e, the rank's parameters)
// Each kind is a "space": its elements in flat order, gathered from the runs
// of consecutive parameters of that kind, padded to a multiple of its group
// and partitioned as ZeRO-1's flat space is (plan/sharding_plan.h,
// make_zero_partition). Its collectives go through a staging buffer holding
// the packed space: (N−1)/N · (g + p) · N·ceil(Ψ_kind/N) bytes per step each.
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "core/dtype.h"
#include "model/parameter_layout.h"
#include "ops/backend.h"
#include "parallel/communicator.h"
#include "plan/sharding_plan.h"  // ZeroPartition

namespace shardscope {

// A flat range [begin, end) of one kind's consecutive parameters.
struct FlatRun {
  std::int64_t begin = 0, end = 0;
};

// The runs of expert (experts = true) or dense parameters, in flat order.
std::vector<FlatRun> parameter_runs(const ParameterLayout& layout, bool experts);

// The flat ranges that hold positions [begin, end) of the space made of `runs`.
std::vector<FlatRun> space_ranges(const std::vector<FlatRun>& runs, std::int64_t begin, std::int64_t end);

// The space's gradients (in `grads`, the flat buffer, dtype elements)
// reduce-scattered over `comm` by `part`: this rank's positions receive the
// average over the group. `staging` holds at least shard_size · N elements.
// A group of one rank leaves the gradients as they are.
void reduce_scatter_space(Communicator& comm, Backend& backend, void* grads, DType dtype,
                          const std::vector<FlatRun>& runs, const ZeroPartition& part, Buffer& staging,
                          const CommTag& tag);

// The space's updated shards all-gathered over `comm` into every rank's flat `params`.
void all_gather_space(Communicator& comm, Backend& backend, void* params, DType dtype, const std::vector<FlatRun>& runs,
                      const ZeroPartition& part, Buffer& staging, const CommTag& tag);

}  // namespace shardscope
