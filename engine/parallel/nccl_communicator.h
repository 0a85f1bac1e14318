// SPDX-License-Identifier: GPL-3.0-or-later
// Communicators for ranks on distinct GPUs of this process, over NCCL
// (ops/nccl.h): one NCCL communicator per rank and group, made for all the
// group's members at once with ncclCommInitAll, as one process driving
// several GPUs does. Each call is queued on its communicator's own stream
// behind what the rank's compute stream has queued, and the calling thread
// polls for its end, so DDP's bucket all-reduces (on the reducer's thread) run
// on the GPU while backward computes earlier layers, and a pipeline send on
// another communicator never queues behind them.
//
// Events: one comm_span per call and rank (NCCL's own ring steps are inside
// its kernels, out of sight), timed by CUDA events on the communication
// stream: GPU time, mapped to the run clock at the group's init. `src` is the
// rank (the sender for send), `dst` the peer for send, -1 otherwise.
//
// Abort: the ranks share the in-process world's abort state. A rank polling
// for a call that finds the world aborted aborts its NCCL communicator (its
// kernels stop) and throws CommAborted; an asynchronous NCCL error aborts the
// world. No rank waits forever for a peer that has failed.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/memory_ledger.h"
#include "ops/backend.h"
#include "parallel/communicator.h"
#include "parallel/in_process_communicator.h"

namespace shardscope {

// What a rank's NCCL calls need: its compute backend (the calls wait for its
// queued work), its communication backend (copies of the *_host calls' values
// to and from device staging) and its device memory (that staging). All on the
// rank's GPU.
struct NcclRank {
  Backend* compute = nullptr;
  Backend* comm = nullptr;
  DeviceMemory* memory = nullptr;
  void* compute_stream = nullptr;  // compute's cudaStream_t (ops/device.h cuda_stream), which calls wait for
};

class NcclWorld {
 public:
  // rank_devices[r]: global rank r's GPU (distinct). abort_state: the world
  // whose abort every rank watches. sink may be null; clock must outlive the world.
  NcclWorld(std::vector<int> rank_devices, std::shared_ptr<InProcessWorld> abort_state, EventSink* sink,
            const RunClock* clock);
  ~NcclWorld();

  // Global rank `rank`'s communicator for the group `members` (global ranks in
  // group order, the same list on every member). The first request for a
  // group initializes every member's NCCL communicator.
  std::unique_ptr<Communicator> communicator(int rank, const std::vector<int>& members, const NcclRank& on);

 private:
  struct Group {
    std::vector<void*> contexts;  // by group rank; handed out once each
    std::int64_t reference_ns = 0;
  };
  std::vector<int> rank_devices_;
  std::shared_ptr<InProcessWorld> abort_state_;
  EventSink* sink_;
  const RunClock* clock_;
  std::mutex mutex_;
  std::map<std::vector<int>, Group> groups_;
};

}  // namespace shardscope
