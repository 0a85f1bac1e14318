// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/tensor_parallel_traffic.h"

namespace shardscope {

TensorParallelTraffic tensor_parallel_layer_traffic(int tp, int micro_batch, int seq, int hidden, int element_bytes,
                                                    bool recompute) {
  TensorParallelTraffic t;
  const int all_reduces = recompute ? 6 : 4;  // 2 forward + 2 backward (+ 2 in the recompute)
  t.formula = std::to_string(all_reduces) + " · 2(t−1)/t · b·s·h · e";
  t.values = "t = " + std::to_string(tp) + ", b = " + std::to_string(micro_batch) + ", s = " + std::to_string(seq) +
             ", h = " + std::to_string(hidden) + ", e = " + std::to_string(element_bytes);
  // b·s·h divides by t (h does: the heads split over the tp ranks), so the ring's chunks are equal.
  const std::int64_t activation = std::int64_t{micro_batch} * seq * hidden * element_bytes;
  t.bytes = tp > 1 ? all_reduces * 2 * (tp - 1) * activation / tp : 0;
  return t;
}

}  // namespace shardscope
