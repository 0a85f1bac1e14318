// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to the in-process communicator (in_process_communicator.cpp for the
// world, waiting, abort, events and point to point; in_process_collectives.cpp
// for the ring and rooted collectives): the state a group's members share.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "parallel/in_process_communicator.h"

namespace shardscope {

inline std::int64_t bytes_of(std::int64_t elements, DType dtype = DType::f32) {
  return elements * static_cast<std::int64_t>(dtype_size(dtype));
}

// Where one rank's collective buffers live and how it moves and sums them:
// host memory (memcpy and the vectorized loops of in_process_collectives.cpp),
// or a device shared by the ranks (comm_memory.cpp: copies and sums on the
// rank's communication backend, staging in its device memory). A rank only
// ever writes into a peer's buffer through its own CommMemory.
class CommMemory {
 public:
  virtual ~CommMemory() = default;
  virtual bool device() const = 0;
  virtual void copy(void* dst, const void* src, std::int64_t bytes) = 0;
  virtual void add_into(DType dtype, void* dst, const void* src, std::int64_t n) = 0;             // dst += src
  virtual void add_to(DType dtype, void* dst, const void* a, const void* b, std::int64_t n) = 0;  // dst = a + b
  virtual void divide(DType dtype, void* data, std::int64_t n, int divisor) = 0;                  // data /= divisor
  virtual void to_host(void* host_dst, const void* src, std::int64_t bytes) = 0;                  // a queued message
  virtual void from_host(void* dst, const void* host_src, std::int64_t bytes) = 0;
  // Every copy and sum this rank issued, and every write the rank's compute
  // made to its buffers, has finished (device work is asynchronous): called
  // before a rank publishes its buffers or tells a peer it wrote into theirs.
  virtual void settle() = 0;
  // Scratch in this memory, at least `bytes`, kept between calls (grown, never
  // shrunk): slot 0 the reduce-scatter staging, slot 1 a pre-divided copy.
  // Charged to the rank's ledger as communication when the CommDevice names one.
  virtual void* scratch(int slot, std::int64_t bytes) = 0;
};

std::unique_ptr<CommMemory> make_host_comm_memory(MemoryLedger* ledger);
std::unique_ptr<CommMemory> make_device_comm_memory(const CommDevice& device);

// One member of a group. Published fields are written by the owner before it
// raises `progress` (release) and read by peers after they see it (acquire).
struct alignas(64) Slot {  // own cache lines: neighbours poll each other's progress
  std::atomic<std::int64_t> progress{0};
  std::atomic<bool> busy{false};  // inside a copy that touches a peer's buffer
  // Virtual clock (clock/device_clock.h): the member's time when its progress
  // reached value v, at [v % kVirtualTimes]; written before progress is raised. A
  // peer reads a value its neighbours can be at most one step past.
  static constexpr int kVirtualTimes = 8;
  std::array<std::atomic<std::int64_t>, kVirtualTimes> virtual_ns{};
  // ... and the global rank whose lateness set that time (wait_span events).
  std::array<std::atomic<std::int32_t>, kVirtualTimes> blame{};
  std::mutex mutex;               // only for sleeping on progress
  std::condition_variable cv;
  CommOp op = CommOp::barrier;  // published at call entry
  std::int64_t count = 0;
  int root = -1;
  DType dtype = DType::f32;
  bool device = false;  // the call's buffers are device memory
  const void* send = nullptr;
  void* recv = nullptr;
  void* stage = nullptr;  // reduce_scatter partial sums, 2 x recv_count elements, written by the left neighbour
  bool in_use = false;    // one live communicator per slot (guarded by the world's mutex)
};

// The messages from one sender to one receiver, in order.
struct Mailbox {
  struct Message {
    std::vector<float> data;
    std::int64_t start_ns;
    std::int64_t arrival_ns;  // virtual clock: when the transfer ends (start + the link's time)
    CommTag tag;
  };
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Message> queue;
  float* posted = nullptr;  // a receiver waiting with an empty queue: the sender copies here directly
  std::int64_t posted_count = 0;
  bool taken = false;   // a sender is copying into `posted`
  bool filled = false;  // ... and has finished
  std::int64_t posted_arrival_ns = 0;  // ... and when its transfer ends on the virtual clock
};

struct InProcessGroup {
  std::vector<int> members;  // global ranks in group order
  std::unique_ptr<Slot[]> slots;
  std::unique_ptr<Mailbox[]> mailboxes;  // [sender * size + receiver]
  int size() const { return static_cast<int>(members.size()); }
};

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<InProcessWorld> world, std::shared_ptr<InProcessGroup> group, int me,
                        const CommDevice& device, DeviceClock* clock);
  ~InProcessCommunicator() override;

  int rank() const override { return me_; }
  int size() const override { return n_; }
  int global_rank(int group_rank) const override { return group_->members.at(static_cast<std::size_t>(group_rank)); }

  using Communicator::all_gather;
  using Communicator::all_reduce;
  using Communicator::broadcast;
  using Communicator::gather;
  using Communicator::reduce_scatter;
  using Communicator::scatter;
  void all_reduce(void* data, std::int64_t count, DType dtype, ReduceOp op, const CommTag& tag) override;
  void reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ReduceOp op,
                      const CommTag& tag) override;
  void all_gather(const void* send, void* recv, std::int64_t send_count, DType dtype, const CommTag& tag) override;
  void broadcast(void* data, std::int64_t count, DType dtype, int root, const CommTag& tag) override;
  void gather(const void* send, void* recv, std::int64_t count, DType dtype, int root, const CommTag& tag) override;
  void scatter(const void* send, void* recv, std::int64_t count, DType dtype, int root, const CommTag& tag) override;
  void all_reduce_host(float* data, std::int64_t count, ReduceOp op, const CommTag& tag) override;
  void broadcast_host(float* data, std::int64_t count, int root, const CommTag& tag) override;
  void scatter_host(const float* send, float* recv, std::int64_t count, int root, const CommTag& tag) override;
  void send(const float* data, std::int64_t count, int peer, const CommTag& tag) override;
  void recv(float* data, std::int64_t count, int peer, const CommTag& tag) override;
  void barrier() override;
  void abort(const std::string& reason) override { world_->abort(global_rank(me_), reason); }

 private:
  // What a call's comm events share.
  struct Transfer {
    CommOp op;
    RingPhase phase;
    const CommTag& tag;
  };

  Slot& slot(int member) const { return group_->slots[static_cast<std::size_t>(member)]; }
  int mod(int i) const { return ((i % n_) + n_) % n_; }

  std::int64_t enter(CommOp op, const void* send, void* recv, std::int64_t count, int root, DType dtype = DType::f32);
  void advance(std::int64_t value);
  void wait_for(int member, std::int64_t value);
  void check_matches(int member);
  template <class Copy>
  void guarded(Copy&& copy);
  [[noreturn]] void raise_aborted();
  [[noreturn]] void fail(const std::string& what);
  void check_argument(bool ok, const char* call, const char* what);
  std::int64_t now() const;
  void emit(const Transfer& t, int ring_step, int chunk, int src, int dst, std::int64_t bytes, std::int64_t start_ns,
            std::int64_t end_ns) const;
  template <class Copy>
  void ring_step(std::int64_t base, int t, const Transfer& tr, int phase_step, int chunk, std::int64_t bytes,
                 Copy&& copy);
  // reduce_scatter's ring over one slice of every chunk (chunk c at send + c * stride bytes).
  void reduce_scatter_slice(const std::byte* send, std::int64_t stride, std::byte* recv, std::int64_t count,
                            DType dtype, ReduceOp op, const CommTag& tag);
  template <class PeerCopy, class RootCopy>
  void rooted(const Transfer& tr, const void* send, void* recv, std::int64_t count, DType dtype, int root, bool to_root,
              int chunk, PeerCopy&& peer_copy, RootCopy&& root_copy);
  // The virtual clock (clock/device_clock.h): a call starts at the calling
  // stream's time (call_begin) and ends at virtual_ns_ (call_end); a peer's
  // time at progress value v (after wait_for showed it); a final wait that also
  // waits for the peer's time there.
  void call_begin();
  void call_end();
  std::int64_t peer_ns(int member, std::int64_t value) const;
  void wait_for_peer(int member, std::int64_t value, const Transfer& tr);
  // Waits on the virtual clock: this rank's time moves on to `until` because
  // the global rank `culprit` got there late. Emits a wait_span (when it is a
  // wait) and makes the culprit the one to blame for this rank's time from
  // here, so a delay passed round a ring keeps naming the rank that caused it.
  void wait_until(std::int64_t until, int culprit, const Transfer& tr);
  // The global rank to blame for `member`'s time at progress `value`.
  int peer_blame(int member, std::int64_t value) const;
  // Runs `call` with this rank's buffers in host memory (the *_host calls).
  template <class Call>
  void on_host(Call&& call);

  std::shared_ptr<InProcessWorld> world_;
  std::shared_ptr<InProcessGroup> group_;
  const int me_, n_, left_, right_;
  std::unique_ptr<CommMemory> host_memory_;
  std::unique_ptr<CommMemory> device_memory_;  // null for host ranks
  CommMemory* memory_;                         // the current call's: device_memory_ if set, else host_memory_
  DeviceClock* const clock_;                   // null: no virtual clock
  const bool virtual_;                         // events in virtual time (clock_ is virtual)
  std::int64_t virtual_ns_ = 0;                // this rank's virtual time in the current call
  int blame_ = -1;                             // the global rank whose lateness set virtual_ns_ (wait_until)
  std::int64_t link_free_ns_ = 0;              // sends: when this rank's outgoing link is free again
};

}  // namespace shardscope
