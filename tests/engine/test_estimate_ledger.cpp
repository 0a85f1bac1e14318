// SPDX-License-Identifier: GPL-3.0-or-later
// Predicted equals measured: for every layout the engine can train, in fp32 and
// in mixed precision, the estimator's bytes equal the ledger's peak bytes of a
// real Trainer step, per rank and per category, exactly. A layout the engine
// refuses is skipped with the engine's reason and counts once it runs it.
#include <QTest>

#include "core/caching_device_memory.h"
#include "engine/collecting_sink.h"
#include "engine/host_fused_backend.h"
#include "engine/ledger_check.h"
#include "estimate/memory_model.h"
#include "estimate/split_backward_schedules.h"
#include "estimate/time_model.h"
#include "io/hf_model.h"
#include "train/trainer.h"

using namespace shardscope;

class TestEstimateLedger : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void predicted_equals_measured_data();
  void predicted_equals_measured();
  void tensor_parallel_predicted_equals_measured_data();
  void tensor_parallel_predicted_equals_measured();
  void fused_attention_predicted_equals_measured_data();
  void fused_attention_predicted_equals_measured();
  void pipeline_bytes_equal_the_engines_sends();
  void interleaved_predicted_equals_measured();
  void expert_parallel_predicted_equals_measured_data();
  void expert_parallel_predicted_equals_measured();
  void zero_bubble_predicted_equals_measured_data();
  void zero_bubble_predicted_equals_measured();
  void zero_bubble_bubbles_order_as_the_paper();
  void zb_v_predicted_equals_measured_data();
  void zb_v_predicted_equals_measured();
  void zb_v_refusals_are_the_runs();
  void zb_v_closed_form_is_the_walk();
  void zb_h_closed_forms_are_the_walk();
  void expert_parallel_zero1_predicted_equals_measured_data();
  void expert_parallel_zero1_predicted_equals_measured();
};

void TestEstimateLedger::predicted_equals_measured_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("zero");
  QTest::addColumn<int>("naive");
  QTest::addColumn<int>("checkpoint");
  QTest::addColumn<int>("accum");
  QTest::addColumn<int>("micro_batches");
  QTest::addColumn<int>("gpipe");
  QTest::addColumn<QString>("precision");
  //                                              dp  pp zero naive ckpt accum m gpipe
  QTest::newRow("gpt dp1") << "gpt-tiny" << 1 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt dp1 ckpt") << "gpt-tiny" << 1 << 1 << 0 << 0 << 1 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt ddp2") << "gpt-tiny" << 2 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt ddp4 accum2") << "gpt-tiny" << 4 << 1 << 0 << 0 << 0 << 2 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero1 dp2") << "gpt-tiny" << 2 << 1 << 1 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero1 dp4 ckpt") << "gpt-tiny" << 4 << 1 << 1 << 0 << 1 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero1 dp5 padded") << "gpt-tiny" << 5 << 1 << 1 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt naive2") << "gpt-tiny" << 2 << 1 << 0 << 1 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt naive4 ckpt") << "gpt-tiny" << 4 << 1 << 0 << 1 << 1 << 1 << 1 << 0 << "fp32";
  QTest::newRow("bert dp1") << "bert-tiny" << 1 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("bert ddp2 ckpt") << "bert-tiny" << 2 << 1 << 0 << 0 << 1 << 1 << 1 << 0 << "fp32";
  QTest::newRow("bert zero1 dp8 padded") << "bert-tiny" << 8 << 1 << 1 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("bert naive4") << "bert-tiny" << 4 << 1 << 0 << 1 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt pp2 1f1b m4") << "gpt-tiny" << 1 << 2 << 0 << 0 << 0 << 1 << 4 << 0 << "fp32";
  QTest::newRow("gpt pp2 gpipe m4") << "gpt-tiny" << 1 << 2 << 0 << 0 << 0 << 1 << 4 << 1 << "fp32";
  QTest::newRow("gpt dp2 pp2 zero1 ckpt") << "gpt-tiny" << 2 << 2 << 1 << 0 << 1 << 2 << 2 << 0 << "fp32";
  QTest::newRow("bert pp2 m2") << "bert-tiny" << 1 << 2 << 0 << 0 << 0 << 1 << 2 << 0 << "fp32";
  QTest::newRow("gpt zero2 dp2") << "gpt-tiny" << 2 << 1 << 2 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero3 dp4") << "gpt-tiny" << 4 << 1 << 3 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("bert zero3 dp2 ckpt") << "bert-tiny" << 2 << 1 << 3 << 0 << 1 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero2 dp1 accum2") << "gpt-tiny" << 1 << 1 << 2 << 0 << 0 << 2 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero3 dp3 padded") << "gpt-tiny" << 3 << 1 << 3 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("bert zero2 dp8 padded") << "bert-tiny" << 8 << 1 << 2 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("gpt zero3 dp5 padded ckpt accum2") << "gpt-tiny" << 5 << 1 << 3 << 0 << 1 << 2 << 1 << 0 << "fp32";
  // A mixture of experts: every MoE layer's packed expert rows (b·s·k·10h) beside the dense set.
  QTest::newRow("moe dp1") << "gpt-tiny-moe" << 1 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "fp32";
  QTest::newRow("moe zero2 dp2 ckpt accum2") << "gpt-tiny-moe" << 2 << 1 << 2 << 0 << 1 << 2 << 1 << 0 << "fp32";
  // On pipeline stages: each activation slot in flight keeps its MoE layers' packed rows too.
  QTest::newRow("moe pp2 1f1b m4") << "gpt-tiny-moe" << 1 << 2 << 0 << 0 << 0 << 1 << 4 << 0 << "fp32";
  QTest::newRow("moe dp2 pp2 gpipe zero1 ckpt m4") << "gpt-tiny-moe" << 2 << 2 << 1 << 0 << 1 << 1 << 4 << 1 << "fp32";
  // Mixed precision: fp32 activations, 16-bit parameters and gradients, fp32 working copies.
  QTest::newRow("gpt dp1 bf16") << "gpt-tiny" << 1 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("gpt dp1 ckpt fp16") << "gpt-tiny" << 1 << 1 << 0 << 0 << 1 << 1 << 1 << 0 << "fp16";
  QTest::newRow("gpt ddp2 bf16") << "gpt-tiny" << 2 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("gpt ddp4 accum2 fp16") << "gpt-tiny" << 4 << 1 << 0 << 0 << 0 << 2 << 1 << 0 << "fp16";
  QTest::newRow("gpt zero1 dp2 bf16") << "gpt-tiny" << 2 << 1 << 1 << 0 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("gpt zero1 dp4 ckpt fp16") << "gpt-tiny" << 4 << 1 << 1 << 0 << 1 << 1 << 1 << 0 << "fp16";
  QTest::newRow("gpt zero1 dp5 padded bf16") << "gpt-tiny" << 5 << 1 << 1 << 0 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("gpt naive2 fp16") << "gpt-tiny" << 2 << 1 << 0 << 1 << 0 << 1 << 1 << 0 << "fp16";
  QTest::newRow("gpt naive4 ckpt bf16") << "gpt-tiny" << 4 << 1 << 0 << 1 << 1 << 1 << 1 << 0 << "bf16";
  QTest::newRow("bert dp1 fp16") << "bert-tiny" << 1 << 1 << 0 << 0 << 0 << 1 << 1 << 0 << "fp16";
  QTest::newRow("bert ddp2 ckpt bf16") << "bert-tiny" << 2 << 1 << 0 << 0 << 1 << 1 << 1 << 0 << "bf16";
  QTest::newRow("bert zero1 dp8 padded fp16") << "bert-tiny" << 8 << 1 << 1 << 0 << 0 << 1 << 1 << 0 << "fp16";
  QTest::newRow("bert naive4 bf16") << "bert-tiny" << 4 << 1 << 0 << 1 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("gpt pp2 1f1b m4 fp16") << "gpt-tiny" << 1 << 2 << 0 << 0 << 0 << 1 << 4 << 0 << "fp16";
  QTest::newRow("gpt pp2 gpipe m4 bf16") << "gpt-tiny" << 1 << 2 << 0 << 0 << 0 << 1 << 4 << 1 << "bf16";
  QTest::newRow("gpt dp2 pp2 zero1 ckpt fp16") << "gpt-tiny" << 2 << 2 << 1 << 0 << 1 << 2 << 2 << 0 << "fp16";
  QTest::newRow("bert pp2 m2 bf16") << "bert-tiny" << 1 << 2 << 0 << 0 << 0 << 1 << 2 << 0 << "bf16";
  QTest::newRow("gpt zero2 dp2 fp16") << "gpt-tiny" << 2 << 1 << 2 << 0 << 0 << 1 << 1 << 0 << "fp16";
  QTest::newRow("gpt zero3 dp4 bf16") << "gpt-tiny" << 4 << 1 << 3 << 0 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("bert zero3 dp2 ckpt fp16") << "bert-tiny" << 2 << 1 << 3 << 0 << 1 << 1 << 1 << 0 << "fp16";
  QTest::newRow("gpt zero2 dp1 accum2 bf16") << "gpt-tiny" << 1 << 1 << 2 << 0 << 0 << 2 << 1 << 0 << "bf16";
  QTest::newRow("gpt zero3 dp3 padded fp16") << "gpt-tiny" << 3 << 1 << 3 << 0 << 0 << 1 << 1 << 0 << "fp16";
  QTest::newRow("bert zero2 dp8 padded bf16") << "bert-tiny" << 8 << 1 << 2 << 0 << 0 << 1 << 1 << 0 << "bf16";
  QTest::newRow("gpt zero3 dp5 padded ckpt accum2 fp16") << "gpt-tiny" << 5 << 1 << 3 << 0 << 1 << 2 << 1 << 0 << "fp16";
}

namespace {
// One optimizer step of the real Trainer; every rank's ledger peak, category by
// category, must equal the prediction. A failure names the side that moved.
void check_ledger(const ModelShape& shape, const EstimateSettings& s) {
  const std::string gap = engine_gap(shape, s);
  if (!gap.empty()) QSKIP(qPrintable(QString::fromStdString("the engine cannot run this yet: " + gap)));
  const MemoryEstimate predicted = estimate_memory(shape, s);
  QVERIFY(predicted.engine_exact);
  RunConfig run = to_run_config(shape, s);
  run.threads = 2;
  Trainer trainer(run);
  trainer.step();
  const QString mismatch = ledger_mismatch(predicted, trainer);
  QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
}

void check_ledger(const QString& model, const EstimateSettings& s) {
  check_ledger(model_shape_from_config(find_model_preset(qPrintable(model)), qPrintable(model)), s);
}

// A model the engine trains from its config.json (`train --model DIR/config.json`),
// named by that path as a run names it.
ModelShape config_file_shape(const std::string& dir) {
  return model_shape_from_config(read_hf_model_config(dir), dir + "/config.json");
}
}  // namespace

void TestEstimateLedger::predicted_equals_measured() {
  QFETCH(QString, model);
  QFETCH(int, dp);
  QFETCH(int, pp);
  QFETCH(int, zero);
  QFETCH(int, naive);
  QFETCH(int, checkpoint);
  QFETCH(int, accum);
  QFETCH(int, micro_batches);
  QFETCH(int, gpipe);
  QFETCH(QString, precision);
  EstimateSettings s;
  s.precision = parse_precision(qPrintable(precision));
  s.layout[Axis::dp] = dp;
  s.layout[Axis::pp] = pp;
  s.zero_stage = zero;
  s.dp_mode = naive ? DataParallelMode::naive : DataParallelMode::ddp;
  s.recompute = checkpoint ? Recompute::full : Recompute::none;
  s.accum = accum;
  s.micro_batches = micro_batches;
  s.schedule = gpipe ? PipelineScheduleKind::gpipe : PipelineScheduleKind::one_f_one_b;
  s.micro_batch_size = 2;
  s.seq = 32;
  check_ledger(model, s);
}

// Tensor parallelism (issue 29): each rank holds its slices (parameters,
// gradients, optimizer states from stage_units at tp) and its heads' and MLP
// columns' activations; the ledger of a real step equals the estimator.
void TestEstimateLedger::tensor_parallel_predicted_equals_measured_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("tp");
  QTest::addColumn<int>("zero");
  QTest::addColumn<int>("checkpoint");
  QTest::addColumn<int>("micro_batches");
  QTest::addColumn<QString>("precision");
  QTest::addColumn<bool>("sp");
  //                                           dp   pp   tp  zero ckpt  m
  QTest::newRow("gpt tp2") << "gpt-tiny" << 1 << 1 << 2 << 0 << 0 << 1 << "fp32" << false;
  QTest::newRow("gpt tp4") << "gpt-tiny" << 1 << 1 << 4 << 0 << 0 << 1 << "fp32" << false;
  QTest::newRow("gpt dp2 tp2 zero1") << "gpt-tiny" << 2 << 1 << 2 << 1 << 0 << 1 << "fp32" << false;
  QTest::newRow("gpt tp2 pp2 1f1b m4") << "gpt-tiny" << 1 << 2 << 2 << 0 << 0 << 4 << "fp32" << false;
  QTest::newRow("gpt dp2 tp2 zero3") << "gpt-tiny" << 2 << 1 << 2 << 3 << 0 << 1 << "fp32" << false;
  QTest::newRow("gpt tp2 ckpt") << "gpt-tiny" << 1 << 1 << 2 << 0 << 1 << 1 << "fp32" << false;
  QTest::newRow("bert tp2") << "bert-tiny" << 1 << 1 << 2 << 0 << 0 << 1 << "fp32" << false;
  QTest::newRow("gpt dp2 tp2 zero1 bf16") << "gpt-tiny" << 2 << 1 << 2 << 1 << 0 << 1 << "bf16" << false;
  // Sequence parallelism: the residual stream and the LayerNorm statistics at s/t tokens.
  QTest::newRow("gpt tp2 sp") << "gpt-tiny" << 1 << 1 << 2 << 0 << 0 << 1 << "fp32" << true;
  QTest::newRow("gpt tp4 sp") << "gpt-tiny" << 1 << 1 << 4 << 0 << 0 << 1 << "fp32" << true;
  QTest::newRow("gpt dp2 tp2 zero1 sp") << "gpt-tiny" << 2 << 1 << 2 << 1 << 0 << 1 << "fp32" << true;
  QTest::newRow("gpt tp2 pp2 1f1b m4 sp") << "gpt-tiny" << 1 << 2 << 2 << 0 << 0 << 4 << "fp32" << true;
  QTest::newRow("gpt dp2 tp2 zero3 ckpt sp") << "gpt-tiny" << 2 << 1 << 2 << 3 << 1 << 1 << "fp32" << true;
  QTest::newRow("bert tp2 sp") << "bert-tiny" << 1 << 1 << 2 << 0 << 0 << 1 << "fp32" << true;
  QTest::newRow("bert tp2 pp2 sp") << "bert-tiny" << 1 << 2 << 2 << 0 << 0 << 2 << "fp32" << true;
  QTest::newRow("gpt dp2 tp2 zero1 sp bf16") << "gpt-tiny" << 2 << 1 << 2 << 1 << 0 << 1 << "bf16" << true;
  QTest::newRow("gpt dp2 tp2 zero2 fp16") << "gpt-tiny" << 2 << 1 << 2 << 2 << 0 << 1 << "fp16" << false;
}

void TestEstimateLedger::tensor_parallel_predicted_equals_measured() {
  QFETCH(QString, model);
  QFETCH(int, dp);
  QFETCH(int, pp);
  QFETCH(int, tp);
  QFETCH(int, zero);
  QFETCH(int, checkpoint);
  QFETCH(int, micro_batches);
  QFETCH(QString, precision);
  QFETCH(bool, sp);
  EstimateSettings s;
  s.sequence_parallel = sp;
  s.precision = parse_precision(qPrintable(precision));
  s.layout[Axis::dp] = dp;
  s.layout[Axis::pp] = pp;
  s.layout[Axis::tp] = tp;
  s.zero_stage = zero;
  s.recompute = checkpoint ? Recompute::full : Recompute::none;
  s.micro_batches = micro_batches;
  s.micro_batch_size = 2;
  s.seq = 32;
  check_ledger(model, s);
}

// A CUDA run in fp16/bf16 fuses attention: each layer keeps (b, a, s) rows, not
// (b, a, s, s) probabilities. The rank here runs the fused kernels' host twin
// (host_fused_backend.h) on host "device" memory, so the same carving the GPU
// run makes is measured by the ledger.
void TestEstimateLedger::fused_attention_predicted_equals_measured_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("checkpoint");
  QTest::addColumn<QString>("precision");
  QTest::newRow("gpt bf16") << "gpt-tiny" << 0 << "bf16";
  QTest::newRow("gpt ckpt fp16") << "gpt-tiny" << 1 << "fp16";
  QTest::newRow("bert bf16") << "bert-tiny" << 0 << "bf16";
}

void TestEstimateLedger::fused_attention_predicted_equals_measured() {
  QFETCH(QString, model);
  QFETCH(int, checkpoint);
  QFETCH(QString, precision);
  EstimateSettings s;
  s.precision = parse_precision(qPrintable(precision));
  s.recompute = checkpoint ? Recompute::full : Recompute::none;
  s.micro_batch_size = 2;
  s.seq = 32;
  s.cuda = true;
  const ModelShape shape = model_shape_from_config(find_model_preset(qPrintable(model)), qPrintable(model));
  const MemoryEstimate predicted = estimate_memory(shape, s);
  EstimateSettings cpu = s;
  cpu.cuda = false;
  const MemoryEstimate materialized = estimate_memory(shape, cpu);
  // (b, a, s, s) -> (b, a, s) per layer: activations and workspace both shrink.
  const ModelConfig config = find_model_preset(qPrintable(model));
  const std::int64_t per_layer = 4LL * s.micro_batch_size * config.heads * (s.seq * s.seq - s.seq);
  const std::int64_t layers_kept = checkpoint ? 1 : config.layers;
  QCOMPARE(materialized.ranks[0].bytes[MemoryCategory::activations] -
               predicted.ranks[0].bytes[MemoryCategory::activations],
           layers_kept * per_layer);
  QCOMPARE(materialized.ranks[0].bytes[MemoryCategory::workspace] - predicted.ranks[0].bytes[MemoryCategory::workspace],
           per_layer);
  QVERIFY(predicted.ranks[0].formula(MemoryCategory::activations).find("fused") != std::string::npos);

  RunConfig run = to_run_config(shape, s);
  run.threads = 2;
  Trainer trainer(run, nullptr, [](int) {
    RankDevice d;
    d.memory = std::make_unique<CachingDeviceMemory>(std::make_unique<HostRawAllocator>(std::int64_t{1} << 30));
    d.backend = std::make_unique<testing::HostFusedAttentionBackend>();
    return d;
  });
  trainer.step();
  const MemoryBytes measured = trainer.ledger(0).peak();
  for (MemoryCategory c : kAllMemoryCategories)
    QVERIFY2(measured[c] == predicted.ranks[0].bytes[c],
             qPrintable(QString("%1: predicted %2, measured %3")
                            .arg(QString::fromStdString(std::string(memory_category_name(c))))
                            .arg(predicted.ranks[0].bytes[c])
                            .arg(measured[c])));
}

// The time model's pipeline bytes are what the engine's first stage sends in a
// step: its activations, fp32 at every precision (bf16 here, as a GPU run).
// Interleaved 1F1B (v 2): each stage's two chunks' parameters, and activation
// slots for the (chunk, micro-batch) pairs the schedule holds at once, each
// sized for the stage's union (the received input beside the embeddings). A MoE
// slot keeps one chunk's routing, whichever chunk it served before.
void TestEstimateLedger::interleaved_predicted_equals_measured() {
  for (const char* model : {"gpt-tiny", "bert-mini", "gpt-tiny-moe"})
    for (int dp : {1, 2}) {
      EstimateSettings s;
      s.layout[Axis::dp] = dp;
      s.layout[Axis::pp] = 2;
      s.zero_stage = dp > 1 ? 1 : 0;
      s.micro_batches = 4;
      s.schedule = PipelineScheduleKind::interleaved_1f1b;
      s.virtual_stages = 2;
      s.micro_batch_size = 2;
      s.seq = 32;
      check_ledger(model, s);
    }
}

// Expert parallelism (issue 33): each rank holds E/ep experts of every MoE layer
// (parameters, gradients, optimizer states), keeps its rows' input and output
// and its experts' received rows at their bound E·c, and stages the all-to-all
// in three blocks of E·c rows; the ledger of a real step equals the estimator.
void TestEstimateLedger::expert_parallel_predicted_equals_measured_data() {
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("ep");
  QTest::addColumn<int>("checkpoint");
  QTest::addColumn<int>("accum");
  QTest::addColumn<QString>("precision");
  QTest::addColumn<int>("pp");
  QTest::newRow("moe ep2") << 2 << 2 << 0 << 1 << "fp32" << 1;
  QTest::newRow("moe ep4") << 4 << 4 << 0 << 1 << "fp32" << 1;
  QTest::newRow("moe dp4 ep2") << 4 << 2 << 0 << 1 << "fp32" << 1;
  QTest::newRow("moe dp4 ep2 ckpt accum2") << 4 << 2 << 1 << 2 << "fp32" << 1;
  QTest::newRow("moe ep2 bf16") << 2 << 2 << 0 << 1 << "bf16" << 1;
  QTest::newRow("moe dp4 ep2 fp16") << 4 << 2 << 0 << 1 << "fp16" << 1;
  // On pipeline stages (m 4, 1F1B): each stage's ep group, each slot in flight with its rows.
  QTest::newRow("moe dp2 ep2 pp2") << 2 << 2 << 0 << 1 << "fp32" << 2;
  QTest::newRow("moe dp2 ep2 pp2 ckpt") << 2 << 2 << 1 << 1 << "fp32" << 2;
}

void TestEstimateLedger::expert_parallel_predicted_equals_measured() {
  QFETCH(int, dp);
  QFETCH(int, ep);
  QFETCH(int, checkpoint);
  QFETCH(int, accum);
  QFETCH(QString, precision);
  QFETCH(int, pp);
  EstimateSettings s;
  s.precision = parse_precision(qPrintable(precision));
  s.layout[Axis::dp] = dp;
  s.layout[Axis::pp] = pp;
  s.micro_batches = pp > 1 ? 4 : 1;
  s.expert_parallel = ep;
  s.recompute = checkpoint ? Recompute::full : Recompute::none;
  s.accum = accum;
  s.micro_batch_size = 2;
  s.seq = 32;
  check_ledger("gpt-tiny-moe", s);
  // Every rank holds its E/ep experts: the dense parameters and a quarter or half of the experts'.
  const ModelShape shape = model_shape_from_config(find_model_preset("gpt-tiny-moe"), "gpt-tiny-moe");
  const std::int64_t experts = shape.layer_expert_parameters * shape.layers;
  if (pp == 1)
    QCOMPARE(estimate_memory(shape, s).ranks[0].stage_parameters, shape.parameters() - experts + experts / ep);
}

// ZB-H1 and ZB-H2 (Qi et al. 2024): the activation slots the schedule fills,
// plus the output gradients each B keeps until its W, at their peak along the
// stage's list, equal the ledger of a real step. Under --checkpoint B keeps
// each linear's input beside its output gradient (16h per token and layer).
void TestEstimateLedger::zero_bubble_predicted_equals_measured_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("pp");
  QTest::addColumn<QString>("schedule");
  QTest::addColumn<int>("checkpoint");
  QTest::addColumn<QString>("precision");
  QTest::newRow("gpt pp2 zb-h1 m8") << "gpt-tiny" << 1 << 2 << "zb-h1" << 0 << "fp32";
  QTest::newRow("gpt pp2 zb-h2 m8") << "gpt-tiny" << 1 << 2 << "zb-h2" << 0 << "fp32";
  QTest::newRow("gpt pp4 zb-h1 m8") << "gpt-tiny" << 1 << 4 << "zb-h1" << 0 << "fp32";
  QTest::newRow("gpt pp4 zb-h2 m8") << "gpt-tiny" << 1 << 4 << "zb-h2" << 0 << "fp32";
  QTest::newRow("gpt dp2 pp2 zero1 zb-h1 m8") << "gpt-tiny" << 2 << 2 << "zb-h1" << 0 << "fp32";
  QTest::newRow("gpt dp2 pp2 zero1 zb-h2 m8") << "gpt-tiny" << 2 << 2 << "zb-h2" << 0 << "fp32";
  QTest::newRow("bert pp2 zb-h2 m8") << "bert-tiny" << 1 << 2 << "zb-h2" << 0 << "fp32";
  QTest::newRow("gpt pp2 zb-h1 m8 ckpt") << "gpt-tiny" << 1 << 2 << "zb-h1" << 1 << "fp32";
  QTest::newRow("gpt pp4 zb-h2 m8 ckpt") << "gpt-tiny" << 1 << 4 << "zb-h2" << 1 << "fp32";
  QTest::newRow("gpt dp2 pp2 zero1 zb-h2 m8 ckpt") << "gpt-tiny" << 2 << 2 << "zb-h2" << 1 << "fp32";
  QTest::newRow("bert pp2 zb-h1 m8 ckpt") << "bert-tiny" << 1 << 2 << "zb-h1" << 1 << "fp32";
  // In 16 bits each layer's fp32 gradient stays bound from its B to its W (workspace).
  QTest::newRow("gpt pp2 zb-h1 m8 fp16") << "gpt-tiny" << 1 << 2 << "zb-h1" << 0 << "fp16";
  QTest::newRow("gpt pp4 zb-h2 m8 ckpt bf16") << "gpt-tiny" << 1 << 4 << "zb-h2" << 1 << "bf16";
  QTest::newRow("gpt dp2 pp2 zero1 zb-h1 m8 ckpt fp16") << "gpt-tiny" << 2 << 2 << "zb-h1" << 1 << "fp16";
}

void TestEstimateLedger::zero_bubble_predicted_equals_measured() {
  QFETCH(QString, model);
  QFETCH(int, dp);
  QFETCH(int, pp);
  QFETCH(QString, schedule);
  QFETCH(int, checkpoint);
  QFETCH(QString, precision);
  EstimateSettings s;
  s.precision = parse_precision(qPrintable(precision));
  s.layout[Axis::dp] = dp;
  s.layout[Axis::pp] = pp;
  s.zero_stage = dp > 1 ? 1 : 0;
  s.micro_batches = 8;
  s.schedule = parse_pipeline_schedule_kind(qPrintable(schedule));
  s.recompute = checkpoint ? Recompute::full : Recompute::none;
  s.micro_batch_size = 2;
  s.seq = 32;
  check_ledger(model, s);
  // The kept gradients are what ZB-H1 holds beyond 1F1B's activations.
  EstimateSettings one_f_one_b = s;
  one_f_one_b.schedule = PipelineScheduleKind::one_f_one_b;
  const ModelShape shape = model_shape_from_config(find_model_preset(qPrintable(model)), qPrintable(model));
  const MemoryEstimate zb = estimate_memory(shape, s), base = estimate_memory(shape, one_f_one_b);
  QVERIFY(zb.ranks[0].bytes[MemoryCategory::activations] > base.ranks[0].bytes[MemoryCategory::activations]);
}

// ZB-V (plan/zb_v_schedule.h) on the 8-layer GPT (2p chunks at pp 2 and pp 4) and
// bert-mini: stage r holds chunks r and 2p - 1 - r (stage 0 the embeddings and the
// head, the tied embedding once), and every stage's activations at the peak of its
// simulated V list (half-stage slots, plus one chunk's kept gradients per B not yet
// W'd) equal the ledger of a real step, rank by rank and category by category;
// in 16 bits the workspace with the layers' fp32 gradients bound from B to W.
void TestEstimateLedger::zb_v_predicted_equals_measured_data() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("checkpoint");
  QTest::addColumn<QString>("precision");
  const QString gpt8 = QStringLiteral(SHARDSCOPE_FIXTURES "/gpt_tiny_8_layers");
  QTest::newRow("gpt8 pp2 zb-v m8") << gpt8 << 1 << 2 << 0 << "fp32";
  QTest::newRow("gpt8 pp4 zb-v m8") << gpt8 << 1 << 4 << 0 << "fp32";
  QTest::newRow("gpt8 dp2 pp2 zero1 zb-v m8") << gpt8 << 2 << 2 << 0 << "fp32";
  QTest::newRow("gpt8 pp2 zb-v m8 ckpt") << gpt8 << 1 << 2 << 1 << "fp32";
  QTest::newRow("gpt8 pp4 zb-v m8 ckpt") << gpt8 << 1 << 4 << 1 << "fp32";
  QTest::newRow("gpt8 dp2 pp2 zero1 zb-v m8 ckpt") << gpt8 << 2 << 2 << 1 << "fp32";
  QTest::newRow("bert-mini pp2 zb-v m8") << "bert-mini" << 1 << 2 << 0 << "fp32";
  QTest::newRow("gpt8 pp4 zb-v m8 fp16") << gpt8 << 1 << 4 << 0 << "fp16";
  QTest::newRow("gpt8 dp2 pp2 zero1 zb-v m8 ckpt bf16") << gpt8 << 2 << 2 << 1 << "bf16";
  QTest::newRow("bert-mini pp2 zb-v m8 fp16") << "bert-mini" << 1 << 2 << 0 << "fp16";
  QTest::newRow("moe pp2 zb-v m8") << "gpt-tiny-moe" << 1 << 2 << 0 << "fp32";
}

void TestEstimateLedger::zb_v_predicted_equals_measured() {
  QFETCH(QString, model);
  QFETCH(int, dp);
  QFETCH(int, pp);
  QFETCH(int, checkpoint);
  QFETCH(QString, precision);
  EstimateSettings s;
  s.precision = parse_precision(qPrintable(precision));
  s.layout[Axis::dp] = dp;
  s.layout[Axis::pp] = pp;
  s.zero_stage = dp > 1 ? 1 : 0;
  s.micro_batches = 8;
  s.schedule = PipelineScheduleKind::zb_v;
  s.recompute = checkpoint ? Recompute::full : Recompute::none;
  s.micro_batch_size = 2;
  s.seq = 32;
  const ModelShape shape = model.startsWith('/')
                               ? config_file_shape(model.toStdString())
                               : model_shape_from_config(find_model_preset(qPrintable(model)), qPrintable(model));
  check_ledger(shape, s);
  const MemoryEstimate e = estimate_memory(shape, s);
  const RankMemory& first = e.ranks[0];
  QVERIFY(first.layers.embedding && first.layers.head && first.layers.chunks == 2);
  QCOMPARE(first.layers.chunk(1).first_layer, static_cast<int>(shape.layers) - first.layers.layer_count());
  QVERIFY2(first.formula(MemoryCategory::activations).find("(zb-v)") != std::string::npos,
           first.formula(MemoryCategory::activations).c_str());
}

// What a run refuses with ZB-V the estimator refuses by name: fewer than 2p - 1
// micro-batches, layers that do not split into 2p chunks, one stage.
void TestEstimateLedger::zb_v_refusals_are_the_runs() {
  const ModelShape shape = config_file_shape(SHARDSCOPE_FIXTURES "/gpt_tiny_8_layers");
  EstimateSettings s;
  s.layout[Axis::pp] = 4;
  s.micro_batches = 6;
  s.schedule = PipelineScheduleKind::zb_v;
  s.micro_batch_size = 2;
  s.seq = 32;
  const auto refusal = [&](const EstimateSettings& settings, const ModelShape& model) -> std::string {
    try {
      (void)estimate_memory(model, settings);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  };
  std::string why = refusal(s, shape);
  QVERIFY2(why.find("--micro-batches") != std::string::npos && why.find("7") != std::string::npos, why.c_str());
  s.micro_batches = 8;
  QVERIFY2(refusal(s, shape).empty(), refusal(s, shape).c_str());
  const ModelShape four = model_shape_from_config(find_model_preset("gpt-tiny"), "gpt-tiny");
  why = refusal(s, four);  // 4 layers into 8 chunks
  QVERIFY2(why.find("--pp") != std::string::npos && why.find("8 equal chunks") != std::string::npos, why.c_str());
  s.layout[Axis::pp] = 1;
  why = refusal(s, shape);
  QVERIFY2(why.find("--pp") != std::string::npos && why.find("2 or more") != std::string::npos, why.c_str());
}

// The simulated bubbles with the estimator's T_F, T_B, T_W (FLOPs): ZB-H2's
// below ZB-H1's below 1F1B's, at pp 4 × m 8 (the layout).
void TestEstimateLedger::zero_bubble_bubbles_order_as_the_paper() {
  const ModelShape shape = model_shape_from_config(find_model_preset("gpt-tiny"), "gpt-tiny");
  EstimateSettings s;
  s.layout[Axis::pp] = 4;
  s.micro_batches = 8;
  s.micro_batch_size = 2;
  s.seq = 32;
  const double one_f_one_b = estimate_time(shape, s, nullptr).bubble_fraction;
  s.schedule = PipelineScheduleKind::zb_h1;
  const TimeEstimate h1 = estimate_time(shape, s, nullptr);
  s.schedule = PipelineScheduleKind::zb_h2;
  const TimeEstimate h2 = estimate_time(shape, s, nullptr);
  QVERIFY2(h1.bubble_fraction < one_f_one_b, h1.bubble_formula.c_str());
  QVERIFY2(h2.bubble_fraction < h1.bubble_fraction, h2.bubble_formula.c_str());
  QVERIFY(h1.bubble_formula.find("(p−1)(T_F+T_B−T_W)") != std::string::npos);
}

namespace {
// The closed form of `kind`'s activation peak on one stage against the walk of its list, for
// three slot/kept ratios (whichever of a slot and a kept set is the larger).
void check_closed_form_is_the_walk(PipelineScheduleKind kind, int p, int m, int stage) {
  for (const auto& [slot, kept] : {std::pair<std::int64_t, std::int64_t>{1000, 7}, {7, 1000}, {300, 300}}) {
    const StageActivationPeak walk = split_backward_activation_peak(kind, p, stage, m, slot, kept);
    const StageActivationPeak closed = split_backward_activation_peak_closed_form(kind, p, stage, m, slot, kept);
    QVERIFY2(!walk.bound && !closed.bound && walk.bytes == closed.bytes && walk.slots == closed.slots &&
                 walk.kept == closed.kept,
             qPrintable(QString("%1 p %2 m %3 stage %4: walk %5 slots %6 kept, closed form %7 slots %8 kept")
                            .arg(pipeline_schedule_name(kind))
                            .arg(p)
                            .arg(m)
                            .arg(stage)
                            .arg(walk.slots)
                            .arg(walk.kept)
                            .arg(closed.slots)
                            .arg(closed.kept)));
  }
}
}  // namespace

// Past p·m·2 = 4096 actions the estimator does not build ZB-V's lists: its closed
// form (2p slots, 2r + 1 kept on stage r) equals the walk of the lists wherever
// both can run.
void TestEstimateLedger::zb_v_closed_form_is_the_walk() {
  for (int p = 2; p <= 8; ++p)
    for (int m = 2 * p - 1; m <= 2 * p + 12; ++m)
      for (int stage = 0; stage < p; ++stage) {
        check_closed_form_is_the_walk(PipelineScheduleKind::zb_v, p, m, stage);
        if (QTest::currentTestFailed()) return;
      }
}

// Past p·m = 4096 actions the estimator does not build ZB-H1's and ZB-H2's lists either:
// their closed forms (split_backward_schedules.h) equal the walk wherever both can run,
// from one micro-batch up.
void TestEstimateLedger::zb_h_closed_forms_are_the_walk() {
  for (const PipelineScheduleKind kind : {PipelineScheduleKind::zb_h1, PipelineScheduleKind::zb_h2})
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 4 * p + 12; ++m)
        for (int stage = 0; stage < p; ++stage) {
          check_closed_form_is_the_walk(kind, p, m, stage);
          if (QTest::currentTestFailed()) return;
        }
}

// ZeRO-1 under expert parallelism (parallel/zero_expert_parallel.h): AdamW's
// states of the dense parameters Ψ_d over the Nd ranks, of the rank's experts
// Ψ_e over the Nd/ep ranks holding them, and the packed spaces' staging.
void TestEstimateLedger::expert_parallel_zero1_predicted_equals_measured_data() {
  QTest::addColumn<int>("dp");
  QTest::addColumn<QString>("precision");
  QTest::newRow("moe dp4 ep2 ZeRO-1") << 4 << "fp32";
  QTest::newRow("moe dp2 ep2 ZeRO-1") << 2 << "fp32";
  QTest::newRow("moe dp4 ep2 ZeRO-1 bf16") << 4 << "bf16";
}

void TestEstimateLedger::expert_parallel_zero1_predicted_equals_measured() {
  QFETCH(int, dp);
  QFETCH(QString, precision);
  EstimateSettings s;
  s.precision = parse_precision(qPrintable(precision));
  s.layout[Axis::dp] = dp;
  s.expert_parallel = 2;
  s.zero_stage = 1;
  s.micro_batch_size = 2;
  s.seq = 32;
  check_ledger("gpt-tiny-moe", s);
  const ModelShape shape = model_shape_from_config(find_model_preset("gpt-tiny-moe"), "gpt-tiny-moe");
  const std::int64_t experts = shape.layer_expert_parameters * shape.layers / 2,
                     dense = shape.parameters() - 2 * experts;
  const auto ceil_div = [](std::int64_t n, std::int64_t d) { return (n + d - 1) / d; };
  const int k = s.precision == Precision::fp32 ? 8 : 12;
  const MemoryEstimate e = estimate_memory(shape, s);
  QCOMPARE(e.ranks[0].bytes[MemoryCategory::optimizer_states], k * (ceil_div(dense, dp) + ceil_div(experts, dp / 2)));
}

void TestEstimateLedger::pipeline_bytes_equal_the_engines_sends() {
  for (const Precision precision : {Precision::fp32, Precision::bf16})
    for (const PipelineScheduleKind schedule : {PipelineScheduleKind::one_f_one_b, PipelineScheduleKind::zb_v}) {
      EstimateSettings s;
      s.schedule = schedule;  // ZB-V: stage 0 sends chunk 0's activations and chunk 1's input gradients
      s.layout[Axis::pp] = 2;
      s.micro_batches = 4;
      s.micro_batch_size = 2;
      s.seq = 32;
      s.precision = precision;
      const ModelShape shape = model_shape_from_config(find_model_preset("gpt-tiny"), "gpt-tiny");
      const TimeEstimate predicted = estimate_time(shape, s, nullptr);
      RunConfig run = to_run_config(shape, s);
      run.threads = 2;
      test::CollectingSink sink;
      Trainer trainer(run, &sink);
      trainer.step();
      std::int64_t sent = 0;
      for (const Event& e : sink.of_rank(0))
        if (e.op == CommOp::send && e.dst == 1) sent += e.bytes;
      QCOMPARE(static_cast<double>(sent), predicted.pp_bytes);
    }
}

QTEST_GUILESS_MAIN(TestEstimateLedger)
#include "test_estimate_ledger.moc"
