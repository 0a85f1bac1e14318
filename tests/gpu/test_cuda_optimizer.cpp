// SPDX-License-Identifier: GPL-3.0-or-later
// The optimizer's ops on the CUDA backend against the CPU backend: the sum of
// squares behind gradient-norm clipping (1 to 3 million elements) and three
// AdamW steps. Tolerances: the sum_of_squares and element-wise rows of
// cuda_test_support.h. Where no GPU is usable, every test is skipped with
// "skipped: no GPU (<reason>)" and the suite passes.
#include <cuda_runtime.h>

#include <QTest>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "gpu/cuda_test_support.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/device.h"

using namespace shardscope;
using namespace shardscope::test;

// Tolerances, DeviceArray, COMPARE_NEAR / COMPARE_EXACT: cuda_test_support.h.

class TestCudaOptimizer : public QObject {
  Q_OBJECT
  std::unique_ptr<Backend> cpu = make_cpu_backend({2});
  std::unique_ptr<CudaBackend> gpu;

 private Q_SLOTS:
  void initTestCase();
  void sum_of_squares();
  void adamw();
};

void TestCudaOptimizer::initTestCase() {
  const DeviceProbe probe = probe_cuda();
  if (!probe.available()) QSKIP(qPrintable(QString::fromStdString("skipped: no GPU (" + probe.reason + ")")));
  gpu = std::make_unique<CudaBackend>(CudaBackendOptions{0, GemmMath::fp32});
  qInfo("GPU: %s; CPU reference: %s", gpu->name().c_str(), cpu->name().c_str());
}

void TestCudaOptimizer::sum_of_squares() {
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{3000017}}) {
    const auto x = randoms(static_cast<std::size_t>(n), 80);
    DeviceArray gx(x);
    const double g = gpu->sum_of_squares(gx.get(), n);
    const double c = cpu->sum_of_squares(x.data(), n);
    QVERIFY2(std::fabs(g - c) <= 1e-10 * c,
             qPrintable(QString("n=%1 gpu %2 cpu %3").arg(n).arg(g, 0, 'g', 17).arg(c, 0, 'g', 17)));
    QCOMPARE(gpu->sum_of_squares(gx.get(), 0), 0.0);
  }
}

void TestCudaOptimizer::adamw() {
  const std::int64_t n = 50021;
  auto p = randoms(static_cast<std::size_t>(n), 90), m = randoms(static_cast<std::size_t>(n), 91, 0.1f);
  auto v = randoms(static_cast<std::size_t>(n), 92, 0.1f);
  for (auto& x : v) x = x * x;  // second moments are non-negative
  const auto g = randoms(static_cast<std::size_t>(n), 93);
  DeviceArray gp(p), gm(m), gv(v), gg(g);
  math::AdamWStep step{1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f - 0.9f * 0.9f * 0.9f, 1.0f - 0.95f * 0.95f * 0.95f, 0.5f};
  for (int i = 0; i < 3; ++i) {
    gpu->adamw(gp.get(), gg.get(), gm.get(), gv.get(), n, step);
    cpu->adamw(p.data(), g.data(), m.data(), v.data(), n, step);
  }
  COMPARE_NEAR("adamw params", gp.host(), p, kElementwise);
  COMPARE_NEAR("adamw m", gm.host(), m, kElementwise);
  COMPARE_NEAR("adamw v", gv.host(), v, kElementwise);
}

QTEST_GUILESS_MAIN(TestCudaOptimizer)
#include "test_cuda_optimizer.moc"
