// SPDX-License-Identifier: GPL-3.0-or-later
// ZeRO (Rajbhandari et al. 2020) partitions the flat parameter space into Nd
// equal contiguous shards, one per data-parallel rank. Stage 1 (P_os) shards
// the optimizer states: each rank keeps AdamW's m and v for its shard only and
// updates only its shard; the updated shards are then all-gathered so every
// rank has the whole model again. Per-rank model-state memory in fp32 Adam:
//   stage 0: 4Ψ + 4Ψ + 8Ψ = 16Ψ;  stage 1: 4Ψ + 4Ψ + 8Ψ/Nd.
// (The paper's mixed-precision figures are 2Ψ + 2Ψ + 12Ψ and 2Ψ + 2Ψ + 12Ψ/Nd.)
// Communication, as the paper counts it: once backward is done the gradients
// are reduce-scattered by the same shards (each rank receives the average of
// its own), the rank updates its shard, and the updated shards are
// all-gathered: (Nd-1)/Nd x Ψ' gradients + (Nd-1)/Nd x Ψ' parameters sent per
// rank, 2(Nd-1)/Nd x 4Ψ' bytes in fp32, what DDP's all-reduce sends (Ψ' =
// Nd x ceil(Ψ / Nd): the padded shards travel whole). The reduce-scatter waits
// for the whole backward (shards need not follow DDP's buckets), so unlike DDP
// it does not overlap the backward.
#pragma once

#include <cstdint>

#include "core/buffer.h"
#include "core/dtype.h"
#include "ops/backend.h"
#include "parallel/communicator.h"
#include "plan/sharding_plan.h"  // ZeroPartition

namespace shardscope {

// Every rank contributes params[begin, end) and receives the whole model.
// `staging` (in the `communication` category) must hold shard_size * (Nd + 1)
// floats when Ψ is not a multiple of Nd; otherwise the gather is in place.
// dtype: f32, or the 16-bit parameters of mixed precision (staging then holds
// shard_size * (Nd + 1) elements of that size).
// Copies go through `backend` (params and staging are in its memory).
void all_gather_parameter_shards(Communicator& comm, Backend& backend, void* params, DType dtype,
                                 const ZeroPartition& part, Buffer& staging, const CommTag& tag);

// Every rank's grads (Ψ, dtype) reduce-scattered by the shards: this rank's
// shard grads[begin, end) := the average over the ranks (the rest of grads is
// left as it was: only the shard is read after). In place when Ψ divides by
// Nd, else through `staging` (as above: the padded gradient, Nd x shard_size).
void reduce_scatter_gradient_shards(Communicator& comm, Backend& backend, void* grads, DType dtype,
                                    const ZeroPartition& part, Buffer& staging, const CommTag& tag);

}  // namespace shardscope
