// SPDX-License-Identifier: GPL-3.0-or-later
// Communicators for ranks on distinct GPUs, over NCCL (ops/nccl.h): one NCCL
// communicator per rank and group, made for all the group's members at once
// with ncclCommInitAll where one process drives several GPUs, or, where each
// rank is a process (mpirun, on this machine or others), one per process with
// ncclCommInitRank: the group's first rank makes the unique id
// (ncclGetUniqueId), MPI carries it to the others (NcclShareId), and each
// joins with it, as torch.distributed's NCCL process groups bootstrap through
// their store. Each call is queued on its communicator's own stream behind
// what the rank's compute stream has queued, and the calling thread polls for
// its end, so DDP's bucket all-reduces (on the reducer's thread) run on the
// GPU while backward computes earlier layers, and a pipeline send on another
// communicator never queues behind them.
//
// Events: one comm_span per call and rank (NCCL's own ring steps are inside
// its kernels, out of sight), timed by CUDA events on the communication
// stream: GPU time, mapped to the run clock at the group's init. `src` is the
// rank (the sender for send), `dst` the peer for send, -1 otherwise.
//
// Abort (PyTorch's NCCL watchdog): a rank polling for a call that finds the
// run aborted (NcclAbortState: the in-process world's, or the MPI job's, which
// a failed or dead process sets) aborts its NCCL communicator (its kernels
// stop) and throws CommAborted; a call not finished after the timeout
// (--comm-timeout) and an asynchronous NCCL error abort the run, naming the
// rank. ncclCommInitRank, which blocks, is bounded by the timeout too (its
// watchdog aborts the run; the MPI job's ends the process). No rank waits
// forever for a peer that has failed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/memory_ledger.h"
#include "ops/backend.h"
#include "ops/nccl.h"
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

// The run's abort, which every NCCL call watches and raises.
struct NcclAbortState {
  std::function<bool()> aborted;
  std::function<std::string()> message;
  std::function<void(int rank, const std::string& reason)> abort;
  double timeout_s = 0.0;  // a call not finished after this long aborts the run (0: no limit)
  // May be empty. A call starts (+1) and stops (-1) waiting for its peers;
  // after a timeout, which peers are not waiting ("; rank 2 does not answer").
  std::function<void(int delta)> waiting;
  std::function<std::string()> unresponsive;
};

// The in-process world's abort state.
NcclAbortState nccl_abort_state(std::shared_ptr<InProcessWorld> world, double timeout_s);

// Ranks as processes: overwrites the other members' `id` with the first member's (over MPI).
using NcclShareId = std::function<void(const std::vector<int>& members, NcclUniqueId& id)>;

class NcclWorld {
 public:
  // rank_devices[r]: global rank r's GPU (distinct; under mpirun only this
  // process's rank's entry is read). sink may be null; clock must outlive the
  // world. share_id set: ranks are processes (ncclCommInitRank), else all
  // ranks are this process's (ncclCommInitAll).
  NcclWorld(std::vector<int> rank_devices, NcclAbortState abort_state, EventSink* sink, const RunClock* clock,
            NcclShareId share_id = {});
  ~NcclWorld();

  // Global rank `rank`'s communicator for the group `members` (global ranks in
  // group order, the same list on every member). The first request for a
  // group initializes every member's NCCL communicator (under mpirun: each
  // member's request its own, all members request it). Throws
  // std::runtime_error naming the group when NCCL cannot make it.
  std::unique_ptr<Communicator> communicator(int rank, const std::vector<int>& members, const NcclRank& on);

 private:
  void* init_in_process(int rank, const std::vector<int>& members, std::size_t me, std::int64_t& reference_ns);
  void* init_across_processes(int rank, const std::vector<int>& members, std::size_t me);

  struct Group {
    std::vector<void*> contexts;  // by group rank; handed out once each
    std::int64_t reference_ns = 0;
  };
  std::vector<int> rank_devices_;
  NcclAbortState abort_state_;
  NcclShareId share_id_;
  EventSink* sink_;
  const RunClock* clock_;
  std::mutex mutex_;
  std::map<std::vector<int>, Group> groups_;
};

}  // namespace shardscope
