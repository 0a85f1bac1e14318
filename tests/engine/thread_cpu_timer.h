// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU time the calling thread has used since start(): what a test that
// guards an algorithm's cost (linear, not quadratic; bounded, not
// exponential) measures, so that other processes on the same cores (CI runs
// beside other work) do not fail it as wall-clock time would.
#pragma once

#include <time.h>

class ThreadCpuTimer {
 public:
  void start() { start_ = now_ns(); }
  // Milliseconds, as QElapsedTimer::elapsed().
  long long elapsed() const { return (now_ns() - start_) / 1000000; }

 private:
  static long long now_ns() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
  }
  long long start_ = 0;
};
