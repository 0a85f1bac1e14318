// SPDX-License-Identifier: GPL-3.0-or-later
// Tensor parallelism's communication (Megatron-LM, Shoeybi et al. 2019): the
// tp group's collectives that the model's column- and row-parallel layers
// call (model/tensor_parallel.h), on the rank's communicator for its tp group
// (adjacent ranks: Grid's innermost axis), tagged as tensor_parallel traffic;
// and the global gradient norm's sum of squares over a tp group, which counts
// every split parameter's slices and every replicated one once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "model/parameter_layout.h"
#include "model/tensor_parallel.h"
#include "parallel/communicator.h"

namespace shardscope {

// The model's TensorParallelGroup over `tp` (the group of one (stage, dp rank)).
std::unique_ptr<TensorParallelGroup> make_tensor_parallel_group(Communicator& tp);

// This rank's part of the sum of squares of the gradients in the flat range
// [begin, end) of `layout`: split parameters always, replicated ones (equal
// on every tp rank) only where `count_replicated` (tp rank 0).
// `squares(offset, count)`: the rank's sum over a flat range of its gradients.
double tensor_parallel_squares(const ParameterLayout& layout, std::int64_t begin, std::int64_t end,
                               const std::function<double(std::int64_t, std::int64_t)>& squares, bool count_replicated);

// The sum of squares of the gradients in the flat range [begin, end) of
// `layout` over the tp group: split parameters (TensorSplit rows, columns)
// from every rank, replicated ones (equal on every tp rank) from tp rank 0
// only, summed with all_reduce_host. `squares(offset, count)`: the rank's sum
// over a flat range of its gradients (fp32 or 16-bit). Without tensor
// parallelism (tp null) squares(begin, end - begin), as a float.
float tensor_parallel_sum_of_squares(const ParameterLayout& layout, std::int64_t begin, std::int64_t end,
                                     const std::function<double(std::int64_t, std::int64_t)>& squares, Communicator* tp,
                                     const CommTag& tag);

}  // namespace shardscope
