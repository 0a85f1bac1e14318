// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend's matrix products against the CPU backend on the same
// random inputs: fp32 gemm with every transpose and padded leading dimensions,
// strided batches, 16-bit gemm accumulating in fp32, the bf16/fp16 math of a
// mixed-precision run (fp32 operands rounded to 16 bits), and the linear layer
// forward and backward. Tolerances: the matmul, 16-bit gemm and column-sum rows
// of cuda_test_support.h. Where no GPU is usable, every test is skipped with
// "skipped: no GPU (<reason>)" and the suite passes.
#include <cuda_runtime.h>

#include <QTest>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/half.h"
#include "gpu/cuda_test_support.h"
#include "ops/backend.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/device.h"

using namespace shardscope;
using namespace shardscope::test;

// Tolerances, DeviceArray, COMPARE_NEAR / COMPARE_EXACT: cuda_test_support.h.

class TestCudaGemm : public QObject {
  Q_OBJECT
  std::unique_ptr<Backend> cpu = make_cpu_backend({2});
  std::unique_ptr<CudaBackend> gpu;

 private Q_SLOTS:
  void initTestCase();
  void gemm_every_transpose_and_leading_dimension();
  void gemm_batched_strided();
  void gemm_16bit_accumulates_in_fp32();
  void mixed_precision_math_rounds_fp32_operands_to_16_bits();
  void linear_forward_backward();
};

void TestCudaGemm::initTestCase() {
  const DeviceProbe probe = probe_cuda();
  if (!probe.available()) QSKIP(qPrintable(QString::fromStdString("skipped: no GPU (" + probe.reason + ")")));
  gpu = std::make_unique<CudaBackend>(CudaBackendOptions{0, GemmMath::fp32});
  qInfo("GPU: %s; CPU reference: %s", gpu->name().c_str(), cpu->name().c_str());
}

void TestCudaGemm::gemm_every_transpose_and_leading_dimension() {
  const int M = 67, N = 45, K = 129;
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      // Padded leading dimensions, so a row/column-major mix-up cannot pass.
      const int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 7;
      const auto A = randoms(static_cast<std::size_t>((ta ? K : M) * lda), 1);
      const auto B = randoms(static_cast<std::size_t>((tb ? N : K) * ldb), 2);
      auto C = randoms(static_cast<std::size_t>(M * ldc), 3);
      DeviceArray dA(A), dB(B), dC(C);
      const Transpose tA = ta ? Transpose::yes : Transpose::no, tB = tb ? Transpose::yes : Transpose::no;
      gpu->gemm(tA, tB, M, N, K, 0.5f, dA.get(), lda, dB.get(), ldb, 2.0f, dC.get(), ldc);
      cpu->gemm(tA, tB, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, 2.0f, C.data(), ldc);
      COMPARE_NEAR(QString("gemm ta=%1 tb=%2").arg(ta).arg(tb), dC.host(), C, kMatmul);
    }
  }
}

void TestCudaGemm::gemm_batched_strided() {
  const int M = 33, N = 17, K = 40, batch = 5;
  const std::int64_t sa = M * K + 11, sb = K * N + 3, sc = M * N + 2;
  const auto A = randoms(static_cast<std::size_t>(sa * batch), 4);
  const auto B = randoms(static_cast<std::size_t>(sb * batch), 5);
  auto C = randoms(static_cast<std::size_t>(sc * batch), 6);
  DeviceArray dA(A), dB(B), dC(C);
  gpu->gemm_batched_strided(Transpose::yes, Transpose::no, M, N, K, 1.5f, dA.get(), M, sa, dB.get(), N, sb, 0.25f,
                            dC.get(), N, sc, batch);
  cpu->gemm_batched_strided(Transpose::yes, Transpose::no, M, N, K, 1.5f, A.data(), M, sa, B.data(), N, sb, 0.25f,
                            C.data(), N, sc, batch);
  COMPARE_NEAR("gemm_batched_strided", dC.host(), C, kMatmul);
}

void TestCudaGemm::gemm_16bit_accumulates_in_fp32() {
  const int M = 48, N = 40, K = 64;
  for (const DType dtype : {DType::f16, DType::bf16}) {
    const auto a32 = randoms(static_cast<std::size_t>(M * K), 7);
    const auto b32 = randoms(static_cast<std::size_t>(N * K), 8);
    std::vector<std::uint16_t> a16(a32.size()), b16(b32.size()), c16(static_cast<std::size_t>(M * N), 0);
    half::narrow(dtype, a32.data(), a16.data(), static_cast<std::int64_t>(a32.size()));
    half::narrow(dtype, b32.data(), b16.data(), static_cast<std::int64_t>(b32.size()));
    // The reference: the same 16-bit inputs, widened, multiplied in fp32.
    std::vector<float> a(a16.size()), b(b16.size()), expect(c16.size(), 0.0f);
    half::widen(dtype, a16.data(), a.data(), static_cast<std::int64_t>(a.size()));
    half::widen(dtype, b16.data(), b.data(), static_cast<std::int64_t>(b.size()));
    cpu->gemm(Transpose::no, Transpose::yes, M, N, K, 1.0f, a.data(), K, b.data(), K, 0.0f, expect.data(), N);
    DeviceArray dA(a16), dB(b16), dC(c16);
    gpu->gemm_16bit(dtype, Transpose::no, Transpose::yes, M, N, K, 1.0f, dA.get(), K, dB.get(), K, 0.0f, dC.get(), N);
    const auto got16 = dC.host();
    std::vector<float> got(got16.size());
    half::widen(dtype, got16.data(), got.data(), static_cast<std::int64_t>(got.size()));
    const Tolerance tol = dtype == DType::f16 ? Tolerance{2e-2, 4e-3} : Tolerance{1e-1, 2e-2};
    COMPARE_NEAR(QString("gemm_16bit %1").arg(dtype_name(dtype).data()), got, expect, tol);
  }
}

// GemmMath::bf16 / fp16 (a mixed-precision run's gemms, as torch.autocast's):
// fp32 operands rounded to 16 bits on the tensor cores, sums in fp32: the CPU
// gemm of the rounded operands, not of the fp32 ones.
void TestCudaGemm::mixed_precision_math_rounds_fp32_operands_to_16_bits() {
  const int M = 96, N = 80, K = 256, batch = 3;
  for (const DType dtype : {DType::bf16, DType::f16}) {
    CudaBackend fast(CudaBackendOptions{0, dtype == DType::bf16 ? GemmMath::bf16 : GemmMath::fp16});
    const auto A = randoms(static_cast<std::size_t>(M * K * batch), 41);
    const auto B = randoms(static_cast<std::size_t>(N * K * batch), 42);
    std::vector<float> a(A.size()), b(B.size());
    std::vector<std::uint16_t> bits(std::max(A.size(), B.size()));
    half::narrow(dtype, A.data(), bits.data(), static_cast<std::int64_t>(A.size()));
    half::widen(dtype, bits.data(), a.data(), static_cast<std::int64_t>(a.size()));
    half::narrow(dtype, B.data(), bits.data(), static_cast<std::int64_t>(B.size()));
    half::widen(dtype, bits.data(), b.data(), static_cast<std::int64_t>(b.size()));
    std::vector<float> rounded(static_cast<std::size_t>(M * N * batch)), exact(rounded.size());
    DeviceArray dA(A), dB(B), dC(rounded);
    fast.gemm(Transpose::no, Transpose::yes, M, N, K, 1.0f, dA.get(), K, dB.get(), K, 0.0f, dC.get(), N);
    cpu->gemm(Transpose::no, Transpose::yes, M, N, K, 1.0f, a.data(), K, b.data(), K, 0.0f, rounded.data(), N);
    cpu->gemm(Transpose::no, Transpose::yes, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, exact.data(), N);
    auto got = dC.host();
    got.resize(static_cast<std::size_t>(M * N));
    rounded.resize(got.size());
    exact.resize(got.size());
    const QString name = dtype == DType::bf16 ? "bf16" : "fp16";
    COMPARE_NEAR(name + " math gemm", got, rounded, kMatmul);
    QVERIFY2(worst_mismatch(got.data(), exact.data(), got.size(), 1e-6, 1e-6) > 1.0,
             qPrintable(name + ": the gemm did not round its operands"));
    fast.gemm_batched_strided(Transpose::no, Transpose::yes, M, N, K, 1.0f, dA.get(), K, M * K, dB.get(), K, N * K,
                              0.0f, dC.get(), N, M * N, batch);
    std::vector<float> batched(static_cast<std::size_t>(M * N * batch));
    cpu->gemm_batched_strided(Transpose::no, Transpose::yes, M, N, K, 1.0f, a.data(), K, M * K, b.data(), K, N * K,
                              0.0f, batched.data(), N, M * N, batch);
    COMPARE_NEAR(name + " math gemm_batched_strided", dC.host(), batched, kMatmul);
  }
}

void TestCudaGemm::linear_forward_backward() {
  const int rows = 50, in_f = 96, out_f = 72;
  const auto x = randoms(static_cast<std::size_t>(rows * in_f), 10);
  const auto w = randoms(static_cast<std::size_t>(out_f * in_f), 11, 0.2f);
  const auto b = randoms(static_cast<std::size_t>(out_f), 12);
  const auto dy = randoms(static_cast<std::size_t>(rows * out_f), 13);
  DeviceArray dx_in(x), dw(w), db(b), ddy(dy);
  for (const bool with_bias : {true, false}) {
    std::vector<float> out(static_cast<std::size_t>(rows * out_f), 0.0f);
    DeviceArray dout(out);
    gpu->linear_forward(dout.get(), dx_in.get(), dw.get(), with_bias ? db.get() : nullptr, rows, in_f, out_f);
    cpu->linear_forward(out.data(), x.data(), w.data(), with_bias ? b.data() : nullptr, rows, in_f, out_f);
    COMPARE_NEAR(QString("linear_forward bias=%1").arg(with_bias), dout.host(), out, kMatmul);
  }
  for (const bool accumulate : {false, true}) {
    auto d_in = randoms(static_cast<std::size_t>(rows * in_f), 14);
    auto d_w = randoms(static_cast<std::size_t>(out_f * in_f), 15);
    auto d_b = randoms(static_cast<std::size_t>(out_f), 16);
    DeviceArray gd_in(d_in), gd_w(d_w), gd_b(d_b);
    gpu->linear_backward(gd_in.get(), gd_w.get(), gd_b.get(), ddy.get(), dx_in.get(), dw.get(), rows, in_f, out_f,
                         accumulate);
    cpu->linear_backward(d_in.data(), d_w.data(), d_b.data(), dy.data(), x.data(), w.data(), rows, in_f, out_f,
                         accumulate);
    const QString what = QString("linear_backward accumulate=%1 ").arg(accumulate);
    COMPARE_NEAR(what + "d_in", gd_in.host(), d_in, kMatmul);
    COMPARE_NEAR(what + "d_weight", gd_w.host(), d_w, kMatmul);
    COMPARE_NEAR(what + "d_bias", gd_b.host(), d_b, kRow);  // one tile of rows, summed in lanes of 8
  }
  // Null d_in and d_bias are skipped.
  auto d_w = randoms(static_cast<std::size_t>(out_f * in_f), 17);
  DeviceArray gd_w(d_w);
  gpu->linear_backward(nullptr, gd_w.get(), nullptr, ddy.get(), dx_in.get(), dw.get(), rows, in_f, out_f, false);
  cpu->linear_backward(nullptr, d_w.data(), nullptr, dy.data(), x.data(), w.data(), rows, in_f, out_f, false);
  COMPARE_NEAR("linear_backward null d_in/d_bias", gd_w.host(), d_w, kMatmul);
}

QTEST_GUILESS_MAIN(TestCudaGemm)
#include "test_cuda_gemm.moc"
