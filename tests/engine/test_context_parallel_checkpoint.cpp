// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints under context parallelism (train/checkpoint.h): the cp ranks of
// a dp (and tp) rank hold the same parameters and optimizer states, so each
// saves the same slices as its peers (the reader checks that the copies agree
// bit for bit). A run saved at cp 2 resumes bit for bit at cp 2, with DDP,
// ZeRO-1/2/3 and tp; the files name no cp rank, so the same checkpoint resumes
// at cp 1 or cp 4 (or cp 1 at cp 2) with the same losses within float rounding.
#include <QTemporaryDir>
#include <QTest>
#include <bit>
#include <cmath>

#include "train/checkpoint.h"
#include "train/trainer.h"

using namespace shardscope;

namespace {

struct CpLayout {
  const char* name;
  int cp = 1, dp = 1, tp = 1, zero = 0;
  const char* split = "zigzag";
  const char* model = "gpt-tiny";
};

RunConfig cp_run(const CpLayout& l) {
  RunConfig c;
  c.model = l.model;
  c.steps = 5;
  c.batch = 8;
  c.seq = 16;
  c.warmup = 1;
  c.threads = 2;
  c.layout[Axis::cp] = l.cp, c.layout[Axis::dp] = l.dp, c.layout[Axis::tp] = l.tp;
  c.zero_stage = l.zero;
  c.cp_split = l.split;
  return c;
}

const CpLayout kLayouts[] = {
    {"cp 2", 2},
    {"dp 2 x cp 2 ZeRO-1", 2, 2, 1, 1},
    {"dp 2 x cp 2 ZeRO-2", 2, 2, 1, 2},
    {"dp 2 x cp 2 ZeRO-3", 2, 2, 1, 3},
    {"tp 2 x cp 2", 2, 1, 2},
    {"bert-tiny cp 2 contiguous", 2, 1, 1, 0, "contiguous", "bert-tiny"},
    {"cp 1", 1},
    {"cp 4", 4},
};

// Runs `config` 2 steps, saves into `dir`, then 3 more steps: their losses.
std::vector<float> save_and_go_on(const RunConfig& config, const QTemporaryDir& dir, std::string& saved) {
  Trainer full(config);
  for (int s = 0; s < 2; ++s) full.step();
  saved = full.save_checkpoint(dir.path().toStdString());
  std::vector<float> losses;
  for (std::int64_t s = 2; s < config.steps; ++s) losses.push_back(full.step().loss);
  return losses;
}

}  // namespace

class TestContextParallelCheckpoint : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void resume_at_the_same_cp_is_bit_exact_data();
  void resume_at_the_same_cp_is_bit_exact();
  void resume_at_another_cp_data();
  void resume_at_another_cp();
  void manifest_names_the_cp_layout();
};

void TestContextParallelCheckpoint::resume_at_the_same_cp_is_bit_exact_data() {
  QTest::addColumn<int>("index");
  for (int i = 0; i < 6; ++i) QTest::newRow(kLayouts[i].name) << i;
}

// Saved after 2 steps and resumed in the same layout: steps 3..5 give the
// losses of the run that never stopped, bit for bit, and every rank's state bytes.
void TestContextParallelCheckpoint::resume_at_the_same_cp_is_bit_exact() {
  QFETCH(int, index);
  const RunConfig config = cp_run(kLayouts[index]);
  QTemporaryDir dir;
  std::string saved;
  const std::vector<float> expected = save_and_go_on(config, dir, saved);
  Trainer full(config);  // a second uninterrupted run for the state bytes at step 5
  for (int s = 0; s < config.steps; ++s) full.step();

  RunConfig again = config;
  again.resume_dir = saved;
  Trainer resumed(again);
  QCOMPARE(resumed.steps_done(), std::int64_t{2});
  for (const float want : expected) {
    const float got = resumed.step().loss;
    QVERIFY2(std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(want),
             qPrintable(QString("%1 != %2").arg(got, 0, 'g', 9).arg(want, 0, 'g', 9)));
  }
  for (int r = 0; r < full.world_size(); ++r) QVERIFY(resumed.model_state_bytes(r) == full.model_state_bytes(r));
}

void TestContextParallelCheckpoint::resume_at_another_cp_data() {
  QTest::addColumn<int>("from");
  QTest::addColumn<int>("to");
  QTest::newRow("cp 2 -> cp 1") << 0 << 6;
  QTest::newRow("cp 2 -> cp 4") << 0 << 7;
  QTest::newRow("cp 1 -> cp 2") << 6 << 0;
  QTest::newRow("dp 2 x cp 2 ZeRO-3 -> tp 2 x cp 2") << 3 << 4;
}

// Saved at one cp and resumed at another: the same global batch and model, so
// steps 3..5 equal the uninterrupted run's losses within 2e-5 (relative).
void TestContextParallelCheckpoint::resume_at_another_cp() {
  QFETCH(int, from);
  QFETCH(int, to);
  QTemporaryDir dir;
  std::string saved;
  const std::vector<float> expected = save_and_go_on(cp_run(kLayouts[from]), dir, saved);
  RunConfig other = cp_run(kLayouts[to]);
  other.resume_dir = saved;
  Trainer resumed(other);
  QCOMPARE(resumed.steps_done(), std::int64_t{2});
  float worst = 0.0f;
  for (const float want : expected) {
    const float got = resumed.step().loss;
    worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
    QVERIFY2(std::fabs(got - want) <= 2e-5f * std::fabs(want), qPrintable(QString("%1 vs %2").arg(got).arg(want)));
  }
  qInfo("%s -> %s: largest relative loss difference %.3g", kLayouts[from].name, kLayouts[to].name,
        static_cast<double>(worst));
}

// The manifest records the layout it was saved in, cp and its split included;
// every rank writes its file (a cp rank's copy of its dp rank's state).
void TestContextParallelCheckpoint::manifest_names_the_cp_layout() {
  QTemporaryDir dir;
  Trainer trainer(cp_run(kLayouts[1]));
  trainer.step();
  const CheckpointManifest m = read_checkpoint_manifest(trainer.save_checkpoint(dir.path().toStdString()));
  QCOMPARE(m.layout.at("cp").get<int>(), 2);
  QCOMPARE(m.layout.at("cp_split").get<std::string>(), std::string("zigzag"));
  QCOMPARE(static_cast<int>(m.files.size()), trainer.world_size());
}

QTEST_GUILESS_MAIN(TestContextParallelCheckpoint)
#include "test_context_parallel_checkpoint.moc"
