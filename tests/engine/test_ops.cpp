// SPDX-License-Identifier: GPL-3.0-or-later
// Every op's backward against central finite differences of its forward, and
// the matmuls against a naive triple loop. Loss = sum(out * R) for a random R,
// so d loss / d out = R.
#include <QTest>
#include <array>
#include <cmath>
#include <cstring>

#include "engine/test_support.h"
#include "ops/backend.h"
#include "ops/cpu/cpu_backend.h"

using namespace shardscope;
using namespace shardscope::test;

class TestOps : public QObject {
  Q_OBJECT
  std::unique_ptr<Backend> be = make_cpu_backend({2});

 private Q_SLOTS:
  void gemm_matches_naive_for_every_transpose();
  void gemm_is_thread_independent();
  void gemm_batched_matches_single();
  void linear_backward();
  void linear_backward_accumulates();
  void embedding_backward();
  void layernorm_backward();
  void gelu_backward_data();
  void gelu_backward();
  void attention_causal_backward();
  void attention_padding_backward();
  void attention_causal_masks_future();
  void cross_entropy_backward();
  void cross_entropy_matches_formula();
  void adamw_matches_formula();
  void sum_of_squares_is_thread_independent();
  void exp_and_tanh_approximations_are_accurate();
};

void TestOps::gemm_matches_naive_for_every_transpose() {
  // Odd sizes, big enough to be split in two by rows (M >= N) and by columns.
  for (const auto& [M, N, K] : {std::array{263, 129, 61}, std::array{129, 263, 61}, std::array{37, 29, 41}}) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        auto A = random_vector(static_cast<std::size_t>(M * K), 1);
        auto B = random_vector(static_cast<std::size_t>(K * N), 2);
        auto C = random_vector(static_cast<std::size_t>(M * N), 3);
        std::vector<float> expect(C.size());
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            double s = 0.0;
            for (int k = 0; k < K; ++k) {
              const float a = ta ? A[static_cast<std::size_t>(k * M + m)] : A[static_cast<std::size_t>(m * K + k)];
              const float b = tb ? B[static_cast<std::size_t>(n * K + k)] : B[static_cast<std::size_t>(k * N + n)];
              s += static_cast<double>(a) * b;
            }
            expect[static_cast<std::size_t>(m * N + n)] =
                static_cast<float>(0.5 * s + 2.0 * C[static_cast<std::size_t>(m * N + n)]);
          }
        be->gemm(ta ? Transpose::yes : Transpose::no, tb ? Transpose::yes : Transpose::no, M, N, K, 0.5f, A.data(),
                 ta ? M : K, B.data(), tb ? K : N, 2.0f, C.data(), N);
        QVERIFY2(worst_mismatch(C.data(), expect.data(), C.size(), 1e-4, 1e-4) <= 1.0,
                 qPrintable(QString("%1x%2x%3 transA=%4 transB=%5").arg(M).arg(N).arg(K).arg(ta).arg(tb)));
      }
    }
  }
}

// The BLAS's last bits for an element depend on the call it is computed in,
// so gemm splits by shape, never by thread count: 1 to 4 threads give the same
// bits, for the shapes of a gpt-tiny step (rows 256, C 128, V 256) and odd ones.
void TestOps::gemm_is_thread_independent() {
  std::vector<std::unique_ptr<Backend>> backends;
  for (int threads = 1; threads <= 4; ++threads) backends.push_back(make_cpu_backend({threads}));
  const std::array<int, 3> shapes[] = {{256, 384, 128}, {256, 128, 384}, {384, 128, 256}, {128, 512, 256},
                                       {512, 128, 256}, {256, 256, 128}, {128, 128, 256}, {300, 77, 129},
                                       {77, 300, 129},  {1000, 64, 64},  {64, 1000, 64}};
  std::uint32_t seed = 30;
  for (const auto& [M, N, K] : shapes) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        const auto A = random_vector(static_cast<std::size_t>(M * K), ++seed);
        const auto B = random_vector(static_cast<std::size_t>(K * N), ++seed);
        const auto C0 = random_vector(static_cast<std::size_t>(M * N), ++seed);
        std::vector<std::vector<float>> results;
        for (auto& backend : backends) {
          std::vector<float> C = C0;
          backend->gemm(ta ? Transpose::yes : Transpose::no, tb ? Transpose::yes : Transpose::no, M, N, K, 1.0f,
                        A.data(), ta ? M : K, B.data(), tb ? K : N, 1.0f, C.data(), N);
          results.push_back(std::move(C));
        }
        for (std::size_t t = 1; t < results.size(); ++t)
          QVERIFY2(std::memcmp(results[t].data(), results[0].data(), results[0].size() * sizeof(float)) == 0,
                   qPrintable(QString::asprintf("%dx%dx%d transA=%d transB=%d: %zu threads differ from 1", M, N, K, ta,
                                                tb, t + 1)));
      }
    }
  }
}

void TestOps::gemm_batched_matches_single() {
  const int M = 5, N = 7, K = 3, batch = 4;
  auto A = random_vector(static_cast<std::size_t>(batch * M * K), 4);
  auto B = random_vector(static_cast<std::size_t>(batch * K * N), 5);
  std::vector<float> C(static_cast<std::size_t>(batch * M * N)), single(C.size());
  be->gemm_batched_strided(Transpose::no, Transpose::no, M, N, K, 1.0f, A.data(), K, M * K, B.data(), N, K * N, 0.0f,
                           C.data(), N, M * N, batch);
  for (int b = 0; b < batch; ++b)
    be->gemm(Transpose::no, Transpose::no, M, N, K, 1.0f, A.data() + b * M * K, K, B.data() + b * K * N, N, 0.0f,
             single.data() + b * M * N, N);
  QVERIFY(worst_mismatch(C.data(), single.data(), C.size(), 1e-6, 1e-6) <= 1.0);
}

void TestOps::linear_backward() {
  const int rows = 6, in_f = 5, out_f = 4;
  auto x = random_vector(rows * in_f, 10);
  auto w = random_vector(out_f * in_f, 11);
  auto b = random_vector(out_f, 12);
  auto R = random_vector(rows * out_f, 13);
  std::vector<float> out(R.size());
  auto loss = [&] {
    be->linear_forward(out.data(), x.data(), w.data(), b.data(), rows, in_f, out_f);
    return weighted_sum(out, R);
  };
  std::vector<float> dx(x.size()), dw(w.size(), 0.0f), db(b.size(), 0.0f);
  be->linear_backward(dx.data(), dw.data(), db.data(), R.data(), x.data(), w.data(), rows, in_f, out_f);
  check_gradient("linear d_in", x, dx, loss);
  check_gradient("linear d_weight", w, dw, loss);
  check_gradient("linear d_bias", b, db, loss);
}

void TestOps::linear_backward_accumulates() {
  const int rows = 3, in_f = 2, out_f = 2;
  auto x = random_vector(rows * in_f, 20);
  auto w = random_vector(out_f * in_f, 21);
  auto R = random_vector(rows * out_f, 22);
  std::vector<float> dx1(x.size()), dw1(w.size(), 0.0f), db1(out_f, 0.0f);
  be->linear_backward(dx1.data(), dw1.data(), db1.data(), R.data(), x.data(), w.data(), rows, in_f, out_f);
  std::vector<float> dx2(x.size(), 1.0f), dw2(w.size(), 1.0f), db2(out_f, 1.0f);
  be->linear_backward(dx2.data(), dw2.data(), db2.data(), R.data(), x.data(), w.data(), rows, in_f, out_f, true);
  for (std::size_t i = 0; i < dx1.size(); ++i) QCOMPARE(dx2[i], dx1[i] + 1.0f);
  for (std::size_t i = 0; i < dw1.size(); ++i) QCOMPARE(dw2[i], dw1[i] + 1.0f);
  for (std::size_t i = 0; i < db1.size(); ++i) QCOMPARE(db2[i], db1[i] + 1.0f);
}

void TestOps::embedding_backward() {
  const int B = 2, T = 3, C = 4, V = 5, types = 2;
  const std::vector<std::int32_t> ids = {1, 4, 1, 0, 2, 1};  // repeated ids must accumulate
  const std::vector<std::int32_t> type_ids = {0, 1, 1, 0, 0, 1};
  auto tok = random_vector(V * C, 30);
  auto pos = random_vector(T * C, 31);
  auto typ = random_vector(types * C, 32);
  auto R = random_vector(B * T * C, 33);
  std::vector<float> out(R.size());
  auto loss = [&] {
    be->embedding_forward(out.data(), ids.data(), type_ids.data(), tok.data(), pos.data(), typ.data(), B, T, C);
    return weighted_sum(out, R);
  };
  std::vector<float> dtok(tok.size(), 0.0f), dpos(pos.size(), 0.0f), dtyp(typ.size(), 0.0f);
  be->embedding_backward(dtok.data(), dpos.data(), dtyp.data(), R.data(), ids.data(), type_ids.data(), B, T, C);
  check_gradient("embedding d_tokens", tok, dtok, loss);
  check_gradient("embedding d_positions", pos, dpos, loss);
  check_gradient("embedding d_types", typ, dtyp, loss);
}

void TestOps::layernorm_backward() {
  const int rows = 5, C = 8;
  auto x = random_vector(rows * C, 40, 2.0f);
  auto w = random_vector(C, 41);
  auto b = random_vector(C, 42);
  auto R = random_vector(rows * C, 43);
  std::vector<float> out(R.size()), mean(rows), rstd(rows);
  auto loss = [&] {
    be->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows, C, 1e-5f);
    return weighted_sum(out, R);
  };
  loss();
  std::vector<float> dx(x.size()), dw(C, 0.0f), db(C, 0.0f);
  be->layernorm_backward(dx.data(), dw.data(), db.data(), R.data(), x.data(), w.data(), mean.data(), rstd.data(), rows,
                         C);
  check_gradient("layernorm d_in", x, dx, loss);
  check_gradient("layernorm d_weight", w, dw, loss);
  check_gradient("layernorm d_bias", b, db, loss);
  // Forward: each row has mean 0 and variance 1 before the affine part.
  std::vector<float> ones(C, 1.0f), zeros(C, 0.0f);
  be->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), ones.data(), zeros.data(), rows, C, 1e-5f);
  for (int r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int c = 0; c < C; ++c) m += out[static_cast<std::size_t>(r * C + c)];
    for (int c = 0; c < C; ++c) v += std::pow(out[static_cast<std::size_t>(r * C + c)] - m / C, 2);
    QVERIFY(std::fabs(m / C) < 1e-5);
    QVERIFY(std::fabs(v / C - 1.0) < 1e-3);
  }
}

void TestOps::gelu_backward_data() {
  QTest::addColumn<int>("kind");
  QTest::newRow("tanh") << static_cast<int>(math::GeluKind::tanh_approx);
  QTest::newRow("erf") << static_cast<int>(math::GeluKind::exact_erf);
}

void TestOps::gelu_backward() {
  QFETCH(int, kind);
  const auto k = static_cast<math::GeluKind>(kind);
  auto x = random_vector(64, 50, 2.0f);
  auto R = random_vector(64, 51);
  std::vector<float> out(64);
  auto loss = [&] {
    be->gelu_forward(out.data(), x.data(), 64, k);
    return weighted_sum(out, R);
  };
  std::vector<float> dx(64);
  be->gelu_backward(dx.data(), R.data(), x.data(), 64, k);
  check_gradient("gelu", x, dx, loss, 1e-3);
  // Known values: gelu(1) = 0.8413447 (erf) / 0.8411920 (tanh).
  const float one = math::gelu(1.0f, k);
  QVERIFY(std::fabs(one - (k == math::GeluKind::exact_erf ? 0.8413447f : 0.8411920f)) < 1e-6f);
}

namespace {
void attention_gradient_check(Backend& be, bool causal, const std::vector<std::int32_t>* padding) {
  const int B = 2, T = 5, C = 8, H = 2;
  auto qkv = random_vector(B * T * 3 * C, 60);
  auto R = random_vector(B * T * C, 61);
  std::vector<float> out(R.size()), probs(static_cast<std::size_t>(B * H * T * T));
  const AttentionMask mask{causal, padding != nullptr ? padding->data() : nullptr};
  auto loss = [&] {
    be.attention_forward(out.data(), probs.data(), qkv.data(), B, T, C, H, mask);
    return weighted_sum(out, R);
  };
  loss();
  std::vector<float> dqkv(qkv.size()), scratch(probs.size());
  be.attention_backward(dqkv.data(), scratch.data(), R.data(), qkv.data(), out.data(), probs.data(), B, T, C, H, mask);
  check_gradient(causal ? "attention (causal) d_qkv" : "attention (padding) d_qkv", qkv, dqkv, loss);
}
}  // namespace

void TestOps::attention_causal_backward() { attention_gradient_check(*be, true, nullptr); }

void TestOps::attention_padding_backward() {
  const std::vector<std::int32_t> padding = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  attention_gradient_check(*be, false, &padding);
}

void TestOps::attention_causal_masks_future() {
  // Changing the last position's k and v must not change any earlier output.
  const int B = 1, T = 4, C = 4, H = 1;
  auto qkv = random_vector(B * T * 3 * C, 70);
  std::vector<float> out1(B * T * C), out2(out1.size()), probs(T * T);
  be->attention_forward(out1.data(), probs.data(), qkv.data(), B, T, C, H, {true, nullptr});
  for (int c = C; c < 3 * C; ++c) qkv[static_cast<std::size_t>((T - 1) * 3 * C + c)] += 5.0f;
  be->attention_forward(out2.data(), probs.data(), qkv.data(), B, T, C, H, {true, nullptr});
  for (int i = 0; i < (T - 1) * C; ++i) QCOMPARE(out2[static_cast<std::size_t>(i)], out1[static_cast<std::size_t>(i)]);
  QVERIFY(out2.back() != out1.back());
  for (int j = 1; j < T; ++j) QCOMPARE(probs[static_cast<std::size_t>(j)], 0.0f);  // row 0 sees only key 0
}

void TestOps::cross_entropy_backward() {
  const int rows = 4, V = 7;
  auto logits = random_vector(rows * V, 80, 2.0f);
  const std::vector<std::int32_t> targets = {3, -1, 0, 6};
  std::vector<float> losses(rows);
  auto loss = [&] { return static_cast<double>(be->cross_entropy_forward(losses.data(), logits.data(), targets.data(), rows, V)); };
  std::vector<float> d(logits.size());
  be->cross_entropy_backward(d.data(), logits.data(), targets.data(), rows, V, 1.0f / 3.0f);  // 3 scored rows
  check_gradient("cross-entropy d_logits", logits, d, loss, 1e-2, 1e-4);
  for (int j = 0; j < V; ++j) QCOMPARE(d[static_cast<std::size_t>(V + j)], 0.0f);  // ignored row
}

void TestOps::cross_entropy_matches_formula() {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  const std::vector<std::int32_t> target = {0};
  std::vector<float> losses(1);
  const float l = be->cross_entropy_forward(losses.data(), logits.data(), target.data(), 1, 3);
  const double expect = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 1.0;  // 2.4076059644
  QVERIFY(std::fabs(l - expect) < 1e-6);
}

void TestOps::adamw_matches_formula() {
  std::vector<float> p = {1.0f, -2.0f}, g = {0.5f, -0.25f}, m = {0.0f, 0.1f}, v = {0.0f, 0.2f};
  math::AdamWStep s{0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f - 0.9f, 1.0f - 0.999f};
  be->adamw(p.data(), g.data(), m.data(), v.data(), 2, s);
  // Element 0 by hand: m = 0.05, v = 0.00025, m_hat = 0.5, v_hat = 0.25,
  // p = 1 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01 * 1) = 0.899
  QVERIFY(std::fabs(p[0] - 0.899f) < 1e-6f);
  QVERIFY(std::fabs(m[0] - 0.05f) < 1e-7f);
  QVERIFY(std::fabs(v[0] - 0.00025f) < 1e-4f * 0.00025f);  // 1 - 0.999f is not exact in float
  // Element 1: m = 0.065, v = 0.1998625, m_hat = 0.65, v_hat = 199.8625
  const double m_hat = 0.65, v_hat = 199.8625;
  const double expect = -2.0 - 0.1 * (m_hat / (std::sqrt(v_hat) + 1e-8) + 0.01 * -2.0);
  QVERIFY(std::fabs(p[1] - expect) < 1e-5);
}

void TestOps::sum_of_squares_is_thread_independent() {
  auto x = random_vector(300000, 90);
  auto one = make_cpu_backend({1});
  const double a = be->sum_of_squares(x.data(), static_cast<std::int64_t>(x.size()));
  const double b = one->sum_of_squares(x.data(), static_cast<std::int64_t>(x.size()));
  QCOMPARE(a, b);
  QVERIFY(std::fabs(a / 300000.0 - 1.0) < 0.01);
}

void TestOps::exp_and_tanh_approximations_are_accurate() {
  double worst_exp = 0.0, worst_tanh = 0.0;
  for (double x = -80.0; x <= 80.0; x += 0.001) {
    const float xf = static_cast<float>(x);
    worst_exp = std::max(worst_exp, std::fabs(math::exp_approx(xf) / std::exp(static_cast<double>(xf)) - 1.0));
    worst_tanh = std::max(worst_tanh, std::fabs(math::tanh_approx(xf) - std::tanh(static_cast<double>(xf))));
  }
  QVERIFY2(worst_exp < 5e-7, qPrintable(QString("exp relative error %1").arg(worst_exp)));
  QVERIFY2(worst_tanh < 3e-7, qPrintable(QString("tanh absolute error %1").arg(worst_tanh)));
  QCOMPARE(math::exp_approx(0.0f), 1.0f);
  QVERIFY(math::exp_approx(-1000.0f) < 1e-37f);  // clamped, never NaN
}

QTEST_GUILESS_MAIN(TestOps)
#include "test_ops.moc"
