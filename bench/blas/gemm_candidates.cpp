// SPDX-License-Identifier: GPL-3.0-or-later
// The training step's linear products on one core: OpenBLAS as the engine calls
// it (engine/ops/cpu/cpu_gemm.cpp: row-major, the same parts fixed by shape)
// against two candidates (issue 31 item 2, docs/PERFORMANCE.md):
//   libxsmm  1.17's JIT small-GEMM kernels over 64 x 64 tiles of C, K in blocks
//            of 256. libxsmm is column-major, so row-major C = A B runs as
//            C^T = B^T A^T; dW's transposed operand uses its TRANS_B kernels, the
//            forward's W^T is copied once per call (N x K, small).
//   own      a plain AVX-512 kernel: 12 x 32 tiles of C held in 24 registers, both
//            operands packed per block (Goto's layout: K blocks of 256, A blocks
//            of 144 rows, B blocks of 1024 columns).
// Each call first writes a 64 MiB buffer, so its operands come from beyond L2 as
// they do in a step; the figure is the median of the repetitions, in GFLOP/s.
// Build by hand or with bench/blas/CMakeLists.txt (needs libxsmm-dev):
//   g++ -O3 -march=native -std=c++20 gemm_candidates.cpp -o gemm_candidates -lopenblas -lxsmm -lblas
// Run (OpenBLAS on its AVX-512 kernel, as the engine's check puts it):
//   OPENBLAS_CORETYPE=SkylakeX ./gemm_candidates [gpt-tiny|124m]
#include <cblas.h>
#include <immintrin.h>
#include <libxsmm.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;

// One row-major product C(M,N) = op(A) op(B) + beta C; op(A) is A^T where
// trans_a (A stored K x M), op(B) is B^T where trans_b (B stored N x K).
struct Product {
  std::string name;
  bool trans_a, trans_b;
  int M, N, K;
  float beta;
};

// ---- own AVX-512 kernel ----
constexpr int kTileRows = 12, kTileCols = 32, kBlockK = 256, kBlockRows = 144, kBlockCols = 1024;

// A block (rows i0.., depth k0..) as panels of kTileRows rows, k-major; short panels padded with 0.
void pack_a(const Product& p, const float* A, int lda, int i0, int rows, int k0, int depth, float* out) {
  for (int ir = 0; ir < rows; ir += kTileRows) {
    const int tile = std::min(kTileRows, rows - ir);
    for (int k = 0; k < depth; ++k, out += kTileRows) {
      for (int i = 0; i < tile; ++i) {
        const long r = i0 + ir + i, c = k0 + k;
        out[i] = p.trans_a ? A[c * lda + r] : A[r * lda + c];
      }
      std::fill(out + tile, out + kTileRows, 0.0f);
    }
  }
}

// B block (depth k0.., columns j0..) as panels of kTileCols columns, k-major.
void pack_b(const Product& p, const float* B, int ldb, int k0, int depth, int j0, int cols, float* out) {
  for (int jr = 0; jr < cols; jr += kTileCols) {
    const int tile = std::min(kTileCols, cols - jr);
    for (int k = 0; k < depth; ++k, out += kTileCols) {
      const long c = k0 + k;
      if (!p.trans_b && tile == kTileCols) {
        std::memcpy(out, B + c * ldb + j0 + jr, sizeof(float) * kTileCols);
        continue;
      }
      for (int j = 0; j < tile; ++j) {
        const long col = j0 + jr + j;
        out[j] = p.trans_b ? B[col * ldb + c] : B[c * ldb + col];
      }
      std::fill(out + tile, out + kTileCols, 0.0f);
    }
  }
}

__attribute__((target("avx512f"))) void tile_kernel(int depth, const float* a, const float* b, float* c, int ldc,
                                                    float beta, int rows, int cols) {
  __m512 sum[kTileRows][2];
  for (auto& row : sum) row[0] = row[1] = _mm512_setzero_ps();
  for (int k = 0; k < depth; ++k, a += kTileRows, b += kTileCols) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int i = 0; i < kTileRows; ++i) {
      const __m512 ai = _mm512_set1_ps(a[i]);
      sum[i][0] = _mm512_fmadd_ps(ai, b0, sum[i][0]);
      sum[i][1] = _mm512_fmadd_ps(ai, b1, sum[i][1]);
    }
  }
  const auto mask = [](int n) {
    return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
  };
  const __mmask16 m0 = mask(cols), m1 = mask(cols - 16);
  const __m512 vbeta = _mm512_set1_ps(beta);
  for (int i = 0; i < rows; ++i) {
    float* ci = c + static_cast<long>(i) * ldc;
    __m512 r0 = sum[i][0], r1 = sum[i][1];
    if (beta != 0.0f) {
      r0 = _mm512_fmadd_ps(vbeta, _mm512_maskz_loadu_ps(m0, ci), r0);
      r1 = _mm512_fmadd_ps(vbeta, _mm512_maskz_loadu_ps(m1, ci + 16), r1);
    }
    _mm512_mask_storeu_ps(ci, m0, r0);
    _mm512_mask_storeu_ps(ci + 16, m1, r1);
  }
}

void own_gemm(const Product& p, const float* A, int lda, const float* B, int ldb, float* C, int ldc) {
  static float* packed_a = static_cast<float*>(std::aligned_alloc(64, sizeof(float) * kBlockRows * kBlockK));
  static float* packed_b = static_cast<float*>(std::aligned_alloc(64, sizeof(float) * kBlockK * kBlockCols));
  for (int jc = 0; jc < p.N; jc += kBlockCols) {
    const int cols = std::min(kBlockCols, p.N - jc);
    for (int pc = 0; pc < p.K; pc += kBlockK) {
      const int depth = std::min(kBlockK, p.K - pc);
      const float beta = pc == 0 ? p.beta : 1.0f;
      pack_b(p, B, ldb, pc, depth, jc, cols, packed_b);
      for (int ic = 0; ic < p.M; ic += kBlockRows) {
        const int rows = std::min(kBlockRows, p.M - ic);
        pack_a(p, A, lda, ic, rows, pc, depth, packed_a);
        for (int jr = 0; jr < cols; jr += kTileCols)
          for (int ir = 0; ir < rows; ir += kTileRows)
            tile_kernel(depth, packed_a + ir * depth, packed_b + static_cast<long>(jr) * depth,
                        C + static_cast<long>(ic + ir) * ldc + jc + jr, ldc, beta, std::min(kTileRows, rows - ir),
                        std::min(kTileCols, cols - jr));
      }
    }
  }
}

// ---- libxsmm over tiles ----
void transpose(const float* in, int rows, int cols, float* out) {  // out (cols x rows) = in^T
  for (int i0 = 0; i0 < rows; i0 += 32)
    for (int j0 = 0; j0 < cols; j0 += 32)
      for (int i = i0; i < std::min(rows, i0 + 32); ++i)
        for (int j = j0; j < std::min(cols, j0 + 32); ++j)
          out[static_cast<long>(j) * rows + i] = in[static_cast<long>(i) * cols + j];
}

void xsmm_gemm(const Product& p, const float* A, int lda, const float* B, int ldb, float* C, int ldc) {
  constexpr int kTile = 64, kDepth = 256;
  static std::vector<float> b_transposed;
  if (p.trans_b) {  // the forward's W (N x K): W^T copied, K x N
    b_transposed.resize(static_cast<std::size_t>(p.K) * p.N);
    transpose(B, p.N, p.K, b_transposed.data());
    B = b_transposed.data(), ldb = p.N;
  }
  // Column-major: C^T (N x M) = B^T (N x K, ld ldb) times A^T (K x M, ld lda), or with
  // trans_a the transpose of A's storage read as M x K (TRANS_B).
  const int flags = p.trans_a ? LIBXSMM_GEMM_FLAG_TRANS_B : 0;
  const libxsmm_blasint ld_first = ldb, ld_second = lda, ld_out = ldc;
  const float alpha = 1.0f, one = 1.0f;
  for (int j0 = 0; j0 < p.N; j0 += kTile)
    for (int i0 = 0; i0 < p.M; i0 += kTile)
      for (int k0 = 0; k0 < p.K; k0 += kDepth) {
        const int tn = std::min(kTile, p.N - j0), tm = std::min(kTile, p.M - i0), tk = std::min(kDepth, p.K - k0);
        const libxsmm_smmfunction kernel = libxsmm_smmdispatch(tn, tm, tk, &ld_first, &ld_second, &ld_out, &alpha,
                                                               k0 == 0 ? &p.beta : &one, &flags, nullptr);
        if (kernel == nullptr) {
          std::fprintf(stderr, "libxsmm has no kernel for %d x %d x %d\n", tn, tm, tk);
          std::exit(1);
        }
        const float* second = p.trans_a ? A + i0 + static_cast<long>(k0) * lda : A + static_cast<long>(i0) * lda + k0;
        kernel(B + j0 + static_cast<long>(k0) * ldb, second, C + static_cast<long>(i0) * ldc + j0);
      }
}

// ---- OpenBLAS as cpu_gemm.cpp calls it ----
int gemm_parts(int M, int N, int K) {  // a copy of cpu_gemm.cpp's
  const double flops = 2.0 * M * N * std::max(K, 1);
  const int wide = std::max(M, N);
  double most = std::min({32.0, flops / 1.0e6, static_cast<double>(wide / 512)});
  if (most < 2 && wide >= 256 && flops >= 2.0e6) most = 2;
  int parts = 1;
  while (parts * 2 <= most) parts *= 2;
  return parts;
}

void openblas_gemm(const Product& p, const float* A, int lda, const float* B, int ldb, float* C, int ldc) {
  const int parts = gemm_parts(p.M, p.N, p.K);
  for (int part = 0; part < parts; ++part) {
    int m0 = 0, m1 = p.M, n0 = 0, n1 = p.N;
    if (p.M >= p.N)
      m0 = static_cast<long>(p.M) * part / parts, m1 = static_cast<long>(p.M) * (part + 1) / parts;
    else
      n0 = static_cast<long>(p.N) * part / parts, n1 = static_cast<long>(p.N) * (part + 1) / parts;
    const float* a = p.trans_a ? A + m0 : A + static_cast<long>(m0) * lda;
    const float* b = p.trans_b ? B + static_cast<long>(n0) * ldb : B + n0;
    cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans, p.trans_b ? CblasTrans : CblasNoTrans, m1 - m0,
                n1 - n0, p.K, 1.0f, a, lda, b, ldb, p.beta, C + static_cast<long>(m0) * ldc + n0, ldc);
  }
}

// A linear layer's three products for `tokens` rows, in_f -> out_f (cpu_gemm.cpp's linear_*).
void add_layer(std::vector<Product>& list, const std::string& name, int tokens, int out_f, int in_f) {
  list.push_back({name + " fwd", false, true, tokens, out_f, in_f, 0.0f});  // Y = X W^T
  list.push_back({name + " dX", false, false, tokens, in_f, out_f, 0.0f});  // dX = dY W
  list.push_back({name + " dW", true, false, out_f, in_f, tokens, 1.0f});   // dW += dY^T X
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx512f")) {
    std::fprintf(stderr, "gemm_candidates: the own kernel needs AVX-512 (avx512f), which this CPU lacks\n");
    return 2;
  }
  openblas_set_num_threads(1);
  libxsmm_init();
  const bool gpt2 = argc > 1 && std::string(argv[1]) == "124m";
  std::vector<Product> list;
  struct Layer {
    const char* name;
    int out_f, in_f;
  };
  const std::vector<Layer> layers =
      gpt2 ? std::vector<Layer>{{"qkv", 2304, 768},
                                {"proj", 768, 768},
                                {"fc", 3072, 768},
                                {"fc2", 768, 3072},
                                {"lm_head", 50257, 768}}
           : std::vector<Layer>{{"qkv", 384, 128}, {"proj", 128, 128}, {"fc", 512, 128}, {"fc2", 128, 512}};
  for (const Layer& layer : layers) add_layer(list, layer.name, gpt2 ? 256 : 1024, layer.out_f, layer.in_f);
  const int reps = gpt2 ? 5 : 41;
  std::vector<float> evict(64 << 18);
  const char* names[3] = {"OpenBLAS", "libxsmm", "own"};
  double total[3] = {0, 0, 0};
  std::printf("%-14s %9s %9s %9s %8s %8s %9s\n", "GFLOP/s", names[0], names[1], names[2], "xsmm/ob", "own/ob",
              "max diff");
  for (const Product& p : list) {
    const int lda = p.trans_a ? p.M : p.K, ldb = p.trans_b ? p.K : p.N;
    std::vector<float> A(static_cast<std::size_t>(p.M) * p.K), B(static_cast<std::size_t>(p.K) * p.N),
        C(static_cast<std::size_t>(p.M) * p.N);
    for (float& x : A) x = std::rand() / static_cast<float>(RAND_MAX) - 0.5f;
    for (float& x : B) x = std::rand() / static_cast<float>(RAND_MAX) - 0.5f;
    std::vector<double> seconds[3];
    std::vector<float> first[3];
    for (int r = 0; r < reps; ++r)
      for (int v = 0; v < 3; ++v) {
        std::fill(C.begin(), C.end(), 0.25f);
        for (std::size_t i = 0; i < evict.size(); i += 16) evict[i] += 1.0f;
        const auto start = Clock::now();
        if (v == 0) openblas_gemm(p, A.data(), lda, B.data(), ldb, C.data(), p.N);
        if (v == 1) xsmm_gemm(p, A.data(), lda, B.data(), ldb, C.data(), p.N);
        if (v == 2) own_gemm(p, A.data(), lda, B.data(), ldb, C.data(), p.N);
        seconds[v].push_back(std::chrono::duration<double>(Clock::now() - start).count());
        if (r == 0) first[v] = C;
      }
    double diff = 0;
    for (std::size_t i = 0; i < C.size(); ++i)
      diff = std::max({diff, static_cast<double>(std::fabs(first[1][i] - first[0][i])),
                       static_cast<double>(std::fabs(first[2][i] - first[0][i]))});
    const double gflop = 2.0e-9 * p.M * p.N * p.K, t0 = median(seconds[0]), t1 = median(seconds[1]),
                 t2 = median(seconds[2]);
    std::printf("%-14s %9.1f %9.1f %9.1f %8.2f %8.2f %9.1e\n", p.name.c_str(), gflop / t0, gflop / t1, gflop / t2,
                t0 / t1, t0 / t2, diff);
    total[0] += t0, total[1] += t1, total[2] += t2;
  }
  std::printf("all products, ms: OpenBLAS %.2f, libxsmm %.2f (%.2fx), own %.2f (%.2fx)\n", total[0] * 1e3,
              total[1] * 1e3, total[0] / total[1], total[2] * 1e3, total[0] / total[2]);
}
