// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/thread_pool.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

namespace shardscope {

namespace {
thread_local CpuTimeAccount* t_account = nullptr;

// Range of part `part` of `parts` over [0, n), contiguous and balanced.
std::pair<std::int64_t, std::int64_t> part_range(std::int64_t n, int parts, int part) {
  const std::int64_t base = n / parts;
  const std::int64_t extra = n % parts;
  const std::int64_t begin = part * base + std::min<std::int64_t>(part, extra);
  return {begin, begin + base + (part < extra ? 1 : 0)};
}

// How long a thread that has just finished a job keeps polling for the next
// one before it sleeps on the condition variable. A step runs ~100 jobs back
// to back, microseconds apart; a sleeping thread's wake-up costs tens of
// microseconds (a futex wake, and on a VM the idle core's exit from halt), so
// the other thread mostly arrived after the caller had run every part alone.
// Polling keeps both threads on the job; past the window the thread sleeps, so
// an idle pool costs nothing. OpenMP runtimes and PyTorch's pool do the same.
// On gpt-tiny (docs/PERFORMANCE.md) 200 us beat 50 us by 4%, 1 ms beat 200 us
// by 2% (within noise); a longer window burns more of a shared core.
constexpr std::chrono::microseconds kSpinWindow{200};

// Polls until ready() or the window has passed; true if ready() became true.
template <class Ready>
bool spin_until(const Ready& ready) {
  const auto until = std::chrono::steady_clock::now() + kSpinWindow;
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= until) return ready();
  }
}

// generation_ and pending_ are written under mutex_ and also polled without
// it (spin_until): both sides go through atomic_ref, so the header's plain
// fields stay as they are.
std::uint64_t load(std::uint64_t& value) {
  return std::atomic_ref(value).load(std::memory_order_acquire);
}
int load(int& value) {
  return std::atomic_ref(value).load(std::memory_order_acquire);
}
void store(std::uint64_t& field, std::uint64_t value) {
  std::atomic_ref(field).store(value, std::memory_order_release);
}
void store(int& field, int value) {
  std::atomic_ref(field).store(value, std::memory_order_release);
}
}  // namespace

void set_cpu_time_account(CpuTimeAccount* account) { t_account = account; }
CpuTimeAccount* cpu_time_account() { return t_account; }

std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(1, threads); ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(std::int64_t n, std::int64_t min_grain, const RangeFn& fn) {
  if (n <= 0) return;
  const std::int64_t by_grain = std::max<std::int64_t>(1, n / std::max<std::int64_t>(1, min_grain));
  const int parts = static_cast<int>(std::min<std::int64_t>(threads(), by_grain));
  if (parts <= 1) {
    fn(0, n);
    return;
  }
  // The parts are fixed (part_range); which thread runs which is not. Every
  // thread that joins, the caller first, claims the next part until none is
  // left, so a worker the OS has not scheduled yet (2 cores shared with other
  // programs) leaves its part to the caller instead of holding the job up.
  std::atomic<int> next_part{0};
  const RangeFn claim = [&](std::int64_t, std::int64_t) {
    for (int part = next_part.fetch_add(1); part < parts; part = next_part.fetch_add(1)) {
      const auto [begin, end] = part_range(n, parts, part);
      fn(begin, end);
    }
  };
  // One job at a time: a second caller's job would overwrite this one's
  // (job_, pending_) while the workers run it, and both callers would wait forever.
  std::lock_guard turn(submit_);
  {
    std::lock_guard lock(mutex_);
    job_ = &claim;
    job_n_ = n;
    job_parts_ = parts;
    job_account_ = t_account;
    store(pending_, 0);  // workers inside the job
    store(generation_, generation_ + 1);
  }
  wake_.notify_all();
  claim(0, n);
  // Every part is claimed: close the job to late workers, then wait for those still running a part.
  std::unique_lock lock(mutex_);
  job_ = nullptr;
  if (pending_ == 0) return;
  lock.unlock();
  // Polling is waiting, not compute: its CPU time comes off the account, so the
  // virtual clock (thread CPU time plus the workers') does not count it.
  const std::int64_t poll0 = t_account != nullptr ? thread_cpu_ns() : 0;
  const bool done = spin_until([this] { return load(pending_) == 0; });
  if (t_account != nullptr) t_account->worker_ns.fetch_sub(thread_cpu_ns() - poll0, std::memory_order_relaxed);
  lock.lock();  // after polling, the worker's last write under the mutex is done before this returns
  if (done) return;
  finished_.wait(lock, [this] { return pending_ == 0; });
}

void ThreadPool::worker_loop(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    spin_until([&] { return load(generation_) != seen; });  // the next job, before sleeping (kSpinWindow)
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    if (job_ == nullptr || index >= job_parts_) continue;  // done already, or this job needs fewer threads
    const RangeFn* job = job_;
    CpuTimeAccount* const account = job_account_;
    store(pending_, pending_ + 1);
    lock.unlock();
    const std::int64_t cpu0 = account != nullptr ? thread_cpu_ns() : 0;
    (*job)(0, 0);  // claims parts until none is left
    // Credited before the job counts as done: the submitter reads it after parallel_for returns.
    if (account != nullptr) account->worker_ns.fetch_add(thread_cpu_ns() - cpu0, std::memory_order_relaxed);
    lock.lock();
    store(pending_, pending_ - 1);
    if (pending_ == 0 && job_ == nullptr) finished_.notify_one();
  }
}

int available_cores() {
  if (const char* env = std::getenv("SHARDSCOPE_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace shardscope
