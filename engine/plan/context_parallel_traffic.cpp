// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/context_parallel_traffic.h"

namespace shardscope {

ContextParallelTraffic context_parallel_layer_traffic(int cp, int micro_batch, int seq, int hidden, int element_bytes,
                                                      bool recompute) {
  ContextParallelTraffic t;
  t.values = "cp = " + std::to_string(cp) + ", b = " + std::to_string(micro_batch) + ", s = " + std::to_string(seq) +
             ", h = " + std::to_string(hidden) + ", e = " + std::to_string(element_bytes);
  t.formula = recompute ? "forward 2(cp − 1), backward (cp − 1) + cp blocks of 2·b·(s/cp)·h · e"
                        : "forward (cp − 1), backward (cp − 1) + cp blocks of 2·b·(s/cp)·h · e";
  if (cp <= 1) return t;
  t.block_bytes = std::int64_t{2} * micro_batch * (seq / cp) * hidden * element_bytes;
  t.forward_bytes = (recompute ? 2 : 1) * (cp - 1) * t.block_bytes;
  t.backward_bytes = (2 * cp - 1) * t.block_bytes;
  return t;
}

std::map<ContextParallelKey, std::int64_t> measure_context_parallel_traffic(std::span<const Event> events,
                                                                            std::int64_t step) {
  std::map<ContextParallelKey, std::int64_t> bytes;
  for (const Event& e : events)
    if (e.kind == EventKind::comm_span && e.step == step && e.purpose == CommPurpose::context_parallel &&
        e.layer >= 0 && e.src >= 0 && e.dst >= 0 && e.src != e.dst && e.op == CommOp::send)
      bytes[{e.src, e.layer, e.micro_batch, e.compute}] += e.bytes;
  return bytes;
}

}  // namespace shardscope
