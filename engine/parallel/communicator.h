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

#include "events/event.h"

namespace shardscope {

enum class ReduceOp { sum, average };

// Context stamped on the events of a call: which step, micro-batch and bucket it serves.
struct CommTag {
  std::int64_t step = 0;
  std::int32_t micro_batch = -1;
  std::int32_t bucket = -1;
};

// Thrown in every rank blocked in (or later entering) a call on a group that
// was aborted; what() names the rank that aborted and its reason.
class CommAborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;  // index within this group, 0 .. size()-1
  virtual int size() const = 0;
  virtual int global_rank(int group_rank) const = 0;  // for events and messages

  // data (count) := op over all ranks' data. Ring algorithm: reduce-scatter then
  // all-gather, N-1 steps each, one chunk of ~count/N per step per rank.
  virtual void all_reduce(float* data, std::int64_t count, ReduceOp op, const CommTag& tag) = 0;
  // send (size * recv_count): chunk r of every rank is reduced into rank r's recv (recv_count).
  virtual void reduce_scatter(const float* send, float* recv, std::int64_t recv_count, ReduceOp op,
                              const CommTag& tag) = 0;
  // recv (size * send_count) := concatenation of every rank's send (send_count), in rank order.
  virtual void all_gather(const float* send, float* recv, std::int64_t send_count, const CommTag& tag) = 0;
  // data (count) := root's data on every rank.
  virtual void broadcast(float* data, std::int64_t count, int root, const CommTag& tag) = 0;
  // root's recv (size * count) := every rank's send (count), in rank order; recv ignored elsewhere.
  virtual void gather(const float* send, float* recv, std::int64_t count, int root, const CommTag& tag) = 0;
  // Each rank's recv (count) := chunk `rank` of root's send (size * count).
  virtual void scatter(const float* send, float* recv, std::int64_t count, int root, const CommTag& tag) = 0;
  // Point to point, matched in order per (sender, receiver) pair.
  virtual void send(const float* data, std::int64_t count, int peer, const CommTag& tag) = 0;
  virtual void recv(float* data, std::int64_t count, int peer, const CommTag& tag) = 0;
  virtual void barrier() = 0;

  // Marks the whole world as failed: every rank blocked in a call, now or later,
  // throws CommAborted naming `reason`. Safe to call from any thread, repeatedly.
  virtual void abort(const std::string& reason) = 0;
};

}  // namespace shardscope
