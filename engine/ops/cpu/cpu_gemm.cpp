// SPDX-License-Identifier: GPL-3.0-or-later
// Matrix multiply on the CPU. The BLAS runs single-threaded inside each call;
// CpuBackend::gemm splits the output into parts fixed by the shape and runs
// them on the rank's own threads. This keeps the total thread count at the
// cores the engine was given, however many ranks run at once (no BLAS threads
// fighting the rank threads), and the result the same for any thread count.
#include <cblas.h>

#include <algorithm>
#include <initializer_list>
#include <mutex>

#include "ops/cpu/blas_kernel.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/cpu_simd.h"
#include "ops/cpu/cpu_tasks.h"

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
// kMinGemmPartSize rows or columns and ~1 MFLOP. Every part packs the operand
// the parts share again, so small parts cost: on gpt-tiny's linear products
// (1024 x 128..512 x 128..512), one core's time over the unsplit calls was
// +12% with 128-row parts, +5% with 256 and +2% with 512 (docs/PERFORMANCE.md).
// A product too narrow for two 512-wide parts still splits in two where
// 128-wide parts fit (the 124M shape's 256 x 768 outputs), so that two threads
// share it. A layer's dW runs beside its dX (linear_backward). The pool runs
// whole parts, so every thread count makes the same BLAS calls.
int gemm_parts(int M, int N, int K) {
  constexpr int kMaxGemmParts = 32;
  constexpr int kMinGemmPartSize = 512;
  constexpr int kMinGemmHalfSize = 128;
  constexpr double kMinGemmPartFlops = 1.0e6;
  const double flops = 2.0 * M * N * std::max(K, 1);
  const int wide = std::max(M, N);
  double most = std::min(
      {static_cast<double>(kMaxGemmParts), flops / kMinGemmPartFlops, static_cast<double>(wide / kMinGemmPartSize)});
  if (most < 2 && wide >= 2 * kMinGemmHalfSize && flops >= 2 * kMinGemmPartFlops) most = 2;
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

namespace {
// One row-major product C = alpha op(A) op(B) + beta C, as cblas takes it.
struct GemmCall {
  Transpose trans_a, trans_b;
  int M, N, K;
  float alpha;
  const float* A;
  int lda;
  const float* B;
  int ldb;
  float beta;
  float* C;
  int ldc;
  const float* bias = nullptr;  // (N): C's rows start as the bias, and beta is 1
};

// Part p of `parts` of a call: rows of C when M >= N, else columns; part p covers
// [dim * p / parts, dim * (p + 1) / parts) of the split dimension.
void run_gemm_part(const GemmCall& g, int part, int parts) {
  const auto bound = [parts](int dim, int p) { return static_cast<int>(static_cast<std::int64_t>(dim) * p / parts); };
  int m0 = 0, m1 = g.M, n0 = 0, n1 = g.N;
  if (g.M >= g.N) {
    m0 = bound(g.M, part), m1 = bound(g.M, part + 1);
  } else {
    n0 = bound(g.N, part), n1 = bound(g.N, part + 1);
  }
  const float* a = g.trans_a == Transpose::no ? g.A + static_cast<std::int64_t>(m0) * g.lda : g.A + m0;
  const float* b = g.trans_b == Transpose::no ? g.B + n0 : g.B + static_cast<std::int64_t>(n0) * g.ldb;
  float* c = g.C + static_cast<std::int64_t>(m0) * g.ldc + n0;
  float beta = g.beta;
  if (g.bias != nullptr) {
    // The bias written into C just before the product, which adds onto it (beta 1): one pass
    // over C fewer than adding it afterwards, and this part's rows are still in cache.
    for (int r = 0; r < m1 - m0; ++r) std::copy(g.bias + n0, g.bias + n1, c + static_cast<std::int64_t>(r) * g.ldc);
    beta = 1.0f;
  }
  blas_sgemm(g.trans_a, g.trans_b, m1 - m0, n1 - n0, g.K, g.alpha, a, g.lda, b, g.ldb, beta, c, g.ldc);
}

// The calls' parts (gemm_parts each), the largest first. The parts of independent
// products (a linear layer's dX and dW) run as one job (cpu_tasks.h), so
// neither has to be cut finer to keep both threads busy. The threads take the
// parts in list order, so the largest go first and the small ones fill the
// gaps at the end: gpt-tiny's attention projection (128 x 128) has dX in two
// halves and dW whole, and in call order one thread ran a half and then dW
// while the other waited, 1.5x the balanced time. The parts are fixed by the
// shapes and write apart, so the BLAS calls, and the bits, are the same for any
// thread count and any order.
struct GemmParts {
  struct Part {
    const GemmCall* call;
    int part, parts;
    double flops() const { return 2.0 * call->M * call->N * call->K / parts; }
  };
  Part list[2 * 32];  // two calls of at most kMaxGemmParts (gemm_parts)
  int count = 0;

  explicit GemmParts(std::initializer_list<GemmCall> calls) {
    for (const GemmCall& g : calls) {
      if (g.M <= 0 || g.N <= 0) continue;
      const int parts = gemm_parts(g.M, g.N, g.K);
      for (int p = 0; p < parts; ++p) list[count++] = {&g, p, parts};
    }
    std::stable_sort(list, list + count, [](const Part& a, const Part& b) { return a.flops() > b.flops(); });
  }
  void run(int i) const { run_gemm_part(*list[i].call, list[i].part, list[i].parts); }
};
}  // namespace

void CpuBackend::gemm(Transpose trans_a, Transpose trans_b, int M, int N, int K, float alpha, const float* A, int lda,
                      const float* B, int ldb, float beta, float* C, int ldc) {
  const std::initializer_list<GemmCall> calls = {
      GemmCall{trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc}};
  const GemmParts parts(calls);
  run_tasks(pool_, parts.count, [&](int i) { parts.run(i); });
}

void CpuBackend::linear_forward(float* out, const float* in, const float* weight, const float* bias, int rows, int in_f,
                                int out_f) {
  // out (rows, out_f) = bias + in @ weight^T
  const std::initializer_list<GemmCall> calls = {
      GemmCall{Transpose::no, Transpose::yes, rows, out_f, in_f, 1.0f, in, in_f, weight, in_f, 0.0f, out, out_f, bias}};
  const GemmParts parts(calls);
  run_tasks(pool_, parts.count, [&](int i) { parts.run(i); });
}

namespace {
// sums[c] += column c of rows (count, ld), c in [c0, c1), the rows in order: each sum keeps its
// bits however the columns are split.
SS_CPU_CLONES void add_column_sums(float* __restrict sums, const float* __restrict rows, int count, int ld, int c0,
                                   int c1) {
  for (int r = 0; r < count; ++r) {
    const float* row = rows + static_cast<std::int64_t>(r) * ld;
    for (int c = c0; c < c1; ++c) sums[c] += row[c];
  }
}
}  // namespace

void CpuBackend::linear_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                                 const float* weight, int rows, int in_f, int out_f, bool accumulate) {
  // d_in (rows, in_f) = d_out @ weight (or +=), d_weight (out_f, in_f) += d_out^T @ in and
  // d_bias (out_f) += column sums of d_out are independent: one job. A null output is skipped (M = 0).
  const std::initializer_list<GemmCall> calls = {
      GemmCall{Transpose::no, Transpose::no, d_in != nullptr ? rows : 0, in_f, out_f, 1.0f, d_out, out_f, weight, in_f,
               accumulate ? 1.0f : 0.0f, d_in, in_f},
      GemmCall{Transpose::yes, Transpose::no, d_weight != nullptr ? out_f : 0, in_f, rows, 1.0f, d_out, out_f, in, in_f,
               1.0f, d_weight, in_f}};
  const GemmParts parts(calls);
  // Part p of dW's parts also sums the bias's columns [out_f p / parts, out_f (p + 1) / parts):
  // the sums are spread over the threads with dW and read the columns dW has just read (a
  // separate task summed all columns on one thread, often the job's last).
  const GemmCall* const d_weight_call = calls.begin() + 1;
  const bool sums_in_dw = d_bias != nullptr && d_weight != nullptr;
  run_tasks(pool_, parts.count + (d_bias != nullptr && !sums_in_dw ? 1 : 0), [&](int i) {
    if (i == parts.count) return add_column_sums(d_bias, d_out, rows, out_f, 0, out_f);
    parts.run(i);
    const GemmParts::Part& p = parts.list[i];
    if (!sums_in_dw || p.call != d_weight_call) return;
    const auto bound = [&](int q) { return static_cast<int>(static_cast<std::int64_t>(out_f) * q / p.parts); };
    add_column_sums(d_bias, d_out, rows, out_f, bound(p.part), bound(p.part + 1));
  });
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
