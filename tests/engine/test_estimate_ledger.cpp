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
#include "engine/ledger_run.h"
#include "estimate/memory_model.h"
#include "estimate/split_backward_schedules.h"
#include "estimate/time_model.h"
#include "io/hf_model.h"
#include "train/trainer.h"

using namespace shardscope;
using testing::check_ledger;
using testing::config_file_shape;

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
