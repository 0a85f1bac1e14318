// SPDX-License-Identifier: GPL-3.0-or-later
// Matrix multiply on the CPU. The BLAS runs single-threaded inside each call;
// CpuBackend::gemm splits the output over the rank's own threads. This keeps
// the total thread count at the cores the engine was given, however many
// ranks run at once (no BLAS threads fighting the rank threads).
#include <algorithm>
#include <mutex>

#include "ops/cpu/cpu_backend.h"

#include <cblas.h>

namespace shardscope {

namespace {
CBLAS_TRANSPOSE to_cblas(Transpose t) { return t == Transpose::yes ? CblasTrans : CblasNoTrans; }

void make_blas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}
}  // namespace

const char* blas_name() { return "OpenBLAS"; }

void blas_sgemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
  make_blas_single_threaded();
  cblas_sgemm(CblasRowMajor, to_cblas(trans_a), to_cblas(trans_b), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void CpuBackend::gemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                      const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  // One part per thread, but only where each part still has real work (~1 MFLOP).
  const double flops = 2.0 * M * N * std::max(K, 1);
  const int parts = static_cast<int>(std::min<double>(pool_.threads(), std::max(1.0, flops / 1.0e6)));
  if (parts <= 1) {
    blas_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  if (M >= N) {
    // Split rows of C: rows m0..m1 of op(A).
    pool_.parallel_for(M, std::max(1, M / parts), [&](std::int64_t m0, std::int64_t m1) {
      const float* a = trans_a == Transpose::no ? A + m0 * lda : A + m0;
      blas_sgemm(trans_a, trans_b, static_cast<int>(m1 - m0), N, K, alpha, a, lda, B, ldb, beta, C + m0 * ldc, ldc);
    });
  } else {
    // Split columns of C: columns n0..n1 of op(B).
    pool_.parallel_for(N, std::max(1, N / parts), [&](std::int64_t n0, std::int64_t n1) {
      const float* b = trans_b == Transpose::no ? B + n0 : B + n0 * ldb;
      blas_sgemm(trans_a, trans_b, M, static_cast<int>(n1 - n0), K, alpha, A, lda, b, ldb, beta, C + n0, ldc);
    });
  }
}

void CpuBackend::gemm_batched_strided(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha,
                                      const float* A, int lda, std::int64_t stride_a, const float* B, int ldb,
                                      std::int64_t stride_b, float beta, float* C, int ldc, std::int64_t stride_c,
                                      int batch) {
  pool_.parallel_for(batch, 1, [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t i = b0; i < b1; ++i)
      blas_sgemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta,
                 C + i * stride_c, ldc);
  });
}

}  // namespace shardscope
