// SPDX-License-Identifier: GPL-3.0-or-later
// Fused attention (FlashAttention-2, Dao 2023) on tensor cores, as
// torch.autocast runs scaled_dot_product_attention in bf16/fp16: Q, K, V (and
// dO) are rounded to 16 bits when a tile is loaded into shared memory, every
// product accumulates in fp32 (nvcuda::wmma 16x16x16 tiles), P is rounded to 16
// bits before P V (and dS before dS K, dS^T Q), and the outputs stay fp32.
// P (T x T per head) never leaves shared memory: the forward keeps each query
// row's log-sum-exp, the backward recomputes P from it.
//
//   forward   one block per (query tile of 64, head, sequence): walks the key
//             tiles (32 keys; causal: stops at the diagonal), online softmax
//             (ops/flash_math.h), out = O / l, lse = m + log l.
//   backward  D = rowsum(dO o O) per row; one block per (key tile, head,
//             sequence) sums dK, dV over the query tiles; one block per (query
//             tile, head, sequence) sums dQ over the key tiles. Each gradient
//             row has one writer and a fixed order: no atomics, same bits every run.
//
// Every matrix product is block_mma over shared memory; running sums (O, dK,
// dV, dQ) live in shared memory as fp32, because a wmma accumulator's element
// layout is unspecified and the online softmax must rescale O by rows.
// tests/engine/flash_reference.h runs this algorithm on the host, tile for tile.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/half.h"
#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/cuda_flash_attention.cuh"
#include "ops/flash_math.h"

namespace shardscope::cuda_detail {

namespace {

using namespace nvcuda;
using math::kFlashBackwardKeys;
using math::kFlashBackwardQueries;
using math::kFlashForwardKeys;
using math::kFlashForwardQueries;

constexpr int kWarps = 4;
constexpr int kFlashThreads = kWarps * 32;

// 16 bits with core/half.h's rounding, bit for bit the host reference's.
template <typename T16>
__device__ T16 round16(float x);
template <>
__device__ __nv_bfloat16 round16<__nv_bfloat16>(float x) {
  return __ushort_as_bfloat16(half::float_to_bf16_bits(x));
}
template <>
__device__ __half round16<__half>(float x) {
  return __ushort_as_half(half::float_to_f16_bits(x));
}

// Leading dimensions of the shared tiles, padded against bank conflicts. wmma
// wants multiples of 8 elements (16-bit) and 4 (fp32); every 16-row or
// 16-column step then stays on a 32-byte boundary, as wmma's pointers must.
// clang-format off
__host__ __device__ constexpr int ld16(int cols) { return cols + 8; }
__host__ __device__ constexpr int ld32(int cols) { return cols + 4; }
// clang-format on

// Hands out 128-byte aligned regions of dynamic shared memory; from base 0 it only counts.
struct Region {
  std::uintptr_t at;
  template <typename T>
  __host__ __device__ T* take(int count) {
    const std::uintptr_t p = at;
    at += (static_cast<std::uintptr_t>(count) * sizeof(T) + 127) / 128 * 128;
    return reinterpret_cast<T*>(p);
  }
};

template <typename T16>
struct ForwardTiles {
  T16 *q, *k, *v, *p;  // (64, hd), (32, hd), (32, hd), (64, 32)
  float *s, *o;        // scores (64, 32), running output (64, hd)
  float *m, *l;        // running max and sum (64)
  std::uintptr_t bytes;
  __host__ __device__ ForwardTiles(std::uintptr_t base, int hd) {
    Region r{base};
    q = r.take<T16>(kFlashForwardQueries * ld16(hd));
    k = r.take<T16>(kFlashForwardKeys * ld16(hd));
    v = r.take<T16>(kFlashForwardKeys * ld16(hd));
    p = r.take<T16>(kFlashForwardQueries * ld16(kFlashForwardKeys));
    s = r.take<float>(kFlashForwardQueries * ld32(kFlashForwardKeys));
    o = r.take<float>(kFlashForwardQueries * ld32(hd));
    m = r.take<float>(kFlashForwardQueries);
    l = r.take<float>(kFlashForwardQueries);
    bytes = r.at - base;
  }
};

// Both backward kernels: a tile of Bq = 32 queries against a tile of Bk = 32 keys.
template <typename T16>
struct BackwardTiles {
  T16 *q, *d_out, *k, *v;  // (32, hd) each
  T16 *p, *ds;             // P and dS in 16 bits (32, 32)
  float *s, *dp;           // S, then P in fp32, and dP (32, 32)
  float *acc_a, *acc_b;    // running sums (32, hd): dK and dV, or dQ and none
  float *lse, *row_dot;    // (32) per query row
  std::uintptr_t bytes;
  __host__ __device__ BackwardTiles(std::uintptr_t base, int hd, bool two_sums) {
    Region r{base};
    q = r.take<T16>(kFlashBackwardQueries * ld16(hd));
    d_out = r.take<T16>(kFlashBackwardQueries * ld16(hd));
    k = r.take<T16>(kFlashBackwardKeys * ld16(hd));
    v = r.take<T16>(kFlashBackwardKeys * ld16(hd));
    p = r.take<T16>(kFlashBackwardQueries * ld16(kFlashBackwardKeys));
    ds = r.take<T16>(kFlashBackwardQueries * ld16(kFlashBackwardKeys));
    s = r.take<float>(kFlashBackwardQueries * ld32(kFlashBackwardKeys));
    dp = r.take<float>(kFlashBackwardQueries * ld32(kFlashBackwardKeys));
    acc_a = r.take<float>(32 * ld32(hd));
    acc_b = two_sums ? r.take<float>(32 * ld32(hd)) : nullptr;
    lse = r.take<float>(kFlashBackwardQueries);
    row_dot = r.take<float>(kFlashBackwardQueries);
    bytes = r.at - base;
  }
};

static_assert(kFlashBackwardKeys == 32 && kFlashBackwardQueries == 32, "BackwardTiles' sums are 32 rows");
static_assert(kFlashForwardQueries == 16 * kWarps, "each warp's rows are one 16-row wmma tile");

// Rows [row0, row0 + rows) of a (T, hd) head slice with leading dimension ld,
// rounded to 16 bits; rows past T load as 0 (their scores are masked, and 0
// keeps 0 x garbage out of P V).
template <typename T16>
__device__ void load_tile(T16* dst, int hd, const float* src, long long ld, int row0, int rows, int T) {
  for (int i = threadIdx.x; i < rows * hd; i += blockDim.x) {
    const int r = i / hd, d = i % hd;
    const int t = row0 + r;
    dst[r * ld16(hd) + d] = round16<T16>(t < T ? src[static_cast<long long>(t) * ld + d] : 0.0f);
  }
}

__device__ void zero_rows(float* dst, int rows, int cols_ld) {
  for (int i = threadIdx.x; i < rows * cols_ld; i += blockDim.x) dst[i] = 0.0f;
}

// Offset of the logical element (row, col) of a matrix stored row-major, or
// stored transposed (col_major: element (row, col) at col * ld + row).
template <typename Layout>
__device__ int element_offset(int row, int col, int ld) {
  if constexpr (std::is_same_v<Layout, wmma::row_major>)
    return row * ld + col;
  else
    return col * ld + row;
}

// C (M, N) = A (M, K) B (K, N), or C += A B with accumulate, all in shared
// memory; M, N, K multiples of 16. The warps take the 16x16 tiles of C in turn.
// With col_major, A or B is read transposed from a row-major tile (K^T from K,
// P^T from P), so no tile is ever copied out transposed.
template <typename T16, typename LayoutA, typename LayoutB>
__device__ void block_mma(float* c, int ldc, const T16* a, int lda, const T16* b, int ldb, int M, int N, int K,
                          bool accumulate) {
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int tiles_n = N / 16;
  for (int t = warp; t < (M / 16) * tiles_n; t += kWarps) {
    const int row = (t / tiles_n) * 16, col = (t % tiles_n) * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    float* c_tile = c + row * ldc + col;
    if (accumulate)
      wmma::load_matrix_sync(acc, c_tile, ldc, wmma::mem_row_major);
    else
      wmma::fill_fragment(acc, 0.0f);
    for (int kk = 0; kk < K; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T16, LayoutA> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T16, LayoutB> fb;
      wmma::load_matrix_sync(fa, a + element_offset<LayoutA>(row, kk, lda), lda);
      wmma::load_matrix_sync(fb, b + element_offset<LayoutB>(kk, col, ldb), ldb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c_tile, acc, ldc, wmma::mem_row_major);
  }
}

// ---- forward --------------------------------------------------------------------------------

template <typename T16>
__global__ void __launch_bounds__(kFlashThreads)
    flash_forward_kernel(float* out, float* lse, const float* qkv, int T, int C, int H, float scale, bool causal,
                         const std::int32_t* padding) {
  SS_DYNAMIC_SHARED(shared);
  const int hd = C / H;
  const int q0 = static_cast<int>(blockIdx.x) * kFlashForwardQueries;
  const int h = static_cast<int>(blockIdx.y), b = static_cast<int>(blockIdx.z);
  const ForwardTiles<T16> tiles(reinterpret_cast<std::uintptr_t>(shared), hd);
  const long long ld = 3LL * C;
  const float* q = qkv + static_cast<long long>(b) * T * ld + static_cast<long long>(h) * hd;  // (T, hd), ld 3C
  const float* k = q + C;
  const float* v = q + 2 * C;
  const std::int32_t* pad = padding != nullptr ? padding + static_cast<long long>(b) * T : nullptr;

  load_tile(tiles.q, hd, q, ld, q0, kFlashForwardQueries, T);
  zero_rows(tiles.o, kFlashForwardQueries, ld32(hd));
  if (threadIdx.x < kFlashForwardQueries) {
    tiles.m[threadIdx.x] = -INFINITY;
    tiles.l[threadIdx.x] = 0.0f;
  }
  // Causal: key tiles entirely after the tile's last query see nothing; skip them.
  const int key_end = causal ? min(T, q0 + kFlashForwardQueries) : T;
  for (int k0 = 0; k0 < key_end; k0 += kFlashForwardKeys) {
    load_tile(tiles.k, hd, k, ld, k0, kFlashForwardKeys, T);
    load_tile(tiles.v, hd, v, ld, k0, kFlashForwardKeys, T);
    __syncthreads();  // K, V (and, the first time, Q, O, m, l) written
    // S = Q K^T
    block_mma<T16, wmma::row_major, wmma::col_major>(tiles.s, ld32(kFlashForwardKeys), tiles.q, ld16(hd), tiles.k,
                                                     ld16(hd), kFlashForwardQueries, kFlashForwardKeys, hd, false);
    __syncthreads();  // S complete
    // Online softmax, one thread per query row: mask, new max, P, l, O rescaled.
    if (threadIdx.x < kFlashForwardQueries) {
      const int r = static_cast<int>(threadIdx.x), query = q0 + r;
      float* s = tiles.s + r * ld32(kFlashForwardKeys);
      float tile_max = -INFINITY;
      for (int j = 0; j < kFlashForwardKeys; ++j) {
        s[j] = math::flash_key_live(query, k0 + j, T, causal, pad) ? s[j] * scale : math::flash_masked();
        tile_max = math::max_f(tile_max, s[j]);
      }
      const float m_old = tiles.m[r];
      const float m_new = math::flash_running_max(m_old, tile_max);
      const float alpha = math::flash_rescale(m_old, m_new);
      float sum = 0.0f;
      for (int j = 0; j < kFlashForwardKeys; ++j) {
        const float p = math::flash_exp(s[j], m_new);
        tiles.p[r * ld16(kFlashForwardKeys) + j] = round16<T16>(p);
        sum += p;
      }
      tiles.l[r] = tiles.l[r] * alpha + sum;
      tiles.m[r] = m_new;
      float* o = tiles.o + r * ld32(hd);
      for (int d = 0; d < hd; ++d) o[d] *= alpha;
    }
    __syncthreads();  // P and the rescaled O complete
    // O += P V
    block_mma<T16, wmma::row_major, wmma::row_major>(tiles.o, ld32(hd), tiles.p, ld16(kFlashForwardKeys), tiles.v,
                                                     ld16(hd), kFlashForwardQueries, hd, kFlashForwardKeys, true);
    __syncthreads();  // O complete; K, V, S, P free for the next tile
  }
  for (int i = threadIdx.x; i < kFlashForwardQueries * hd; i += blockDim.x) {
    const int r = i / hd, d = i % hd;
    if (q0 + r < T)
      out[(static_cast<long long>(b) * T + q0 + r) * C + static_cast<long long>(h) * hd + d] =
          tiles.o[r * ld32(hd) + d] * math::flash_inverse_sum(tiles.l[r]);
  }
  if (threadIdx.x < kFlashForwardQueries && q0 + static_cast<int>(threadIdx.x) < T)
    lse[(static_cast<long long>(b) * H + h) * T + q0 + threadIdx.x] =
        math::flash_log_sum_exp(tiles.m[threadIdx.x], tiles.l[threadIdx.x]);
}

// ---- backward -------------------------------------------------------------------------------

// row_dot (B, H, T): D = rowsum(dO o O), one thread per query row.
__global__ void flash_row_dot_kernel(float* row_dot, const float* d_out, const float* out, int B, int T, int C, int H) {
  const int hd = C / H;
  SS_GRID_STRIDE(row, static_cast<long long>(B) * H * T) {
    const long long t = row % T, bh = row / T;
    const long long off = ((bh / H) * T + t) * C + (bh % H) * hd;
    row_dot[row] = math::flash_output_dot(d_out + off, out + off, hd);
  }
}

// The shared step of both backward kernels, for query tile q0 and key tile k0
// already in tiles.q, d_out, k, v, lse, row_dot: S = Q K^T and dP = dO V^T, then
// per element P = e^(S scale - lse) and dS = scale P (dP - D), in 16 bits.
template <typename T16>
__device__ void backward_scores(const BackwardTiles<T16>& tiles, int hd, int q0, int k0, int T, float scale,
                                bool causal, const std::int32_t* pad) {
  // S = Q K^T and dP = dO V^T
  block_mma<T16, wmma::row_major, wmma::col_major>(tiles.s, ld32(kFlashBackwardKeys), tiles.q, ld16(hd), tiles.k,
                                                   ld16(hd), kFlashBackwardQueries, kFlashBackwardKeys, hd, false);
  block_mma<T16, wmma::row_major, wmma::col_major>(tiles.dp, ld32(kFlashBackwardKeys), tiles.d_out, ld16(hd), tiles.v,
                                                   ld16(hd), kFlashBackwardQueries, kFlashBackwardKeys, hd, false);
  __syncthreads();  // S and dP complete
  for (int e = threadIdx.x; e < kFlashBackwardQueries * kFlashBackwardKeys; e += blockDim.x) {
    const int i = e / kFlashBackwardKeys, j = e % kFlashBackwardKeys;
    const float s = tiles.s[i * ld32(kFlashBackwardKeys) + j];
    const float scaled = math::flash_key_live(q0 + i, k0 + j, T, causal, pad) ? s * scale : math::flash_masked();
    const float p = math::flash_prob(scaled, tiles.lse[i]);
    const float ds = math::flash_score_grad(p, tiles.dp[i * ld32(kFlashBackwardKeys) + j], tiles.row_dot[i], scale);
    tiles.p[i * ld16(kFlashBackwardKeys) + j] = round16<T16>(p);
    tiles.ds[i * ld16(kFlashBackwardKeys) + j] = round16<T16>(ds);
  }
  __syncthreads();  // P and dS complete
}

// The per-row values of query tile q0: lse (+inf past T: P = 0 there) and D.
template <typename T16>
__device__ void load_rows(const BackwardTiles<T16>& tiles, const float* lse, const float* row_dot, int q0, int T) {
  if (threadIdx.x < kFlashBackwardQueries) {
    const int t = q0 + static_cast<int>(threadIdx.x);
    tiles.lse[threadIdx.x] = t < T ? lse[t] : INFINITY;
    tiles.row_dot[threadIdx.x] = t < T ? row_dot[t] : 0.0f;
  }
}

// Rows [row0, row0 + 32) of a running sum into a (T, hd) head slice of d_qkv (ld 3C).
__device__ void store_rows(float* dst, long long ld, const float* sum, int hd, int row0, int T) {
  for (int i = threadIdx.x; i < 32 * hd; i += blockDim.x) {
    const int r = i / hd, d = i % hd;
    if (row0 + r < T) dst[static_cast<long long>(row0 + r) * ld + d] = sum[r * ld32(hd) + d];
  }
}

// What both backward kernels read of sequence b, head h: Q, K, V as (T, hd)
// slices of qkv (ld 3C, K and V C and 2C further), dO as a (T, hd) slice of
// d_out (ld C), the head's rows of lse and D, and the sequence's padding.
struct HeadSlices {
  long long ld, offset, rows;
  const float *q, *k, *v, *d_out;
  const std::int32_t* pad;
  __device__ HeadSlices(const float* qkv, const float* dy, const std::int32_t* padding, int b, int h, int T, int C,
                        int H)
      : ld(3LL * C),
        offset(static_cast<long long>(b) * T * ld + static_cast<long long>(h) * (C / H)),
        rows((static_cast<long long>(b) * H + h) * T),
        q(qkv + offset),
        k(q + C),
        v(q + 2 * C),
        d_out(dy + static_cast<long long>(b) * T * C + static_cast<long long>(h) * (C / H)),
        pad(padding != nullptr ? padding + static_cast<long long>(b) * T : nullptr) {}
};

// dK, dV of one key tile: sums over the query tiles that can see it.
template <typename T16>
__global__ void __launch_bounds__(kFlashThreads)
    flash_backward_key_kernel(float* d_qkv, const float* d_out, const float* qkv, const float* lse,
                              const float* row_dot, int T, int C, int H, float scale, bool causal,
                              const std::int32_t* padding) {
  SS_DYNAMIC_SHARED(shared);
  const int hd = C / H;
  const int k0 = static_cast<int>(blockIdx.x) * kFlashBackwardKeys;
  const int h = static_cast<int>(blockIdx.y), b = static_cast<int>(blockIdx.z);
  const BackwardTiles<T16> tiles(reinterpret_cast<std::uintptr_t>(shared), hd, true);
  const HeadSlices head(qkv, d_out, padding, b, h, T, C, H);
  const long long ld = head.ld;
  const float *q = head.q, *k = head.k, *v = head.v, *dy = head.d_out;
  const long long rows = head.rows;
  const std::int32_t* pad = head.pad;
  float* d_k = tiles.acc_a;
  float* d_v = tiles.acc_b;

  load_tile(tiles.k, hd, k, ld, k0, kFlashBackwardKeys, T);
  load_tile(tiles.v, hd, v, ld, k0, kFlashBackwardKeys, T);
  zero_rows(d_k, kFlashBackwardKeys, ld32(hd));
  zero_rows(d_v, kFlashBackwardKeys, ld32(hd));
  // Causal: query tiles entirely before the first key see none of it; skip them.
  const int q_begin = causal ? k0 / kFlashBackwardQueries * kFlashBackwardQueries : 0;
  for (int q0 = q_begin; q0 < T; q0 += kFlashBackwardQueries) {
    load_tile(tiles.q, hd, q, ld, q0, kFlashBackwardQueries, T);
    load_tile(tiles.d_out, hd, dy, C, q0, kFlashBackwardQueries, T);
    load_rows(tiles, lse + rows, row_dot + rows, q0, T);
    __syncthreads();  // Q, dO, lse, D (and, the first time, K, V, dK, dV) written
    backward_scores(tiles, hd, q0, k0, T, scale, causal, pad);
    // dV += P^T dO
    block_mma<T16, wmma::col_major, wmma::row_major>(d_v, ld32(hd), tiles.p, ld16(kFlashBackwardKeys), tiles.d_out,
                                                     ld16(hd), kFlashBackwardKeys, hd, kFlashBackwardQueries, true);
    // dK += dS^T Q
    block_mma<T16, wmma::col_major, wmma::row_major>(d_k, ld32(hd), tiles.ds, ld16(kFlashBackwardKeys), tiles.q,
                                                     ld16(hd), kFlashBackwardKeys, hd, kFlashBackwardQueries, true);
    __syncthreads();  // dK, dV complete; Q, dO, P, dS free for the next tile
  }
  store_rows(d_qkv + head.offset + C, ld, d_k, hd, k0, T);
  store_rows(d_qkv + head.offset + 2 * C, ld, d_v, hd, k0, T);
}

// dQ of one query tile: sums over the key tiles it can see.
template <typename T16>
__global__ void __launch_bounds__(kFlashThreads)
    flash_backward_query_kernel(float* d_qkv, const float* d_out, const float* qkv, const float* lse,
                                const float* row_dot, int T, int C, int H, float scale, bool causal,
                                const std::int32_t* padding) {
  SS_DYNAMIC_SHARED(shared);
  const int hd = C / H;
  const int q0 = static_cast<int>(blockIdx.x) * kFlashBackwardQueries;
  const int h = static_cast<int>(blockIdx.y), b = static_cast<int>(blockIdx.z);
  const BackwardTiles<T16> tiles(reinterpret_cast<std::uintptr_t>(shared), hd, false);
  const HeadSlices head(qkv, d_out, padding, b, h, T, C, H);
  const long long ld = head.ld;
  const float *q = head.q, *k = head.k, *v = head.v, *dy = head.d_out;
  const long long rows = head.rows;
  const std::int32_t* pad = head.pad;
  float* d_q = tiles.acc_a;

  load_tile(tiles.q, hd, q, ld, q0, kFlashBackwardQueries, T);
  load_tile(tiles.d_out, hd, dy, C, q0, kFlashBackwardQueries, T);
  load_rows(tiles, lse + rows, row_dot + rows, q0, T);
  zero_rows(d_q, kFlashBackwardQueries, ld32(hd));
  const int key_end = causal ? min(T, q0 + kFlashBackwardQueries) : T;
  for (int k0 = 0; k0 < key_end; k0 += kFlashBackwardKeys) {
    load_tile(tiles.k, hd, k, ld, k0, kFlashBackwardKeys, T);
    load_tile(tiles.v, hd, v, ld, k0, kFlashBackwardKeys, T);
    __syncthreads();  // K, V (and, the first time, Q, dO, lse, D, dQ) written
    backward_scores(tiles, hd, q0, k0, T, scale, causal, pad);
    // dQ += dS K
    block_mma<T16, wmma::row_major, wmma::row_major>(d_q, ld32(hd), tiles.ds, ld16(kFlashBackwardKeys), tiles.k,
                                                     ld16(hd), kFlashBackwardQueries, hd, kFlashBackwardKeys, true);
    __syncthreads();  // dQ complete; K, V, S, dS free for the next tile
  }
  store_rows(d_qkv + head.offset, ld, d_q, hd, q0, T);
}

// Launches with `bytes` of dynamic shared memory, raising the 48 KB default
// (every sm_80+ GPU allows more per block: 99 KB on sm_86/89, 163+ on sm_80/90).
template <typename Kernel, typename... Args>
void launch(Kernel kernel, const char* name, const char* op, dim3 grid, std::uintptr_t bytes, cudaStream_t stream,
            Args... args) {
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
        "cudaFuncSetAttribute", op);
  SS_LAUNCH(kernel, grid, kFlashThreads, bytes, stream)(args...);
  check_launch(name, op);
}

// The shapes the tiles cover, checked before any launch. A head dim that is not
// a multiple of 16 would let wmma read the tiles' uninitialised pad columns (a
// silently wrong result); past 128 the shared tiles outgrow sm_86/89's 99 KB;
// gridDim.y and .z (H and B) are at most 65535. cuda_attention_kernel only
// routes shapes that pass, so this guards the functions' own contract.
void check_shape(int B, int C, int H, const char* op) {
  const int hd = C / H;
  if (hd * H != C || hd <= 0 || hd % 16 != 0 || hd > 128)
    fail("flash attention", op,
         "head dim C/H = " + std::to_string(C) + "/" + std::to_string(H) + " is not a multiple of 16 in [16, 128]");
  if (B > 65535 || H > 65535)
    fail("flash attention", op, "B = " + std::to_string(B) + ", H = " + std::to_string(H) + " exceed 65535 (grid)");
}

unsigned tiles_of(int T, int tile) {
  return static_cast<unsigned>((T + tile - 1) / tile);
}

template <typename T16>
void forward(cudaStream_t stream, float* out, float* lse, const float* qkv, int B, int T, int C, int H, bool causal,
             const std::int32_t* padding) {
  const int hd = C / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const dim3 grid(tiles_of(T, kFlashForwardQueries), static_cast<unsigned>(H), static_cast<unsigned>(B));
  launch(flash_forward_kernel<T16>, "flash_forward_kernel", "attention_forward", grid, ForwardTiles<T16>(0, hd).bytes,
         stream, out, lse, qkv, T, C, H, scale, causal, padding);
}

template <typename T16>
void backward(cudaStream_t stream, float* d_qkv, float* row_dot, const float* d_out, const float* qkv, const float* out,
              const float* lse, int B, int T, int C, int H, bool causal, const std::int32_t* padding) {
  const int hd = C / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const char* op = "attention_backward";
  SS_LAUNCH(flash_row_dot_kernel, blocks_for(static_cast<std::int64_t>(B) * H * T), kThreads, 0, stream)
  (row_dot, d_out, out, B, T, C, H);
  check_launch("flash_row_dot_kernel", op);
  const dim3 key_grid(tiles_of(T, kFlashBackwardKeys), static_cast<unsigned>(H), static_cast<unsigned>(B));
  launch(flash_backward_key_kernel<T16>, "flash_backward_key_kernel", op, key_grid,
         BackwardTiles<T16>(0, hd, true).bytes, stream, d_qkv, d_out, qkv, lse, static_cast<const float*>(row_dot), T,
         C, H, scale, causal, padding);
  const dim3 query_grid(tiles_of(T, kFlashBackwardQueries), static_cast<unsigned>(H), static_cast<unsigned>(B));
  launch(flash_backward_query_kernel<T16>, "flash_backward_query_kernel", op, query_grid,
         BackwardTiles<T16>(0, hd, false).bytes, stream, d_qkv, d_out, qkv, lse, static_cast<const float*>(row_dot), T,
         C, H, scale, causal, padding);
}

}  // namespace

void flash_attention_forward(cudaStream_t stream, Flash16 type, float* out, float* lse, const float* qkv, int B, int T,
                             int C, int H, bool causal, const std::int32_t* padding) {
  if (B <= 0 || T <= 0 || H <= 0) return;
  check_shape(B, C, H, "attention_forward");
  if (type == Flash16::bf16)
    forward<__nv_bfloat16>(stream, out, lse, qkv, B, T, C, H, causal, padding);
  else
    forward<__half>(stream, out, lse, qkv, B, T, C, H, causal, padding);
}

void flash_attention_backward(cudaStream_t stream, Flash16 type, float* d_qkv, float* row_dot, const float* d_out,
                              const float* qkv, const float* out, const float* lse, int B, int T, int C, int H,
                              bool causal, const std::int32_t* padding) {
  if (B <= 0 || T <= 0 || H <= 0) return;
  check_shape(B, C, H, "attention_backward");
  if (type == Flash16::bf16)
    backward<__nv_bfloat16>(stream, d_qkv, row_dot, d_out, qkv, out, lse, B, T, C, H, causal, padding);
  else
    backward<__half>(stream, d_qkv, row_dot, d_out, qkv, out, lse, B, T, C, H, causal, padding);
}

}  // namespace shardscope::cuda_detail
