// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints under tensor parallelism (train/checkpoint.h): each tp rank
// saves its slice of the split parameters with the split it came from, so a
// run saved at tp 2 resumes bit for bit at tp 2, and at tp 1, tp 4 or with
// other dp, pp and ZeRO within float rounding; the step directory's Hugging
// Face weights are the tp slices put back together.
#include <QTemporaryDir>
#include <QTest>
#include <bit>
#include <cmath>

#include "core/error.h"
#include "io/hf_model.h"
#include "model/parameter_layout.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

using namespace shardscope;

namespace {

struct TpLayout {
  const char* name;
  int tp = 1, dp = 1, pp = 1, zero = 0, micro_batches = 1;
};

RunConfig tp_run(const TpLayout& l, const char* model = "gpt-tiny") {
  RunConfig c;
  c.model = model;
  c.steps = 5;
  c.batch = 8;
  c.seq = 16;
  c.warmup = 1;
  c.threads = 1;
  c.layout[Axis::tp] = l.tp, c.layout[Axis::dp] = l.dp, c.layout[Axis::pp] = l.pp;
  c.zero_stage = l.zero, c.micro_batches = l.micro_batches;
  return c;
}

}  // namespace

class TestTensorParallelCheckpoint : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void resume_at_the_same_tp_is_bit_exact_data();
  void resume_at_the_same_tp_is_bit_exact();
  void resume_at_another_tp_data();
  void resume_at_another_tp();
  void hugging_face_export_gathers_the_slices();
  void a_slice_whose_split_does_not_divide_is_refused();
};

void TestTensorParallelCheckpoint::resume_at_the_same_tp_is_bit_exact_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("zero");
  QTest::newRow("gpt-tiny tp 2") << "gpt-tiny" << 0;
  QTest::newRow("bert-tiny tp 2") << "bert-tiny" << 0;
  QTest::newRow("gpt-tiny dp 2 x tp 2 zero-3") << "gpt-tiny" << 3;
}

// Saved after 2 steps at tp 2 and resumed at tp 2: steps 3..5 give the losses
// of the run that never stopped, bit for bit, and every rank's state bytes.
void TestTensorParallelCheckpoint::resume_at_the_same_tp_is_bit_exact() {
  QFETCH(QString, model);
  QFETCH(int, zero);
  const std::string name = model.toStdString();
  const RunConfig config = tp_run(zero == 0 ? TpLayout{"", 2} : TpLayout{"", 2, 2, 1, zero}, name.c_str());
  QTemporaryDir dir;
  Trainer full(config);
  for (int s = 0; s < 2; ++s) full.step();
  const std::string saved = full.save_checkpoint(dir.path().toStdString());
  std::vector<float> expected;
  for (int s = 2; s < config.steps; ++s) expected.push_back(full.step().loss);

  RunConfig again = config;
  again.resume_dir = saved;
  Trainer resumed(again);
  for (const float want : expected) {
    const float got = resumed.step().loss;
    QVERIFY2(std::bit_cast<std::uint32_t>(got) == std::bit_cast<std::uint32_t>(want),
             qPrintable(QString("%1 != %2").arg(got, 0, 'g', 9).arg(want, 0, 'g', 9)));
  }
  for (int r = 0; r < full.world_size(); ++r) QVERIFY(resumed.model_state_bytes(r) == full.model_state_bytes(r));
}

void TestTensorParallelCheckpoint::resume_at_another_tp_data() {
  QTest::addColumn<int>("from");
  QTest::addColumn<int>("to");
  QTest::newRow("tp 2 -> tp 1") << 0 << 1;
  QTest::newRow("tp 2 -> tp 4") << 0 << 2;
  QTest::newRow("tp 2 -> dp 2 x tp 2 zero-1") << 0 << 3;
  QTest::newRow("tp 2 -> tp 2 x pp 2") << 0 << 4;
  QTest::newRow("tp 1 -> tp 2") << 1 << 0;
  QTest::newRow("dp 2 x tp 2 zero-3 -> tp 4") << 5 << 2;
}

// Saved at one tp and resumed at another: the same global batch and the same
// model, so steps 3..5 equal the uninterrupted run's losses within 2e-5 (relative).
void TestTensorParallelCheckpoint::resume_at_another_tp() {
  QFETCH(int, from);
  QFETCH(int, to);
  const TpLayout layouts[] = {{"tp 2", 2},
                              {"tp 1", 1},
                              {"tp 4", 4},
                              {"dp 2 x tp 2 zero-1", 2, 2, 1, 1},
                              {"tp 2 x pp 2", 2, 1, 2, 0, 2},
                              {"dp 2 x tp 2 zero-3", 2, 2, 1, 3}};
  QTemporaryDir dir;
  const RunConfig config = tp_run(layouts[from]);
  Trainer original(config);
  for (int s = 0; s < 2; ++s) original.step();
  const std::string saved = original.save_checkpoint(dir.path().toStdString());
  std::vector<float> expected;
  for (int s = 2; s < config.steps; ++s) expected.push_back(original.step().loss);

  RunConfig other = tp_run(layouts[to]);
  other.resume_dir = saved;
  Trainer resumed(other);
  QCOMPARE(resumed.steps_done(), std::int64_t{2});
  float worst = 0.0f;
  for (const float want : expected) {
    const float got = resumed.step().loss;
    worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
    QVERIFY2(std::fabs(got - want) <= 2e-5f * std::fabs(want), qPrintable(QString("%1 vs %2").arg(got).arg(want)));
  }
  qInfo("%s -> %s: largest relative loss difference %.3g", layouts[from].name, layouts[to].name,
        static_cast<double>(worst));
}

// The step directory's model.safetensors holds whole tensors: tp rank r's
// slice of each (take_tensor_slice) is rank r's own parameters, bit for bit.
void TestTensorParallelCheckpoint::hugging_face_export_gathers_the_slices() {
  QTemporaryDir dir;
  Trainer trainer(tp_run({"tp 2", 2}));
  for (int s = 0; s < 2; ++s) trainer.step();
  const std::string step = trainer.save_checkpoint(dir.path().toStdString());
  const HfModel exported = read_hf_model_dir(step);
  const ParameterLayout whole(exported.config);
  QCOMPARE(static_cast<std::int64_t>(exported.parameters.size()), whole.total());
  int split = 0;
  for (int r = 0; r < 2; ++r) {
    const Model& model = trainer.model(r);
    for (const ParameterEntry& e : model.layout().entries()) {
      std::vector<float> slice(static_cast<std::size_t>(e.numel));
      take_tensor_slice(e, r, 2, exported.parameters.data() + whole.find(e.name).offset, slice.data());
      QVERIFY2(std::equal(slice.begin(), slice.end(), model.params() + e.offset), e.name.c_str());
      split += e.split != TensorSplit::replicated ? 1 : 0;
    }
  }
  QVERIFY(split > 0);  // the test saw split tensors, not only replicated ones
}

// A manifest whose tp slice cannot cut its parameter evenly is refused, naming
// the file and the parameter.
void TestTensorParallelCheckpoint::a_slice_whose_split_does_not_divide_is_refused() {
  QTemporaryDir dir;
  Trainer trainer(tp_run({"tp 2", 2}));
  trainer.step();
  const std::string step = trainer.save_checkpoint(dir.path().toStdString());
  CheckpointManifest manifest = read_checkpoint_manifest(step);
  bool changed = false;
  for (CheckpointFile& f : manifest.files)
    for (ParameterSlice& s : f.slices)
      if (!changed && s.tp.split == TensorSplit::columns) s.tp.tp_size = 7, changed = true;
  QVERIFY(changed);
  try {
    (void)read_checkpoint(step, manifest);
    QFAIL("a split into 7 of a dimension that 7 does not divide was read");
  } catch (const ConfigError& e) {
    const QString what = QString::fromStdString(e.what());
    QVERIFY2(what.contains("rank-") && what.contains("do not divide"), qPrintable(what));
  }
}

QTEST_GUILESS_MAIN(TestTensorParallelCheckpoint)
#include "test_tensor_parallel_checkpoint.moc"
