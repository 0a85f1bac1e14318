// SPDX-License-Identifier: GPL-3.0-or-later
// The bytes each tensor-parallel rank sends per layer per micro-batch
// (Megatron-LM, Shoeybi et al. 2019; model/tensor_parallel.h): 2 all-reduces
// in the layer's forward (g after the attention output and the MLP's second
// linear) and 2 in its backward (f's, at the QKV and MLP fc inputs), each of
// the whole activation b·s·h (micro-batch × sequence × hidden) in e-byte
// elements. A ring all-reduce over t ranks sends 2(t−1)/t of it from every
// rank:
//   4 · 2(t−1)/t · b·s·h · e
// With activation checkpointing the recompute before each layer's backward
// runs its forward again, its 2 all-reduces too: 6 · 2(t−1)/t · b·s·h · e.
// clock/schedule_summary.h measures them from the events. (The embedding's
// and the vocabulary-parallel loss's collectives are outside the layers.)
#pragma once

#include <cstdint>
#include <string>

namespace shardscope {

struct TensorParallelTraffic {
  std::int64_t bytes = 0;  // per rank per layer per micro-batch; 0 with one tp rank
  std::string formula;     // "4 · 2(t−1)/t · b·s·h · e" (6 · ... with recompute)
  std::string values;      // "t = 2, b = 8, s = 32, h = 128, e = 4"
};

TensorParallelTraffic tensor_parallel_layer_traffic(int tp, int micro_batch, int seq, int hidden, int element_bytes = 4,
                                                    bool recompute = false);

}  // namespace shardscope
