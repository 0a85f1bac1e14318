// SPDX-License-Identifier: GPL-3.0-or-later
// Tensor parallelism's communication (Megatron-LM, Shoeybi et al. 2019): the
// tp group's collectives that the model's column- and row-parallel layers
// call (model/tensor_parallel.h), on the rank's communicator for its tp group
// (adjacent ranks: Grid's innermost axis), tagged as tensor_parallel traffic;
// and the global gradient norm's sum of squares over a tp group, which counts
// every split parameter's slices and every replicated one once.
#pragma once

#include <cstdint>
#include <memory>

#include "model/parameter_layout.h"
#include "model/tensor_parallel.h"
#include "ops/backend.h"
#include "parallel/communicator.h"

namespace shardscope {

// The model's TensorParallelGroup over `tp` (the group of one (stage, dp rank)).
std::unique_ptr<TensorParallelGroup> make_tensor_parallel_group(Communicator& tp);

// The sum of squares of the gradients in the flat range [begin, end) of
// `layout` over the tp group: split parameters (TensorSplit rows, columns)
// from every rank, replicated ones (equal on every tp rank) from tp rank 0
// only, summed with all_reduce_host. Without tensor parallelism (tp null) the
// plain sum of squares over the range.
float tensor_parallel_sum_of_squares(Backend& backend, const ParameterLayout& layout, const float* grads,
                                     std::int64_t begin, std::int64_t end, Communicator* tp, const CommTag& tag);

}  // namespace shardscope
