// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints of the training state (train/checkpoint.h): a run saved after k
// steps and resumed gives bit for bit the losses and state of the run that
// never stopped, in every layout; resumed under another layout it gives the
// same losses within float rounding (the global batch is the same, only the
// order of the sums changes); a save is atomic.
#include <QTemporaryDir>
#include <QTest>
#include <bit>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "core/output_file.h"
#include "io/hf_model.h"
#include "model/parameter_layout.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

using namespace shardscope;
namespace fs = std::filesystem;

namespace {

RunConfig tiny_run() {
  RunConfig c;
  c.model = "gpt-tiny";
  c.steps = 5;
  c.batch = 8;
  c.seq = 16;
  c.warmup = 1;
  c.threads = 2;
  return c;
}

struct RunLayout {
  const char* name;
  int dp = 1, pp = 1, zero = 0, accum = 1, micro_batches = 1;
  DataParallelMode mode = DataParallelMode::ddp;
  PipelineScheduleKind schedule = PipelineScheduleKind::one_f_one_b;
  Precision precision = Precision::fp32;
  const char* model = "gpt-tiny";
};

RunConfig with_layout(RunConfig c, const RunLayout& l) {
  c.layout[Axis::dp] = l.dp, c.layout[Axis::pp] = l.pp;
  c.zero_stage = l.zero, c.accum = l.accum, c.micro_batches = l.micro_batches;
  c.dp_mode = l.mode, c.schedule = l.schedule, c.precision = l.precision;
  c.model = l.model;
  if (l.precision == Precision::fp16) {  // an overflow at step 1 and growth every 2 steps: the scaler's state moves
    c.overflow_rank = 0, c.overflow_step = 1, c.scale_window = 2;
  }
  return c;
}

std::vector<RunLayout> layouts() {
  return {
      {"1 rank"},
      {"dp 2 ddp", 2},
      {"dp 2 naive", 2, 1, 0, 1, 1, DataParallelMode::naive},
      {"dp 2 zero-1", 2, 1, 1},
      {"dp 2 zero-2", 2, 1, 2},
      {"dp 2 zero-3", 2, 1, 3},
      {"pp 2 gpipe", 1, 2, 0, 1, 2, DataParallelMode::ddp, PipelineScheduleKind::gpipe},
      {"dp 2 pp 2 1f1b zero-1", 2, 2, 1, 1, 2},
      {"accum 2", 1, 1, 0, 2},
      {"dp 2 fp16 zero-1", 2, 1, 1, 1, 1, DataParallelMode::ddp, PipelineScheduleKind::one_f_one_b, Precision::fp16},
      {"dp 2 bf16 zero-3", 2, 1, 3, 1, 1, DataParallelMode::ddp, PipelineScheduleKind::one_f_one_b, Precision::bf16},
      {"pp 2 fp16", 1, 2, 0, 1, 2, DataParallelMode::ddp, PipelineScheduleKind::one_f_one_b, Precision::fp16},
      // BERT: the MLM masks of the resumed steps are drawn as the uninterrupted run draws them.
      {"bert-tiny dp 2 zero-2", 2, 1, 2, 1, 1, DataParallelMode::ddp, PipelineScheduleKind::one_f_one_b,
       Precision::fp32, "bert-tiny"},
  };
}

}  // namespace

class TestCheckpoint : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void resume_is_bit_exact_data();
  void resume_is_bit_exact();
  void resume_across_layouts_data();
  void resume_across_layouts();
  void step_directory_holds_hugging_face_weights();
  void newest_step_is_found_and_temporaries_ignored();
  void a_failed_save_leaves_no_step_directory();
  void mismatched_checkpoints_are_refused();
  void a_background_save_holds_its_step();
};

void TestCheckpoint::resume_is_bit_exact_data() {
  QTest::addColumn<int>("index");
  const auto all = layouts();
  for (std::size_t i = 0; i < all.size(); ++i) QTest::newRow(all[i].name) << static_cast<int>(i);
}

// Run k steps, save, go on to n; then resume from the save in a new trainer:
// steps k+1..n must give the same losses (==) and leave every rank's bytes equal.
void TestCheckpoint::resume_is_bit_exact() {
  QFETCH(int, index);
  const RunLayout layout = layouts()[static_cast<std::size_t>(index)];
  QTemporaryDir dir;
  const RunConfig config = with_layout(tiny_run(), layout);
  const int k = 2;
  Trainer full(config);
  for (int s = 0; s < k; ++s) full.step();
  const std::string saved = full.save_checkpoint(dir.path().toStdString());
  QCOMPARE(saved, (fs::path(dir.path().toStdString()) / "step-000002").string());
  std::vector<StepMetrics> expected;
  for (std::int64_t s = k; s < config.steps; ++s) expected.push_back(full.step());

  RunConfig again = config;
  again.resume_dir = dir.path().toStdString();  // the root: its newest step directory
  Trainer resumed(again);
  QCOMPARE(resumed.steps_done(), std::int64_t{k});
  QCOMPARE(resumed.resumed_from(), saved);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const StepMetrics m = resumed.step();
    QCOMPARE(m.step, std::int64_t{k} + 1 + static_cast<std::int64_t>(i));
    const float want = expected[i].loss;
    QVERIFY2(std::bit_cast<std::uint32_t>(m.loss) == std::bit_cast<std::uint32_t>(want),
             qPrintable(QString("step %1: %2 != %3").arg(m.step).arg(m.loss, 0, 'g', 9).arg(want, 0, 'g', 9)));
    QCOMPARE(m.loss_scale, expected[i].loss_scale);  // fp16: the scaler resumed where it was
    QCOMPARE(m.skipped, expected[i].skipped);
  }
  for (int r = 0; r < full.world_size(); ++r) QVERIFY(resumed.model_state_bytes(r) == full.model_state_bytes(r));
}

void TestCheckpoint::resume_across_layouts_data() {
  QTest::addColumn<int>("from");
  QTest::addColumn<int>("to");
  // layouts() indices plus the two below: dp 4 ZeRO-3 saved, resumed elsewhere.
  QTest::newRow("dp 4 zero-3 -> dp 2 zero-1") << 100 << 3;
  QTest::newRow("dp 4 zero-3 -> pp 2") << 100 << 6;
  QTest::newRow("dp 2 zero-2 -> 1 rank") << 4 << 0;
  QTest::newRow("dp 2 bf16 zero-3 -> dp 2 zero-1 (bf16)") << 10 << 101;
}

// Losses of steps k+1..n after resuming under another layout equal the
// unchanged run's within 2e-5 (relative): the same global batch, split
// otherwise, so only the order of float sums differs.
void TestCheckpoint::resume_across_layouts() {
  QFETCH(int, from);
  QFETCH(int, to);
  const auto pick = [](int i) {
    if (i == 100) return RunLayout{"dp 4 zero-3", 4, 1, 3};
    if (i == 101)
      return RunLayout{"dp 2 zero-1 bf16", 2, 1, 1, 1, 1, DataParallelMode::ddp, PipelineScheduleKind::one_f_one_b,
                       Precision::bf16};
    return layouts()[static_cast<std::size_t>(i)];
  };
  QTemporaryDir dir;
  const RunConfig config = with_layout(tiny_run(), pick(from));
  Trainer original(config);
  for (int s = 0; s < 2; ++s) original.step();
  const std::string saved = original.save_checkpoint(dir.path().toStdString());
  std::vector<float> expected;
  for (std::int64_t s = 2; s < config.steps; ++s) expected.push_back(original.step().loss);

  RunConfig other = with_layout(tiny_run(), pick(to));
  other.resume_dir = saved;
  Trainer resumed(other);
  float worst = 0.0f;  // the largest relative difference, reported
  for (const float want : expected) {
    const float got = resumed.step().loss;
    worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
    QVERIFY2(std::fabs(got - want) <= 2e-5f * std::fabs(want), qPrintable(QString("%1 vs %2").arg(got).arg(want)));
  }
  qInfo("largest relative loss difference over steps 3-%lld: %.3g", static_cast<long long>(config.steps),
        static_cast<double>(worst));
}

// The step directory is also a Hugging Face model (config.json,
// model.safetensors): on one rank its weights are the model's, bit for bit;
// saved by dp 2 ZeRO-3 (each rank its chunks) they are the fp32 masters of
// every rank's file, reassembled whole, bit for bit.
void TestCheckpoint::step_directory_holds_hugging_face_weights() {
  QTemporaryDir dir;
  const RunConfig one = tiny_run();
  Trainer single(one);
  for (int s = 0; s < 2; ++s) single.step();
  const HfModel saved = read_hf_model_dir(single.save_checkpoint(dir.path().toStdString() + "/one"));
  const Model& model = single.model(0);
  QCOMPARE(static_cast<std::int64_t>(saved.parameters.size()), model.parameter_count());
  QVERIFY(std::equal(saved.parameters.begin(), saved.parameters.end(), model.params()));

  Trainer sharded(with_layout(tiny_run(), RunLayout{"dp 2 zero-3", 2, 1, 3}));
  for (int s = 0; s < 2; ++s) sharded.step();
  const std::string step = sharded.save_checkpoint(dir.path().toStdString() + "/zero3");
  const HfModel gathered = read_hf_model_dir(step);
  QCOMPARE(gathered.parameters.size(), saved.parameters.size());
  const TrainingCheckpoint state = read_checkpoint(step);
  const ParameterLayout layout(gathered.config);
  for (const auto& [name, values] : state.parameters) {
    const ParameterEntry& e = layout.find(name);
    QCOMPARE(static_cast<std::int64_t>(values.master.size()), e.numel);
    QVERIFY2(std::equal(values.master.begin(), values.master.end(), gathered.parameters.begin() + e.offset),
             name.c_str());
  }
}

void TestCheckpoint::newest_step_is_found_and_temporaries_ignored() {
  QTemporaryDir dir;
  const std::string root = dir.path().toStdString();
  RunConfig config = tiny_run();
  Trainer trainer(config);
  trainer.step();
  trainer.save_checkpoint(root);
  trainer.step();
  const std::string second = trainer.save_checkpoint(root);
  fs::create_directory(fs::path(root) / ".step-000009.tmp-1");  // a save that was killed
  fs::create_directory(fs::path(root) / "step-000010");         // no manifest: not a checkpoint
  QCOMPARE(find_checkpoint_dir(root), second);
  QCOMPARE(find_checkpoint_dir(second), second);
  QVERIFY_THROWS_EXCEPTION(OutputError, trainer.save_checkpoint(root));  // step-000002 exists: never overwritten
  QVERIFY(fs::exists(fs::path(second) / "manifest.json"));
}

void TestCheckpoint::a_failed_save_leaves_no_step_directory() {
  QTemporaryDir dir;
  const std::string root = dir.path().toStdString();
  {
    CheckpointWriter writer(root, 7);
    RankCheckpoint rank;
    rank.file.name = "rank-0.safetensors";
    writer.write_rank(rank);
    QVERIFY(fs::exists(writer.temp_dir()));
  }  // never committed
  QVERIFY(fs::is_empty(root));
}

void TestCheckpoint::mismatched_checkpoints_are_refused() {
  QTemporaryDir dir;
  RunConfig config = tiny_run();
  Trainer trainer(config);
  trainer.step();
  const std::string saved = trainer.save_checkpoint(dir.path().toStdString());
  RunConfig other = config;
  other.resume_dir = saved;
  other.seed = 7;
  QVERIFY_THROWS_EXCEPTION(ConfigError, Trainer{other});
  other = config;
  other.resume_dir = saved;
  other.model = "gpt-mini";
  QVERIFY_THROWS_EXCEPTION(ConfigError, Trainer{other});
  other = config;
  other.resume_dir = saved;
  other.steps = 1;  // already there
  QVERIFY_THROWS_EXCEPTION(ConfigError, Trainer{other});
}

namespace {
struct LogLines : EventSink {
  std::mutex mutex;
  std::vector<Event> logs;
  void emit(const Event& e) override {
    if (e.kind != EventKind::log) return;
    std::lock_guard lock(mutex);
    logs.push_back(e);
  }
};
}  // namespace

// begin_checkpoint copies the state and returns; the steps that run while the
// files are written do not leak into them: the save is step 2's, resumes to
// the uninterrupted losses, and a log event spans it (copy, then write).
void TestCheckpoint::a_background_save_holds_its_step() {
  QTemporaryDir dir;
  const RunConfig config = with_layout(tiny_run(), {"dp 2 zero-1", 2, 1, 1});
  LogLines sink;
  Trainer full(config, &sink);
  QVERIFY(!full.finish_checkpoint());  // nothing in flight
  for (int s = 0; s < 2; ++s) full.step();
  full.begin_checkpoint(dir.path().toStdString());
  std::vector<StepMetrics> expected;
  for (std::int64_t s = 2; s < config.steps; ++s) expected.push_back(full.step());  // while the files are written
  const std::optional<CheckpointSave> save = full.finish_checkpoint();
  QVERIFY(save.has_value());
  QCOMPARE(save->step, std::int64_t{2});
  QCOMPARE(save->dir, (fs::path(dir.path().toStdString()) / "step-000002").string());
  QVERIFY(save->copy_s > 0.0 && save->write_s > 0.0);
  QVERIFY(!full.finish_checkpoint());
  bool logged = false;
  for (const Event& e : sink.logs)
    logged = logged ||
             (std::string(e.text_view()).starts_with("checkpoint step 2: training waited") && e.end_ns > e.start_ns);
  QVERIFY(logged);
  RunConfig again = config;
  again.resume_dir = save->dir;
  Trainer resumed(again);
  for (const StepMetrics& want : expected)
    QVERIFY(std::bit_cast<std::uint32_t>(resumed.step().loss) == std::bit_cast<std::uint32_t>(want.loss));
}

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"
