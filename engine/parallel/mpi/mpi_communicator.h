// SPDX-License-Identifier: GPL-3.0-or-later
// A Communicator between rank processes, over MPI (made by MpiWorld, mpi_world.h).
//
// Ring collectives (the default): the in-process communicator's algorithms
// (in_process_communicator.h) with each chunk an MPI message to the right
// neighbour and one from the left, posted together (MPI_Isend / MPI_Irecv):
//   reduce-scatter step k (0..N-2): send chunk (r-k-1) mod N right, receive
//     chunk (r-k-2) mod N from the left and add it in (receiver + sender);
//   all-gather step k: send chunk (r-k) mod N right, receive (r-k-1) mod N.
// The same chunks, the same order of additions and the same 16-bit rounding
// (the in-process host arithmetic, CommMemory) make the results bitwise equal
// to a threaded run. Each rank emits one event per chunk it sends (rank = src =
// this rank), tagged as the in-process communicator tags it.
//
// Native collectives (--collectives native): MPI_Iallreduce,
// MPI_Ireduce_scatter_block and MPI_Iallgather (16-bit sums through an MPI op
// that widens to f32 and rounds back), one event per call (src = this rank,
// dst -1, bytes = the buffer): the ring view then shows one span per call.
//
// Rooted ops (broadcast, gather, scatter): one message between the root and
// each peer; the peer emits its event. Point to point: send is eager (the data
// is copied and sent with MPI_Isend, so two stages sending to each other first
// cannot deadlock); a message's event is emitted by the receiver, spanning its
// receive. Event times: the rank's clock (the wall clock in process mode).
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "parallel/communicator.h"

namespace shardscope {

class CommMemory;
class DeviceClock;
class MpiWorld;

class MpiCommunicator final : public Communicator {
 public:
  // members[me] is this process's rank; comm holds exactly the members, in order.
  MpiCommunicator(MpiWorld& world, MPI_Comm comm, std::vector<int> members, int me, DeviceClock* clock,
                  EventSink* sink);
  ~MpiCommunicator() override;

  int rank() const override { return me_; }
  int size() const override { return n_; }
  int global_rank(int group_rank) const override { return members_.at(static_cast<std::size_t>(group_rank)); }

  void all_reduce(void* data, std::int64_t count, DType dtype, ReduceOp op, const CommTag& tag) override;
  void reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                      const CommTag& tag) override;
  void all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype, const CommTag& tag) override;
  void broadcast(void* data, std::int64_t count, DType dtype, int root, const CommTag& tag) override;
  void gather(const void* send, void* recv, std::int64_t count, DType dtype, int root, const CommTag& tag) override;
  void scatter(const void* send, void* recv, std::int64_t count, DType dtype, int root, const CommTag& tag) override;
  void send(const float* data, std::int64_t count, int peer, const CommTag& tag) override;
  void recv(float* data, std::int64_t count, int peer, const CommTag& tag) override;
  void send_recv(const float* send_data, std::int64_t send_count, int send_peer, float* recv_data,
                 std::int64_t recv_count, int recv_peer, const CommTag& send_tag, const CommTag& recv_tag) override;
  void barrier() override;
  void abort(const std::string& reason) override;

 private:
  struct Transfer {  // what an event says about the call
    CommOp op;
    RingPhase phase;
    CommTag tag;
  };
  struct PendingSend {  // an eager send still in flight
    MPI_Request request;
    std::vector<float> data;
  };

  // Ring (mpi_ring_collectives.cpp) and native (mpi_native_collectives.cpp) versions.
  void ring_all_reduce(std::byte* data, std::int64_t count, DType dtype, ReduceOp op, const CommTag& tag);
  void ring_reduce_scatter(const std::byte* send, std::byte* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                           const CommTag& tag);
  void ring_all_gather(const std::byte* send, std::byte* recv, std::int64_t send_count, DType dtype,
                       const CommTag& tag);
  void native_all_reduce(std::byte* data, std::int64_t count, DType dtype, ReduceOp op, const CommTag& tag);
  void native_reduce_scatter(const std::byte* send, std::byte* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                             const CommTag& tag);
  void native_all_gather(const std::byte* send, std::byte* recv, std::int64_t send_count, DType dtype,
                         const CommTag& tag);
  // Posts a send of out_bytes to group rank `to` and a receive of in_bytes
  // from `from` (either may be -1: none) and waits for both.
  void exchange(const void* out, std::int64_t out_bytes, int to, void* in, std::int64_t in_bytes, int from,
                const char* what, int tag);
  // Posts the nonblocking collective `start` makes and waits for it.
  template <class Start>
  void native_call(const char* name, Start&& start);
  void check_count(bool ok, const char* call, const char* what);
  void reap_sends(bool all);  // frees finished eager sends (all: waits for every one)
  std::byte* scratch(int slot, std::int64_t bytes);
  std::int64_t now() const;
  void emit(const Transfer& t, int ring_step, int chunk, int src, int dst, std::int64_t bytes, std::int64_t start_ns,
            std::int64_t end_ns) const;
  int mod(int i) const { return ((i % n_) + n_) % n_; }

  MpiWorld& world_;
  MPI_Comm comm_;
  const std::vector<int> members_;
  const int me_, n_, left_, right_;
  DeviceClock* const clock_;
  EventSink* const sink_;
  std::unique_ptr<CommMemory> host_;  // the in-process communicator's host sums, divisions and copies
  std::vector<std::byte> scratch_[3];
  std::vector<PendingSend> sends_;
};

}  // namespace shardscope
