// SPDX-License-Identifier: GPL-3.0-or-later
// What the ring collectives of threads (in_process_collectives.cpp) and of
// processes (mpi/mpi_ring_collectives.cpp) share, so both split, sum and report
// a call the same way and their results agree bit for bit.
#pragma once

#include <algorithm>
#include <cstdint>

#include "events/event.h"
#include "parallel/communicator.h"

namespace shardscope {

// An average of f16/bf16 values first divides each rank's values by N, in 16
// bits, before the sum (NCCL's ncclAvg on floating types; PyTorch DDP and
// DeepSpeed divide by the world size first too), so a sum of N large gradients
// cannot overflow where their average fits. f32 sums first and divides once.
inline bool pre_divides(DType dtype, ReduceOp op) { return dtype != DType::f32 && op == ReduceOp::average; }

inline bool reducible(DType dtype) { return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16; }

// The ring's chunk order, written once for every ring collective here and in
// mpi/ (Patarasuk & Yuan 2009, NCCL's ring algorithm). n ranks in a ring,
// each sending to rank + 1: at step k (0 .. n-2) rank r sends
//   reduce-scatter: chunk (r - k - 1) mod n, the partial sum it just added
//                   its own values to; after n - 1 steps rank r holds the
//                   whole sum of chunk r;
//   all-gather:     chunk (r - k) mod n, starting with its own finished one.
// So a rank sends every chunk but its own in the reduce-scatter and every
// chunk but chunk r + 1 in the all-gather (plan/data_parallel_traffic.h counts
// those bytes). What a rank receives at step k is what its left neighbour sends.
inline int ring_chunk_sent(RingPhase phase, int rank, int ring_step, int n) {
  const int chunk = phase == RingPhase::reduce_scatter ? rank - ring_step - 1 : rank - ring_step;
  return ((chunk % n) + n) % n;
}
inline int ring_chunk_received(RingPhase phase, int rank, int ring_step, int n) {
  return ring_chunk_sent(phase, rank - 1, ring_step, n);
}

// count elements split into n chunks; the first count % n are one element longer.
struct RingChunks {
  std::int64_t base, rem;
  RingChunks(std::int64_t count, int n) : base(count / n), rem(count % n) {}
  std::int64_t offset(int c) const { return c * base + std::min<std::int64_t>(c, rem); }
  std::int64_t size(int c) const { return base + (c < rem ? 1 : 0); }
};

// The comm_span event of one transfer (or of a whole native call): `rank` the
// sender's global rank, src and dst global ranks or -1.
inline Event comm_span_event(CommOp op, RingPhase phase, const CommTag& tag, int ring_step, int chunk, int rank,
                             int src, int dst, std::int64_t bytes, std::int64_t start_ns, std::int64_t end_ns) {
  Event e;
  e.kind = EventKind::comm_span;
  e.rank = rank;
  e.step = tag.step;
  e.micro_batch = tag.micro_batch;
  e.bucket = tag.bucket;
  e.unit = tag.unit;
  e.purpose = tag.purpose;
  e.op = op;
  e.phase = phase != RingPhase::none ? phase : tag.phase;
  e.ring_step = ring_step >= 0 ? ring_step : tag.ring_step;
  e.chunk = chunk >= 0 ? chunk : tag.chunk;
  e.layer = tag.layer;
  e.compute = tag.pass;
  e.src = src;
  e.dst = dst;
  e.bytes = bytes;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  return e;
}

}  // namespace shardscope
