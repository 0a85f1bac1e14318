// SPDX-License-Identifier: GPL-3.0-or-later
// One rank's device clock. On the virtual clock every CPU rank runs on a
// device of its own, whatever else shares this machine's cores:
//   - the compute stream (the rank's thread) advances by the work the rank
//     really did: the CPU time of its thread and of the pool workers that ran
//     its jobs (CLOCK_THREAD_CPUTIME_ID, counted only while a thread runs),
//     divided by the rank's thread count. Waiting and being preempted cost nothing;
//   - a communication call is timed by the link model (clock/link_model.h) and
//     by its dependencies, which the communicator computes from its peers'
//     clocks (parallel/in_process_communicator.h): a receive ends when the
//     message arrives, a ring step starts when its neighbours are there. The CPU
//     time the rank's thread spends copying inside the call is not compute;
//   - DDP's bucket all-reduces run on the communication stream (CommStream),
//     which starts a bucket at max(stream free, its gradients final) and
//     overlaps the backward; the optimizer waits for it (compute_wait_for_comm).
// This replays real, measured work on a modeled device: every span still
// comes from an op that ran. CPU time is a noisy measure on shared cores: a
// thread preempted mid-op by a sibling rank refills its caches. So the ranks
// of a run share ComputeSlots, one per core: a rank computes only while it
// holds one, and lets it go whenever it communicates (and so may wait).
// Under a GPU profile (clock/gpu_time_model.h) the compute stream advances by
// the modeled time of each op instead (add_modeled_op): computed, not measured,
// so it does not move with the load on this machine.
// On the wall clock (ClockKind::wall, and every GPU rank) now() is the run's
// steady clock and the rest does nothing.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "clock/clock_choices.h"
#include "clock/gpu_time_model.h"
#include "clock/link_model.h"
#include "core/thread_pool.h"

namespace shardscope {

class RunClock;

// At most `slots` ranks compute at once (a counting semaphore).
class ComputeSlots {
 public:
  explicit ComputeSlots(int slots) : free_(slots) {}
  void acquire();
  void release();

 private:
  std::mutex mutex_;
  std::condition_variable freed_;
  int free_;
};

class DeviceClock {
 public:
  // threads: the rank's CPU threads (its backend's pool); slots: shared by the
  // run's ranks (null: none); gpu: the modeled GPU whose op times replace the
  // CPU time (none: CPU time). `wall` must outlive the clock.
  DeviceClock(ClockKind kind, const RunClock& wall, LinkModel link = {}, int threads = 1,
              std::shared_ptr<ComputeSlots> slots = nullptr, std::optional<GpuTimeModel> gpu = std::nullopt);
  DeviceClock(const DeviceClock&) = delete;
  DeviceClock& operator=(const DeviceClock&) = delete;

  bool is_virtual() const { return kind_ == ClockKind::virtual_device; }
  const LinkModel& link() const { return link_; }
  const std::optional<GpuTimeModel>& gpu() const { return gpu_; }
  const std::shared_ptr<ComputeSlots>& slots() const { return slots_; }

  // The calling thread starts (stops) working for the rank: its CPU time, and
  // that of the pool workers it dispatches to, counts from here (up to here).
  void attach_compute_thread();
  void detach_compute_thread();

  // ns since the run started on the calling thread's stream: the communication
  // stream's on a CommStream thread; else the compute stream's, first counting
  // the work done since the last call when called on the compute thread.
  std::int64_t now();
  // Under a GPU profile, an op with this nominal work ran on the compute
  // thread: the compute stream advances by its modeled time (other threads: nothing).
  // `gemms`: the GEMM kernels it launched (GpuTimeModel::op_ns).
  void add_modeled_op(double flops, double bytes, int gemms = 0);
  // A straggler (--slow-rank): from now on the compute stream counts each piece
  // of work `factor` times (>= 1), as a slower device would take. Call before
  // the rank computes.
  void set_compute_factor(double factor) { factor_ = factor; }
  double compute_factor() const { return factor_; }
  // The compute stream's time, without counting new work (any thread).
  std::int64_t compute_time() const { return compute_ns_.load(std::memory_order_relaxed); }

  // A communication call starts: the calling stream's time (now()); the
  // compute thread lets its compute slot go.
  std::int64_t comm_begin();
  // ... and ends at `end`: the calling stream moves on to it; the compute
  // thread takes a slot again, and the CPU time it spent inside the call is
  // dropped (the link timed it).
  void comm_end(std::int64_t end);

  // While alive, the calling thread runs this clock's communication stream.
  class CommStream {
   public:
    explicit CommStream(DeviceClock* clock);
    ~CommStream();
    CommStream(const CommStream&) = delete;
    CommStream& operator=(const CommStream&) = delete;
  };
  // The communication stream idles until `t` (a bucket's gradients are final then).
  void comm_stream_wait_until(std::int64_t t);
  // The compute stream waits for the communication stream (the optimizer for the last bucket).
  void compute_wait_for_comm();

 private:
  std::int64_t work_ns() const;  // CPU time of the calling thread and of its pool workers
  void count_work();
  void hold_slot(bool hold);  // compute thread only
  std::int64_t scaled(std::int64_t ns) const;  // ns of work, as long as this device takes for it

  const ClockKind kind_;
  const RunClock& wall_;
  const LinkModel link_;
  const int threads_;
  const std::shared_ptr<ComputeSlots> slots_;
  const std::optional<GpuTimeModel> gpu_;
  bool holds_slot_ = false;  // compute thread only
  std::atomic<std::int64_t> compute_ns_{0};
  std::atomic<std::int64_t> comm_ns_{0};
  std::int64_t mark_ns_ = 0;    // work_ns() when last counted (compute thread only)
  std::int64_t remainder_ = 0;  // work not yet a whole ns per thread
  double factor_ = 1.0;         // set_compute_factor
  CpuTimeAccount workers_;
};

}  // namespace shardscope
