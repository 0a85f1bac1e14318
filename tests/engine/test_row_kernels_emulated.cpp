// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend's per-row kernels (ops/cuda/cuda_row_kernels.cu: layernorm,
// attention softmax, cross-entropy; a warp or a block per row) compiled as C++
// and run on the CPU through tests/engine/cuda_emulation: real threads, warp
// shuffles through a barrier of 32 lanes, block reductions through __shared__
// arrays and __syncthreads. Against the CPU backend (or, for the attention
// softmax, math.h's row functions, which the CPU backend calls), at the edges
// of the launch shapes: rows that fill part of a block, widths below, at and
// above a warp or a block, ignored targets, in-place cross-entropy gradients.
#include "cuda_emulation.h"
#include "ops/cuda/cuda_row_kernels.cu"  // NOLINT(bugprone-suspicious-include): the kernels under test

#include <QTest>
#include <cmath>
#include <random>
#include <vector>

#include "ops/backend.h"
#include "ops/math.h"

using namespace shardscope;

class TestRowKernelsEmulated : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void layernorm_matches_cpu();
  void attention_softmax_matches_rows();
  void cross_entropy_matches_cpu();
};

namespace {
std::vector<float> randoms(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Largest |a - b| / (atol + rtol |b|); NaN counts as a failure.
double worst(const std::vector<float>& a, const std::vector<float>& b, double atol, double rtol, std::size_t* at) {
  double w = 0.0;
  *at = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double e = std::isnan(a[i]) != std::isnan(b[i]) ? 1e30
                     : std::isnan(a[i])                   ? 0.0
                                                          : std::fabs(static_cast<double>(a[i]) - b[i]) /
                                                  (atol + rtol * std::fabs(static_cast<double>(b[i])));
    if (e > w) {
      w = e;
      *at = i;
    }
  }
  return w;
}

#define EXPECT_CLOSE(got, want, atol, rtol, what)                                                            \
  do {                                                                                                       \
    std::size_t at_ = 0;                                                                                     \
    const double w_ = worst(got, want, atol, rtol, &at_);                                                    \
    QVERIFY2(w_ <= 1.0, qPrintable(QString("%1[%2]: kernel %3, reference %4")                                \
                                       .arg(what)                                                            \
                                       .arg(at_)                                                             \
                                       .arg(static_cast<double>((got)[at_]), 0, 'g', 9)                      \
                                       .arg(static_cast<double>((want)[at_]), 0, 'g', 9)));                  \
  } while (false)
}  // namespace

void TestRowKernelsEmulated::layernorm_matches_cpu() {
  auto cpu = make_cpu_backend({1});
  for (const int rows : {1, 7, 9, 17})
    for (const int C : {1, 31, 32, 33, 100}) {
      const auto n = static_cast<std::size_t>(rows) * C;
      const std::vector<float> x = randoms(n, 1u + rows * 100 + C, 2.0f), w = randoms(C, 2u + C),
                               b = randoms(C, 3u + C), dy = randoms(n, 4u + rows + C);
      std::vector<float> out(n), mean(rows), rstd(rows), want_out(n), want_mean(rows), want_rstd(rows);
      cuda_detail::layernorm_forward_rows(nullptr, out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(),
                                          rows, C, 1e-5f);
      cpu->layernorm_forward(want_out.data(), want_mean.data(), want_rstd.data(), x.data(), w.data(), b.data(), rows, C,
                             1e-5f);
      const QString what = QString("rows %1 C %2 ").arg(rows).arg(C);
      EXPECT_CLOSE(out, want_out, 1e-5, 1e-5, what + "out");
      EXPECT_CLOSE(mean, want_mean, 1e-6, 1e-5, what + "mean");
      EXPECT_CLOSE(rstd, want_rstd, 1e-6, 1e-5, what + "rstd");
      for (const bool accumulate : {false, true}) {
        std::vector<float> d_in(n, 0.5f), want_d_in(n, 0.5f), d_w(C), d_b(C);
        cuda_detail::layernorm_backward_rows(nullptr, d_in.data(), dy.data(), x.data(), w.data(), mean.data(),
                                             rstd.data(), rows, C, accumulate);
        cpu->layernorm_backward(want_d_in.data(), d_w.data(), d_b.data(), dy.data(), x.data(), w.data(), mean.data(),
                                rstd.data(), rows, C, accumulate);
        EXPECT_CLOSE(d_in, want_d_in, 1e-5, 1e-4, what + (accumulate ? "d_in (+=)" : "d_in"));
      }
    }
}

void TestRowKernelsEmulated::attention_softmax_matches_rows() {
  for (const int T : {1, 31, 33, 70}) {
    const int B = 3, H = 2;
    const float scale = 0.125f;
    const auto n = static_cast<std::size_t>(B) * H * T * T;
    const std::vector<float> scores = randoms(n, 10u + T, 4.0f), dp = randoms(n, 11u + T);
    std::vector<std::int32_t> padding(static_cast<std::size_t>(B) * T, 1);
    for (int t = T / 2; t < T; ++t) padding[static_cast<std::size_t>(t)] = 0;          // sequence 0: padded tail
    for (int t = 0; t < T; ++t) padding[static_cast<std::size_t>(2 * T + t)] = 0;      // sequence 2: nothing live
    for (const bool causal : {false, true})
      for (const bool padded : {false, true}) {
        const std::int32_t* pad = padded ? padding.data() : nullptr;
        std::vector<float> probs = scores, want(n);
        cuda_detail::attention_softmax_rows(nullptr, probs.data(), B, H, T, causal, pad, scale);
        for (std::size_t row = 0; row < static_cast<std::size_t>(B) * H * T; ++row) {
          const int i = static_cast<int>(row % static_cast<std::size_t>(T));
          const std::size_t b = row / (static_cast<std::size_t>(H) * T);
          math::softmax_row(scores.data() + row * T, want.data() + row * T, T, causal ? i + 1 : T,
                            pad != nullptr ? pad + b * T : nullptr, scale);
        }
        const QString what = QString("T %1%2%3 ").arg(T).arg(causal ? " causal" : "").arg(padded ? " padded" : "");
        EXPECT_CLOSE(probs, want, 1e-7, 1e-5, what + "probs");
        std::vector<float> ds = dp, want_ds(n);
        cuda_detail::attention_softmax_backward_rows(nullptr, want.data(), ds.data(),
                                                     static_cast<long long>(B) * H * T, T, scale);
        for (std::size_t row = 0; row < static_cast<std::size_t>(B) * H * T; ++row)
          math::softmax_backward_row(want.data() + row * T, dp.data() + row * T, want_ds.data() + row * T, T, scale);
        EXPECT_CLOSE(ds, want_ds, 1e-7, 1e-4, what + "dS");
      }
  }
}

void TestRowKernelsEmulated::cross_entropy_matches_cpu() {
  auto cpu = make_cpu_backend({1});
  for (const int V : {1, 255, 256, 257, 1000}) {
    const int rows = 5;
    const auto n = static_cast<std::size_t>(rows) * V;
    const std::vector<float> logits = randoms(n, 20u + V, 3.0f);
    std::vector<std::int32_t> targets(rows);
    for (int r = 0; r < rows; ++r) targets[static_cast<std::size_t>(r)] = r == 2 ? -1 : (r * 7919) % V;  // row 2 ignored
    std::vector<float> losses(rows, -1.0f), want_losses(rows);
    cuda_detail::cross_entropy_rows(nullptr, losses.data(), logits.data(), targets.data(), rows, V);
    cpu->cross_entropy_forward(want_losses.data(), logits.data(), targets.data(), rows, V);
    const QString what = QString("V %1 ").arg(V);
    EXPECT_CLOSE(losses, want_losses, 1e-6, 1e-5, what + "losses");
    QCOMPARE(losses[2], 0.0f);
    const float dloss = 0.25f;
    std::vector<float> d(n, 9.0f), want_d(n);
    cuda_detail::cross_entropy_backward_rows(nullptr, d.data(), logits.data(), targets.data(), rows, V, dloss);
    cpu->cross_entropy_backward(want_d.data(), logits.data(), targets.data(), rows, V, dloss);
    EXPECT_CLOSE(d, want_d, 1e-7, 1e-5, what + "d_logits");
    std::vector<float> in_place = logits;  // d_logits aliasing logits, as the backend allows
    cuda_detail::cross_entropy_backward_rows(nullptr, in_place.data(), in_place.data(), targets.data(), rows, V,
                                             dloss);
    EXPECT_CLOSE(in_place, want_d, 1e-7, 1e-5, what + "d_logits in place");
  }
}

QTEST_GUILESS_MAIN(TestRowKernelsEmulated)
#include "test_row_kernels_emulated.moc"
