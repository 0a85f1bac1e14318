// SPDX-License-Identifier: GPL-3.0-or-later
// The bytes each context-parallel rank sends per layer per micro-batch in
// ring attention (model/context_parallel.h). A key/value block is this rank's
// keys and values, 2 · b·(s/cp)·h elements of e bytes. Forward: cp − 1 block
// sends (the last block held is not passed on). Backward: the blocks go round
// again (cp − 1 sends) and each block's dK, dV accumulator travels with them
// and once more, home (cp sends), so
//   forward  (cp − 1) · 2·b·(s/cp)·h · e
//   backward (2 cp − 1) · 2·b·(s/cp)·h · e
// With activation checkpointing the recompute before each layer's backward
// runs its forward's ring again: (cp − 1) more forward blocks. (h: this tp rank's
// channels, h / tp.) The gradients' sum over the cp group after backward is
// outside the layers (it is data-parallel traffic in Megatron-LM's dp × cp group).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>

#include "events/event.h"

namespace shardscope {

struct ContextParallelTraffic {
  std::int64_t forward_bytes = 0;   // per rank per layer per micro-batch; 0 with one cp rank
  std::int64_t backward_bytes = 0;  // the same, backward
  std::int64_t block_bytes = 0;     // one key/value block: 2·b·(s/cp)·h · e
  std::string formula;              // "(cp − 1) + (2 cp − 1) blocks of 2·b·(s/cp)·h · e"
  std::string values;               // "cp = 2, b = 8, s = 32, h = 128, e = 4"
};

ContextParallelTraffic context_parallel_layer_traffic(int cp, int micro_batch, int seq, int hidden,
                                                      int element_bytes = 4, bool recompute = false);

// Bytes a rank sent in ring attention per (sending rank, layer, micro-batch, pass) in step `step`,
// from the run's comm events (purpose context_parallel, a layer's unit).
using ContextParallelKey = std::tuple<int, int, int, ComputeKind>;
std::map<ContextParallelKey, std::int64_t> measure_context_parallel_traffic(std::span<const Event> events,
                                                                            std::int64_t step);

}  // namespace shardscope
