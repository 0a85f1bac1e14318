// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend as a whole: the same inputs give the same bits on every run
// (no op sums with atomics), a backend on a second GPU works from a thread
// last on the first, the path host code without CUDA headers takes through the
// plugin (probe, backend, memory, 16-bit helpers, non-finite scan), and errors
// that name the failing call and op. Where no GPU is usable, every test is
// skipped with "skipped: no GPU (<reason>)" and the suite passes.
#include <cuda_runtime.h>

#include <QTest>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/half.h"
#include "gpu/cuda_test_support.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/device.h"

using namespace shardscope;
using namespace shardscope::test;

// Tolerances, DeviceArray, COMPARE_NEAR / COMPARE_EXACT: cuda_test_support.h.

class TestCudaBackend : public QObject {
  Q_OBJECT
  std::unique_ptr<Backend> cpu = make_cpu_backend({2});
  std::unique_ptr<CudaBackend> gpu;

 private Q_SLOTS:
  void initTestCase();
  void results_repeat_bit_for_bit();
  void second_gpu_when_present();
  void engine_path_through_the_plugin();
  void errors_name_the_call_and_the_op();
};

void TestCudaBackend::initTestCase() {
  const DeviceProbe probe = probe_cuda();
  if (!probe.available()) QSKIP(qPrintable(QString::fromStdString("skipped: no GPU (" + probe.reason + ")")));
  gpu = std::make_unique<CudaBackend>(CudaBackendOptions{0, GemmMath::fp32});
  qInfo("GPU: %s; CPU reference: %s", gpu->name().c_str(), cpu->name().c_str());
}

void TestCudaBackend::results_repeat_bit_for_bit() {
  // No op uses atomics in a sum, so the same inputs give the same bits every run.
  const int B = 2, T = 33, H = 2, C = 32, rows = B * T;
  const auto qkv = randoms(static_cast<std::size_t>(B * T * 3 * C), 120);
  const auto dy = randoms(static_cast<std::size_t>(B * T * C), 121);
  const auto w = randoms(static_cast<std::size_t>(C), 122);
  std::vector<float> zeros_btc(dy.size(), 0.0f), zeros_probs(static_cast<std::size_t>(B * H * T * T), 0.0f);
  std::vector<float> zeros_qkv(qkv.size(), 0.0f), zeros_c(static_cast<std::size_t>(C), 0.0f);
  std::vector<float> zeros_rows(static_cast<std::size_t>(rows), 0.0f);
  DeviceArray gqkv(qkv), gdy(dy), gw(w);
  DeviceArray gmany(randoms(static_cast<std::size_t>(600 * C), 123));
  DeviceArray gids(random_ints(static_cast<std::size_t>(rows), 124, 5));  // few ids: long runs
  const auto logits = randoms(static_cast<std::size_t>(rows * 1000), 125, 4.0f);
  DeviceArray glogits(logits);
  DeviceArray gtargets(random_ints(static_cast<std::size_t>(rows), 126, 1000));
  std::vector<std::vector<float>> runs;
  for (int run = 0; run < 2; ++run) {
    DeviceArray out(zeros_btc), probs(zeros_probs), d_qkv(zeros_qkv), scratch(zeros_probs);
    gpu->attention_forward(out.get(), probs.get(), gqkv.get(), B, T, C, H, AttentionMask{true, nullptr});
    gpu->attention_backward(d_qkv.get(), scratch.get(), gdy.get(), gqkv.get(), out.get(), probs.get(), B, T, C, H,
                            AttentionMask{true, nullptr});
    DeviceArray ln_out(zeros_btc), mean(zeros_rows), rstd(zeros_rows), d_in(zeros_btc), d_w(zeros_c), d_b(zeros_c);
    gpu->layernorm_forward(ln_out.get(), mean.get(), rstd.get(), gdy.get(), gw.get(), gw.get(), rows, C, 1e-5f);
    gpu->layernorm_backward(d_in.get(), d_w.get(), d_b.get(), gdy.get(), gdy.get(), gw.get(), mean.get(), rstd.get(),
                            rows, C, false);
    // Column sums over several row tiles, the sorted embedding scatter, block-per-row cross-entropy.
    const int many_rows = 600, V = 1000;
    DeviceArray d_bias(zeros_c), d_tokens(std::vector<float>(static_cast<std::size_t>(V * C), 0.0f));
    DeviceArray d_positions(std::vector<float>(static_cast<std::size_t>(T * C), 0.0f));
    gpu->linear_backward(nullptr, d_w.get(), d_bias.get(), gmany.get(), gmany.get(), gw.get(), many_rows, 1, C, false);
    gpu->embedding_backward(d_tokens.get(), d_positions.get(), nullptr, gdy.get(), gids.get(), nullptr, B, T, C);
    DeviceArray d_logits(logits);
    gpu->cross_entropy_backward(d_logits.get(), glogits.get(), gtargets.get(), rows, V, 0.5f);
    std::vector<float> all = d_qkv.host();
    for (const auto& part : {out.host(), ln_out.host(), d_in.host(), d_w.host(), d_b.host(), d_bias.host(),
                             d_tokens.host(), d_positions.host(), d_logits.host()})
      all.insert(all.end(), part.begin(), part.end());
    DeviceArray losses(zeros_rows);
    all.push_back(gpu->cross_entropy_forward(losses.get(), glogits.get(), gtargets.get(), rows, V));
    const auto loss_rows = losses.host();
    all.insert(all.end(), loss_rows.begin(), loss_rows.end());
    all.push_back(static_cast<float>(gpu->sum_of_squares(d_qkv.get(), static_cast<std::int64_t>(qkv.size()))));
    runs.push_back(std::move(all));
  }
  COMPARE_EXACT("second run", runs[1], runs[0]);
}

void TestCudaBackend::second_gpu_when_present() {
  // Each op makes its device current, so a backend on cuda:1 works from a thread last on cuda:0.
  const DeviceProbe probe = probe_cuda();
  if (probe.gpus.size() < 2) QSKIP("one GPU: the second-device check needs two");
  auto backend = make_cuda_backend(1);
  QVERIFY2(backend->name().rfind("cuda:1 (", 0) == 0, backend->name().c_str());
  const auto a = randoms(1000, 130), b = randoms(1000, 131);
  auto* device = static_cast<float*>(cuda_device_alloc(1, 2000 * sizeof(float)));
  cuda_copy_to_device(1, device, a.data(), a.size() * sizeof(float));
  cuda_copy_to_device(1, device + 1000, b.data(), b.size() * sizeof(float));
  gpu->synchronize();  // makes cuda:0 current on this thread
  backend->add(device, device, device + 1000, 1000);
  std::vector<float> sum(1000);
  cuda_copy_to_host(1, sum.data(), device, sum.size() * sizeof(float));
  for (std::size_t i = 0; i < sum.size(); ++i) QCOMPARE(sum[i], a[i] + b[i]);
  cuda_device_free(1, device);
}

void TestCudaBackend::engine_path_through_the_plugin() {
  // What host code without CUDA headers does: probe, make a backend, move memory through the plugin.
  const DeviceProbe probe = probe_cuda();
  QVERIFY(probe.available());
  QVERIFY(probe.gpus[0].total_bytes > 0);
  auto backend = make_cuda_backend(0);
  QVERIFY2(backend->name().rfind("cuda:0 (", 0) == 0, backend->name().c_str());
  const std::int64_t n = 4099;
  const auto x = randoms(static_cast<std::size_t>(n), 110);
  void* device = cuda_device_alloc(0, static_cast<std::size_t>(n) * sizeof(float));
  auto* dx = static_cast<float*>(device);
  cuda_copy_to_device(0, dx, x.data(), x.size() * sizeof(float));
  backend->scale(dx, 2.0f, n);
  std::vector<float> back(x.size());
  cuda_copy_to_host(0, back.data(), dx, back.size() * sizeof(float));  // ordered after the scale
  for (std::size_t i = 0; i < x.size(); ++i) QCOMPARE(back[i], 2.0f * x[i]);
  QVERIFY(std::fabs(backend->sum_of_squares(dx, n) - cpu->sum_of_squares(back.data(), n)) <=
          1e-10 * cpu->sum_of_squares(back.data(), n));

  // The mixed-precision helpers through the plugin: the same bits as core/half.h.
  std::vector<std::uint16_t> expect16(x.size());
  half::narrow(DType::bf16, back.data(), expect16.data(), n);
  void* device16 = cuda_device_alloc(0, x.size() * sizeof(std::uint16_t));
  auto* d16 = static_cast<std::uint16_t*>(device16);
  cuda_narrow(*backend, DType::bf16, dx, d16, n);
  std::vector<std::uint16_t> got16(x.size());
  cuda_copy_to_host(0, got16.data(), d16, got16.size() * sizeof(std::uint16_t));
  QVERIFY(got16 == expect16);
  cuda_widen(*backend, DType::bf16, d16, dx, n);
  QCOMPARE(cuda_find_non_finite(*backend, DType::f32, dx, n), std::int64_t{-1});
  const float inf = INFINITY;
  cuda_copy_to_device(0, dx + 1234, &inf, sizeof inf);
  QCOMPARE(cuda_find_non_finite(*backend, DType::f32, dx, n), std::int64_t{1234});
  QCOMPARE(cuda_find_non_finite(*backend, DType::bf16, d16, n), std::int64_t{-1});
  // 1x1x1 gemm in bf16: 3 * 0.5 = 1.5, exact (operands 16 bytes apart, as cuBLAS prefers).
  const std::uint16_t three = half::float_to_bf16_bits(3.0f), one_half = half::float_to_bf16_bits(0.5f);
  cuda_copy_to_device(0, d16, &three, sizeof three);
  cuda_copy_to_device(0, d16 + 8, &one_half, sizeof one_half);
  cuda_gemm_16bit(*backend, DType::bf16, Transpose::no, Transpose::no, 1, 1, 1, 1.0f, d16, 1, d16 + 8, 1, 0.0f,
                  d16 + 16, 1);
  std::uint16_t product = 0;
  cuda_copy_to_host(0, &product, d16 + 16, sizeof product);
  QCOMPARE(half::bf16_bits_to_float(product), 1.5f);
  cuda_zero(0, dx, x.size() * sizeof(float));
  QCOMPARE(backend->sum_of_squares(dx, n), 0.0);
  backend->fill(dx, 1.0f, n);
  cuda_synchronize(*backend);
  cuda_device_free(0, device16);
  cuda_device_free(0, device);
}

void TestCudaBackend::errors_name_the_call_and_the_op() {
  std::vector<float> a(16, 1.0f);
  DeviceArray ga(a);
  try {
    gpu->gemm(Transpose::no, Transpose::no, 4, 4, 4, 1.0f, ga.get(), 2, ga.get(), 4, 0.0f, ga.get(), 4);  // lda < K
    QFAIL("gemm with lda < K did not fail");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    QVERIFY2(what.find("cublasSgemm") != std::string::npos && what.find("gemm") != std::string::npos, e.what());
  }
  try {
    CudaBackend missing(CudaBackendOptions{1000, GemmMath::fp32});
    QFAIL("a backend for device 1000 was made");
  } catch (const std::runtime_error& e) {
    QVERIFY2(std::string(e.what()).find("device 1000") != std::string::npos, e.what());
  }
}

QTEST_GUILESS_MAIN(TestCudaBackend)
#include "test_cuda_backend.moc"
