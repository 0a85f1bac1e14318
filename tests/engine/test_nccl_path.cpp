// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's one-rank-per-GPU path (NcclWorld, NcclCommunicator, the
// trainer's wiring, the pipeline's grouped send + receive) on the CPU: the
// NCCL plugin is replaced by tests/engine/fake_nccl_plugin.cpp, which keeps
// NCCL's rendezvous (a call completes only when its peers' matching calls are
// posted), and the ranks' memory is the pretend device of fake_device.h. Every
// layout trains as the same layout on CPU ranks, nothing hangs (1F1B would,
// without the grouped exchange), a failing rank stops the others, and each
// call is one comm span per rank.
#include <QTest>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "engine/collecting_sink.h"
#include "engine/device_run_config.h"
#include "engine/fake_device.h"
#include "ops/nccl.h"
#include "train/trainer.h"

using namespace shardscope;
using shardscope::test::CollectingSink;
using shardscope::testing::CheckedDeviceBackend;
using shardscope::testing::FakeDevice;
using shardscope::testing::FakeDeviceMemory;
using shardscope::testing::layout_of_the_row;
using shardscope::testing::short_device_run;

namespace {

// One rank per pretend GPU, NCCL (the fake) between them.
std::vector<float> train_over_nccl(RunConfig c, const std::shared_ptr<FakeDevice>& device, EventSink* sink = nullptr) {
  c.device = "cuda";
  c.gpus.clear();
  for (int r = 0; r < c.world_size(); ++r) c.gpus.push_back(r);
  const RankDeviceFactory factory = [device](int) {
    RankDevice d;
    d.memory = std::make_unique<FakeDeviceMemory>(device);
    d.backend = std::make_unique<CheckedDeviceBackend>(device, 1);
    d.comm_backend = std::make_unique<CheckedDeviceBackend>(device, 1);
    return d;
  };
  Trainer trainer(c, sink, factory);
  std::vector<float> losses;
  trainer.run([&](const StepMetrics& m) { losses.push_back(m.loss); });
  return losses;
}

std::vector<float> train_on_cpu(const RunConfig& c) {
  Trainer trainer(c);
  std::vector<float> losses;
  trainer.run([&](const StepMetrics& m) { losses.push_back(m.loss); });
  return losses;
}

}  // namespace

class TestNcclPath : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    ::setenv("SHARDSCOPE_NCCL_PLUGIN", SHARDSCOPE_FAKE_NCCL_PLUGIN, 1);  // before the plugin is first loaded
    const NcclAvailability nccl = probe_nccl();
    QVERIFY2(nccl.available, nccl.reason.c_str());
    QCOMPARE(nccl.version, 99999);  // the fake, not a real NCCL
  }

  void layouts_over_nccl_train_as_cpu_ranks_data() {
    QTest::addColumn<int>("dp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("zero");
    QTest::addColumn<bool>("naive");
    QTest::addColumn<int>("precision");
    QTest::addColumn<QString>("schedule");
    const int fp32 = static_cast<int>(Precision::fp32), fp16 = static_cast<int>(Precision::fp16),
              bf16 = static_cast<int>(Precision::bf16);
    QTest::newRow("dp2 DDP") << 2 << 1 << 0 << false << fp32 << "1f1b";
    QTest::newRow("dp2 ZeRO-1") << 2 << 1 << 1 << false << fp32 << "1f1b";
    QTest::newRow("dp2 ZeRO-2") << 2 << 1 << 2 << false << fp32 << "1f1b";
    QTest::newRow("dp2 ZeRO-3") << 2 << 1 << 3 << false << fp32 << "1f1b";
    QTest::newRow("naive dp2") << 2 << 1 << 0 << true << fp32 << "1f1b";
    QTest::newRow("pp2 1F1B") << 1 << 2 << 0 << false << fp32 << "1f1b";
    QTest::newRow("pp2 GPipe") << 1 << 2 << 0 << false << fp32 << "gpipe";
    QTest::newRow("pp4 1F1B") << 1 << 4 << 0 << false << fp32 << "1f1b";
    QTest::newRow("dp2 x pp2 ZeRO-1") << 2 << 2 << 1 << false << fp32 << "1f1b";
    QTest::newRow("dp2 DDP fp16") << 2 << 1 << 0 << false << fp16 << "1f1b";
    QTest::newRow("dp2 ZeRO-3 bf16") << 2 << 1 << 3 << false << bf16 << "1f1b";
  }

  void layouts_over_nccl_train_as_cpu_ranks() {
    QFETCH(QString, schedule);
    RunConfig c = layout_of_the_row(/*micro_batches=*/4);
    c.schedule = schedule == QLatin1String("gpipe") ? PipelineScheduleKind::gpipe : PipelineScheduleKind::one_f_one_b;
    auto device = std::make_shared<FakeDevice>();
    const std::vector<float> cpu = train_on_cpu(c);
    const std::vector<float> nccl = train_over_nccl(c, device);
    QCOMPARE(nccl.size(), cpu.size());
    // The fake sums in rank order in fp32 and rounds once; CPU ranks sum round
    // the ring (16-bit averages pre-divided): the same up to rounding.
    const double tolerance = c.precision == Precision::fp32 ? 1e-5 : 1e-2;
    for (std::size_t i = 0; i < cpu.size(); ++i)
      QVERIFY2(std::fabs(nccl[i] - cpu[i]) <= tolerance * std::fabs(cpu[i]),
               qPrintable(QString("step %1: NCCL %2, CPU ranks %3").arg(i + 1).arg(nccl[i]).arg(cpu[i])));
    QVERIFY(nccl.back() < nccl.front());
    QCOMPARE(device->live_blocks(), std::size_t{0});
  }

  // Every NCCL call is one comm span per rank: DDP's all-reduces carry no ring
  // step and no destination (NCCL's ring is inside its kernels).
  void each_call_is_one_span_per_rank() {
    RunConfig c = short_device_run();
    c.layout[Axis::dp] = 2;
    c.steps = 1;
    c.eval_every = 0;
    CollectingSink sink;
    auto device = std::make_shared<FakeDevice>();
    train_over_nccl(c, device, &sink);
    int all_reduces = 0;
    for (const Event& e : sink.events()) {
      if (e.kind != EventKind::comm_span || e.op != CommOp::all_reduce) continue;
      QCOMPARE(e.phase, RingPhase::none);
      QCOMPARE(e.ring_step, -1);
      QCOMPARE(e.dst, -1);
      QCOMPARE(e.src, e.rank);
      QVERIFY(e.end_ns >= e.start_ns);
      if (e.bucket >= 0) ++all_reduces;
    }
    QVERIFY(all_reduces >= 2);  // at least one bucket on each rank
    QCOMPARE(all_reduces % 2, 0);
  }

  // A rank that fails mid-step stops the others, which wait in NCCL calls.
  void a_failing_rank_stops_every_rank() {
    RunConfig c = short_device_run();
    c.layout[Axis::dp] = 2;
    c.layout[Axis::pp] = 2;
    c.micro_batches = 4;
    c.fail_rank = 3;
    c.fail_step = 2;
    auto device = std::make_shared<FakeDevice>();
    const auto start = std::chrono::steady_clock::now();
    bool stopped = false;
    try {
      train_over_nccl(c, device);
    } catch (const RankFailure& e) {
      stopped = std::string(e.what()).find("injected failure") != std::string::npos;
    }
    QVERIFY(stopped);
    QVERIFY(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  }
};

QTEST_GUILESS_MAIN(TestNcclPath)
#include "test_nccl_path.moc"
