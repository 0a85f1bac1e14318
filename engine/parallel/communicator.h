// SPDX-License-Identifier: GPL-3.0-or-later
// Collective and point-to-point communication among the ranks of one group
// (all ranks, or the data-parallel peers of one pipeline stage, ...). Each rank
// holds its own Communicator for each group it belongs to, as with NCCL
// communicators; all ranks of the group must call a collective in the same
// order with the same sizes. Buffers are in the backend's memory (host for CPU
// ranks). Every call emits comm events describing each transfer it made.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "events/event.h"

namespace shardscope {

enum class ReduceOp { sum, average };

// What a collective is for, copied into its events: the step, the micro-batch,
// the DDP gradient bucket or the ZeRO unit it moves (-1: none), and which
// model state it moves for data parallelism (plan/data_parallel_traffic.h).
struct CommTag {
  std::int64_t step = 0;
  std::int32_t micro_batch = -1;
  std::int32_t bucket = -1;
  std::int32_t unit = -1;
  CommPurpose purpose = CommPurpose::other;
  // Ring attention's transfers (context parallelism) say more, for a view
  // that draws blocks travelling the ring: the layer, the pass, the block
  // (the cp rank whose tokens' keys and values it holds) and the ring step;
  // phase all_gather for key/value blocks, reduce_scatter for their gradients.
  std::int32_t layer = -1;
  ComputeKind pass = ComputeKind::forward;
  RingPhase phase = RingPhase::none;
  std::int32_t chunk = -1;
  std::int32_t ring_step = -1;
};
inline CommTag unit_tag(std::int64_t step, std::int32_t micro_batch, std::int32_t unit, CommPurpose purpose) {
  return CommTag{step, micro_batch, -1, unit, purpose};
}
inline CommTag with_purpose(CommTag tag, CommPurpose purpose) {
  tag.purpose = purpose;
  return tag;
}

// Thrown in every rank blocked in (or later entering) a call on a group that
// was aborted; what() names the rank that aborted and its reason.
class CommAborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The message of an abort: who aborted (by_rank < 0: no rank) and why. The
// reason is often the rank's own error, which may begin with the rank
// ("rank 2: ..."): that prefix is dropped, so the message names the rank once.
inline std::string abort_text(int by_rank, std::string reason) {
  if (by_rank < 0) return "communication aborted: " + reason;
  const std::string rank = "rank " + std::to_string(by_rank);
  if (reason.starts_with(rank + ": ")) reason.erase(0, rank.size() + 2);
  return "communication aborted by " + rank + ": " + reason;
}

// A ring reduce-scatter moves chunks larger than this through its staging
// slice by slice (NCCL_BUFFSIZE's default), so its staging stays bounded; the
// estimator counts the staging from it (estimate/memory_model.cpp).
inline constexpr std::int64_t kRingSliceBytes = std::int64_t{4} << 20;

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;  // index within this group, 0 .. size()-1
  virtual int size() const = 0;
  virtual int global_rank(int group_rank) const = 0;  // for events and messages

  // The collectives take the element type of their buffers: f32, or the
  // 16-bit f16 / bf16 of mixed precision (whose reductions add in f32 and round
  // each partial result back to 16 bits, as NCCL's half-precision sums do; an
  // average first divides each rank's values by N in 16 bits, as NCCL's ncclAvg
  // and PyTorch DDP's gradient pre-division do, so it overflows only where the
  // average itself would). Counts are in elements; events report bytes.
  // The float overloads below are the f32 calls.
  //
  // data (count) := op over all ranks' data. Ring algorithm: reduce-scatter then
  // all-gather, N-1 steps each, one chunk of ~count/N per step per rank.
  virtual void all_reduce(void* data, std::int64_t count, DType dtype, ReduceOp op, const CommTag& tag) = 0;
  // send (size * recv_count): chunk r of every rank is reduced into rank r's recv (recv_count).
  virtual void reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                              const CommTag& tag) = 0;
  // recv (size * send_count) := concatenation of every rank's send (send_count), in rank order.
  virtual void all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype, const CommTag& tag) = 0;
  // data (count) := root's data on every rank.
  virtual void broadcast(void* data, std::int64_t count, DType dtype, int root, const CommTag& tag) = 0;
  // root's recv (size * count) := every rank's send (count), in rank order; recv ignored elsewhere.
  virtual void gather(const void* send, void* recv, std::int64_t count, DType dtype, int root, const CommTag& tag) = 0;
  // Each rank's recv (count) := chunk `rank` of root's send (size * count).
  virtual void scatter(const void* send, void* recv, std::int64_t count, DType dtype, int root, const CommTag& tag) = 0;

  void all_reduce(float* data, std::int64_t count, ReduceOp op, const CommTag& tag) {
    all_reduce(data, count, DType::f32, op, tag);
  }
  void reduce_scatter(const float* send, float* recv, std::int64_t recv_count, ReduceOp op, const CommTag& tag) {
    reduce_scatter(send, recv, recv_count, DType::f32, op, tag);
  }
  void all_gather(const float* send, float* recv, std::int64_t send_count, const CommTag& tag) {
    all_gather(send, recv, send_count, DType::f32, tag);
  }
  void broadcast(float* data, std::int64_t count, int root, const CommTag& tag) {
    broadcast(data, count, DType::f32, root, tag);
  }
  void gather(const float* send, float* recv, std::int64_t count, int root, const CommTag& tag) {
    gather(send, recv, count, DType::f32, root, tag);
  }
  void scatter(const float* send, float* recv, std::int64_t count, int root, const CommTag& tag) {
    scatter(send, recv, count, DType::f32, root, tag);
  }
  // Small values in host memory (loss totals, a gradient norm, token ids) on a
  // communicator whose buffers are otherwise device memory (ranks on GPUs). On
  // a host communicator these are the f32 calls above.
  virtual void all_reduce_host(float* data, std::int64_t count, ReduceOp op, const CommTag& tag) {
    all_reduce(data, count, DType::f32, op, tag);
  }
  virtual void broadcast_host(float* data, std::int64_t count, int root, const CommTag& tag) {
    broadcast(data, count, DType::f32, root, tag);
  }
  virtual void scatter_host(const float* send, float* recv, std::int64_t count, int root, const CommTag& tag) {
    scatter(send, recv, count, DType::f32, root, tag);
  }
  // Point to point, matched in order per (sender, receiver) pair.
  virtual void send(const float* data, std::int64_t count, int peer, const CommTag& tag) = 0;
  virtual void recv(float* data, std::int64_t count, int peer, const CommTag& tag) = 0;
  // send (send_count) to send_peer and recv (recv_count) from recv_peer as one
  // exchange: NCCL runs them as a group, so two ranks that send to each other
  // before receiving do not wait for each other forever (plan/pipeline_schedule.h,
  // fuses_with_next). By default a send then a receive, right where sends are eager.
  virtual void send_recv(const float* send_data, std::int64_t send_count, int send_peer, float* recv_data,
                         std::int64_t recv_count, int recv_peer, const CommTag& send_tag, const CommTag& recv_tag) {
    send(send_data, send_count, send_peer, send_tag);
    recv(recv_data, recv_count, recv_peer, recv_tag);
  }
  virtual void barrier() = 0;

  // Marks the whole world as failed: every rank blocked in a call, now or later,
  // throws CommAborted naming `reason`. Safe to call from any thread, repeatedly.
  virtual void abort(const std::string& reason) = 0;
};

}  // namespace shardscope
