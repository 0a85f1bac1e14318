// SPDX-License-Identifier: GPL-3.0-or-later
// Stragglers on the virtual clock: --slow-rank R:FACTOR makes one rank's
// compute count FACTOR times (clock/device_clock.h), the communicator reports
// every wait with the rank that caused it, passing the name on round a ring
// (EventKind::wait_span), and the CLI's closing lines say who held the others
// up (clock/wait_summary.h). The losses do not change: only time does.
#include <QTest>
#include <thread>

#include "cli/cli_runner.h"
#include "clock/device_clock.h"
#include "clock/wait_summary.h"
#include "engine/collecting_sink.h"
#include "parallel/in_process_communicator.h"
#include "train/trainer.h"

using namespace shardscope;
using shardscope::test::CollectingSink;

namespace {

RankWaits waits_of(const std::vector<Event>& events, std::int64_t first_step = 0) {
  RankWaits w;
  for (const Event& e : events)
    if (e.step >= first_step) w.add(e);
  return w;
}

struct RunResult {
  std::vector<float> losses;
  std::vector<Event> events;
};

RunResult train(const RunConfig& config) {
  CollectingSink sink;
  RunResult out;
  Trainer trainer(config, &sink);
  trainer.run([&](const StepMetrics& m) { out.losses.push_back(m.loss); });
  out.events = sink.events();
  return out;
}

// Each rank's compute spans (forward, backward, optimizer) in the steps from `first_step`, summed.
std::vector<std::int64_t> compute_ns(const std::vector<Event>& events, int world, std::int64_t first_step) {
  std::vector<std::int64_t> sum(static_cast<std::size_t>(world), 0);
  for (const Event& e : events)
    if (e.kind == EventKind::compute_span && e.step >= first_step && e.layer < 0)
      sum[static_cast<std::size_t>(e.rank)] += e.end_ns - e.start_ns;
  return sum;
}

}  // namespace

class TestStragglers : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void a_late_rank_is_named_round_the_ring();
  void a_slow_rank_holds_up_the_others_and_changes_no_loss();
  void cli_says_who_waited_for_whom();
};

// Four ranks enter an all-reduce at 1 ms, rank 2 at 5 ms. Its neighbours wait
// for it at once; rank 0, two hops away, waits for them a step later, and the
// wait still names rank 2.
void TestStragglers::a_late_rank_is_named_round_the_ring() {
  const RunClock wall;
  const LinkModel link = make_link_model(LinkKind::nvlink);
  constexpr int n = 4;
  CollectingSink sink;
  auto world = InProcessWorld::create(n, &sink, &wall);
  std::vector<std::unique_ptr<DeviceClock>> clocks;
  for (int r = 0; r < n; ++r) clocks.push_back(std::make_unique<DeviceClock>(ClockKind::virtual_device, wall, link));
  constexpr std::int64_t count = 1 << 18;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      DeviceClock& clock = *clocks[static_cast<std::size_t>(r)];
      auto comm = world->communicator(r, {0, 1, 2, 3}, {}, &clock);
      clock.comm_end(r == 2 ? 5'000'000 : 1'000'000);
      std::vector<float> data(count, 1.0f);
      comm->all_reduce(data.data(), count, ReduceOp::sum, {.step = 1});
    });
  for (auto& t : threads) t.join();
  const RankWaits w = waits_of(sink.events());
  const std::int64_t step = link.transfer_ns(count / n * 4);
  for (int r = 0; r < n; ++r) {
    if (r == 2) continue;
    const std::int64_t for_2 = w.ns.contains({r, 2}) ? w.ns.at({r, 2}) : 0;
    QVERIFY2(for_2 >= 4'000'000 - 2 * step && for_2 <= 4'000'000 + step,
             qPrintable(QString("rank %1 waited %2 ns for rank 2 (one ring step %3 ns)").arg(r).arg(for_2).arg(step)));
    QVERIFY2(w.waited_ns(r) - for_2 <= 2 * step, qPrintable(QString("rank %1 waited for others").arg(r)));
  }
  QVERIFY2(w.waited_ns(2) <= 2 * step, qPrintable(QString::number(w.waited_ns(2))));
  QCOMPARE(w.most_waited_for(), 2);
}

// dp 4 with rank 3 four times slower: its compute spans last about 4x the
// others', they wait for it at every bucket, and the losses are the same bits.
void TestStragglers::a_slow_rank_holds_up_the_others_and_changes_no_loss() {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 3;
  c.batch = 8;
  c.seq = 32;
  c.layout[Axis::dp] = 4;
  c.eval_every = 0;
  c.threads = 2;
  const RunResult plain = train(c);
  c.slow_rank = 3;
  c.slow_factor = 4.0;
  const RunResult slow = train(c);
  QCOMPARE(slow.losses, plain.losses);

  const std::vector<std::int64_t> compute = compute_ns(slow.events, 4, 2);
  const double others = static_cast<double>(compute[0] + compute[1] + compute[2]) / 3.0;
  const double ratio = static_cast<double>(compute[3]) / others;
  qInfo("rank 3 computes %.2fx the others' time", ratio);
  // 4x by construction; CPU time varies with the load, so a wide band.
  QVERIFY2(ratio > 2.0 && ratio < 8.0, qPrintable(QString::number(ratio)));

  const RankWaits w = waits_of(slow.events, 2);
  QCOMPARE(w.most_waited_for(), 3);
  const double share = static_cast<double>(w.waited_for_ns(3)) / static_cast<double>(w.total_ns());
  qInfo("waits for rank 3: %.0f%% of all", 100 * share);
  QVERIFY2(share > 0.7, qPrintable(QString::number(share)));
  for (int r = 0; r < 3; ++r)  // each waits most of the extra 3x of rank 3's compute
    QVERIFY2(w.ns.at({r, 3}) > static_cast<std::int64_t>(others), qPrintable(QString("rank %1").arg(r)));
}

void TestStragglers::cli_says_who_waited_for_whom() {
  const CliResult run = run_cli({"train", "--model", "gpt-tiny", "--steps", "3", "--batch", "8", "--seq", "32", "--dp",
                                 "4", "--slow-rank", "1:3"});
  QVERIFY2(run.code == 0, qPrintable(run.err));
  QVERIFY2(run.out.contains("of it for rank 1, whose compute takes 3x as long (--slow-rank 1:3)"), qPrintable(run.out));
  QVERIFY2(run.out.contains("  rank 1 computes ") && run.out.contains("against (F − 1) × "), qPrintable(run.out));
  QVERIFY2(run.out.contains("  rank 0 waited ") && run.out.contains("(for rank 1: "), qPrintable(run.out));
  const struct {
    QStringList args;
    const char* says;
  } bad[] = {
      {{"--slow-rank", "4:2"}, "--slow-rank: rank 4 does not exist (world size 4)"},
      {{"--slow-rank", "1:0.5"}, "--slow-rank must be in [1, 100]"},
      {{"--slow-rank", "1"}, "--slow-rank: expected RANK:FACTOR"},
      {{"--slow-rank", "1:2", "--clock", "wall"}, "--slow-rank slows a rank on the virtual clock"},
  };
  for (const auto& b : bad) {
    const CliResult r = run_cli(QStringList{"train", "--dp", "4", "--steps", "1"} + b.args);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(b.says), qPrintable(r.err));
  }
}

QTEST_GUILESS_MAIN(TestStragglers)
#include "test_stragglers.moc"
