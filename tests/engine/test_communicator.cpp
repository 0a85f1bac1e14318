// SPDX-License-Identifier: GPL-3.0-or-later
// The in-process communicator: every collective against a direct computation
// (N = 1, 2, 3, 4, 8; even, uneven and smaller-than-N counts), groups used
// concurrently, point-to-point order, the bytes and the event stream of a
// ring all-reduce (abort and bad calls: test_communicator_abort.cpp). Rank
// bodies run on threads and only record; the checks run on the test thread afterwards.
#include <QTest>
#undef emit  // Qt's keyword macro would eat EventSink::emit

#include <cstring>
#include <functional>
#include <thread>

#include "core/memory_ledger.h"
#include "engine/rank_harness.h"
#include "engine/test_support.h"
#include "layout/grid.h"
#include "parallel/in_process_communicator.h"

using namespace shardscope;
using namespace shardscope::test;
using namespace std::chrono_literals;

namespace {

// Rank r's input for a call: deterministic, different on every rank and call.
std::vector<float> input(int rank, std::int64_t count, int call) {
  return random_vector(static_cast<std::size_t>(count), static_cast<std::uint64_t>(1000 * call + rank + 1));
}

// Element-wise sum (double) over ranks 0..n-1 of input(r, count, call), or the average.
std::vector<float> reduced(int n, std::int64_t count, int call, ReduceOp op) {
  std::vector<double> sum(static_cast<std::size_t>(count), 0.0);
  for (int r = 0; r < n; ++r) {
    const auto x = input(r, count, call);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += x[i];
  }
  std::vector<float> out(sum.size());
  for (std::size_t i = 0; i < sum.size(); ++i)
    out[i] = static_cast<float>(op == ReduceOp::average ? sum[i] / n : sum[i]);
  return out;
}

bool close(const std::vector<float>& got, const std::vector<float>& want) {
  return got.size() == want.size() && worst_mismatch(got.data(), want.data(), got.size(), 1e-5, 1e-5) <= 1.0;
}

// input(q, count, call) of every rank q < n, concatenated in rank order.
std::vector<float> concatenated(int n, std::int64_t count, int call) {
  std::vector<float> out;
  for (int q = 0; q < n; ++q) {
    const auto x = input(q, count, call);
    out.insert(out.end(), x.begin(), x.end());
  }
  return out;
}

std::vector<float> part(const std::vector<float>& all, int index, std::int64_t count) {
  return std::vector<float>(all.begin() + index * count, all.begin() + (index + 1) * count);
}

// What each rank recorded, call by call; rank r's thread writes only row r.
class Recorded {
 public:
  explicit Recorded(int ranks) : rows_(static_cast<std::size_t>(ranks)) {}
  void add(int rank, std::vector<float> v) { rows_[static_cast<std::size_t>(rank)].push_back(std::move(v)); }
  const std::vector<float>& at(int rank, int call) const {
    return rows_[static_cast<std::size_t>(rank)][static_cast<std::size_t>(call)];
  }

 private:
  std::vector<std::vector<std::vector<float>>> rows_;
};

const int kSizes[] = {1, 2, 3, 4, 8};
const std::int64_t kCounts[] = {1, 7, 1000, 1001};
const ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::average};

}  // namespace

class TestCommunicator : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void all_reduce_matches_direct_sum();
  void reduce_scatter_matches_direct_sum();
  void large_reduce_scatter_goes_round_in_slices();
  void all_gather_concatenates_in_rank_order();
  void rooted_collectives_copy_through_root();
  void grid_groups_run_concurrently();
  void send_recv_keep_order_per_pair();
  void all_reduce_sends_two_n_minus_one_over_n_bytes();
  void all_reduce_events_follow_the_ring();
  void standalone_halves_emit_their_phase();
};

// ---- Collectives against a direct computation ----

void TestCommunicator::all_reduce_matches_direct_sum() {
  for (const int n : kSizes) {
    auto world = InProcessWorld::create(n);
    Recorded results(n);
    RUN_RANKS(*world, [&](int r) {
      auto comm = world->communicator(r, iota_ranks(n));
      int call = 0;
      for (const auto count : kCounts)
        for (const auto op : kOps) {
          auto x = input(r, count, call++);
          comm->all_reduce(x.data(), count, op, {});
          results.add(r, std::move(x));
        }
    });
    int call = 0;
    for (const auto count : kCounts)
      for (const auto op : kOps) {
        const auto want = reduced(n, count, call, op);
        for (int r = 0; r < n; ++r) {
          const QString where = QString("N=%1 count=%2 op=%3 rank %4").arg(n).arg(count).arg(int(op)).arg(r);
          QVERIFY2(close(results.at(r, call), want), qPrintable(where));
          // The all-gather copies one final value to everyone: the ranks agree bit for bit.
          QVERIFY2(results.at(r, call) == results.at(0, call), qPrintable(where));
        }
        ++call;
      }
  }
}

void TestCommunicator::reduce_scatter_matches_direct_sum() {
  for (const int n : kSizes) {
    auto world = InProcessWorld::create(n);
    struct Case {
      std::int64_t count;
      ReduceOp op;
      bool in_place;  // recv = send + rank * count
    };
    std::vector<Case> cases;
    for (const auto count : kCounts) {
      for (const auto op : kOps) cases.push_back({count, op, false});
      cases.push_back({count, ReduceOp::sum, true});
    }
    Recorded results(n);
    RUN_RANKS(*world, [&](int r) {
      auto comm = world->communicator(r, iota_ranks(n));
      for (int call = 0; call < static_cast<int>(cases.size()); ++call) {
        const Case& c = cases[static_cast<std::size_t>(call)];
        auto send = input(r, n * c.count, call);
        std::vector<float> recv(static_cast<std::size_t>(c.count));
        float* out = c.in_place ? send.data() + r * c.count : recv.data();
        comm->reduce_scatter(send.data(), out, c.count, c.op, {});
        results.add(r, std::vector<float>(out, out + c.count));
      }
    });
    for (int call = 0; call < static_cast<int>(cases.size()); ++call) {
      const Case& c = cases[static_cast<std::size_t>(call)];
      const auto all = reduced(n, n * c.count, call, c.op);
      for (int r = 0; r < n; ++r)
        QVERIFY2(close(results.at(r, call), part(all, r, c.count)),
                 qPrintable(QString("N=%1 count=%2 op=%3 in_place=%4 rank %5")
                                .arg(n)
                                .arg(c.count)
                                .arg(int(c.op))
                                .arg(c.in_place)
                                .arg(r)));
    }
  }
}

// A chunk of 2.5 slices (kRingSliceBytes) goes round the ring three times: the
// same sums, the same bytes on the wire, a staging buffer of two slices charged
// to each rank's ledger (and for an average nothing more: f32 divides after).
void TestCommunicator::large_reduce_scatter_goes_round_in_slices() {
  const int n = 3;
  const std::int64_t slice = kRingSliceBytes / 4;
  const std::int64_t count = slice * 5 / 2;
  for (const ReduceOp op : kOps) {
    CollectingSink sink;
    auto world = InProcessWorld::create(n, &sink);
    std::vector<MemoryLedger> ledgers(n);
    Recorded results(n);
    RUN_RANKS(*world, [&](int r) {
      auto comm = world->communicator(r, iota_ranks(n), CommDevice{nullptr, nullptr, nullptr, &ledgers[r]});
      auto send = input(r, n * count, 0);
      std::vector<float> recv(static_cast<std::size_t>(count));
      comm->reduce_scatter(send.data(), recv.data(), count, op, {});
      results.add(r, std::move(recv));
    });
    const auto all = reduced(n, n * count, 0, op);
    for (int r = 0; r < n; ++r) {
      const QString where = QString("op %1 rank %2").arg(int(op)).arg(r);
      QVERIFY2(close(results.at(r, 0), part(all, r, count)), qPrintable(where));
      std::int64_t bytes = 0;
      int events = 0;
      for (const Event& e : sink.of_rank(r)) {
        bytes += e.bytes;
        ++events;
      }
      QCOMPARE(bytes, (n - 1) * count * 4);  // every chunk but its own, once
      QCOMPARE(events, (n - 1) * 3);         // N-1 ring steps per slice
      QCOMPARE(ledgers[r].peak()[MemoryCategory::communication], 2 * kRingSliceBytes);
    }
  }
}

void TestCommunicator::all_gather_concatenates_in_rank_order() {
  for (const int n : kSizes) {
    auto world = InProcessWorld::create(n);
    Recorded results(n);
    RUN_RANKS(*world, [&](int r) {
      auto comm = world->communicator(r, iota_ranks(n));
      int call = 0;
      for (const auto count : kCounts)
        for (const bool in_place : {false, true}) {  // in place: send = recv + rank * count
          const auto mine = input(r, count, call++);
          std::vector<float> recv(static_cast<std::size_t>(n * count), -1.0f);
          if (in_place) std::copy(mine.begin(), mine.end(), recv.begin() + r * count);
          comm->all_gather(in_place ? recv.data() + r * count : mine.data(), recv.data(), count, {});
          results.add(r, std::move(recv));
        }
    });
    int call = 0;
    for (const auto count : kCounts)
      for (int in_place = 0; in_place < 2; ++in_place, ++call)
        for (int r = 0; r < n; ++r)
          QVERIFY2(results.at(r, call) == concatenated(n, count, call),
                   qPrintable(QString("N=%1 count=%2 in_place=%3 rank %4").arg(n).arg(count).arg(in_place).arg(r)));
  }
}

void TestCommunicator::rooted_collectives_copy_through_root() {
  for (const int n : kSizes) {
    auto world = InProcessWorld::create(n);
    Recorded bcast(n), gathered(n), scattered(n);
    RUN_RANKS(*world, [&](int r) {
      auto comm = world->communicator(r, iota_ranks(n));
      int call = 0;
      for (const auto count : kCounts) {
        const int root = call % n;
        auto data = input(r, count, call);
        comm->broadcast(data.data(), count, root, {});
        std::vector<float> all(static_cast<std::size_t>(n * count), -7.0f);  // must stay -7 off the root
        comm->gather(input(r, count, call + 100).data(), all.data(), count, root, {});
        std::vector<float> mine(static_cast<std::size_t>(count));
        comm->scatter(input(r, n * count, call + 200).data(), mine.data(), count, root, {});
        bcast.add(r, std::move(data));
        gathered.add(r, std::move(all));
        scattered.add(r, std::move(mine));
        ++call;
      }
    });
    int call = 0;
    for (const auto count : kCounts) {
      const int root = call % n;
      const auto want_gathered = concatenated(n, count, call + 100);
      for (int r = 0; r < n; ++r) {
        const QString where = QString("N=%1 count=%2 root=%3 rank %4").arg(n).arg(count).arg(root).arg(r);
        QVERIFY2(bcast.at(r, call) == input(root, count, call), qPrintable("broadcast " + where));
        QVERIFY2(gathered.at(r, call) == (r == root ? want_gathered : std::vector<float>(want_gathered.size(), -7.0f)),
                 qPrintable("gather " + where));
        QVERIFY2(scattered.at(r, call) == part(input(root, n * count, call + 200), r, count),
                 qPrintable("scatter " + where));
      }
      ++call;
    }
  }
}

// dp x pp = 2 x 2: the dp groups {0,1} and {2,3} all-reduce at the same time,
// stage 0 sends its result down its pipeline group ({0,2} or {1,3}), and all
// four ranks also all-reduce in the world group, 20 times over.
void TestCommunicator::grid_groups_run_concurrently() {
  const Grid grid(2, 2);
  const int iterations = 20;
  const std::int64_t count = 1001;
  auto world = InProcessWorld::create(grid.world_size());
  Recorded dp_out(4), received(4), world_out(4);
  RUN_RANKS(*world, [&](int r) {
    const int stage = grid.stage_of(r);
    auto dp = world->communicator(r, grid.dp_group(stage));
    auto pp = world->communicator(r, grid.pipeline_group(grid.dp_rank_of(r)));
    auto all = world->communicator(r, iota_ranks(4));
    for (int it = 0; it < iterations; ++it) {
      std::vector<float> got(static_cast<std::size_t>(count));
      if (stage == 1) pp->recv(got.data(), count, 0, {});
      auto x = input(r, count, it);
      dp->all_reduce(x.data(), count, ReduceOp::sum, {it, -1, 0});
      if (stage == 0) pp->send(x.data(), count, 1, {});
      auto z = input(r, 64, 100 + it);
      all->all_reduce(z.data(), 64, ReduceOp::average, {});
      dp_out.add(r, std::move(x));
      received.add(r, std::move(got));
      world_out.add(r, std::move(z));
    }
  });
  for (int it = 0; it < iterations; ++it)
    for (int r = 0; r < 4; ++r) {
      const QString where = QString("rank %1, iteration %2").arg(r).arg(it);
      std::vector<float> want(static_cast<std::size_t>(count), 0.0f);
      for (const int q : grid.dp_group(grid.stage_of(r))) {
        const auto x = input(q, count, it);
        for (std::size_t k = 0; k < want.size(); ++k) want[k] += x[k];
      }
      QVERIFY2(close(dp_out.at(r, it), want), qPrintable("dp all_reduce, " + where));
      if (grid.stage_of(r) == 1)
        QVERIFY2(received.at(r, it) == dp_out.at(grid.rank_at(0, grid.dp_rank_of(r)), it),
                 qPrintable("pipeline recv, " + where));
      QVERIFY2(close(world_out.at(r, it), reduced(4, 64, 100 + it, ReduceOp::average)),
               qPrintable("world all_reduce, " + where));
    }
}

// ---- Point to point ----

// Three ranks: 0 and 2 both send to 1, which drains 2 first (0's messages wait
// in the queue), then posts a recv before 0 sends (the direct path). 0 and 1
// also send to each other at the same time: eager sends cannot deadlock.
void TestCommunicator::send_recv_keep_order_per_pair() {
  CollectingSink sink;
  auto world = InProcessWorld::create(3, &sink);
  const auto size_of = [](int k) { return static_cast<std::int64_t>(1 + 100 * k); };
  std::vector<std::vector<float>> from0, from2, back;
  RUN_RANKS(*world, [&](int r) {
    auto comm = world->communicator(r, iota_ranks(3));
    const auto receive = [&](std::int64_t count, int peer) {
      std::vector<float> x(static_cast<std::size_t>(count));
      comm->recv(x.data(), count, peer, {});
      return x;
    };
    if (r == 0) {
      for (int k = 0; k < 5; ++k) comm->send(input(0, size_of(k), k).data(), size_of(k), 1, {0, k, -1});
      comm->send(input(0, 8, 50).data(), 8, 1, {0, 5, -1});  // crosses rank 1's send below
      back.push_back(receive(8, 1));
      std::this_thread::sleep_for(50ms);  // rank 1 is blocked in recv by now
      comm->send(input(0, 9, 60).data(), 9, 1, {0, 6, -1});
    } else if (r == 2) {
      for (int k = 0; k < 3; ++k) comm->send(input(2, 3, k).data(), 3, 1, {});
    } else {
      for (int k = 0; k < 3; ++k) from2.push_back(receive(3, 2));
      comm->send(input(1, 8, 51).data(), 8, 0, {});
      for (int k = 0; k < 7; ++k) from0.push_back(receive(k < 5 ? size_of(k) : k == 5 ? 8 : 9, 0));
    }
  });
  QCOMPARE(from2.size(), std::size_t(3));
  for (int k = 0; k < 3; ++k) QVERIFY(from2[static_cast<std::size_t>(k)] == input(2, 3, k));
  QCOMPARE(from0.size(), std::size_t(7));
  for (int k = 0; k < 5; ++k)
    QVERIFY2(from0[static_cast<std::size_t>(k)] == input(0, size_of(k), k), qPrintable(QString("message %1").arg(k)));
  QVERIFY(from0[5] == input(0, 8, 50));
  QVERIFY(from0[6] == input(0, 9, 60));
  QVERIFY(back[0] == input(1, 8, 51));
  // One event per message, in order, with the sender's tag and the bytes sent.
  const auto events = sink.of_rank(0);
  QCOMPARE(events.size(), std::size_t(7));
  for (int k = 0; k < 7; ++k) {
    const Event& e = events[static_cast<std::size_t>(k)];
    QCOMPARE(e.op, CommOp::send);
    QCOMPARE(e.src, 0);
    QCOMPARE(e.dst, 1);
    QCOMPARE(e.micro_batch, k);
    QCOMPARE(e.bytes, 4 * (k < 5 ? size_of(k) : k == 5 ? 8 : 9));
    QVERIFY(e.end_ns >= e.start_ns);
  }
}

// ---- Bytes and events of the ring ----

void TestCommunicator::all_reduce_sends_two_n_minus_one_over_n_bytes() {
  for (const auto& [n, count] : {std::pair{4, 1000L}, {8, 1000L}, {4, 1001L}, {8, 5L}}) {
    CollectingSink sink;
    auto world = InProcessWorld::create(n, &sink);
    RUN_RANKS(*world, [&](int r) {
      auto x = input(r, count, 0);
      world->communicator(r, iota_ranks(n))->all_reduce(x.data(), count, ReduceOp::sum, {});
    });
    const QString where = QString("N=%1 count=%2").arg(n).arg(count);
    std::int64_t total = 0;
    for (int r = 0; r < n; ++r) {
      std::int64_t bytes = 0;
      for (const Event& e : sink.of_rank(r)) bytes += e.bytes;
      total += bytes;
      if (count % n == 0) {
        QVERIFY2(bytes == 2 * (n - 1) * count * 4 / n, qPrintable(where));  // 2(N-1)/N x buffer bytes, exactly
      } else {
        // Uneven chunks (the first count % N one longer): rank r sends every chunk
        // but r in the reduce-scatter and every chunk but r+1 in the all-gather.
        const auto chunk = [&](int c) { return count / n + (c < count % n ? 1 : 0); };
        QVERIFY2(bytes == 4 * (2 * count - chunk(r) - chunk((r + 1) % n)), qPrintable(where));
      }
    }
    QVERIFY2(total == 2 * (n - 1) * count * 4, qPrintable(where));  // over all ranks: 2(N-1) x buffer bytes
  }
}

void TestCommunicator::all_reduce_events_follow_the_ring() {
  const int n = 4;
  const std::int64_t count = 1000;
  CollectingSink sink;
  RunClock clock;
  auto world = InProcessWorld::create(n, &sink, &clock);
  RUN_RANKS(*world, [&](int r) {
    auto comm = world->communicator(r, iota_ranks(n));
    auto x = input(r, count, 0);
    comm->all_reduce(x.data(), count, ReduceOp::sum, {7, 2, 0});
    comm->all_reduce(x.data(), count, ReduceOp::sum, {7, 2, 1});
  });
  std::vector<std::vector<Event>> of_rank;
  for (int r = 0; r < n; ++r) of_rank.push_back(sink.of_rank(r));
  for (int r = 0; r < n; ++r) {
    const auto& events = of_rank[static_cast<std::size_t>(r)];
    QCOMPARE(events.size(), std::size_t(2 * 2 * (n - 1)));  // two calls of N-1 + N-1 steps
    for (std::size_t i = 0; i < events.size(); ++i) {
      const Event& e = events[i];
      const int bucket = static_cast<int>(i) / (2 * (n - 1));
      const int in_call = static_cast<int>(i) % (2 * (n - 1));
      const bool rs = in_call < n - 1;
      const int k = rs ? in_call : in_call - (n - 1);
      const QString where = QString("rank %1 event %2").arg(r).arg(i);
      QVERIFY2(e.op == CommOp::all_reduce && e.step == 7 && e.micro_batch == 2 && e.bucket == bucket,
               qPrintable(where));
      QVERIFY2(e.phase == (rs ? RingPhase::reduce_scatter : RingPhase::all_gather), qPrintable(where));
      QVERIFY2(e.ring_step == k, qPrintable(where));
      QVERIFY2(e.chunk == ((rs ? r - k - 1 : r - k) % n + n) % n, qPrintable(where));
      QVERIFY2(e.src == r && e.dst == (r + 1) % n && e.bytes == count / n * 4, qPrintable(where));
      QVERIFY2(e.start_ns <= e.end_ns, qPrintable(where));
      if (i > 0) QVERIFY2(events[i - 1].end_ns <= e.start_ns, qPrintable(where));  // so bucket 0 precedes bucket 1
      // Causality: what rank r sends at step t, its left neighbour finished writing at step t-1.
      if (in_call > 0) {
        const Event& left = of_rank[static_cast<std::size_t>((r + n - 1) % n)][i - 1];
        QVERIFY2(left.end_ns <= e.start_ns,
                 qPrintable(where + " starts before its left neighbour's previous step ended"));
      }
    }
  }
}

void TestCommunicator::standalone_halves_emit_their_phase() {
  const int n = 3;
  CollectingSink sink;
  auto world = InProcessWorld::create(n, &sink);
  RUN_RANKS(*world, [&](int r) {
    auto comm = world->communicator(r, iota_ranks(n));
    std::vector<float> send(30, 1.0f), recv(30);
    comm->reduce_scatter(send.data(), recv.data(), 10, ReduceOp::sum, {1, -1, 4});
    comm->all_gather(send.data(), recv.data(), 10, {2, -1, 5});
    comm->broadcast(send.data(), 10, 1, {3, -1, -1});
    comm->gather(send.data(), recv.data(), 10, 1, {4, -1, -1});
  });
  for (int r = 0; r < n; ++r) {
    const auto events = sink.of_rank(r);
    const std::size_t rooted = r == 1 ? 2 : 1;  // the root sends the broadcast to 2 peers; each peer sends it 1 gather
    QCOMPARE(events.size(), std::size_t(2 * (n - 1)) + rooted);
    for (int k = 0; k < 2 * (n - 1); ++k) {
      const Event& e = events[static_cast<std::size_t>(k)];
      const bool rs = k < n - 1;
      const int step = rs ? k : k - (n - 1);
      QCOMPARE(e.op, rs ? CommOp::reduce_scatter : CommOp::all_gather);
      QCOMPARE(e.phase, rs ? RingPhase::reduce_scatter : RingPhase::all_gather);
      QCOMPARE(e.ring_step, step);
      QCOMPARE(e.chunk, ((rs ? r - step - 1 : r - step) % n + n) % n);
      QCOMPARE(e.bucket, rs ? 4 : 5);
      QCOMPARE(e.bytes, std::int64_t(40));
    }
    for (std::size_t i = 2 * (n - 1); i < events.size(); ++i) {
      const Event& e = events[i];
      QCOMPARE(e.op, r == 1 ? CommOp::broadcast : CommOp::gather);
      QCOMPARE(e.src, r);
      QVERIFY(r == 1 ? e.dst != 1 : e.dst == 1);
      QCOMPARE(e.bytes, std::int64_t(40));
    }
  }
}

QTEST_GUILESS_MAIN(TestCommunicator)
#include "test_communicator.moc"
