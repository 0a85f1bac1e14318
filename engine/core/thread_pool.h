// SPDX-License-Identifier: GPL-3.0-or-later
// A small fork-join pool: parallel_for splits [0, n) into one contiguous range
// per thread, statically, so results do not depend on timing. The calling
// thread takes the first range. Each rank owns one pool; the pools of all
// ranks together never hold more threads than there are cores. A rank's pool
// has more than one caller (the rank's thread, and its DDP reducer thread
// adding the buckets it all-reduces while backward runs): their jobs take
// turns, one job in the pool at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace shardscope {

// CPU time that pool workers spent on the jobs of the threads that set this
// account (set_cpu_time_account): a rank's virtual clock (clock/device_clock.h)
// counts its workers' work as its own, whichever pool ran it.
struct CpuTimeAccount {
  std::atomic<std::int64_t> worker_ns{0};
};
// The calling thread's account (null: none); its later parallel_for jobs credit it.
void set_cpu_time_account(CpuTimeAccount* account);
CpuTimeAccount* cpu_time_account();
// CPU time of the calling thread, in ns (CLOCK_THREAD_CPUTIME_ID: only while it ran).
std::int64_t thread_cpu_ns();

class ThreadPool {
 public:
  // fn(begin, end): process items [begin, end).
  using RangeFn = std::function<void(std::int64_t begin, std::int64_t end)>;

  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn over [0, n) in at most threads() ranges of at least min_grain items.
  void parallel_for(std::int64_t n, std::int64_t min_grain, const RangeFn& fn);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex submit_;  // held by the caller whose job the pool runs
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable finished_;
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
  // The job of the current generation.
  const RangeFn* job_ = nullptr;
  std::int64_t job_n_ = 0;
  int job_parts_ = 0;
  CpuTimeAccount* job_account_ = nullptr;  // the submitting thread's
  int pending_ = 0;
};

// Cores the engine may use: hardware_concurrency, or SHARDSCOPE_THREADS if set.
int available_cores();

}  // namespace shardscope
