// SPDX-License-Identifier: GPL-3.0-or-later
// Matrix multiply on the CPU. The BLAS runs single-threaded inside each call;
// CpuBackend::gemm splits the output into parts fixed by the shape and runs
// them on the rank's own threads. This keeps the total thread count at the
// cores the engine was given, however many ranks run at once (no BLAS threads
// fighting the rank threads), and the result the same for any thread count.
#include <cblas.h>

#include <algorithm>
#include <mutex>

#include "ops/cpu/blas_kernel.h"
#include "ops/cpu/cpu_backend.h"

namespace shardscope {

namespace {
CBLAS_TRANSPOSE to_cblas(Transpose t) { return t == Transpose::yes ? CblasTrans : CblasNoTrans; }

// Before the first product: the kernel checked against the CPU (blas_kernel.h),
// then one BLAS thread per call.
void make_blas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] {
    ensure_blas_kernel();
    openblas_set_num_threads(1);
  });
}

// How many calls the output of one gemm is split into, from its shape alone.
// The BLAS does not compute an element of C the same way in every call: which
// micro-kernel or edge path handles it, and so the order of its K products,
// depends on the call's extent and the element's place in it (OpenBLAS's Zen
// kernel gives different last bits for a row computed in a 64-row call and in
// a 128-row one). Splitting by the thread count would make results depend on
// the thread count, so the parts are fixed by M, N, K: a power of two (even
// work for 2, 4, 8... threads), at most kMaxGemmParts, each part at least
// kMinGemmPartSize rows or columns and ~1 MFLOP. The operand every part
// shares is packed once per part: with 128-row parts one thread loses ~3% to
// the unsplit call (64: ~8%), while gpt-tiny's products still split in two or
// more for 2 threads. The pool runs whole parts, so every thread count makes
// the same BLAS calls.
int gemm_parts(int M, int N, int K) {
  constexpr int kMaxGemmParts = 32;
  constexpr int kMinGemmPartSize = 128;
  constexpr double kMinGemmPartFlops = 1.0e6;
  const double flops = 2.0 * M * N * std::max(K, 1);
  const double most = std::min({static_cast<double>(kMaxGemmParts), flops / kMinGemmPartFlops,
                                static_cast<double>(std::max(M, N) / kMinGemmPartSize)});
  int parts = 1;
  while (parts * 2 <= most) parts *= 2;
  return parts;
}
}  // namespace

std::string blas_name() {
  return "OpenBLAS " + ensure_blas_kernel().running;
}

void blas_sgemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
  make_blas_single_threaded();
  cblas_sgemm(CblasRowMajor, to_cblas(trans_a), to_cblas(trans_b), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void CpuBackend::gemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                      const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  const int parts = gemm_parts(M, N, K);
  if (parts <= 1) {
    blas_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // Part p covers [dim * p / parts, dim * (p + 1) / parts) of the split dimension.
  const auto bound = [parts](int dim, std::int64_t p) { return static_cast<int>(dim * p / parts); };
  if (M >= N) {
    // Split rows of C: rows m0..m1 of op(A).
    pool_.parallel_for(parts, 1, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t p = p0; p < p1; ++p) {
        const int m0 = bound(M, p), m1 = bound(M, p + 1);
        const float* a = trans_a == Transpose::no ? A + static_cast<std::int64_t>(m0) * lda : A + m0;
        blas_sgemm(trans_a, trans_b, m1 - m0, N, K, alpha, a, lda, B, ldb, beta,
                   C + static_cast<std::int64_t>(m0) * ldc, ldc);
      }
    });
  } else {
    // Split columns of C: columns n0..n1 of op(B).
    pool_.parallel_for(parts, 1, [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t p = p0; p < p1; ++p) {
        const int n0 = bound(N, p), n1 = bound(N, p + 1);
        const float* b = trans_b == Transpose::no ? B + n0 : B + static_cast<std::int64_t>(n0) * ldb;
        blas_sgemm(trans_a, trans_b, M, n1 - n0, K, alpha, A, lda, b, ldb, beta, C + n0, ldc);
      }
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
