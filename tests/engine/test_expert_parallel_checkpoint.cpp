// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints of a mixture-of-experts run (train/checkpoint.h): a rank under
// expert parallelism saves its E/ep experts of each stacked expert tensor at
// their place in the whole tensor, so the reader reassembles every expert and
// a run at any ep takes its own block back. Saved after 2 steps and resumed
// in the same layout, the run goes on bit for bit (losses, gradient norms,
// every rank's state), at ep 1, dp 2 x ep 2 and dp 4 x ep 2 ZeRO-1, in fp32
// and 16 bits; saved at ep 2 it resumes at ep 1 and ep 4 (ZeRO-1's sharded
// moments too) with the same micro-batches and the losses within float
// rounding. A step directory of a MoE run holds no Hugging Face weights (the
// manifest says why); a checkpoint of another model or expert count, or one
// whose experts are missing, is refused naming the file and the field.
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "model/mixture_of_experts.h"
#include "train/checkpoint.h"
#include "train/trainer.h"

using namespace shardscope;

namespace {

struct MoeLayout {
  const char* name;
  int dp = 1, ep = 1, zero = 0, accum = 1;
  Precision precision = Precision::fp32;
  int pp = 1, micro_batches = 1;  // pipeline stages, each MoE layer's routing kept per micro-batch in flight
};

RunConfig moe_run(const MoeLayout& l) {
  RunConfig c;
  c.model = "gpt-tiny-moe";
  c.steps = 5;
  c.batch = 8;
  c.seq = 16;
  c.warmup = 1;
  c.lr = 1e-3f;
  c.threads = 2;
  c.layout[Axis::dp] = l.dp;
  c.expert_parallel = l.ep;
  c.zero_stage = l.zero;
  c.accum = l.accum;
  c.precision = l.precision;
  c.layout[Axis::pp] = l.pp;
  c.micro_batches = l.micro_batches;
  c.bucket_mb = 100;  // one DDP bucket: the same summation order whatever the layout's buckets
  return c;
}

// The layouts a checkpoint resumes in bit for bit.
const MoeLayout kSameLayouts[] = {
    {"ep 1", 1, 1},
    {"ep 1 bf16", 1, 1, 0, 1, Precision::bf16},
    {"dp 2 x ep 2", 2, 2},
    {"dp 2 x ep 2 fp16", 2, 2, 0, 1, Precision::fp16},
    {"dp 4 x ep 2 ZeRO-1", 4, 2, 1},
    {"dp 4 x ep 2 ZeRO-1 bf16", 4, 2, 1, 1, Precision::bf16},
    {"pp 2 x dp 2 x ep 2 ZeRO-1, 4 micro-batches", 2, 2, 1, 1, Precision::fp32, 2, 4},
};

// Four micro-batches per step in each: a MoE layer routes (and drops) each
// micro-batch alone, so only layouts with the same micro-batches train alike.
const MoeLayout kSavedAtEp2 = {"dp 2 x ep 2 x accum 2 ZeRO-1", 2, 2, 1, 2};
const MoeLayout kOtherEps[] = {
    {"dp 2 x ep 1 x accum 2", 2, 1, 0, 2},
    {"ep 1 x accum 4", 1, 1, 0, 4},
    {"dp 4 x ep 4 ZeRO-1", 4, 4, 1},
    {"dp 4 x ep 2 ZeRO-1", 4, 2, 1},
    {"pp 2 x dp 2 x ep 2 ZeRO-1, 2 micro-batches", 2, 2, 1, 1, Precision::fp32, 2, 2},
};

struct Figures {
  std::vector<float> losses;
  std::vector<double> norms;
  std::vector<MoeStats> routing;  // each step's aux loss, choices, drops and choices per expert
};

// Runs `config` 2 steps, saves into `dir`, then 3 more steps: their figures,
// and every rank's state bytes at the end in `state`.
Figures save_and_go_on(const RunConfig& config, const QTemporaryDir& dir, std::string& saved,
                       std::vector<std::vector<unsigned char>>* state = nullptr) {
  Trainer full(config);
  for (int s = 0; s < 2; ++s) full.step();
  saved = full.save_checkpoint(dir.path().toStdString());
  Figures out;
  for (std::int64_t s = 2; s < config.steps; ++s) {
    const StepMetrics m = full.step();
    out.losses.push_back(m.loss);
    out.norms.push_back(m.grad_norm);
    out.routing.push_back(m.moe != nullptr ? *m.moe : MoeStats{});
  }
  if (state != nullptr)
    for (int r = 0; r < full.world_size(); ++r) state->push_back(full.model_state_bytes(r));
  return out;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream(path) << j.dump(1);
}

// The ConfigError's text of resuming `config` from `dir` (empty: it resumed).
std::string resume_error(RunConfig config, const std::string& dir) {
  config.resume_dir = dir;
  try {
    Trainer t(config);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestExpertParallelCheckpoint : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void resume_in_the_same_layout_is_bit_exact_data();
  void resume_in_the_same_layout_is_bit_exact();
  void resume_at_another_ep_data();
  void resume_at_another_ep();
  void resume_with_other_micro_batches_says_so();
  void every_expert_is_saved_whole_and_no_hugging_face_weights();
  void mismatched_checkpoints_are_refused();
};

void TestExpertParallelCheckpoint::resume_in_the_same_layout_is_bit_exact_data() {
  QTest::addColumn<int>("index");
  for (int i = 0; i < static_cast<int>(std::size(kSameLayouts)); ++i) QTest::newRow(kSameLayouts[i].name) << i;
}

// Steps 3..5 of the resumed run give the uninterrupted run's losses, gradient
// norms and routing (drops, choices per expert, load-balancing loss) bit for
// bit, and every rank ends with the same state bytes
// (parameters, gradients, AdamW moments, the experts' included).
void TestExpertParallelCheckpoint::resume_in_the_same_layout_is_bit_exact() {
  QFETCH(int, index);
  const RunConfig config = moe_run(kSameLayouts[index]);
  QTemporaryDir dir;
  std::string saved;
  std::vector<std::vector<unsigned char>> state;
  const Figures expected = save_and_go_on(config, dir, saved, &state);

  RunConfig again = config;
  again.resume_dir = saved;
  Trainer resumed(again);
  QCOMPARE(resumed.steps_done(), std::int64_t{2});
  for (std::size_t i = 0; i < expected.losses.size(); ++i) {
    const StepMetrics m = resumed.step();
    QVERIFY2(
        std::bit_cast<std::uint32_t>(m.loss) == std::bit_cast<std::uint32_t>(expected.losses[i]),
        qPrintable(
            QString("step %1 loss %2 != %3").arg(i + 3).arg(m.loss, 0, 'g', 9).arg(expected.losses[i], 0, 'g', 9)));
    QVERIFY2(std::bit_cast<std::uint64_t>(m.grad_norm) == std::bit_cast<std::uint64_t>(expected.norms[i]),
             qPrintable(QString("step %1 norm %2 != %3")
                            .arg(i + 3)
                            .arg(m.grad_norm, 0, 'g', 17)
                            .arg(expected.norms[i], 0, 'g', 17)));
    // The routing goes on as it would have: the same choices kept and dropped, the same load-balancing loss.
    QVERIFY(m.moe != nullptr && m.moe->routed > 0);
    const MoeStats& want = expected.routing[i];
    QCOMPARE(m.moe->routed, want.routed);
    QCOMPARE(m.moe->dropped, want.dropped);
    QVERIFY(m.moe->tokens_per_expert == want.tokens_per_expert);
    QVERIFY(std::bit_cast<std::uint64_t>(m.moe->aux_loss()) == std::bit_cast<std::uint64_t>(want.aux_loss()));
  }
  std::int64_t dropped = 0;
  for (const MoeStats& r : expected.routing) dropped += r.dropped;
  qInfo("%s: %lld choices dropped over capacity in steps 3-5, resumed alike", QTest::currentDataTag(),
        static_cast<long long>(dropped));
  QCOMPARE(static_cast<std::size_t>(resumed.world_size()), state.size());
  for (int r = 0; r < resumed.world_size(); ++r)
    QVERIFY2(resumed.model_state_bytes(r) == state[static_cast<std::size_t>(r)], qPrintable(QString("rank %1").arg(r)));
}

void TestExpertParallelCheckpoint::resume_at_another_ep_data() {
  QTest::addColumn<int>("to");
  for (int i = 0; i < static_cast<int>(std::size(kOtherEps)); ++i)
    QTest::newRow((std::string(kSavedAtEp2.name) + " -> " + kOtherEps[i].name).c_str()) << i;
}

// Saved at dp 2 x ep 2 (ZeRO-1: the experts' moments sharded over the ranks
// holding them), resumed with the experts reassembled and split again: the
// same micro-batches and model, so steps 3..5 equal the uninterrupted run's
// losses within 2e-5 (relative), as the tp and cp resharding tests allow.
void TestExpertParallelCheckpoint::resume_at_another_ep() {
  QFETCH(int, to);
  QTemporaryDir dir;
  std::string saved;
  const Figures expected = save_and_go_on(moe_run(kSavedAtEp2), dir, saved);
  RunConfig other = moe_run(kOtherEps[to]);
  other.resume_dir = saved;
  Trainer resumed(other);
  QCOMPARE(resumed.steps_done(), std::int64_t{2});
  QVERIFY2(resumed.resume_note().empty(), resumed.resume_note().c_str());  // the same micro-batches: nothing to say
  float worst = 0.0f;
  for (const float want : expected.losses) {
    const float got = resumed.step().loss;
    worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
    QVERIFY2(std::fabs(got - want) <= 2e-5f * std::fabs(want), qPrintable(QString("%1 vs %2").arg(got).arg(want)));
  }
  qInfo("%s -> %s: largest relative loss difference %.3g", kSavedAtEp2.name, kOtherEps[to].name,
        static_cast<double>(worst));
}

// Resumed with micro-batches of another size (dp 2 x accum 1 where the save ran four micro-batches),
// the experts' capacity follows the new micro-batches: the run says so, naming both sizes.
void TestExpertParallelCheckpoint::resume_with_other_micro_batches_says_so() {
  QTemporaryDir dir;
  std::string saved;
  save_and_go_on(moe_run(kSavedAtEp2), dir, saved);
  RunConfig other = moe_run({"dp 2 x ep 2", 2, 2});
  other.resume_dir = saved;
  const Trainer resumed(other);
  const std::string& note = resumed.resume_note();
  QVERIFY2(note.find("micro-batches of 4 sequences where the run that saved it had 2") != std::string::npos,
           note.c_str());
}

// At dp 2 x ep 2 rank 0 holds experts 0-1 and rank 1 experts 2-3: the
// reassembled stacked tensors hold each rank's block at its place; the step
// directory has no config.json or model.safetensors, and the manifest says why.
void TestExpertParallelCheckpoint::every_expert_is_saved_whole_and_no_hugging_face_weights() {
  QTemporaryDir dir;
  Trainer trainer(moe_run(kSameLayouts[2]));
  trainer.step();
  const std::string step_dir = trainer.save_checkpoint(dir.path().toStdString());
  const TrainingCheckpoint ckpt = read_checkpoint(step_dir);
  QCOMPARE(ckpt.manifest.layout.at("ep").get<int>(), 2);
  QCOMPARE(ckpt.manifest.model.at("mixture_of_experts").at("experts").get<int>(), 4);
  QVERIFY2(ckpt.manifest.hugging_face.find("mixture of experts") != std::string::npos,
           ckpt.manifest.hugging_face.c_str());
  QVERIFY(!std::filesystem::exists(step_dir + "/model.safetensors"));
  QVERIFY(!std::filesystem::exists(step_dir + "/config.json"));
  const std::string name = "layer1.mlp.experts.fc.weight";
  const std::vector<float>& whole = ckpt.parameters.at(name).master;
  for (int r = 0; r < 2; ++r) {
    const Model& model = trainer.model(r);
    const ParameterEntry& e = model.layout().find(name);
    QCOMPARE(e.numel * 2, static_cast<std::int64_t>(whole.size()));  // half the experts on each rank
    const float* held = model.params() + e.offset;                   // CPU ranks: the fp32 parameters in host memory
    QVERIFY2(std::equal(held, held + e.numel, whole.begin() + r * e.numel), qPrintable(QString("rank %1").arg(r)));
  }
}

// Another model, another expert count, a missing expert block: refused before
// training, naming the manifest (or field) at fault.
void TestExpertParallelCheckpoint::mismatched_checkpoints_are_refused() {
  QTemporaryDir dir;
  const RunConfig moe = moe_run(kSameLayouts[2]);
  Trainer trainer(moe);
  trainer.step();
  const std::string step_dir = trainer.save_checkpoint(dir.path().toStdString());
  const std::string manifest_path = step_dir + "/manifest.json";
  const nlohmann::json manifest = read_json(manifest_path);

  RunConfig dense = moe;
  dense.model = "gpt-tiny", dense.expert_parallel = 1;
  std::string error = resume_error(dense, step_dir);
  QVERIFY2(error.find(manifest_path + ": the checkpoint's model is not --model gpt-tiny's: field "
                                      "'model.mixture_of_experts' is {") != std::string::npos &&
               error.find(" in the checkpoint, absent here") != std::string::npos,
           error.c_str());

  nlohmann::json eight = manifest;  // saved, say, by a model of 8 experts
  eight["model"]["mixture_of_experts"]["experts"] = 8;
  write_json(manifest_path, eight);
  error = resume_error(moe, step_dir);
  QVERIFY2(error.find(manifest_path + ": the checkpoint's model is not --model gpt-tiny-moe's: field "
                                      "'model.mixture_of_experts.experts' is 8 in the checkpoint, 4 here") !=
               std::string::npos,
           error.c_str());

  nlohmann::json shapes = manifest;  // the model's fields right, an expert tensor of 8 experts
  for (nlohmann::json& p : shapes["parameters"])
    if (p[0] == "layer0.mlp.experts.fc.weight") p[1][0] = 8;
  write_json(manifest_path, shapes);
  error = resume_error(moe, step_dir);
  QVERIFY2(error.find("field 'parameters[") != std::string::npos &&
               error.find("'layer0.mlp.experts.fc.weight' of shape [8, 512, 128]") != std::string::npos,
           error.c_str());

  nlohmann::json half = manifest;  // rank 1's file gone: experts 2-3 are nowhere
  nlohmann::json files = nlohmann::json::array();
  for (const nlohmann::json& f : half["files"])
    if (f["rank"] != 1) files.push_back(f);
  half["files"] = files;
  write_json(manifest_path, half);
  error = resume_error(moe, step_dir);
  QVERIFY2(error.find(manifest_path + ": element ") != std::string::npos &&
               error.find("mlp.experts.") != std::string::npos && error.find("is in no rank file") != std::string::npos,
           error.c_str());

  // A dense checkpoint resumed by a MoE run.
  QTemporaryDir dense_dir;
  RunConfig plain = dense;
  plain.layout[Axis::dp] = 1;
  Trainer dense_trainer(plain);
  dense_trainer.step();
  const std::string dense_step = dense_trainer.save_checkpoint(dense_dir.path().toStdString());
  QVERIFY(read_checkpoint_manifest(dense_step).hugging_face.empty());  // a dense model has its Hugging Face files
  QVERIFY(std::filesystem::exists(dense_step + "/model.safetensors"));
  error = resume_error(moe, dense_step);
  QVERIFY2(error.find(dense_step + "/manifest.json: the checkpoint's model is not --model gpt-tiny-moe's: field "
                                   "'model.mixture_of_experts' is absent in the checkpoint, {") != std::string::npos,
           error.c_str());
}

QTEST_GUILESS_MAIN(TestExpertParallelCheckpoint)
#include "test_expert_parallel_checkpoint.moc"
