// SPDX-License-Identifier: GPL-3.0-or-later
// Training on one GPU (--device cuda) against the same run on the CPU: the
// losses of 20 steps of gpt-tiny and bert-tiny in fp32 follow the CPU's, fp16
// and bf16 stay close, and the rank's ledger (now cudaMalloc'd buffers) holds
// the same model-state bytes; its memory samples carry cudaMemGetInfo's
// figures and, from step 2 on, the caching allocator reserves nothing new.
// Several ranks sharing GPU 0 (dp 2 with DDP and ZeRO-1/2/3, naive
// DataParallel, pp 2, dp 2 x pp 2) follow the same layout on CPU ranks, and
// so do ranks on one GPU each over NCCL where there are two GPUs; so do
// tensor parallelism (tp 2: GPT, BERT with SP) and GPT's tp 2 with SP over NCCL,
// and context parallelism (GPT cp 2 sharing GPU 0 and over NCCL).
// Skips with the reason where no GPU is usable. Against the CUDA emulation on
// the CPU (tests/engine/cuda_emulation, as test_cuda_training_emulated in CI,
// with two pretend GPUs and the NCCL plugin over a stand-in NCCL) the same
// checks run on shorter runs: fewer steps and sequences of 32.
#include <QTest>
#include <algorithm>
#include <cmath>

#include "engine/collecting_sink.h"
#include "ops/device.h"
#include "ops/nccl.h"
#include "train/trainer.h"

using namespace shardscope;

namespace {

// The CUDA emulation runs every GPU thread as a fiber on the CPU: about a
// second per gpt-tiny step, so its runs are shorter.
bool emulated() {
  static const bool is = [] {
    const DeviceProbe probe = probe_cuda();
    return probe.available() && probe.gpus.front().name.find("emulation") != std::string::npos;
  }();
  return is;
}

// The emulation's matmuls round their operands as the tensor cores do but sum
// in the CPU's order, so its 16-bit runs stay within about 2e-4 of the CPU's
// (a GPU sums in other orders, hence the rows' 16-bit sized bounds): a tighter
// bound there, which a wrong gradient reduction in 4 steps (about 1.5e-2)
// does not meet.
double tolerance_for(double gpu_tolerance) {
  return emulated() ? std::min(gpu_tolerance, 2e-3) : gpu_tolerance;
}

RunConfig config(const char* model, const char* device, Precision precision) {
  RunConfig c;
  c.model = model;
  c.steps = emulated() ? 8 : 20;
  c.batch = 8;
  c.seq = emulated() ? 32 : 64;
  c.lr = 3e-3f;
  c.threads = 2;
  c.device = device;
  c.precision = precision;
  if (precision == Precision::fp16) c.initial_scale_power = 10;  // no overflow in 20 steps: the runs line up
  return c;
}

struct Run {
  std::vector<float> losses;
  MemoryBytes memory;
  std::string backend;
  std::vector<MemoryBytes> rank_memory;
};

Run train(const RunConfig& c) {
  Trainer trainer(c);
  Run run;
  trainer.run([&](const StepMetrics& m) { run.losses.push_back(m.loss); });
  run.memory = trainer.ledger().current();
  run.backend = trainer.backend_name();
  for (int r = 0; r < trainer.world_size(); ++r) run.rank_memory.push_back(trainer.ledger(r).current());
  return run;
}

double worst_relative(const Run& a, const Run& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.losses.size() && i < b.losses.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a.losses[i]) - b.losses[i]) / b.losses[i]);
  return worst;
}

void add_model_columns() {
  QTest::addColumn<QString>("model");
  QTest::addColumn<int>("precision");
  QTest::addColumn<double>("gpu_tolerance");
}

// The data row's model on one GPU against one CPU rank: the losses agree within the row's
// tolerance, fall, and the model-state bytes match.
void model_of_the_row_follows_cpu() {
  QFETCH(QString, model);
  QFETCH(int, precision);
  QFETCH(double, gpu_tolerance);
  const double tolerance = tolerance_for(gpu_tolerance);
  const auto p = static_cast<Precision>(precision);
  const std::string name = model.toStdString();
  const Run cpu = train(config(name.c_str(), "cpu", p));
  const Run gpu = train(config(name.c_str(), "cuda", p));
  QVERIFY2(gpu.backend.rfind("cuda:", 0) == 0, gpu.backend.c_str());
  QCOMPARE(gpu.losses.size(), cpu.losses.size());
  const double worst = worst_relative(gpu, cpu);
  qInfo("%s: first loss gpu %.6f cpu %.6f, last gpu %.6f cpu %.6f, worst relative difference %.2e", qPrintable(model),
        static_cast<double>(gpu.losses.front()), static_cast<double>(cpu.losses.front()),
        static_cast<double>(gpu.losses.back()), static_cast<double>(cpu.losses.back()), worst);
  QVERIFY2(worst < tolerance, qPrintable(QString("worst relative loss difference %1").arg(worst)));
  QVERIFY(gpu.losses.back() < gpu.losses.front() - (emulated() ? 0.2 : 0.5));  // it learns
  for (MemoryCategory c : {MemoryCategory::parameters, MemoryCategory::gradients, MemoryCategory::optimizer_states})
    QCOMPARE(gpu.memory[c], cpu.memory[c]);
}

void add_layout_columns() {
  QTest::addColumn<int>("dp");
  QTest::addColumn<int>("pp");
  QTest::addColumn<int>("zero");
  QTest::addColumn<bool>("naive");
  QTest::addColumn<int>("precision");
  QTest::addColumn<double>("gpu_tolerance");
}

// The data row's layout, 10 steps (4 emulated) on CPU ranks and then on `gpus`: the losses
// agree within the row's tolerance, fall, and every rank holds the same
// model-state bytes.
void layout_of_the_row_follows_cpu(const std::vector<int>& gpus, const char* how) {
  QFETCH(int, dp);
  QFETCH(int, pp);
  QFETCH(int, zero);
  QFETCH(bool, naive);
  QFETCH(int, precision);
  QFETCH(double, gpu_tolerance);
  const double tolerance = tolerance_for(gpu_tolerance);
  RunConfig c = config("gpt-tiny", "cpu", static_cast<Precision>(precision));
  c.steps = emulated() ? 4 : 10;
  c.layout[Axis::dp] = dp;
  c.layout[Axis::pp] = pp;
  c.zero_stage = zero;
  c.dp_mode = naive ? DataParallelMode::naive : DataParallelMode::ddp;
  if (pp > 1) c.micro_batches = 2;
  const Run cpu = train(c);
  c.device = "cuda";
  c.gpus = gpus;
  const Run gpu = train(c);
  QVERIFY2(gpu.backend.rfind("cuda:", 0) == 0, gpu.backend.c_str());
  QCOMPARE(gpu.losses.size(), cpu.losses.size());
  const double worst = worst_relative(gpu, cpu);
  qInfo("%s %s: last loss gpu %.6f cpu %.6f, worst relative difference %.2e", QTest::currentDataTag(), how,
        static_cast<double>(gpu.losses.back()), static_cast<double>(cpu.losses.back()), worst);
  QVERIFY2(worst < tolerance, qPrintable(QString("worst relative loss difference %1").arg(worst)));
  QVERIFY(gpu.losses.back() < gpu.losses.front());
  QCOMPARE(gpu.rank_memory.size(), cpu.rank_memory.size());
  for (std::size_t r = 0; r < gpu.rank_memory.size(); ++r)
    for (MemoryCategory m : {MemoryCategory::parameters, MemoryCategory::gradients, MemoryCategory::optimizer_states})
      QCOMPARE(gpu.rank_memory[r][m], cpu.rank_memory[r][m]);
}

// The data row's layout with one rank per GPU over NCCL (two GPUs and NCCL, else skipped).
void over_nccl_the_row_follows_cpu() {
  if (probe_cuda().gpus.size() < 2) QSKIP("skipped: one rank per GPU needs 2 GPUs");
  const NcclAvailability nccl = probe_nccl();
  if (!nccl.available) QSKIP(qPrintable(QString::fromStdString("skipped: no NCCL (" + nccl.reason + ")")));
  layout_of_the_row_follows_cpu({0, 1}, "over NCCL");
}

// tp 2 (with SP or not) for a few steps on CPU ranks, then on `gpus`: the
// losses agree within fp32's tolerance, fall, and the model-state bytes match.
void tensor_parallel_follows_cpu_ranks(const std::string& model, bool sequence_parallel, const std::vector<int>& gpus,
                                       const char* how) {
  RunConfig c = config(model.c_str(), "cpu", Precision::fp32);
  c.steps = emulated() ? 3 : 10;
  c.batch = 4;  // short enough for the emulation on busy CI cores
  c.layout[Axis::tp] = 2;
  c.sequence_parallel = sequence_parallel;
  const Run cpu = train(c);
  c.device = "cuda";
  c.gpus = gpus;
  const Run gpu = train(c);
  QVERIFY2(gpu.backend.rfind("cuda:", 0) == 0, gpu.backend.c_str());
  QCOMPARE(gpu.losses.size(), cpu.losses.size());
  const double worst = worst_relative(gpu, cpu);
  qInfo("%s tp2%s %s: last loss gpu %.6f cpu %.6f, worst relative difference %.2e", model.c_str(),
        sequence_parallel ? " SP" : "", how, static_cast<double>(gpu.losses.back()),
        static_cast<double>(cpu.losses.back()), worst);
  QVERIFY2(worst < tolerance_for(1e-3), qPrintable(QString("worst relative loss difference %1").arg(worst)));
  QVERIFY(gpu.losses.back() < gpu.losses.front());
  QCOMPARE(gpu.rank_memory.size(), cpu.rank_memory.size());
  for (std::size_t r = 0; r < gpu.rank_memory.size(); ++r)
    for (MemoryCategory m : {MemoryCategory::parameters, MemoryCategory::gradients, MemoryCategory::optimizer_states})
      QCOMPARE(gpu.rank_memory[r][m], cpu.rank_memory[r][m]);
}

// cp 2 (ring attention's blocks as backend ops, ops/cuda/cuda_ring_attention.cu)
// for a few steps on CPU ranks, then on `gpus`: the losses agree within 1e-5
// (relative), fall, and the model-state bytes match.
void context_parallel_follows_cpu_ranks(const std::vector<int>& gpus, const char* how) {
  RunConfig c = config("gpt-tiny", "cpu", Precision::fp32);
  c.steps = emulated() ? 3 : 10;
  c.batch = 4;
  c.layout[Axis::cp] = 2;
  const Run cpu = train(c);
  c.device = "cuda";
  c.gpus = gpus;
  const Run gpu = train(c);
  QVERIFY2(gpu.backend.rfind("cuda:", 0) == 0, gpu.backend.c_str());
  QCOMPARE(gpu.losses.size(), cpu.losses.size());
  const double worst = worst_relative(gpu, cpu);
  qInfo("gpt-tiny cp2 %s: last loss gpu %.6f cpu %.6f, worst relative difference %.2e", how,
        static_cast<double>(gpu.losses.back()), static_cast<double>(cpu.losses.back()), worst);
  QVERIFY2(worst <= 1e-5, qPrintable(QString("worst relative loss difference %1").arg(worst)));
  QVERIFY(gpu.losses.back() < gpu.losses.front());
  for (std::size_t r = 0; r < gpu.rank_memory.size(); ++r)
    for (MemoryCategory m : {MemoryCategory::parameters, MemoryCategory::gradients, MemoryCategory::optimizer_states})
      QCOMPARE(gpu.rank_memory[r][m], cpu.rank_memory[r][m]);
}

}  // namespace

class TestCudaTraining : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    const DeviceProbe probe = probe_cuda();
    if (!probe.available()) QSKIP(qPrintable(QString::fromStdString("skipped: no GPU (" + probe.reason + ")")));
  }

  // Four runs a function at most: the emulation takes several seconds a run, and no test function may
  // pass 60 s on busy CI cores.
  void gpu_follows_cpu_fp32_data() {
    add_model_columns();
    // fp32: the GPU sums in other orders (cuBLAS, per-row kernels), so the runs
    // drift apart by float rounding only.
    QTest::newRow("gpt-tiny fp32") << "gpt-tiny" << static_cast<int>(Precision::fp32) << 1e-3;
    QTest::newRow("bert-tiny fp32") << "bert-tiny" << static_cast<int>(Precision::fp32) << 1e-3;
  }
  void gpu_follows_cpu_fp32() { model_of_the_row_follows_cpu(); }

  void gpu_follows_cpu_16_bit_data() {
    add_model_columns();
    // 16 bits round the same values, so the tolerance is 16-bit sized.
    QTest::newRow("gpt-tiny fp16") << "gpt-tiny" << static_cast<int>(Precision::fp16) << 1e-2;
    QTest::newRow("gpt-tiny bf16") << "gpt-tiny" << static_cast<int>(Precision::bf16) << 3e-2;
  }
  void gpu_follows_cpu_16_bit() { model_of_the_row_follows_cpu(); }

  void data_parallel_ranks_sharing_one_gpu_follow_cpu_ranks_data() {
    add_layout_columns();
    const int fp32 = static_cast<int>(Precision::fp32);
    QTest::newRow("dp2 DDP") << 2 << 1 << 0 << false << fp32 << 1e-3;
    QTest::newRow("dp2 ZeRO-1") << 2 << 1 << 1 << false << fp32 << 1e-3;
    QTest::newRow("dp2 ZeRO-2") << 2 << 1 << 2 << false << fp32 << 1e-3;
  }
  void data_parallel_ranks_sharing_one_gpu_follow_cpu_ranks() {
    layout_of_the_row_follows_cpu({0}, "sharing GPU 0");
  }

  void more_ranks_sharing_one_gpu_follow_cpu_ranks_data() {
    add_layout_columns();
    const int fp32 = static_cast<int>(Precision::fp32);
    QTest::newRow("dp2 ZeRO-3") << 2 << 1 << 3 << false << fp32 << 1e-3;
    QTest::newRow("naive dp2") << 2 << 1 << 0 << true << fp32 << 1e-3;
    QTest::newRow("pp2") << 1 << 2 << 0 << false << fp32 << 1e-3;
  }
  void more_ranks_sharing_one_gpu_follow_cpu_ranks() { layout_of_the_row_follows_cpu({0}, "sharing GPU 0"); }

  void ranks_sharing_one_gpu_in_16_bits_follow_cpu_ranks_data() {
    add_layout_columns();
    const int bf16 = static_cast<int>(Precision::bf16);
    QTest::newRow("dp2 x pp2 ZeRO-1 bf16") << 2 << 2 << 1 << false << bf16 << 3e-2;
    QTest::newRow("dp2 ZeRO-3 bf16") << 2 << 1 << 3 << false << bf16 << 3e-2;
  }
  void ranks_sharing_one_gpu_in_16_bits_follow_cpu_ranks() { layout_of_the_row_follows_cpu({0}, "sharing GPU 0"); }

  // One rank per GPU, NCCL between them (needs two GPUs and NCCL), in two functions of a few runs.
  void one_rank_per_gpu_over_nccl_follows_cpu_ranks_data() {
    add_layout_columns();
    const int fp32 = static_cast<int>(Precision::fp32);
    QTest::newRow("dp2 DDP") << 2 << 1 << 0 << false << fp32 << 1e-3;
    QTest::newRow("dp2 ZeRO-3") << 2 << 1 << 3 << false << fp32 << 1e-3;
    QTest::newRow("naive dp2") << 2 << 1 << 0 << true << fp32 << 1e-3;
  }
  void one_rank_per_gpu_over_nccl_follows_cpu_ranks() { over_nccl_the_row_follows_cpu(); }

  void one_rank_per_gpu_over_nccl_pipeline_and_16_bit_follow_cpu_ranks_data() {
    add_layout_columns();
    const int fp32 = static_cast<int>(Precision::fp32), bf16 = static_cast<int>(Precision::bf16);
    QTest::newRow("pp2") << 1 << 2 << 0 << false << fp32 << 1e-3;
    QTest::newRow("dp2 ZeRO-2 bf16") << 2 << 1 << 2 << false << bf16 << 3e-2;
  }
  void one_rank_per_gpu_over_nccl_pipeline_and_16_bit_follow_cpu_ranks() { over_nccl_the_row_follows_cpu(); }

  // Tensor parallelism on GPUs: the vocabulary-parallel embedding and loss
  // and sequence parallelism's token blocks are device ops
  // (ops/cuda/cuda_vocab_parallel.cu), so tp 2, with and without SP, follows
  // the same layout on CPU ranks: two ranks sharing GPU 0, and one rank per
  // GPU over NCCL where there are two.
  void tensor_parallel_sharing_one_gpu_follows_cpu_ranks_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("sequence_parallel");
    QTest::newRow("gpt-tiny tp2") << "gpt-tiny" << false;
    QTest::newRow("bert-tiny tp2 SP") << "bert-tiny" << true;
  }

  void tensor_parallel_sharing_one_gpu_follows_cpu_ranks() {
    QFETCH(QString, model);
    QFETCH(bool, sequence_parallel);
    tensor_parallel_follows_cpu_ranks(model.toStdString(), sequence_parallel, {0}, "sharing GPU 0");
  }

  void tensor_parallel_over_nccl_follows_cpu_ranks() {
    if (probe_cuda().gpus.size() < 2) QSKIP("skipped: one rank per GPU needs 2 GPUs");
    const NcclAvailability nccl = probe_nccl();
    if (!nccl.available) QSKIP(qPrintable(QString::fromStdString("skipped: no NCCL (" + nccl.reason + ")")));
    tensor_parallel_follows_cpu_ranks("gpt-tiny", /*sequence_parallel=*/true, {0, 1}, "over NCCL");
  }

  // Context parallelism on GPUs: the ring's blocks live in device memory and
  // their work is backend ops, so cp 2 follows the same layout on CPU ranks.
  void context_parallel_sharing_one_gpu_follows_cpu_ranks() {
    context_parallel_follows_cpu_ranks({0}, "sharing GPU 0");
  }

  void context_parallel_over_nccl_follows_cpu_ranks() {
    if (probe_cuda().gpus.size() < 2) QSKIP("skipped: one rank per GPU needs 2 GPUs");
    const NcclAvailability nccl = probe_nccl();
    if (!nccl.available) QSKIP(qPrintable(QString::fromStdString("skipped: no NCCL (" + nccl.reason + ")")));
    context_parallel_follows_cpu_ranks({0, 1}, "over NCCL");
  }

  // One rank per GPU over NCCL, DDP in small buckets: a bucket's all-reduce
  // runs while backward computes the layers below it. Its span (CUDA events on
  // the communicator's stream) overlaps a layer's backward span (ended by a
  // device wait) on some rank in the last step; a DDP that waited for each
  // bucket before going on, or reduced them all after backward, would show
  // them one after another.
  void ddp_buckets_overlap_backward_over_nccl() {
    if (probe_cuda().gpus.size() < 2) QSKIP("skipped: one rank per GPU needs 2 GPUs");
    if (!probe_nccl().available) QSKIP("skipped: no NCCL");
    RunConfig c = config("gpt-tiny", "cuda", Precision::fp32);
    c.steps = 2;
    c.layout[Axis::dp] = 2;
    c.gpus = {0, 1};
    c.bucket_mb = 0.5;  // gpt-tiny's 3.4 MB of gradients in several buckets
    test::CollectingSink sink;
    Trainer trainer(c, &sink);
    trainer.run({});
    int buckets = 0, overlaps = 0;
    for (const Event& comm : sink.events()) {
      if (comm.kind != EventKind::comm_span || comm.op != CommOp::all_reduce || comm.bucket < 0 || comm.step != 2)
        continue;
      ++buckets;
      for (const Event& b : sink.events())
        if (b.kind == EventKind::compute_span && b.compute == ComputeKind::backward && b.layer >= 0 &&
            b.rank == comm.rank && b.step == 2 && comm.start_ns < b.end_ns && b.start_ns < comm.end_ns)
          ++overlaps;
    }
    qInfo("step 2: %d bucket all-reduces, %d overlaps with a layer's backward", buckets, overlaps);
    QVERIFY2(buckets >= 4, qPrintable(QString("%1 bucket all-reduces in step 2").arg(buckets)));
    QVERIFY(overlaps > 0);
  }

  // A rank that fails stops the others, on one GPU and over NCCL: no hang.
  void a_failing_rank_stops_every_rank() {
    for (const std::vector<int>& gpus : {std::vector<int>{0}, std::vector<int>{0, 1}}) {
      if (gpus.size() > probe_cuda().gpus.size() || (gpus.size() > 1 && !probe_nccl().available)) continue;
      RunConfig c = config("gpt-tiny", "cuda", Precision::fp32);
      c.layout[Axis::dp] = 2;
      c.gpus = gpus;
      c.fail_rank = 1;
      c.fail_step = 2;
      Trainer trainer(c);
      bool failed = false;
      try {
        trainer.run([](const StepMetrics&) {});
      } catch (const RankFailure& e) {
        failed = std::string(e.what()).find("injected failure") != std::string::npos;
      }
      QVERIFY2(failed, gpus.size() > 1 ? "over NCCL" : "sharing one GPU");
    }
  }

  // A rank whose cudaMalloc fails stops every rank, with the category, the bytes
  // asked for and the estimator's prediction, on one GPU and over NCCL. Only
  // against the emulation, whose device size the test sets: no GPU is small
  // enough for gpt-tiny, and a model large enough for a real one would take
  // minutes to build.
  void a_rank_out_of_gpu_memory_stops_every_rank() {
    if (!emulated()) QSKIP("skipped: runs against the CUDA emulation only (it sets the device's size)");
    for (const std::vector<int>& gpus : {std::vector<int>{0}, std::vector<int>{0, 1}}) {
      if (gpus.size() > probe_cuda().gpus.size() || (gpus.size() > 1 && !probe_nccl().available)) continue;
      RunConfig c = config("gpt-tiny", "cuda", Precision::fp32);
      c.layout[Axis::dp] = 2;
      c.gpus = gpus;
      c.batch = 64;  // activations of 32 sequences of 64 per rank: far more than the model states
      c.seq = 64;
      c.steps = 1;
      qputenv("SHARDSCOPE_EMULATED_GPU_BYTES", QByteArray::number(48 << 20));
      std::string message;
      try {
        Trainer trainer(c);
        trainer.run([](const StepMetrics&) {});
      } catch (const RankFailure& e) {
        message = e.what();
      } catch (const std::exception& e) {
        message = std::string("not a RankFailure: ") + e.what();
      }
      qunsetenv("SHARDSCOPE_EMULATED_GPU_BYTES");
      const char* how = gpus.size() > 1 ? "over NCCL" : "sharing one GPU";
      qInfo("%s: %s", how, message.c_str());
      QVERIFY2(message.find("all 2 ranks stopped") != std::string::npos, message.c_str());
      QVERIFY2(message.find("out of cuda:") != std::string::npos, message.c_str());
      QVERIFY2(message.find(" asked for") != std::string::npos, message.c_str());
      QVERIFY2(message.find("cudaErrorMemoryAllocation") != std::string::npos, message.c_str());
      QVERIFY2(message.find("the estimator predicted") != std::string::npos, message.c_str());
    }
  }

  void memory_samples_carry_the_gpus_figures() {
    RunConfig c = config("gpt-tiny", "cuda", Precision::fp32);
    c.steps = 3;
    test::CollectingSink sink;
    Trainer trainer(c, &sink);
    trainer.run({});
    std::vector<Event> samples;
    for (const Event& e : sink.events())
      if (e.kind == EventKind::memory_sample) samples.push_back(e);
    QCOMPARE(samples.size(), std::size_t{3});
    for (const Event& e : samples) {
      std::int64_t ledger = 0;
      for (std::int64_t bytes : e.memory) ledger += bytes;
      QCOMPARE(e.device, c.gpus.front());
      QVERIFY(e.device_total_bytes > 0);
      QVERIFY(e.device_used_bytes >= e.device_reserved_bytes);
      QVERIFY(e.device_reserved_bytes >= ledger);
      QCOMPARE(e.device_reserved_bytes, samples.front().device_reserved_bytes);  // no cudaMalloc after step 1
    }
  }
};

QTEST_GUILESS_MAIN(TestCudaTraining)
#include "test_cuda_training.moc"
