// SPDX-License-Identifier: GPL-3.0-or-later
// Context parallelism (ring attention; Liu et al. 2023, Megatron-LM's "context
// parallel", picotron's context_parallel) as the model sees it. Each rank of a
// cp group holds T / cp tokens of every sequence: the embeddings, LayerNorms,
// matmuls, MLP and loss run on those tokens alone, and only attention needs
// the others' keys and values. Attention passes the key/value blocks round
// the group's ring: at ring step j a rank holds the block of cp rank
// (r - j) mod cp, computes its queries against it, and merges that partial
// result into its running output with the log-sum-exp rule
//   lse = log(e^lse_a + e^lse_b),  out = out_a e^(lse_a - lse) + out_b e^(lse_b - lse)
// (the online softmax of flash attention, one block at a time). Backward
// passes the blocks round again, computes dQ, dK, dV per block from the
// saved lse (P = e^(S - lse)), and passes the blocks' dK, dV accumulators
// round the ring with them, so each arrives home complete after cp steps.
//
// Causal attention would leave rank 0 with one block to compute and rank
// cp - 1 with cp; the zig-zag split cuts each sequence into 2 cp chunks and
// gives rank i chunks i and 2 cp - 1 - i, so every rank does the same work.
//
// The model calls this interface; the trainer implements it over the rank's cp
// communicator (parallel/context_parallel.h), so model/ does not depend on parallel/.
#pragma once

#include <cstdint>

#include "events/event.h"
#include "ops/ring_attention.h"

namespace shardscope {

class ContextParallelGroup {
 public:
  virtual ~ContextParallelGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Chunks i and 2 cp - 1 - i on rank i (zig-zag), or the i-th T / cp tokens (contiguous).
  virtual bool zigzag() const = 0;
  // One step of the ring: `send` (count floats) to the next rank, the previous
  // rank's into `recv`. `context`: step, micro-batch and layer; `pass`: forward
  // or backward; `block`: the cp rank whose tokens `send` belongs to;
  // `gradients`: `send` is that block's dK, dV accumulator, not its K, V.
  virtual void ring_exchange(const float* send, float* recv, std::int64_t count, const Event& context, ComputeKind pass,
                             int block, int ring_step, bool gradients) = 0;
};

// The position in its sequence of local token t (0 .. local - 1) of cp rank `rank`
// (ops/ring_attention.h's rule, which the backends' block ops use too).
inline int context_parallel_position(int t, int local, int rank, int size, bool zigzag) {
  return ring_position(t, local, rank, size, zigzag);
}

}  // namespace shardscope
