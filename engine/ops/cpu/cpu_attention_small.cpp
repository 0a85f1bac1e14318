// SPDX-License-Identifier: GPL-3.0-or-later
// Small-head attention kernels (cpu_attention_small.h). Every product of the
// forward and the backward is one shape, Y (8 x 16) = sum_k A(r, k) M(k, :):
//   S  = Q K^T     A = Q rows,             M = K^T packed (hd, T)
//   Y  = P V       A = P rows,             M = V rows
//   dP = dY V^T    A = dY rows,            M = V^T packed
//   dQ = dS K      A = dS rows,            M = K rows
//   dV = P^T dY    A = P columns (r = j),  M = dY rows, k = i from j (causal)
//   dK = dS^T Q    A = dS columns,         M = Q rows
// tile_8x16 keeps the 8 x 16 sums in registers (one 16-float vector per row)
// and streams one row of M per k, so each load of M feeds 8 multiply-adds.
// Under a causal mask P and dS are zero above the diagonal, so the k ranges
// and the column tiles stop at the last row's diagonal. Each element is
// summed in k order by one thread, whatever the thread count.
#include "ops/cpu/cpu_attention_small.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "ops/cpu/cpu_simd.h"
#include "ops/math.h"

namespace shardscope::cpu {
namespace {

constexpr int kRows = 8;    // rows of a register tile
constexpr int kWidth = 16;  // floats of a vector: one AVX-512 register, two AVX2 ones

typedef float f32x16 __attribute__((vector_size(kWidth * sizeof(float))));

int padded(int T) {
  return (T + kWidth - 1) / kWidth * kWidth;
}

// y[r][0, 16) = sum over k in [k0, k1) of a[r][k * a_step] * m[k * ldm + (0, 16)], for r < rows.
// a[r] for r >= rows may repeat a valid row: those sums are dropped.
[[gnu::always_inline]] inline void tile_8x16(const float* const* a, std::int64_t a_step, int k0, int k1, const float* m,
                                             std::int64_t ldm, float* const* y, int rows) {
  f32x16 acc[kRows] = {};
#pragma GCC unroll 4
  for (int k = k0; k < k1; ++k) {
    f32x16 mk;
    __builtin_memcpy(&mk, m + k * ldm, sizeof mk);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) acc[r] += a[r][k * a_step] * mk;
  }
  for (int r = 0; r < rows; ++r) __builtin_memcpy(y[r], &acc[r], sizeof(f32x16));
}

// tile_8x16 for 8 adjacent columns of A, a[k * a_step + r]: one pointer walks
// the rows of A, so a step costs one add instead of eight.
[[gnu::always_inline]] inline void tile_8x16_columns(const float* a, std::int64_t a_step, int k0, int k1,
                                                     const float* m, std::int64_t ldm, float* const* y) {
  f32x16 acc[kRows] = {};
  a += k0 * a_step;
  m += k0 * ldm;
  for (int k = k0; k < k1; ++k, a += a_step, m += ldm) {
    f32x16 mk;
    __builtin_memcpy(&mk, m, sizeof mk);
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) acc[r] += a[r] * mk;
  }
  for (int r = 0; r < kRows; ++r) __builtin_memcpy(y[r], &acc[r], sizeof(f32x16));
}

// Rows [0, rows) of Y over columns [0, n) (n a multiple of 16) of sum_k A M, where
// A(r, k) = a[r * a_row + k * a_step] and Y(r, c) = y[r * ldy + c].
[[gnu::always_inline]] inline void tile_rows(const float* a, std::int64_t a_row, std::int64_t a_step, int k0, int k1,
                                             const float* m, std::int64_t ldm, float* y, std::int64_t ldy, int rows,
                                             int n) {
  const float* ar[kRows];
  float* yr[kRows];
  for (int r = 0; r < kRows; ++r) ar[r] = a + std::min(r, rows - 1) * a_row;
  for (int c = 0; c < n; c += kWidth) {
    for (int r = 0; r < rows; ++r) yr[r] = y + r * ldy + c;
    if (a_row == 1 && rows == kRows)
      tile_8x16_columns(a, a_step, k0, k1, m + c, ldm, yr);
    else
      tile_8x16(ar, a_step, k0, k1, m + c, ldm, yr, rows);
  }
}

typedef int i32x16 __attribute__((vector_size(kWidth * sizeof(int))));

// Lanes of __builtin_shuffle(a, b, mask) (b's lanes are 16..31) that swap the
// off-diagonal w x w blocks of rows r and r + w: half 0 makes row r, half 1 row r + w.
constexpr std::array<int, kWidth> block_swap_mask(int w, int half) {
  std::array<int, kWidth> m{};
  for (int p = 0; p < kWidth; ++p) {
    const int block = p / (2 * w) * 2 * w;
    const int off = p % (2 * w);
    m[p] = (off < w ? block + off : kWidth + block + off - w) + half * w;
  }
  return m;
}

// A 16 x 16 transpose in registers: swapping off-diagonal blocks of 8, then of
// 4, 2 and 1 within them (64 two-register shuffles instead of 256 scalar moves).
[[gnu::always_inline]] inline void transpose16(f32x16* x) {
#pragma GCC unroll 4
  for (int w = 8; w >= 1; w /= 2) {
    constexpr std::size_t bytes = sizeof(i32x16);
    i32x16 lo;
    i32x16 hi;
    __builtin_memcpy(&lo, block_swap_mask(w, 0).data(), bytes);
    __builtin_memcpy(&hi, block_swap_mask(w, 1).data(), bytes);
#pragma GCC unroll 16
    for (int r = 0; r < kWidth; ++r) {
      if ((r & w) != 0) continue;
      const f32x16 a = x[r];
      x[r] = __builtin_shuffle(a, x[r + w], lo);
      x[r + w] = __builtin_shuffle(a, x[r + w], hi);
    }
  }
}

// dst (hd, Tp) = src (T, hd; stride ld) transposed, columns [T, Tp) zero, in
// 16 x 16 blocks (hd is a multiple of 16).
[[gnu::always_inline]] inline void pack_transposed(float* dst, const float* src, std::int64_t ld, int T, int hd) {
  const int Tp = padded(T);
  for (int j0 = 0; j0 < T; j0 += kWidth) {
    for (int d0 = 0; d0 < hd; d0 += kWidth) {
      f32x16 x[kWidth];
      for (int r = 0; r < kWidth; ++r) {
        x[r] = f32x16{};
        if (j0 + r < T) __builtin_memcpy(&x[r], src + (j0 + r) * ld + d0, sizeof(f32x16));
      }
      transpose16(x);
      for (int r = 0; r < kWidth; ++r)
        __builtin_memcpy(dst + static_cast<std::int64_t>(d0 + r) * Tp + j0, &x[r], sizeof(f32x16));
    }
  }
}

// Every lane of v becomes the max (or the sum) of v's lanes, by a tree of
// swaps of halves, quarters, ...: a fixed order, whichever lanes hold what.
[[gnu::always_inline]] inline void lanes_max(f32x16& v) {
#pragma GCC unroll 4
  for (int w = 8; w >= 1; w /= 2) {
    i32x16 swap;
    for (int l = 0; l < kWidth; ++l) swap[l] = l ^ w;
    const f32x16 u = __builtin_shuffle(v, swap);
    v = u > v ? u : v;
  }
}
[[gnu::always_inline]] inline void lanes_sum(f32x16& v) {
#pragma GCC unroll 4
  for (int w = 8; w >= 1; w /= 2) {
    i32x16 swap;
    for (int l = 0; l < kWidth; ++l) swap[l] = l ^ w;
    v += __builtin_shuffle(v, swap);
  }
}

// x = math::exp_approx(x) on 16 lanes: the same clamp, the same split
// x = n ln2 + r and the same polynomial, with floor done by truncation.
[[gnu::always_inline]] inline void exp_lanes(f32x16& x) {
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  const f32x16 y = x * 1.4426950408889634f + 0.5f;
  f32x16 n = __builtin_convertvector(__builtin_convertvector(y, i32x16), f32x16);
  n = n > y ? n - 1.0f : n;  // truncation rounds negatives up
  const f32x16 r = (x - n * 0.693145751953125f) - n * 1.4286068203094173e-06f;
  const f32x16 p =
      1.0f +
      r * (1.0f + r * (0.5f + r * (1.6666667e-1f + r * (4.1666668e-2f + r * (8.3333338e-3f + r * 1.3888889e-3f)))));
  const i32x16 bits = (__builtin_convertvector(n, i32x16) + 127) << 23;
  x = p * reinterpret_cast<f32x16>(bits);
}

// p[0, T) = softmax over the live keys (j < valid, padding[j] != 0) of scale * s,
// zero elsewhere, as math::softmax_row, 16 keys at a time (the max and the sum
// by lanes_max / lanes_sum). s holds n >= valid floats (n a multiple of 16),
// overwritten; a NaN among the live ones makes the row NaN. Every row of a tile passes the same n, so the loops' trip
// counts repeat and their exits are predicted.
[[gnu::always_inline]] inline void softmax_tile_row(float* s, float* p, int T, int valid, int n,
                                                    const std::int32_t* padding, float scale) {
  i32x16 lane;
  for (int l = 0; l < kWidth; ++l) lane[l] = l;
  f32x16 max_v = f32x16{} - INFINITY;
  i32x16 nan_seen{};
  for (int c = 0; c < n; c += kWidth) {
    i32x16 live = lane + c < valid;
    if (padding != nullptr) {
      i32x16 pad{};
      __builtin_memcpy(&pad, padding + c, sizeof(int) * static_cast<std::size_t>(std::min(kWidth, T - c)));
      live &= pad != 0;
    }
    f32x16 x;
    __builtin_memcpy(&x, s + c, sizeof x);
    const i32x16 dead = reinterpret_cast<i32x16>(f32x16{} - INFINITY);
    x = reinterpret_cast<f32x16>((reinterpret_cast<i32x16>(x * scale) & live) | (dead & ~live));  // live: all ones
    __builtin_memcpy(s + c, &x, sizeof x);
    nan_seen |= x != x;
    max_v = x > max_v ? x : max_v;
  }
  // A NaN score makes the whole row NaN, as softmax_row and PyTorch's softmax do (the max and
  // the zeroing of dead keys below would otherwise drop it and hide the NaN).
  for (int l = 0; l < kWidth; ++l)
    if (nan_seen[l] != 0) {
      std::fill(p, p + T, std::numeric_limits<float>::quiet_NaN());
      return;
    }
  lanes_max(max_v);
  f32x16 sum{};
  for (int c = 0; c < n; c += kWidth) {
    f32x16 x;
    __builtin_memcpy(&x, s + c, sizeof x);
    f32x16 e = x - max_v;
    exp_lanes(e);
    e = x > -INFINITY ? e : 0.0f;
    __builtin_memcpy(s + c, &e, sizeof e);
    sum += e;
  }
  lanes_sum(sum);
  const float inv = sum[0] > 0.0f ? 1.0f / sum[0] : 0.0f;
  const int written = std::min(n, T);  // s is zero from valid on
  int j = 0;
  for (; j + kWidth <= written; j += kWidth) {
    f32x16 x;
    __builtin_memcpy(&x, s + j, sizeof x);
    x *= inv;
    __builtin_memcpy(p + j, &x, sizeof x);
  }
  for (; j < written; ++j) p[j] = s[j] * inv;
  std::fill(p + written, p + T, 0.0f);
}

}  // namespace

bool small_attention_cpu() {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  static const bool v4 = __builtin_cpu_supports("x86-64-v4");  // the clone SS_CPU_CLONES would pick
  return v4;
#else
  return false;
#endif
}

std::int64_t small_attention_work_floats(int T, int head_dim) {
  return static_cast<std::int64_t>(head_dim + kRows) * padded(T);
}

SS_CPU_CLONES void small_attention_forward(const SmallAttentionHead& h, bool causal, const std::int32_t* padding,
                                           float* y, std::int64_t ldy, float* p, float* work) {
  const int T = h.T;
  const int Tp = padded(T);
  float* kt = work;                                        // (hd, Tp) K^T
  float* s = work + static_cast<std::int64_t>(h.hd) * Tp;  // (8, Tp) scores of one row tile
  pack_transposed(kt, h.k, h.ld, T, h.hd);
  for (int i0 = 0; i0 < T; i0 += kRows) {
    const int rows = std::min(kRows, T - i0);
    const int n = causal ? i0 + rows : T;  // keys any row of the tile sees
    tile_rows(h.q + i0 * h.ld, h.ld, 1, 0, h.hd, kt, Tp, s, Tp, rows, padded(n));
    for (int r = 0; r < rows; ++r) {
      const int i = i0 + r;
      softmax_tile_row(s + r * Tp, p + static_cast<std::int64_t>(i) * T, T, causal ? i + 1 : T, padded(n), padding,
                       h.scale);
    }
    // Y = P V over the keys the tile sees; P is zero beyond each row's own.
    tile_rows(p + static_cast<std::int64_t>(i0) * T, T, 1, 0, n, h.v, h.ld, y + i0 * ldy, ldy, rows, h.hd);
  }
}

SS_CPU_CLONES void small_attention_backward(const SmallAttentionHead& h, bool causal, const float* dy, std::int64_t ldy,
                                            const float* p, float* ds, float* dq, float* dk, float* dv, float* work) {
  const int T = h.T;
  const int Tp = padded(T);
  float* vt = work;                                         // (hd, Tp) V^T
  float* dp = work + static_cast<std::int64_t>(h.hd) * Tp;  // (8, Tp) dP of one row tile
  pack_transposed(vt, h.v, h.ld, T, h.hd);
  for (int i0 = 0; i0 < T; i0 += kRows) {
    const int rows = std::min(kRows, T - i0);
    const int n = causal ? i0 + rows : T;
    tile_rows(dy + i0 * ldy, ldy, 1, 0, h.hd, vt, Tp, dp, Tp, rows, padded(n));
    for (int r = 0; r < rows; ++r) {
      // dS = scale P o (dP - rowsum(P o dP)); zero past the row's keys.
      const int i = i0 + r;
      const int valid = causal ? i + 1 : T;
      const std::int64_t row = static_cast<std::int64_t>(i) * T;
      math::softmax_backward_row(p + row, dp + r * Tp, ds + row, valid, h.scale);
      std::fill(ds + row + valid, ds + row + T, 0.0f);
    }
    tile_rows(ds + static_cast<std::int64_t>(i0) * T, T, 1, 0, n, h.k, h.ld, dq + i0 * h.ld, h.ld, rows,
              h.hd);  // dQ = dS K
  }
  // dV = P^T dY and dK = dS^T Q, 8 keys j at a time; under a causal mask only
  // queries i >= j saw key j.
  for (int j0 = 0; j0 < T; j0 += kRows) {
    const int rows = std::min(kRows, T - j0);
    const int i_first = causal ? j0 : 0;
    tile_rows(p + j0, 1, T, i_first, T, dy, ldy, dv + j0 * h.ld, h.ld, rows, h.hd);
    tile_rows(ds + j0, 1, T, i_first, T, h.q, h.ld, dk + j0 * h.ld, h.ld, rows, h.hd);
  }
}

}  // namespace shardscope::cpu
