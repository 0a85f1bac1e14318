// SPDX-License-Identifier: GPL-3.0-or-later
// Ranks as processes: one process per rank, started by mpirun (Open MPI), as
// torchrun or DeepSpeed start one process per GPU. The MpiWorld is this
// process's view of the job: it initialises MPI, makes a Communicator
// (mpi_communicator.h) for every group of ranks the trainer asks for, and
// makes sure that a process that fails never leaves the others waiting.
//
// Usage (app/cli_train.cpp):
//   if (MpiWorld::launched_by_mpirun()) {
//     MpiWorld world({MpiCollectives::ring, 60.0});
//     auto dp = world.communicator({0, 1}, clock, sink);  // on ranks 0 and 1 only
//   }
//
// Faults (what PyTorch's watchdog does for NCCL): every blocking MPI call is a
// nonblocking request polled against
//   - an abort notice: a process whose rank throws sends one to every other
//     process (a small message on a communicator of its own), and each of them
//     then throws CommAborted("communication aborted by rank 2: <reason>");
//   - a dead peer: a watchdog thread looks every 100 ms at the processes of the
//     job on this machine (their pids, exchanged at start) and, when one is
//     gone (kill -9, a crash), aborts naming its rank (or the cause a notice
//     gives: a process that fails sends it before it ends); mpirun also stops
//     the job then (SIGTERM), and the handler prints the same message first;
//   - a deadline: no progress for --comm-timeout seconds (a hung peer) aborts
//     naming the peer waited for;
//   - a heartbeat: every watchdog sends each peer a small message every second
//     and aborts, naming the peer, when one has sent none for
//     --heartbeat-timeout seconds (5 by default): a stopped or frozen process
//     (SIGSTOP, a machine that hangs), found on any machine and independent
//     of how long a collective may take. A process that finishes says so first,
//     so its silence while it waits in MPI_Finalize is not a freeze.
// A process that saw an abort and has not exited 5 s later is ended by the
// watchdog (exit code 1) with its message: never a hang. One that exits after
// an abort stays 0.5 s first, so that the others have read the notice (and
// name the cause) before mpirun ends them on the first exit.
//
// Threads: the trainer calls from its rank threads and DDP's communication
// thread; every MPI call here is made under one mutex (MPI_THREAD_MULTIPLE is
// asked for; MPI_THREAD_SERIALIZED is enough).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "parallel/communicator.h"

namespace shardscope {

class DeviceClock;

// ring: the in-process communicator's ring algorithms over point-to-point
// messages (every chunk an event, results bitwise equal to threads); native:
// MPI's own all-reduce / reduce-scatter / all-gather (one event per call).
enum class MpiCollectives { ring, native };

struct MpiOptions {
  MpiCollectives collectives = MpiCollectives::ring;
  double timeout_s = 60.0;  // no progress in a blocking call for this long: abort naming the peer
  double heartbeat_timeout_s = 5.0;  // no heartbeat from a process for this long: abort naming it
};

class MpiWorld {
 public:
  // Set by mpirun (Open MPI's OMPI_COMM_WORLD_SIZE, or a PMI/PMIx launcher's):
  // this process is one rank of a job.
  static bool launched_by_mpirun();

  // MPI_Init_thread, errors returned (MPI_ERRORS_RETURN) rather than fatal, the
  // pids exchanged, the watchdog started. Throws std::runtime_error if MPI
  // cannot start or gives less than MPI_THREAD_SERIALIZED.
  explicit MpiWorld(const MpiOptions& options);
  // MPI_Finalize after a clean run; after an abort the process just exits
  // (finalizing would wait for peers that are gone).
  ~MpiWorld();
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // This process's place among the job's processes on its machine (0, 1, ...),
  // as OMPI_COMM_WORLD_LOCAL_RANK: which of the machine's GPUs it takes.
  int local_rank() const { return local_rank_; }
  const MpiOptions& options() const { return options_; }

  // This process's communicator in the group of global ranks `members` (group
  // rank i = members[i]); only the members call it (MPI_Comm_create_group), in
  // the same order of groups. Events go to `sink` (may be null) timed by `clock`.
  std::unique_ptr<Communicator> communicator(const std::vector<int>& members, DeviceClock* clock, EventSink* sink);

  // Rank 0's `text`, on every process (MPI_Bcast; every process calls it, at
  // the same point). Before training: how the others reach rank 0's event collector.
  std::string broadcast_from_rank0(const std::string& text);
  // Every process's `text`, by rank, on rank 0 (empty on the others): MPI_Gatherv,
  // waited for as wait() does, every process at the same point. A checkpoint's
  // commit: rank 0 hears that every rank's file is durable (the barrier before the manifest).
  std::vector<std::string> gather_to_rank0(const std::string& text);
  // Whether global rank `rank` runs on this machine (same hostname).
  bool on_this_machine(int rank) const { return pids_.at(static_cast<std::size_t>(rank)) != 0; }

  // Copies members[0]'s `bytes` bytes at `data` into the other members' (an
  // NCCL unique id); only the members call it, in the same order of groups.
  // Waits as wait() does. Throws CommAborted.
  void share(const std::vector<int>& members, void* data, int bytes);

  // After a timeout: "; rank 2 does not answer (stopped or frozen)" for each
  // process that is not waiting in a communication call.
  std::string ask_peers();
  // A thread waiting outside wait() (an NCCL call) counts for ask_peers: +1 when it starts, -1 when it stops.
  void add_waiting(int delta) { waiting_ += delta; }

  // Marks the job failed and tells every other process (first call only):
  // blocked and later calls throw CommAborted naming by_rank and the reason.
  void abort(int by_rank, const std::string& reason);
  bool aborted() const { return aborted_.load(); }
  std::string abort_message() const;

  // Waits for the requests (nonblocking MPI calls of a group), polling for an
  // abort, a dead peer and the deadline; `what` and `peer` (a global rank, or
  // -1) name the call in a timeout message. Throws CommAborted.
  // statuses: MPI_STATUSES_IGNORE or one per request.
  void wait(MPI_Request* requests, int count, const std::string& what, int peer,
            MPI_Status* statuses = MPI_STATUSES_IGNORE);
  // Runs an MPI call under the mutex; a failing return code aborts the job.
  // Throws CommAborted, making no call, once the job is aborted.
  template <class Call>
  void call(const char* name, Call&& mpi_call) {
    int rc;
    {
      std::unique_lock lock(mutex_);
      if (aborted_.load()) {  // no MPI progress after an abort (mpi_faults.cpp)
        lock.unlock();
        raise_aborted();
      }
      rc = mpi_call();
    }
    if (rc != MPI_SUCCESS) fail_call(name, rc);
  }

 private:
  void fail_call(const char* name, int rc);
  void raise_aborted();
  void exchange_pids();
  void start_watchdog();       // mpi_faults.cpp, with the rest of the fault handling
  void watch();                // the watchdog thread
  void poll_abort_notice();    // an abort notice from another process, if any (mutex held)
  void read_pending_notice();  // poll_abort_notice, mutex not held
  void meet(const std::vector<int>& members, const std::string& what);  // every member here (waits as wait() does)
  static void linger_after_abort();
  int dead_peer() const;  // a rank of this machine whose process is gone, else -1
  std::string dead_peer_text(int peer) const;
  void set_aborted(const std::string& message);
  void abort_with(const std::string& message, bool from_watchdog);
  void send_abort_notices(const std::string& text);  // mutex held
  void answer_queries();                             // mutex held
  void heartbeat();                                  // mutex held: send one if due, read the peers'
  void send_heartbeats(int alive);                   // mutex held: 1 alive, 0 leaving (finalizing)
  int silent_peer() const;                           // a peer not heard from for the timeout, else -1
  std::string silent_peer_text(int peer) const;

  MpiOptions options_;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  MPI_Comm control_ = MPI_COMM_NULL;  // abort notices only
  std::vector<long> pids_;            // by rank; 0 for processes on other machines
  mutable std::mutex mutex_;          // every MPI call
  mutable std::mutex message_mutex_;
  std::string abort_message_;
  std::atomic<bool> aborting_{false};  // an abort is telling the others; aborted_ comes after
  std::atomic<bool> aborted_{false};
  std::atomic<std::int64_t> aborted_at_{0};  // steady-clock ticks
  std::atomic<bool> finalizing_{false};      // MPI_Finalize has begun: no more MPI calls from the watchdog
  std::atomic<bool> stopping_{false};
  std::atomic<int> waiting_{0};    // threads of this process inside wait()
  std::vector<int> answers_;       // by asking rank: the answer in flight
  std::vector<char> notice_text_;  // the abort notice sent (kept: sends may still read it)
  // The heartbeat (watchdog thread only): when each peer was last heard from
  // (steady-clock ns), whether it has left (finalizing), this process's last send and read.
  std::vector<std::int64_t> heard_ns_;
  std::vector<char> left_;
  std::int64_t beat_sent_ns_ = 0, listened_ns_ = 0;
  std::thread watchdog_;
};

}  // namespace shardscope
