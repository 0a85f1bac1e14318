// SPDX-License-Identifier: GPL-3.0-or-later
// The in-process communicator when something goes wrong: an abort wakes every
// rank blocked in a collective, a receive or another group's call, and later
// calls fail too; a copy in flight ends cleanly; mismatched calls and bad
// groups fail instead of corrupting or hanging.
#include <QTest>
#undef emit  // Qt's keyword macro would eat EventSink::emit

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/rank_harness.h"
#include "engine/test_support.h"
#include "parallel/in_process_communicator.h"

using namespace shardscope;
using namespace shardscope::test;
using namespace std::chrono_literals;

class TestCommunicatorAbort : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void abort_wakes_ranks_blocked_in_all_reduce();
  void abort_wakes_ranks_blocked_in_recv_and_other_groups();
  void abort_during_large_copies_is_clean();
  void mismatched_calls_fail_instead_of_corrupting();
  void bad_groups_are_rejected();
};

namespace {
using Clock = std::chrono::steady_clock;

// What a rank saw when its blocking call ended.
struct Outcome {
  bool aborted = false;
  std::string message;
  Clock::time_point returned;
  bool later_call_aborted = false;
};

// Rank 3 fails after the other three are blocked; each of them must throw
// CommAborted within a second, naming rank 3 and the cause, and so must any
// later call.
void check_outcomes(const std::vector<Outcome>& outcomes, Clock::time_point aborted_at, const char* cause) {
  for (int r = 0; r < 3; ++r) {
    const Outcome& o = outcomes[static_cast<std::size_t>(r)];
    const QString where = QString("rank %1: \"%2\"").arg(r).arg(QString::fromStdString(o.message));
    QVERIFY2(o.aborted, qPrintable(where));
    QVERIFY2(o.message.find("rank 3") != std::string::npos, qPrintable(where));
    QVERIFY2(o.message.find(cause) != std::string::npos, qPrintable(where));
    QVERIFY2(o.returned >= aborted_at, qPrintable(where + " returned before the abort"));
    QVERIFY2(o.returned - aborted_at < 1s, qPrintable(where + " took a second or more to wake"));
    QVERIFY2(o.later_call_aborted, qPrintable(where + ": a later call did not throw"));
  }
}

// Runs `blocked` on ranks 0..2 (it must block until the abort) and records how it ended.
Outcome blocked_call(Communicator& comm, const std::function<void()>& blocked) {
  Outcome o;
  try {
    blocked();
  } catch (const CommAborted& e) {
    o.aborted = true;
    o.message = e.what();
  }
  o.returned = Clock::now();
  try {
    comm.barrier();
  } catch (const CommAborted&) {
    o.later_call_aborted = true;
  }
  return o;
}
}  // namespace

void TestCommunicatorAbort::abort_wakes_ranks_blocked_in_all_reduce() {
  auto world = InProcessWorld::create(4);
  std::vector<Outcome> outcomes(4);
  Clock::time_point aborted_at;
  RUN_RANKS(*world, [&](int r) {
    auto comm = world->communicator(r, iota_ranks(4));
    if (r == 3) {
      std::this_thread::sleep_for(200ms);  // the others are blocked in the all-reduce by now
      aborted_at = Clock::now();
      comm->abort("simulated out of memory");
      return;
    }
    std::vector<float> x(1000, 1.0f);
    outcomes[static_cast<std::size_t>(r)] =
        blocked_call(*comm, [&] { comm->all_reduce(x.data(), 1000, ReduceOp::sum, {}); });
  });
  check_outcomes(outcomes, aborted_at, "simulated out of memory");
}

// Rank 0 waits in recv on the world group, ranks 1 and 2 in an all-reduce of
// the group {1, 2, 3}; rank 3 throws, and its harness aborts the world.
void TestCommunicatorAbort::abort_wakes_ranks_blocked_in_recv_and_other_groups() {
  auto world = InProcessWorld::create(4);
  std::vector<Outcome> outcomes(4);
  Clock::time_point aborted_at;
  RUN_RANKS(*world, [&](int r) {
    auto all = world->communicator(r, iota_ranks(4));
    auto trio = r > 0 ? world->communicator(r, {1, 2, 3}) : nullptr;
    std::vector<float> x(1000, 1.0f);
    if (r == 3) {
      try {
        std::this_thread::sleep_for(200ms);
        throw std::runtime_error("bad batch shape");
      } catch (const std::exception& e) {
        aborted_at = Clock::now();
        world->abort(3, e.what());  // what a trainer does with a rank's exception
      }
    } else if (r == 0) {
      outcomes[0] = blocked_call(*all, [&] { all->recv(x.data(), 1000, 3, {}); });
    } else {
      outcomes[static_cast<std::size_t>(r)] =
          blocked_call(*trio, [&] { trio->all_reduce(x.data(), 1000, ReduceOp::sum, {}); });
    }
  });
  check_outcomes(outcomes, aborted_at, "bad batch shape");
}

// Abort from a thread that is no rank while all ranks are busy moving 16 MB
// buffers: every rank stops with CommAborted, and no rank's buffer is written
// after it was freed (each rank frees it right after its call throws).
void TestCommunicatorAbort::abort_during_large_copies_is_clean() {
  auto world = InProcessWorld::create(4);
  std::vector<Outcome> outcomes(4);
  std::thread stopper([&] {
    std::this_thread::sleep_for(150ms);
    world->abort(-1, "stopped by the test");
  });
  const auto errors = run_ranks(*world, [&](int r) {
    auto comm = world->communicator(r, iota_ranks(4));
    Outcome& o = outcomes[static_cast<std::size_t>(r)];
    for (int call = 0; !o.aborted && call < 1000; ++call) {
      std::vector<float> x(4 << 20, 1.0f);
      o = blocked_call(*comm, [&] { comm->all_reduce(x.data(), 4 << 20, ReduceOp::average, {}); });
    }
  });
  stopper.join();
  for (int r = 0; r < 4; ++r) {
    const Outcome& o = outcomes[static_cast<std::size_t>(r)];
    QVERIFY2(!errors[static_cast<std::size_t>(r)], "a rank failed with something else than CommAborted");
    QVERIFY(o.aborted);
    QCOMPARE(QString::fromStdString(o.message), QString("communication aborted: stopped by the test"));
  }
}

void TestCommunicatorAbort::mismatched_calls_fail_instead_of_corrupting() {
  auto world = InProcessWorld::create(2);
  const auto errors = run_ranks(*world, [&](int r) {
    std::vector<float> x(12);
    world->communicator(r, {0, 1})->all_reduce(x.data(), r == 0 ? 10 : 12, ReduceOp::sum, {});
  });
  for (const auto& e : errors) {
    QVERIFY(e);
    const std::string m = message_of(e);
    QVERIFY2(m.find("count 10") != std::string::npos && m.find("count 12") != std::string::npos, m.c_str());
    QVERIFY_THROWS_EXCEPTION(CommAborted, std::rethrow_exception(e));
  }
}

void TestCommunicatorAbort::bad_groups_are_rejected() {
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, InProcessWorld::create(0));
  auto world = InProcessWorld::create(4);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, world->communicator(0, {}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, world->communicator(0, {0, 0}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, world->communicator(0, {0, 4}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, world->communicator(0, {1, 2}));
  auto held = world->communicator(0, {0, 1});
  QCOMPARE(held->rank(), 0);
  QCOMPARE(held->size(), 2);
  QCOMPARE(held->global_rank(1), 1);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, world->communicator(0, {0, 1}));  // already held
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, world->communicator(1, {1, 0}));  // same ranks, other order
  auto other = world->communicator(1, {3, 1});
  QCOMPARE(other->rank(), 1);
  QCOMPARE(other->global_rank(0), 3);
  held.reset();
  QVERIFY(world->communicator(0, {0, 1}) != nullptr);  // free again once the first is destroyed
}

QTEST_GUILESS_MAIN(TestCommunicatorAbort)
#include "test_communicator_abort.moc"
