// SPDX-License-Identifier: GPL-3.0-or-later
// Every op of the CUDA backend against the CPU backend on the same random
// inputs (attention, materialized and fused: test_cuda_attention.cpp; the
// memory ops, casts and overflow scan: test_cuda_storage.cpp; the row kernels'
// edge shapes: test_cuda_row_shapes.cpp). Where no GPU is usable, every test is
// skipped with "skipped: no GPU (<reason>)" and the suite passes.
//
// Tolerances (|gpu - cpu| <= atol + rtol |cpu|, inputs ~ N(0, 1)):
//   exact         fill, add, scale, bias rows, embedding forward/backward (and
//                 tensor parallelism's vocabulary slice of them): same
//                 operations in the same order, bit-identical (the GPU groups
//                 the embedding rows by id with a stable sort, keeping row order);
//   element-wise  1e-6 + 1e-5 |x|: tanh, AdamW (device erff/expf/tanhf
//                 are within 2 ulp of glibc's; the shared math is compiled
//                 without FMA contraction on the GPU); GELU 1e-6 + 2e-4 |x|
//                 (its derivative chains a dozen operations, which the CPU's
//                 x86-64-v3/v4 loops contract into FMAs: 5e-5 apart);
//   per-row       1e-5 + 1e-5 |x|: layernorm, softmax, cross-entropy (the GPU
//                 sums a row by warp lanes, the CPU vectorizes: other orders);
//   column sums   1e-5 + 1e-5 |x| over one tile of 256 rows, 1e-4 + 1e-5 |x|
//                 over many: the bias and layernorm weight gradients (the GPU
//                 adds tiles of rows, the CPU row after row);
//   matmul        1e-4 + 1e-5 |x| for fp32 gemms (TF32 off; cuBLAS and OpenBLAS
//                 sum K products in different orders);
//   16-bit gemm   f16: 2e-2 + 4e-3 |x|, bf16: 1e-1 + 2e-2 |x| (inputs exactly
//                 representable, fp32 accumulation, one rounding of the output);
//   sum_of_squares relative 1e-10 (both accumulate exact products in double,
//                 in different orders); the mean loss: 1e-6 relative to the mean
//                 of the GPU's own row losses, the per-row tolerance to the CPU's.
#include <cuda_runtime.h>

#include <QTest>
#include <algorithm>
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

class TestCudaOps : public QObject {
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
  void embedding_forward_backward();
  void layernorm_forward_backward();
  void gelu_forward_backward();
  void cross_entropy_forward_backward();
  void vocabulary_parallel_ops();
  void element_wise_ops();
  void sum_of_squares();
  void adamw();
  void results_repeat_bit_for_bit();
  void second_gpu_when_present();
  void engine_path_through_the_plugin();
  void errors_name_the_call_and_the_op();
};

void TestCudaOps::initTestCase() {
  const DeviceProbe probe = probe_cuda();
  if (!probe.available()) QSKIP(qPrintable(QString::fromStdString("skipped: no GPU (" + probe.reason + ")")));
  gpu = std::make_unique<CudaBackend>(CudaBackendOptions{0, GemmMath::fp32});
  qInfo("GPU: %s; CPU reference: %s", gpu->name().c_str(), cpu->name().c_str());
}

void TestCudaOps::gemm_every_transpose_and_leading_dimension() {
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

void TestCudaOps::gemm_batched_strided() {
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

// GemmMath::bf16 / fp16 (a mixed-precision run's gemms, as torch.autocast's):
// fp32 operands rounded to 16 bits on the tensor cores, sums in fp32: the CPU
// gemm of the rounded operands, not of the fp32 ones.
void TestCudaOps::mixed_precision_math_rounds_fp32_operands_to_16_bits() {
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

void TestCudaOps::gemm_16bit_accumulates_in_fp32() {
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

void TestCudaOps::linear_forward_backward() {
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

void TestCudaOps::embedding_forward_backward() {
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

void TestCudaOps::layernorm_forward_backward() {
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

void TestCudaOps::gelu_forward_backward() {
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

void TestCudaOps::cross_entropy_forward_backward() {
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
void TestCudaOps::vocabulary_parallel_ops() {
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

void TestCudaOps::element_wise_ops() {
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

void TestCudaOps::sum_of_squares() {
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

void TestCudaOps::adamw() {
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

// The bias gradient adds tiles of 256 rows: several tiles and a ragged last one,
// a column count that is not a multiple of the 32-column slice, and 1 row.
void TestCudaOps::results_repeat_bit_for_bit() {
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

void TestCudaOps::second_gpu_when_present() {
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

void TestCudaOps::engine_path_through_the_plugin() {
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

void TestCudaOps::errors_name_the_call_and_the_op() {
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

QTEST_GUILESS_MAIN(TestCudaOps)
#include "test_cuda_ops.moc"
