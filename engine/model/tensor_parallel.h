// SPDX-License-Identifier: GPL-3.0-or-later
// Tensor parallelism (Megatron-LM, Shoeybi et al. 2019) as the model sees it:
// the collectives over the ranks of one tensor-parallel group. Each rank holds
// a slice of every layer's matrices (model/parameter_layout.h, TensorSplit):
//
//   column-parallel  Y_i = X A_i         A split by output columns (QKV: heads;
//                                        MLP fc: 4C/t columns); X whole on every rank
//   row-parallel     Y = sum_i Y_i B_i   B split by input rows (attention
//                                        output and MLP projections)
//
// joined by two conjugate operators: f (identity forward, all-reduce of the
// input gradient backward) before a column-parallel layer, and g (all-reduce
// forward, identity backward) after a row-parallel one. A transformer layer
// runs 2 all-reduces forward and 2 backward, each of b·s·h elements; a ring
// all-reduce sends 2(t - 1)/t of it from every rank. The token embedding is
// vocabulary-parallel (rank i holds rows [i V/t, (i + 1) V/t); a lookup
// outside them gives 0, then an all-reduce), and so is the tied output head
// with its cross-entropy: each row's maximum (an all-gather of the t local
// maxima), sum of exponentials and target logit combine over the group; the
// whole logits are never gathered.
//
// Sequence parallelism (Korthikanti et al. 2022) keeps the tokens outside
// those matmuls (LayerNorm, residual adds) split over the group: f becomes an
// all-gather of the tokens (backward: a reduce-scatter of their gradient) and
// g a reduce-scatter (backward: an all-gather); model/sequence_parallel.cpp.
//
// The model calls this interface; the trainer implements it over the rank's
// tp communicator (train/), so model/ does not depend on parallel/.
#pragma once

#include <cstdint>

#include "events/event.h"

namespace shardscope {

class TensorParallelGroup {
 public:
  virtual ~TensorParallelGroup() = default;
  // data (count) := the sum over the group. `context`: the step, micro-batch
  // and layer (-1: the embedding or the head) the collective belongs to.
  virtual void all_reduce_sum(float* data, std::int64_t count, const Event& context) = 0;
  // recv (size * count) := every rank's send (count), in tp rank order.
  virtual void all_gather(const float* send, float* recv, std::int64_t count, const Event& context) = 0;
  // recv (recv_count) := the sum over the group of every rank's chunk
  // [rank * recv_count, (rank + 1) * recv_count) of send (size * recv_count).
  virtual void reduce_scatter_sum(const float* send, float* recv, std::int64_t recv_count, const Event& context) = 0;
};

}  // namespace shardscope
