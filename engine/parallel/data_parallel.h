// SPDX-License-Identifier: GPL-3.0-or-later
// Naive data parallelism as torch.nn.DataParallel does it: one master (rank 0)
// scatters the inputs, replicates its parameters to every replica before each
// forward, gathers every replica's gradients and reduces them itself, and is
// the only one to run the optimizer. Rank 0 moves (N-1) x the model each step
// in each direction and holds N gradient copies at once: the bottleneck that
// DistributedDataParallel's ring removes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "core/dtype.h"
#include "ops/backend.h"
#include "parallel/communicator.h"

namespace shardscope {

// Rank 0's parameters (n) copied to every rank (broadcast from the master).
// dtype: f32, or f16/bf16 for mixed precision.
void replicate_parameters(Communicator& comm, void* params, std::int64_t n, DType dtype, const CommTag& tag);

// Each rank's int tokens (count) := slice `rank` of rank 0's tokens (size * count).
void scatter_tokens(Communicator& comm, const std::vector<std::int32_t>& all, std::vector<std::int32_t>& mine,
                    std::int64_t count, const CommTag& tag);

// Gathers every rank's gradients (n) to rank 0 and averages them there, into
// rank 0's grads. `gather_buffer` (size * n elements, in the `communication`
// category) is used on rank 0 only. 16-bit gradients are summed in f32 (in rank
// order) and rounded once, a block at a time through two f32 blocks of
// workspace charged to gather_buffer's ledger. Arithmetic on `backend` (grads
// and gather_buffer are in its memory).
void reduce_gradients_to_master(Communicator& comm, Backend& backend, void* grads, std::int64_t n, DType dtype,
                                Buffer& gather_buffer, const CommTag& tag);

}  // namespace shardscope
