// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA row kernels (cuda_row_kernels.cu, cuda_column_sums.cu) at the edges
// of their launch shapes, against the CPU backend: rows shorter and longer than
// a warp or a block, column sums over many row tiles and a partial last tile,
// an embedding id repeated over half the rows, cross-entropy over V = 1 to
// 50257 with extreme logits and ignored rows. Tolerances: the table in
// cuda_test_support.h. Skipped with "skipped: no GPU (<reason>)" without one.
#include <cuda_runtime.h>

#include <QTest>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/half.h"
#include "core/rng.h"
#include "engine/test_support.h"
#include "gpu/cuda_test_support.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/device.h"

using namespace shardscope;
using namespace shardscope::test;

// Tolerances, DeviceArray, COMPARE_NEAR / COMPARE_EXACT: cuda_test_support.h.

class TestCudaRowShapes : public QObject {
  Q_OBJECT
  std::unique_ptr<Backend> cpu = make_cpu_backend({2});
  std::unique_ptr<CudaBackend> gpu;

 private Q_SLOTS:
  void initTestCase() {
    const DeviceProbe probe = probe_cuda();
    if (!probe.available()) QSKIP(qPrintable(QString::fromStdString("skipped: no GPU (" + probe.reason + ")")));
    gpu = std::make_unique<CudaBackend>(CudaBackendOptions{0, GemmMath::fp32});
  }
  void bias_gradient_over_many_row_tiles();
  void embedding_backward_long_runs_of_one_id();
  void layernorm_row_shapes();
  void cross_entropy_row_shapes_and_extreme_logits();
};

void TestCudaRowShapes::bias_gradient_over_many_row_tiles() {
  const int in_f = 8;
  for (const auto& [rows, out_f] : {std::pair{700, 37}, std::pair{1, 5}, std::pair{256, 64}, std::pair{1025, 1}}) {
    const auto x = randoms(static_cast<std::size_t>(rows * in_f), 140);
    const auto w = randoms(static_cast<std::size_t>(out_f * in_f), 141);
    const auto dy = randoms(static_cast<std::size_t>(rows * out_f), 142);
    auto d_w = randoms(w.size(), 143), d_b = randoms(static_cast<std::size_t>(out_f), 144);
    DeviceArray gx(x), gw(w), gdy(dy), gd_w(d_w), gd_b(d_b);
    gpu->linear_backward(nullptr, gd_w.get(), gd_b.get(), gdy.get(), gx.get(), gw.get(), rows, in_f, out_f, false);
    cpu->linear_backward(nullptr, d_w.data(), d_b.data(), dy.data(), x.data(), w.data(), rows, in_f, out_f, false);
    COMPARE_NEAR(QString("d_bias rows=%1 out_f=%2").arg(rows).arg(out_f), gd_b.host(), d_b, kColumnSum);
  }
}

// Token ids with one very frequent id (as a padding token), more channels than
// a block has threads and not a multiple of 32; the sort must keep row order
// within each id, so the result is the CPU's bit for bit.
void TestCudaRowShapes::embedding_backward_long_runs_of_one_id() {
  const int B = 4, T = 300, C = 300, V = 50, types_n = 3;
  auto ids = random_ints(static_cast<std::size_t>(B * T), 150, V);
  for (std::size_t i = 0; i < ids.size(); i += 2) ids[i] = 7;  // half the rows: id 7
  ids.back() = V - 1;
  const auto type_ids = random_ints(ids.size(), 151, types_n);
  const auto dy = randoms(static_cast<std::size_t>(B * T * C), 152);
  auto d_tokens = randoms(static_cast<std::size_t>(V * C), 153),
       d_positions = randoms(static_cast<std::size_t>(T * C), 154);
  auto d_types = randoms(static_cast<std::size_t>(types_n * C), 155);
  DeviceArray g_ids(ids), g_type_ids(type_ids);
  DeviceArray g_dy(dy), gd_tokens(d_tokens), gd_positions(d_positions), gd_types(d_types);
  gpu->embedding_backward(gd_tokens.get(), gd_positions.get(), gd_types.get(), g_dy.get(), g_ids.get(),
                          g_type_ids.get(), B, T, C);
  cpu->embedding_backward(d_tokens.data(), d_positions.data(), d_types.data(), dy.data(), ids.data(), type_ids.data(),
                          B, T, C);
  COMPARE_EXACT("long runs d_tokens", gd_tokens.host(), d_tokens);
  COMPARE_EXACT("long runs d_positions", gd_positions.host(), d_positions);
  COMPARE_EXACT("long runs d_types", gd_types.host(), d_types);
}

// Warp-per-row layernorm: C below, at and above a warp, not a multiple of 32,
// longer than a block of threads; one row; many tiles for the weight gradient.
void TestCudaRowShapes::layernorm_row_shapes() {
  struct Shape {
    int rows, C;
  };
  for (const Shape sh : {Shape{1, 1}, Shape{3, 31}, Shape{9, 33}, Shape{17, 768}, Shape{5, 3001}, Shape{1000, 50}}) {
    const QString what = QString("layernorm rows=%1 C=%2 ").arg(sh.rows).arg(sh.C);
    const std::size_t n = static_cast<std::size_t>(sh.rows) * static_cast<std::size_t>(sh.C);
    auto x = randoms(n, 160, 3.0f);
    for (std::size_t i = 0; i < n; ++i) x[i] += 10.0f;  // a large mean: the two-pass variance matters
    const auto w = randoms(static_cast<std::size_t>(sh.C), 161), b = randoms(static_cast<std::size_t>(sh.C), 162);
    const auto dy = randoms(n, 163);
    std::vector<float> out(n), mean(static_cast<std::size_t>(sh.rows)), rstd(mean.size());
    DeviceArray gx(x), gw(w), gb(b), gdy(dy), gout(out), gmean(mean), grstd(rstd);
    gpu->layernorm_forward(gout.get(), gmean.get(), grstd.get(), gx.get(), gw.get(), gb.get(), sh.rows, sh.C, 1e-5f);
    cpu->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), sh.rows, sh.C, 1e-5f);
    COMPARE_NEAR(what + "out", gout.host(), out, kAttention);  // C = 1: xhat is 0 / rounding noise times 1/sqrt(eps)
    COMPARE_NEAR(what + "mean", gmean.host(), mean, kRow);
    COMPARE_NEAR(what + "rstd", grstd.host(), rstd, kRow);
    auto d_in = randoms(n, 164), d_w = randoms(w.size(), 165), d_b = randoms(b.size(), 166);
    DeviceArray gd_in(d_in), gd_w(d_w), gd_b(d_b), cmean(mean), crstd(rstd);
    gpu->layernorm_backward(gd_in.get(), gd_w.get(), gd_b.get(), gdy.get(), gx.get(), gw.get(), cmean.get(),
                            crstd.get(), sh.rows, sh.C, true);
    cpu->layernorm_backward(d_in.data(), d_w.data(), d_b.data(), dy.data(), x.data(), w.data(), mean.data(),
                            rstd.data(), sh.rows, sh.C, true);
    COMPARE_NEAR(what + "d_in", gd_in.host(), d_in, kAttention);
    COMPARE_NEAR(what + "d_weight", gd_w.host(), d_w, kColumnSum);
    COMPARE_NEAR(what + "d_bias", gd_b.host(), d_b, kColumnSum);
  }
}

// Block-per-row cross-entropy: V of 1, below and above a block, GPT-2's 50257;
// rows of huge, tiny and equal logits; an ignored row; backward in place.
void TestCudaRowShapes::cross_entropy_row_shapes_and_extreme_logits() {
  for (const int V : {1, 7, 255, 257, 50257}) {
    const int rows = 6;
    const QString what = QString("cross_entropy V=%1 ").arg(V);
    auto logits = randoms(static_cast<std::size_t>(rows * V), 170, 4.0f);
    auto targets = random_ints(static_cast<std::size_t>(rows), 171, V);
    float* row0 = logits.data();
    for (int j = 0; j < V; ++j) row0[j] *= 1000.0f;  // huge spread: most e^(x - max) clamp to ~1e-38
    float* row1 = logits.data() + V;
    for (int j = 0; j < V; ++j) row1[j] = -500.0f;  // all equal and very negative: loss log V
    float* row2 = logits.data() + 2 * V;
    row2[targets[2]] = 80.0f;  // one dominant logit at the target: loss ~0
    targets[4] = -1;
    DeviceArray glogits(logits);
    DeviceArray gtargets(targets);
    std::vector<float> losses(static_cast<std::size_t>(rows), 3.0f);
    DeviceArray glosses(losses);
    const float gpu_mean = gpu->cross_entropy_forward(glosses.get(), glogits.get(), gtargets.get(), rows, V);
    const float cpu_mean = cpu->cross_entropy_forward(losses.data(), logits.data(), targets.data(), rows, V);
    COMPARE_NEAR(what + "losses", glosses.host(), losses, kRow);
    QVERIFY2(std::fabs(gpu_mean - cpu_mean) <= kRow.atol + kRow.rtol * std::fabs(cpu_mean),
             qPrintable(what + QString("mean gpu %1 cpu %2").arg(gpu_mean).arg(cpu_mean)));
    std::vector<float> d_logits(logits.size(), 5.0f);
    DeviceArray gd_logits(d_logits);
    gpu->cross_entropy_backward(gd_logits.get(), glogits.get(), gtargets.get(), rows, V, 0.25f);
    cpu->cross_entropy_backward(d_logits.data(), logits.data(), targets.data(), rows, V, 0.25f);
    COMPARE_NEAR(what + "backward", gd_logits.host(), d_logits, kRow);
    gpu->cross_entropy_backward(glogits.get(), glogits.get(), gtargets.get(), rows, V, 0.25f);  // in place
    COMPARE_EXACT(what + "backward in place", glogits.host(), gd_logits.host());
  }
}

QTEST_GUILESS_MAIN(TestCudaRowShapes)
#include "test_cuda_row_shapes.moc"
