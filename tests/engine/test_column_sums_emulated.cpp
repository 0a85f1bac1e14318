// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend's sums over rows (ops/cuda/cuda_column_sums.cu: bias and
// layernorm weight gradients by a tiled two-pass column reduction, embedding
// gradients by a stable sort of the ids and one block per run) compiled as C++
// and run on the CPU through tests/engine/cuda_emulation (CUB's radix sort
// stands in as a stable sort). Against the CPU backend: the column sums to
// rounding (another summation order, by design), the embedding gradients bit
// for bit, as the kernel file promises. Shapes straddle the 256-row tiles and
// the 32-column slices.
#include "cuda_emulation.h"
#include "ops/cuda/cuda_column_sums.cu"  // NOLINT(bugprone-suspicious-include): the kernels under test

#include <QTest>
#include <cmath>
#include <random>
#include <vector>

#include "ops/backend.h"

using namespace shardscope;

class TestColumnSumsEmulated : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void bias_and_layernorm_sums_match_cpu();
  void embedding_gradients_are_the_cpus_bits();
};

namespace {
std::vector<float> randoms(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                  const QString& what) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
    QVERIFY2(d <= atol + rtol * std::fabs(static_cast<double>(want[i])) && !std::isnan(got[i]),
             qPrintable(QString("%1[%2]: kernel %3, CPU %4").arg(what).arg(i).arg(got[i], 0, 'g', 9).arg(want[i], 0,
                                                                                                           'g', 9)));
  }
}
}  // namespace

void TestColumnSumsEmulated::bias_and_layernorm_sums_match_cpu() {
  auto cpu = make_cpu_backend({1});
  for (const int rows : {1, 255, 256, 257, 600})
    for (const int C : {1, 31, 33, 70}) {
      const auto n = static_cast<std::size_t>(rows) * C;
      const std::vector<float> dy = randoms(n, 1u + rows + C), x = randoms(n, 2u + rows * C), w = randoms(C, 3u);
      std::vector<float> mean(rows), rstd(rows), normed(n);
      const std::vector<float> b(C, 0.0f);
      cpu->layernorm_forward(normed.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows, C, 1e-5f);
      const QString what = QString("rows %1 C %2 ").arg(rows).arg(C);
      // Bias gradient: column sums added onto what is there.
      std::vector<float> partials(cuda_detail::column_partials_bytes(rows, C, 2) / sizeof(float));
      std::vector<float> d_bias(C, 0.5f), want_bias(C, 0.5f);
      cuda_detail::column_sums(nullptr, d_bias.data(), dy.data(), rows, C, partials.data(), "test");
      std::vector<float> d_in(n), want_d_w(C, 0.0f), want_d_b(C, 0.5f);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < C; ++c) want_bias[static_cast<std::size_t>(c)] += dy[static_cast<std::size_t>(r) * C + c];
      expect_close(d_bias, want_bias, 1e-4, 1e-5, what + "d_bias");
      // LayerNorm weight and bias gradients, against the CPU backend's.
      std::vector<float> ln_w(C, 0.0f), ln_b(C, 0.5f);
      cuda_detail::layernorm_param_grads(nullptr, ln_w.data(), ln_b.data(), dy.data(), x.data(), mean.data(),
                                         rstd.data(), rows, C, partials.data());
      cpu->layernorm_backward(d_in.data(), want_d_w.data(), want_d_b.data(), dy.data(), x.data(), w.data(),
                              mean.data(), rstd.data(), rows, C);
      expect_close(ln_w, want_d_w, 1e-4, 1e-5, what + "layernorm d_weight");
      expect_close(ln_b, want_d_b, 1e-4, 1e-5, what + "layernorm d_bias");
    }
}

void TestColumnSumsEmulated::embedding_gradients_are_the_cpus_bits() {
  auto cpu = make_cpu_backend({1});
  const int V = 50, T = 20, C = 300, types = 2;
  for (const int B : {1, 3}) {
    const auto n = static_cast<std::size_t>(B) * T;
    std::vector<std::int32_t> ids(n), type_ids(n);
    for (std::size_t i = 0; i < n; ++i) {
      ids[i] = static_cast<std::int32_t>((i * i * 7 + 3) % 11);  // few ids, long runs, out of order
      type_ids[i] = static_cast<std::int32_t>(i % 3 == 0);
    }
    const std::vector<float> d_out = randoms(n * C, 7u + B);
    std::vector<float> tokens = randoms(static_cast<std::size_t>(V) * C, 8u), positions = randoms(T * C, 9u),
                       type_table = randoms(types * C, 10u);
    std::vector<float> want_tokens = tokens, want_positions = positions, want_types = type_table;
    std::vector<unsigned char> workspace(cuda_detail::embedding_backward_bytes(static_cast<long long>(n)));
    cuda_detail::embedding_backward(nullptr, tokens.data(), positions.data(), type_table.data(), d_out.data(),
                                    ids.data(), type_ids.data(), B, T, C, workspace.data());
    cpu->embedding_backward(want_tokens.data(), want_positions.data(), want_types.data(), d_out.data(), ids.data(),
                            type_ids.data(), B, T, C);
    QVERIFY(tokens == want_tokens);
    QVERIFY(positions == want_positions);
    QVERIFY(type_table == want_types);
  }
}

QTEST_GUILESS_MAIN(TestColumnSumsEmulated)
#include "test_column_sums_emulated.moc"
