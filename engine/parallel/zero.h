// SPDX-License-Identifier: GPL-3.0-or-later
// ZeRO (Rajbhandari et al. 2020) partitions the flat parameter space into Nd
// equal contiguous shards, one per data-parallel rank. Stage 1 (P_os) shards
// the optimizer states: each rank keeps AdamW's m and v for its shard only and
// updates only its shard; the updated shards are then all-gathered so every
// rank has the whole model again. Per-rank model-state memory in fp32 Adam:
//   stage 0: 4Ψ + 4Ψ + 8Ψ = 16Ψ;  stage 1: 4Ψ + 4Ψ + 8Ψ/Nd.
// (The paper's mixed-precision figures are 2Ψ + 2Ψ + 12Ψ and 2Ψ + 2Ψ + 12Ψ/Nd.)
// Here the gradients are all-reduced in DDP buckets (overlapped with backward)
// before the update, then the updated shards are all-gathered: 3(N-1)/N x 4Ψ
// bytes sent per rank, against 2(N-1)/N x 4Ψ for the paper's reduce-scatter +
// all-gather (stage 2 here does the latter, unit by unit).
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

}  // namespace shardscope
