// SPDX-License-Identifier: GPL-3.0-or-later
// Communicators for ranks that are threads of one process. Data really moves
// through shared memory with the algorithms a GPU cluster uses (ring
// reduce-scatter / all-gather, chunk by chunk), so every chunk transfer is a
// real copy that can be timed and shown.
//
// Usage: one InProcessWorld for the N global ranks; each rank thread asks it
// for a Communicator for every group it belongs to, passing the same member
// list as the other members (e.g. Grid::dp_group(stage)):
//   auto world = InProcessWorld::create(4, &sink, &clock);
//   // on rank r's thread:
//   auto dp = world->communicator(r, grid.dp_group(grid.stage_of(r)));
//   dp->all_reduce(grads, n, ReduceOp::average, {step, -1, bucket});
//
// Ring indexing (Patarasuk & Yuan; chunk c = elements [offset(c), offset(c+1))
// of ~count/N, the first count % N chunks one element longer):
//   reduce-scatter step k (0..N-2): rank r reduces chunk (r-k-1) mod N into rank r+1;
//     after it rank r holds the full reduction of chunk r (so a standalone
//     reduce_scatter leaves chunk r on rank r, as the interface requires);
//   all-gather step k (0..N-2): rank r copies chunk (r-k) mod N into rank r+1.
// Each rank sends 2(N-1) chunks: all but chunk r, then all but chunk r+1, so
// 2(N-1)/N x bytes exactly when N divides count. A step with an empty chunk
// (count < N) still emits its event, with 0 bytes.
//
// Synchronisation: each member publishes its buffers and a progress counter
// (steps done, release/acquire). A ring step waits only for its two
// neighbours; a rooted op (broadcast, gather, scatter) for the root or its
// peers, each peer making its one direct copy to or from the root's buffer.
// Waits spin briefly, then block on a condition variable.
//
// send is eager: if the receiver is already waiting in recv, the sender copies
// straight into its buffer; otherwise the message is copied into a queue and
// send returns at once (so two stages sending to each other cannot deadlock).
// recv blocks until the matching message (in order per sender) is there.
//
// Events (comm_span, to the world's sink): one per ring step and rank; one per
// peer of a rooted op; one per message (op send, from the send call until the
// data is in the receiver's buffer); one per rank per barrier (0 bytes, the
// wait). `rank` is always the sender; step, micro_batch and bucket come from
// the CommTag (a message carries the sender's tag); stage is left 0.
//
// Virtual clock (a rank's DeviceClock): a transfer of b bytes lasts the link's
// latency + b / bandwidth. Ring step k of a rank starts when it, and its left
// and right neighbours, have finished step k - 1 (what it sends arrived, the
// receiver's buffer is free): the slowest of the three; so every rank's end
// depends on every other's start after N - 1 steps. A call ends when the last
// chunk written into this rank has arrived. A rooted op's peer k (0, 1, ... in
// group order without the root) starts at max(its time, the root's time + k
// transfers' bandwidth time: the root's link serves them one after another);
// the root leaves when the last peer is done. A message starts when sent (the
// sender's compute does not wait: an eager send on its communication stream),
// after the sender's earlier messages on its link, and the receiver's clock
// moves to its arrival if that is later. A barrier ends at the latest entry.
//
// In place: reduce_scatter may receive into send + rank * recv_count and
// all_gather may send from recv + rank * send_count. Extra memory, charged to
// the CommDevice's ledger (communication) where it names one: reduce_scatter
// keeps a staging buffer per rank and group, 2 x recv_count up to a 4 MiB slice
// (larger chunks go round the ring slice by slice, as NCCL pipelines through its
// buffers), and in 16 bits an average's pre-divided copy of the slice, N times
// that (grown, never shrunk). A queued send holds a copy until received (not charged).
//
// Device memory (ranks sharing one GPU, CommDevice): the same algorithms, the
// copies and sums made by the rank's communication backend on its stream. A
// rank settles (waits for its compute and communication streams) before it
// publishes its buffers, before its comm stream first touches a buffer its
// compute stream wrote (a 16-bit average's division, the all-gather's own
// chunk, a message), and before it tells a peer a write into theirs is done,
// so the progress counters order device work as they order host copies.
//
// Misuse: a negative count, or a root or peer outside the group, aborts the
// world (the other members would wait forever) and throws std::invalid_argument;
// members found disagreeing on a call's op, count or root abort it with
// CommAborted (best effort: checked against the neighbours or the root).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "events/event.h"
#include "parallel/communicator.h"

namespace shardscope {

class Backend;
class DeviceClock;
class DeviceMemory;
class MemoryLedger;

// The device of a rank whose buffers are not host memory (several ranks
// sharing one GPU): collectives then copy and sum through `backend`, a backend
// of the rank's own (its stream is the rank's communication stream), after
// waiting for `compute`, the backend that wrote the buffers; the reduce-scatter
// staging is allocated from `memory`. Small host values go through the *_host calls.
// `ledger` (host or device ranks; may be null) is charged with the collectives'
// staging, category communication, so the rank's ledger counts every buffer.
struct CommDevice {
  Backend* compute = nullptr;
  Backend* backend = nullptr;
  DeviceMemory* memory = nullptr;
  MemoryLedger* ledger = nullptr;
};

struct InProcessGroup;  // the shared state of one group (in_process_group.h)

class InProcessWorld : public std::enable_shared_from_this<InProcessWorld> {
 public:
  // sink may be null (no events). clock may be null: the world then keeps its own.
  // Both must outlive the world. Throws std::invalid_argument unless world_size >= 1.
  static std::shared_ptr<InProcessWorld> create(int world_size, EventSink* sink = nullptr,
                                                const RunClock* clock = nullptr);

  int world_size() const { return world_size_; }

  // The communicator of `my_global_rank` in the group whose members are
  // `group_global_ranks` (group rank i = the i-th entry). Every member passes the
  // same list. A rank holds at most one live communicator per group; a new one
  // may be made after the old one is destroyed. Throws std::invalid_argument for a
  // bad list (empty, duplicate or out-of-range ranks, my rank missing, or the
  // same members in another order than an existing group).
  // A device (all three members set) makes the communicator's buffers device memory.
  // A virtual `clock` (clock/device_clock.h, the rank's) times the calls and
  // their events by the link model and the peers' clocks; else the events carry
  // the world's clock. Every member of a group passes a virtual clock, or none does.
  std::unique_ptr<Communicator> communicator(int my_global_rank, const std::vector<int>& group_global_ranks,
                                             const CommDevice& device = {}, DeviceClock* clock = nullptr);

  // Fails every group of the world: calls blocked now (woken within
  // microseconds) or made later throw CommAborted("communication aborted by
  // rank 3: <reason>"; "communication aborted: <reason>" when by_global_rank is
  // -1, no rank to blame). Any thread may call it, repeatedly: the first
  // message is kept. Communicator::abort(reason) is abort(its global rank, reason).
  void abort(int by_global_rank, const std::string& reason);
  bool aborted() const;
  std::string abort_message() const;  // empty until aborted

  InProcessWorld(const InProcessWorld&) = delete;
  InProcessWorld& operator=(const InProcessWorld&) = delete;
  ~InProcessWorld();

 private:
  friend class InProcessCommunicator;
  InProcessWorld(int world_size, EventSink* sink, const RunClock* clock);
  void wake_all_waiters();

  const int world_size_;
  EventSink* const sink_;
  RunClock own_clock_;
  const RunClock* const clock_;

  mutable std::mutex mutex_;  // guards groups_ and abort_message_
  std::vector<std::shared_ptr<InProcessGroup>> groups_;
  std::string abort_message_;
  std::atomic<bool> aborted_{false};
};

}  // namespace shardscope
