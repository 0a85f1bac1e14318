// SPDX-License-Identifier: GPL-3.0-or-later
// The two ends of the model on the CUDA backend against the CPU backend: the
// token, position and type embeddings forward and backward (bit for bit), the
// cross-entropy loss forward and backward with ignored rows, and tensor
// parallelism's vocabulary-parallel versions of both (a rank owning a slice of
// the vocabulary). Tolerances: the exact and per-row rows, and the mean loss's,
// of cuda_test_support.h. Where no GPU is usable, every test is skipped with
// "skipped: no GPU (<reason>)" and the suite passes.
#include <cuda_runtime.h>

#include <QTest>
#include <algorithm>
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

class TestCudaEmbeddingLoss : public QObject {
  Q_OBJECT
  std::unique_ptr<Backend> cpu = make_cpu_backend({2});
  std::unique_ptr<CudaBackend> gpu;

 private Q_SLOTS:
  void initTestCase();
  void embedding_forward_backward();
  void cross_entropy_forward_backward();
  void vocabulary_parallel_ops();
};

void TestCudaEmbeddingLoss::initTestCase() {
  const DeviceProbe probe = probe_cuda();
  if (!probe.available()) QSKIP(qPrintable(QString::fromStdString("skipped: no GPU (" + probe.reason + ")")));
  gpu = std::make_unique<CudaBackend>(CudaBackendOptions{0, GemmMath::fp32});
  qInfo("GPU: %s; CPU reference: %s", gpu->name().c_str(), cpu->name().c_str());
}

void TestCudaEmbeddingLoss::embedding_forward_backward() {
  const int B = 3, T = 17, C = 40, V = 11, types_n = 2;  // few ids: many repeats in the scatter-add
  const auto ids = random_ints(static_cast<std::size_t>(B * T), 20, V);
  const auto type_ids = random_ints(static_cast<std::size_t>(B * T), 21, types_n);
  const auto tokens = randoms(static_cast<std::size_t>(V * C), 22);
  const auto positions = randoms(static_cast<std::size_t>(T * C), 23);
  const auto types = randoms(static_cast<std::size_t>(types_n * C), 24);
  const auto dy = randoms(static_cast<std::size_t>(B * T * C), 25);
  DeviceArray g_ids(ids), g_type_ids(type_ids);
  DeviceArray g_tokens(tokens), g_positions(positions), g_types(types), g_dy(dy);
  for (const bool with_types : {false, true}) {
    const QString what = QString("embedding types=%1 ").arg(with_types);
    std::vector<float> out(static_cast<std::size_t>(B * T * C), 0.0f);
    DeviceArray g_out(out);
    gpu->embedding_forward(g_out.get(), g_ids.get(), with_types ? g_type_ids.get() : nullptr, g_tokens.get(),
                           g_positions.get(), with_types ? g_types.get() : nullptr, B, T, C);
    cpu->embedding_forward(out.data(), ids.data(), with_types ? type_ids.data() : nullptr, tokens.data(),
                           positions.data(), with_types ? types.data() : nullptr, B, T, C);
    COMPARE_EXACT(what + "forward", g_out.host(), out);

    auto d_tokens = randoms(tokens.size(), 26), d_positions = randoms(positions.size(), 27);
    auto d_types = randoms(types.size(), 28);
    DeviceArray gd_tokens(d_tokens), gd_positions(d_positions), gd_types(d_types);
    gpu->embedding_backward(gd_tokens.get(), gd_positions.get(), with_types ? gd_types.get() : nullptr, g_dy.get(),
                            g_ids.get(), with_types ? g_type_ids.get() : nullptr, B, T, C);
    cpu->embedding_backward(d_tokens.data(), d_positions.data(), with_types ? d_types.data() : nullptr, dy.data(),
                            ids.data(), with_types ? type_ids.data() : nullptr, B, T, C);
    COMPARE_EXACT(what + "d_tokens", gd_tokens.host(), d_tokens);
    COMPARE_EXACT(what + "d_positions", gd_positions.host(), d_positions);
    COMPARE_EXACT(what + "d_types", gd_types.host(), d_types);
  }
}

void TestCudaEmbeddingLoss::cross_entropy_forward_backward() {
  const int rows = 45, V = 301;
  const auto logits = randoms(static_cast<std::size_t>(rows * V), 60, 4.0f);
  auto targets = random_ints(static_cast<std::size_t>(rows), 61, V);
  targets[3] = -1;  // ignored rows
  targets[17] = -100;
  DeviceArray glogits(logits);
  DeviceArray gtargets(targets);
  std::vector<float> losses(static_cast<std::size_t>(rows), 7.0f);
  DeviceArray glosses(losses);
  const float gpu_mean = gpu->cross_entropy_forward(glosses.get(), glogits.get(), gtargets.get(), rows, V);
  const float cpu_mean = cpu->cross_entropy_forward(losses.data(), logits.data(), targets.data(), rows, V);
  COMPARE_NEAR("cross_entropy_forward losses", glosses.host(), losses, kRow);
  // The mean: of the GPU's own losses to float rounding (the reduction), and of the CPU's within the row tolerance.
  const auto gpu_losses = glosses.host();
  double sum = 0.0;
  int counted = 0;
  for (int r = 0; r < rows; ++r)
    if (targets[static_cast<std::size_t>(r)] >= 0) {
      sum += gpu_losses[static_cast<std::size_t>(r)];
      ++counted;
    }
  const double own_mean = sum / counted;
  QVERIFY2(
      std::fabs(gpu_mean - own_mean) <= 1e-6 * own_mean,
      qPrintable(QString("mean loss gpu %1, mean of its losses %2").arg(gpu_mean, 0, 'g', 9).arg(own_mean, 0, 'g', 9)));
  QVERIFY2(std::fabs(gpu_mean - cpu_mean) <= kRow.atol + kRow.rtol * std::fabs(cpu_mean),
           qPrintable(QString("mean loss gpu %1 cpu %2").arg(gpu_mean, 0, 'g', 9).arg(cpu_mean, 0, 'g', 9)));
  QCOMPARE(gpu_losses[3], 0.0f);

  std::vector<float> d_logits(logits.size(), 5.0f);
  DeviceArray gd_logits(d_logits);
  gpu->cross_entropy_backward(gd_logits.get(), glogits.get(), gtargets.get(), rows, V, 1.0f / 43.0f);
  cpu->cross_entropy_backward(d_logits.data(), logits.data(), targets.data(), rows, V, 1.0f / 43.0f);
  COMPARE_NEAR("cross_entropy_backward", gd_logits.host(), d_logits, kRow);

  // Every target ignored: mean 0, as on the CPU.
  const std::vector<std::int32_t> ignored(static_cast<std::size_t>(rows), -1);
  DeviceArray gignored(ignored);
  QCOMPARE(gpu->cross_entropy_forward(glosses.get(), glogits.get(), gignored.get(), rows, V), 0.0f);
}

// Tensor parallelism's vocabulary-parallel ops (ops/cuda/cuda_vocab_parallel.cu): this rank owns
// ids [4, 9) of 11 and logit columns [301, 602) of 602; the others' rows are 0 and the target
// logit only where owned.
void TestCudaEmbeddingLoss::vocabulary_parallel_ops() {
  const int B = 3, T = 17, C = 40, V = 11, first = 4, owned = 5;
  const auto ids = random_ints(static_cast<std::size_t>(B * T), 90, V);
  const auto type_ids = random_ints(static_cast<std::size_t>(B * T), 91, 2);
  const auto tokens = randoms(static_cast<std::size_t>(owned * C), 92);
  const auto positions = randoms(static_cast<std::size_t>(T * C), 93);
  const auto types = randoms(static_cast<std::size_t>(2 * C), 94);
  const auto dy = randoms(static_cast<std::size_t>(B * T * C), 95);
  DeviceArray g_ids(ids), g_type_ids(type_ids);
  DeviceArray g_tokens(tokens), g_positions(positions), g_types(types), g_dy(dy);
  std::vector<float> out(static_cast<std::size_t>(B * T * C), 3.0f);
  DeviceArray g_out(out);
  gpu->vocab_embedding_forward(g_out.get(), g_ids.get(), g_type_ids.get(), g_tokens.get(), g_positions.get(),
                               g_types.get(), B, T, C, first, owned);
  cpu->vocab_embedding_forward(out.data(), ids.data(), type_ids.data(), tokens.data(), positions.data(), types.data(),
                               B, T, C, first, owned);
  COMPARE_EXACT("vocab_embedding_forward", g_out.host(), out);
  auto d_tokens = randoms(tokens.size(), 96), d_positions = randoms(positions.size(), 97);
  auto d_types = randoms(types.size(), 98);
  DeviceArray gd_tokens(d_tokens), gd_positions(d_positions), gd_types(d_types);
  gpu->vocab_embedding_backward(gd_tokens.get(), gd_positions.get(), gd_types.get(), g_dy.get(), g_ids.get(),
                                g_type_ids.get(), B, T, C, first, owned);
  cpu->vocab_embedding_backward(d_tokens.data(), d_positions.data(), d_types.data(), dy.data(), ids.data(),
                                type_ids.data(), B, T, C, first, owned);
  COMPARE_EXACT("vocab_embedding_backward d_tokens", gd_tokens.host(), d_tokens);
  COMPARE_EXACT("vocab_embedding_backward d_positions", gd_positions.host(), d_positions);
  COMPARE_EXACT("vocab_embedding_backward d_types", gd_types.host(), d_types);

  const int rows = 45, Vt = 301, t = 2, head = Vt;  // this rank: tp rank 1 of 2
  const auto logits = randoms(static_cast<std::size_t>(rows * Vt), 99, 4.0f);
  auto targets = random_ints(static_cast<std::size_t>(rows), 100, t * Vt);
  targets[3] = -1;
  DeviceArray glogits(logits);
  DeviceArray gtargets(targets);
  // (t, rows): the other rank's maxima, then this rank's own
  std::vector<float> maxima = randoms(static_cast<std::size_t>(t * rows), 101, 4.0f);
  std::vector<float> mine(static_cast<std::size_t>(rows));
  DeviceArray gmine(mine);
  gpu->row_max(gmine.get(), glogits.get(), rows, Vt);
  cpu->row_max(mine.data(), logits.data(), rows, Vt);
  COMPARE_EXACT("row_max", gmine.host(), mine);
  std::copy(mine.begin(), mine.end(), maxima.begin() + rows);
  DeviceArray gmaxima(maxima);
  std::vector<float> sums(static_cast<std::size_t>(2 * rows)), row_max(static_cast<std::size_t>(rows));
  DeviceArray gsums(sums), grow_max(row_max);
  gpu->vocab_cross_entropy_sums(gsums.get(), grow_max.get(), gmaxima.get(), t, glogits.get(), gtargets.get(), rows, Vt,
                                head);
  cpu->vocab_cross_entropy_sums(sums.data(), row_max.data(), maxima.data(), t, logits.data(), targets.data(), rows, Vt,
                                head);
  COMPARE_EXACT("vocab_cross_entropy_sums row_max", grow_max.host(), row_max);
  COMPARE_NEAR("vocab_cross_entropy_sums", gsums.host(), sums, kRow);
  std::vector<float> losses(static_cast<std::size_t>(rows), 7.0f), lse(static_cast<std::size_t>(rows));
  DeviceArray glosses(losses), glse(lse);
  const float gpu_mean =
      gpu->vocab_cross_entropy_losses(glosses.get(), glse.get(), gsums.get(), grow_max.get(), gtargets.get(), rows);
  const float cpu_mean =
      cpu->vocab_cross_entropy_losses(losses.data(), lse.data(), sums.data(), row_max.data(), targets.data(), rows);
  COMPARE_NEAR("vocab_cross_entropy_losses", glosses.host(), losses, kRow);
  COMPARE_NEAR("vocab_cross_entropy_losses log_sum_exp", glse.host(), lse, kRow);
  QVERIFY2(std::fabs(gpu_mean - cpu_mean) <= kRow.atol + kRow.rtol * std::fabs(cpu_mean),
           qPrintable(QString("mean loss gpu %1 cpu %2").arg(gpu_mean).arg(cpu_mean)));
  QCOMPARE(glosses.host()[3], 0.0f);
  std::vector<float> d_logits(logits.size(), 5.0f);
  DeviceArray gd_logits(d_logits);
  gpu->vocab_cross_entropy_backward(gd_logits.get(), glogits.get(), glse.get(), gtargets.get(), rows, Vt, head,
                                    1.0f / 44.0f);
  cpu->vocab_cross_entropy_backward(d_logits.data(), logits.data(), lse.data(), targets.data(), rows, Vt, head,
                                    1.0f / 44.0f);
  COMPARE_NEAR("vocab_cross_entropy_backward", gd_logits.host(), d_logits, kRow);
}

QTEST_GUILESS_MAIN(TestCudaEmbeddingLoss)
#include "test_cuda_embedding_loss.moc"
