// SPDX-License-Identifier: GPL-3.0-or-later
// The data-parallel strategies (train/strategy/strategy.h): the plan's rules
// choose one per ZeRO stage and data-parallel mode, and the hooks that decide
// who reads which rows and who evaluates what answer as each strategy says.
// (The training itself, identical losses across layouts and resumed
// checkpoints, is test_parallel's, test_mixed_training's and test_checkpoint's.)
#include <QTest>

#include "plan/sharding_plan.h"
#include "train/strategy/strategy.h"
#include "train/trainer_rank.h"

using namespace shardscope;

namespace {

RunConfig config_of(int dp, int zero, bool naive) {
  RunConfig c;
  c.model = "gpt-tiny";
  c.batch = 8;
  c.seq = 4;
  c.layout[Axis::dp] = dp;
  c.zero_stage = zero;
  c.dp_mode = naive ? DataParallelMode::naive : DataParallelMode::ddp;
  return c;
}

// A global batch whose token at (row, t) is row * 100 + t.
BatchData numbered_batch(const RunConfig& c) {
  BatchData b;
  b.B = c.batch;
  b.T = c.seq;
  for (int row = 0; row < c.batch; ++row)
    for (int t = 0; t < c.seq; ++t) {
      b.input_ids.push_back(row * 100 + t);
      b.targets.push_back(row * 100 + t + 1);
    }
  return b;
}

}  // namespace

class TestStrategies : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void chosen_from_the_plan() {
    const struct {
      int zero;
      bool naive;
      const char* name;
    } cases[] = {{0, true, "naive DataParallel"},
                 {0, false, "DDP"},
                 {1, false, "ZeRO-1"},
                 {2, false, "ZeRO-2"},
                 {3, false, "ZeRO-3"}};
    for (const auto& k : cases) {
      for (const int dp : {1, 2, 4}) {
        const RunConfig c = config_of(dp, k.zero, k.naive);
        const ShardingPlan plan = make_sharding_plan(c);
        QCOMPARE(std::string(make_strategy(plan, c)->name()), std::string(k.name));
      }
    }
  }

  // Data-parallel rank d reads rows [d B/dp, (d + 1) B/dp) of the global batch,
  // micro-batch by micro-batch (here accumulation step 1 of 2).
  void every_rank_reads_its_own_rows() {
    RunConfig c = config_of(2, 1, false);
    c.accum = 2;
    c.micro_batches = 1;
    const ShardingPlan plan = make_sharding_plan(c);
    const BatchData global = numbered_batch(c);
    for (int d = 0; d < 2; ++d) {
      TrainerRank rank;
      rank.dp_rank = d;
      const MicroBatches mine = make_strategy(plan, c)->micro_batches(rank, global, 1, CommTag{});
      QCOMPARE(mine.ids.size(), std::size_t{1});
      const int mb = c.micro_batch_size(), first_row = d * 4 + 1 * mb;
      QCOMPARE(mine.ids[0].size(), static_cast<std::size_t>(mb * c.seq));
      QCOMPARE(mine.ids[0].front(), first_row * 100);
      QCOMPARE(mine.targets[0].back(), (first_row + mb - 1) * 100 + c.seq);
    }
  }

  // Naive DataParallel's replicas hold stale parameters after the update: the
  // master evaluates every validation micro-batch; under DDP and ZeRO the ranks share them.
  void who_evaluates() {
    for (const bool naive : {true, false}) {
      const RunConfig c = config_of(4, 0, naive);
      const ShardingPlan plan = make_sharding_plan(c);
      for (int d = 0; d < 4; ++d) {
        TrainerRank rank;
        rank.dp_rank = d;
        const EvaluationShare share = make_strategy(plan, c)->evaluation_share(rank, 10);
        if (naive) {
          QCOMPARE(share.first, d == 0 ? std::int64_t{0} : std::int64_t{10});
          QCOMPARE(share.stride, std::int64_t{1});
        } else {
          QCOMPARE(share.first, std::int64_t{d});
          QCOMPARE(share.stride, std::int64_t{4});
        }
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestStrategies)
#include "test_strategies.moc"
