// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend's element-wise and normalisation ops against the CPU
// backend on the same random inputs: add, bias rows, scale, fill (bit for
// bit), tanh and GELU (both kinds, the backward in place), layernorm forward
// and backward. Tolerances: the exact, element-wise and per-row rows of
// cuda_test_support.h. Where no GPU is usable, every test is skipped with
// "skipped: no GPU (<reason>)" and the suite passes.
#include <cuda_runtime.h>

#include <QTest>
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

class TestCudaElementwise : public QObject {
  Q_OBJECT
  std::unique_ptr<Backend> cpu = make_cpu_backend({2});
  std::unique_ptr<CudaBackend> gpu;

 private Q_SLOTS:
  void initTestCase();
  void element_wise_ops();
  void gelu_forward_backward();
  void layernorm_forward_backward();
};

void TestCudaElementwise::initTestCase() {
  const DeviceProbe probe = probe_cuda();
  if (!probe.available()) QSKIP(qPrintable(QString::fromStdString("skipped: no GPU (" + probe.reason + ")")));
  gpu = std::make_unique<CudaBackend>(CudaBackendOptions{0, GemmMath::fp32});
  qInfo("GPU: %s; CPU reference: %s", gpu->name().c_str(), cpu->name().c_str());
}

void TestCudaElementwise::element_wise_ops() {
  const std::int64_t n = 70001;
  const auto a = randoms(static_cast<std::size_t>(n), 70), b = randoms(static_cast<std::size_t>(n), 71);
  DeviceArray ga(a), gb(b);
  {
    std::vector<float> out(a.size());
    DeviceArray gout(out);
    gpu->add(gout.get(), ga.get(), gb.get(), n);
    cpu->add(out.data(), a.data(), b.data(), n);
    COMPARE_EXACT("add", gout.host(), out);
  }
  {
    const int rows = 301, C = 233;  // rows * C = 70133 > n: use the first rows*C of a fresh vector
    auto x = randoms(static_cast<std::size_t>(rows * C), 72);
    const auto bias = randoms(static_cast<std::size_t>(C), 73);
    DeviceArray gx(x), gbias(bias);
    gpu->add_bias_rows(gx.get(), gbias.get(), rows, C);
    cpu->add_bias_rows(x.data(), bias.data(), rows, C);
    COMPARE_EXACT("add_bias_rows", gx.host(), x);
  }
  {
    auto x = a;
    DeviceArray gx(x);
    gpu->scale(gx.get(), -0.37f, n);
    cpu->scale(x.data(), -0.37f, n);
    COMPARE_EXACT("scale", gx.host(), x);
    gpu->fill(gx.get(), 2.5f, n - 3);
    cpu->fill(x.data(), 2.5f, n - 3);
    COMPARE_EXACT("fill", gx.host(), x);
  }
  {
    std::vector<float> out(a.size());
    DeviceArray gout(out);
    gpu->tanh_forward(gout.get(), ga.get(), n);
    cpu->tanh_forward(out.data(), a.data(), n);
    COMPARE_NEAR("tanh_forward", gout.host(), out, kElementwise);
  }
}

void TestCudaElementwise::gelu_forward_backward() {
  const std::int64_t n = 100003;
  const auto x = randoms(static_cast<std::size_t>(n), 40, 3.0f);
  const auto dy = randoms(static_cast<std::size_t>(n), 41);
  DeviceArray gx(x), gdy(dy);
  for (const auto kind : {math::GeluKind::tanh_approx, math::GeluKind::exact_erf}) {
    const QString what = QString("gelu kind=%1 ").arg(static_cast<int>(kind));
    std::vector<float> out(x.size());
    DeviceArray gout(out);
    gpu->gelu_forward(gout.get(), gx.get(), n, kind);
    cpu->gelu_forward(out.data(), x.data(), n, kind);
    COMPARE_NEAR(what + "forward", gout.host(), out, kGelu);
    // d_in aliasing d_out, as the model does.
    auto d = dy;
    DeviceArray gd(dy);
    gpu->gelu_backward(gd.get(), gd.get(), gx.get(), n, kind);
    cpu->gelu_backward(d.data(), d.data(), x.data(), n, kind);
    COMPARE_NEAR(what + "backward", gd.host(), d, kGelu);
  }
}

void TestCudaElementwise::layernorm_forward_backward() {
  const int rows = 70, C = 96;
  const float eps = 1e-5f;
  auto x = randoms(static_cast<std::size_t>(rows * C), 30, 2.0f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += static_cast<float>(i % 7);  // rows with a non-zero mean
  const auto w = randoms(static_cast<std::size_t>(C), 31);
  const auto b = randoms(static_cast<std::size_t>(C), 32);
  const auto dy = randoms(static_cast<std::size_t>(rows * C), 33);
  DeviceArray gx(x), gw(w), gb(b), gdy(dy);
  std::vector<float> out(x.size()), mean(static_cast<std::size_t>(rows)), rstd(static_cast<std::size_t>(rows));
  DeviceArray gout(out), gmean(mean), grstd(rstd);
  gpu->layernorm_forward(gout.get(), gmean.get(), grstd.get(), gx.get(), gw.get(), gb.get(), rows, C, eps);
  cpu->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows, C, eps);
  COMPARE_NEAR("layernorm_forward out", gout.host(), out, kRow);
  COMPARE_NEAR("layernorm_forward mean", gmean.host(), mean, kRow);
  COMPARE_NEAR("layernorm_forward rstd", grstd.host(), rstd, kRow);
  for (const bool accumulate : {false, true}) {
    auto d_in = randoms(x.size(), 34), d_w = randoms(w.size(), 35), d_b = randoms(b.size(), 36);
    DeviceArray gd_in(d_in), gd_w(d_w), gd_b(d_b);
    // Both backends get the CPU's saved statistics, so only the backward is compared.
    DeviceArray cmean(mean), crstd(rstd);
    gpu->layernorm_backward(gd_in.get(), gd_w.get(), gd_b.get(), gdy.get(), gx.get(), gw.get(), cmean.get(),
                            crstd.get(), rows, C, accumulate);
    cpu->layernorm_backward(d_in.data(), d_w.data(), d_b.data(), dy.data(), x.data(), w.data(), mean.data(),
                            rstd.data(), rows, C, accumulate);
    const QString what = QString("layernorm_backward accumulate=%1 ").arg(accumulate);
    COMPARE_NEAR(what + "d_in", gd_in.host(), d_in, kRow);
    COMPARE_NEAR(what + "d_weight", gd_w.host(), d_w, kRow);
    COMPARE_NEAR(what + "d_bias", gd_b.host(), d_b, kRow);  // the CPU's loop is built with -fassociative-math
  }
}

QTEST_GUILESS_MAIN(TestCudaElementwise)
#include "test_cuda_elementwise.moc"
