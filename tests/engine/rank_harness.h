// SPDX-License-Identifier: GPL-3.0-or-later
// Running ranks as threads in a test: a sink that keeps every event, and a
// runner with a watchdog so a hang fails the test instead of blocking the
// suite. Rank bodies only record; Qt Test checks belong on the test thread.
#pragma once

#include <QTest>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/collecting_sink.h"
#include "events/event.h"
#include "parallel/in_process_communicator.h"

namespace shardscope::test {

using namespace std::chrono_literals;


// Runs body(global_rank) on one thread per rank and returns each rank's
// exception (or null). A watchdog aborts the world after `limit` so a hang
// fails the test instead of blocking the suite; if even that frees no one,
// the process ends.
std::vector<std::exception_ptr> run_ranks(InProcessWorld& world, const std::function<void(int)>& body,
                                          std::chrono::milliseconds limit = 20s, bool* watchdog_fired = nullptr) {
  const int n = world.world_size();
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::mutex mutex;
  std::condition_variable cv;
  int done = 0;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
      std::lock_guard lock(mutex);
      ++done;
      cv.notify_all();
    });
  std::unique_lock lock(mutex);
  const bool finished = cv.wait_for(lock, limit, [&] { return done == n; });
  if (!finished) {
    world.abort(-1, "test watchdog");
    if (!cv.wait_for(lock, 5s, [&] { return done == n; })) {
      std::fprintf(stderr, "FATAL: ranks still blocked 5 s after abort\n");
      std::abort();
    }
  }
  lock.unlock();
  for (auto& t : threads) t.join();
  if (watchdog_fired != nullptr) *watchdog_fired = !finished;
  return errors;
}

std::string message_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  }
}

// Runs the ranks and fails the test on a hang or on any rank's exception.
#define RUN_RANKS(world, ...)                                                                                \
  do {                                                                                                       \
    bool fired = false;                                                                                      \
    const auto errors = run_ranks(world, __VA_ARGS__, 20s, &fired);                                          \
    QVERIFY2(!fired, "watchdog: the ranks hung");                                                            \
    for (std::size_t r = 0; r < errors.size(); ++r)                                                          \
      if (errors[r])                                                                                         \
        QFAIL(qPrintable(QString("rank %1: %2").arg(r).arg(QString::fromStdString(message_of(errors[r]))))); \
  } while (0)

std::vector<int> iota_ranks(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

}  // namespace shardscope::test
