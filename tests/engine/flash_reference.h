// SPDX-License-Identifier: GPL-3.0-or-later
// The fused attention of the CUDA backend (engine/ops/cuda/cuda_flash_attention.cu)
// run on the host, tile for tile: the same tile sizes and iteration order, the
// same per-row and per-element math (ops/flash_math.h) and the same 16-bit
// rounding points (core/half.h): Q, K, V, dO when a tile is loaded, P before
// P V and P^T dO, dS before dS K and dS^T Q. Only the order of the sums inside
// one tile product differs (here in index order, on the GPU inside the tensor
// cores). With rounding off it computes exact fp32 attention, which the CPU
// tests compare with the CPU backend's materialized attention; the GPU tests
// compare the kernels with it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/half.h"
#include "ops/backend.h"
#include "ops/flash_math.h"

namespace shardscope::test {

enum class FlashRounding { none, bf16, fp16 };

inline float flash_round(FlashRounding rounding, float x) {
  if (rounding == FlashRounding::bf16) return half::bf16_bits_to_float(half::float_to_bf16_bits(x));
  if (rounding == FlashRounding::fp16) return half::f16_bits_to_float(half::float_to_f16_bits(x));
  return x;
}

// Rows [row0, row0 + rows) of a (T, hd) slice with leading dimension ld,
// rounded; rows past T are 0 (load_tile).
inline std::vector<float> flash_load_tile(FlashRounding rounding, const float* src, long long ld, int row0, int rows,
                                          int T, int hd) {
  std::vector<float> tile(static_cast<std::size_t>(rows) * hd, 0.0f);
  for (int r = 0; r < rows && row0 + r < T; ++r)
    for (int d = 0; d < hd; ++d)
      tile[static_cast<std::size_t>(r) * hd + d] = flash_round(rounding, src[(row0 + r) * ld + d]);
  return tile;
}

// C (M, N) = A (M, K) B^T, with B given as (N, K): the scores Q K^T and dP = dO V^T.
inline std::vector<float> flash_times_transposed(const std::vector<float>& a, const std::vector<float>& b, int M, int N,
                                                 int K) {
  std::vector<float> c(static_cast<std::size_t>(M) * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float sum = 0.0f;
      for (int k = 0; k < K; ++k)
        sum += a[static_cast<std::size_t>(i) * K + k] * b[static_cast<std::size_t>(j) * K + k];
      c[static_cast<std::size_t>(i) * N + j] = sum;
    }
  return c;
}

// out (B, T, C) and lse (B, H, T), as flash_forward_kernel writes them.
inline void flash_forward_reference(FlashRounding rounding, float* out, float* lse, const float* qkv, int B, int T,
                                    int C, int H, const AttentionMask& mask) {
  constexpr int Br = math::kFlashForwardQueries, Bc = math::kFlashForwardKeys;
  const int hd = C / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const long long ld = 3LL * C;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const float* q = qkv + static_cast<long long>(b) * T * ld + static_cast<long long>(h) * hd;
      const float* k = q + C;
      const float* v = q + 2 * C;
      const std::int32_t* pad = mask.padding != nullptr ? mask.padding + static_cast<long long>(b) * T : nullptr;
      for (int q0 = 0; q0 < T; q0 += Br) {
        const auto Q = flash_load_tile(rounding, q, ld, q0, Br, T, hd);
        std::vector<float> O(static_cast<std::size_t>(Br) * hd, 0.0f), m(Br, -INFINITY), l(Br, 0.0f);
        const int key_end = mask.causal ? std::min(T, q0 + Br) : T;
        for (int k0 = 0; k0 < key_end; k0 += Bc) {
          const auto K = flash_load_tile(rounding, k, ld, k0, Bc, T, hd);
          const auto V = flash_load_tile(rounding, v, ld, k0, Bc, T, hd);
          auto S = flash_times_transposed(Q, K, Br, Bc, hd);
          std::vector<float> P(static_cast<std::size_t>(Br) * Bc);
          for (int r = 0; r < Br; ++r) {
            float* s = &S[static_cast<std::size_t>(r) * Bc];
            float tile_max = -INFINITY;
            for (int j = 0; j < Bc; ++j) {
              s[j] = math::flash_key_live(q0 + r, k0 + j, T, mask.causal, pad) ? s[j] * scale : math::flash_masked();
              tile_max = math::max_f(tile_max, s[j]);
            }
            const float m_new = math::flash_running_max(m[r], tile_max);
            const float alpha = math::flash_rescale(m[r], m_new);
            float sum = 0.0f;
            for (int j = 0; j < Bc; ++j) {
              const float p = math::flash_exp(s[j], m_new);
              P[static_cast<std::size_t>(r) * Bc + j] = flash_round(rounding, p);
              sum += p;
            }
            l[r] = l[r] * alpha + sum;
            m[r] = m_new;
            for (int d = 0; d < hd; ++d) O[static_cast<std::size_t>(r) * hd + d] *= alpha;
          }
          for (int r = 0; r < Br; ++r)  // O += P V
            for (int d = 0; d < hd; ++d) {
              float sum = 0.0f;
              for (int j = 0; j < Bc; ++j)
                sum += P[static_cast<std::size_t>(r) * Bc + j] * V[static_cast<std::size_t>(j) * hd + d];
              O[static_cast<std::size_t>(r) * hd + d] += sum;
            }
        }
        for (int r = 0; r < Br && q0 + r < T; ++r) {
          for (int d = 0; d < hd; ++d)
            out[(static_cast<long long>(b) * T + q0 + r) * C + static_cast<long long>(h) * hd + d] =
                O[static_cast<std::size_t>(r) * hd + d] * math::flash_inverse_sum(l[r]);
          lse[(static_cast<long long>(b) * H + h) * T + q0 + r] = math::flash_log_sum_exp(m[r], l[r]);
        }
      }
    }
}

// P and dS of query tile q0 against key tile k0 (backward_scores), rounded.
struct FlashScoreTiles {
  std::vector<float> P, dS;  // (Bq, Bk)
};

inline FlashScoreTiles flash_backward_scores(FlashRounding rounding, const std::vector<float>& Q,
                                             const std::vector<float>& dO, const std::vector<float>& K,
                                             const std::vector<float>& V, const float* lse, const float* row_dot,
                                             int q0, int k0, int T, int hd, float scale, bool causal,
                                             const std::int32_t* pad) {
  constexpr int Bq = math::kFlashBackwardQueries, Bk = math::kFlashBackwardKeys;
  const auto S = flash_times_transposed(Q, K, Bq, Bk, hd);
  const auto dP = flash_times_transposed(dO, V, Bq, Bk, hd);
  FlashScoreTiles tiles{std::vector<float>(S.size()), std::vector<float>(S.size())};
  for (int i = 0; i < Bq; ++i) {
    const float row_lse = q0 + i < T ? lse[q0 + i] : INFINITY;
    const float D = q0 + i < T ? row_dot[q0 + i] : 0.0f;
    for (int j = 0; j < Bk; ++j) {
      const std::size_t e = static_cast<std::size_t>(i) * Bk + j;
      const float scaled = math::flash_key_live(q0 + i, k0 + j, T, causal, pad) ? S[e] * scale : math::flash_masked();
      const float p = math::flash_prob(scaled, row_lse);
      tiles.P[e] = flash_round(rounding, p);
      tiles.dS[e] = flash_round(rounding, math::flash_score_grad(p, dP[e], D, scale));
    }
  }
  return tiles;
}

// d_qkv (B, T, 3C) overwritten, as the three backward kernels write it; out
// and lse are the forward's.
inline void flash_backward_reference(FlashRounding rounding, float* d_qkv, const float* d_out, const float* qkv,
                                     const float* out, const float* lse, int B, int T, int C, int H,
                                     const AttentionMask& mask) {
  constexpr int Bq = math::kFlashBackwardQueries, Bk = math::kFlashBackwardKeys;
  static_assert(Bq == 32 && Bk == 32, "add_product below multiplies 32 x 32 tiles");
  const int hd = C / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const long long ld = 3LL * C;
  std::vector<float> row_dot(static_cast<std::size_t>(B) * H * T);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t) {
        const long long off = (static_cast<long long>(b) * T + t) * C + static_cast<long long>(h) * hd;
        row_dot[(static_cast<std::size_t>(b) * H + h) * T + t] = math::flash_output_dot(d_out + off, out + off, hd);
      }
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const long long head = static_cast<long long>(b) * T * ld + static_cast<long long>(h) * hd;
      const float* q = qkv + head;
      const float* k = q + C;
      const float* v = q + 2 * C;
      const float* dy = d_out + static_cast<long long>(b) * T * C + static_cast<long long>(h) * hd;
      const float* row_lse = lse + (static_cast<long long>(b) * H + h) * T;
      const float* D = row_dot.data() + (static_cast<std::size_t>(b) * H + h) * T;
      const std::int32_t* pad = mask.padding != nullptr ? mask.padding + static_cast<long long>(b) * T : nullptr;
      auto add_product = [&](std::vector<float>& sum, const std::vector<float>& a, bool a_transposed,
                             const std::vector<float>& x) {  // sum (32, hd) += a (32, 32) (or a^T) x (32, hd)
        for (int r = 0; r < 32; ++r)
          for (int d = 0; d < hd; ++d) {
            float acc = 0.0f;
            for (int c = 0; c < 32; ++c)
              acc += a[a_transposed ? static_cast<std::size_t>(c) * 32 + r : static_cast<std::size_t>(r) * 32 + c] *
                     x[static_cast<std::size_t>(c) * hd + d];
            sum[static_cast<std::size_t>(r) * hd + d] += acc;
          }
      };
      auto store = [&](float* dst, const std::vector<float>& sum, int row0) {
        for (int r = 0; r < 32 && row0 + r < T; ++r)
          for (int d = 0; d < hd; ++d) dst[(row0 + r) * ld + d] = sum[static_cast<std::size_t>(r) * hd + d];
      };
      // dK, dV per key tile (flash_backward_key_kernel)
      for (int k0 = 0; k0 < T; k0 += Bk) {
        const auto K = flash_load_tile(rounding, k, ld, k0, Bk, T, hd);
        const auto V = flash_load_tile(rounding, v, ld, k0, Bk, T, hd);
        std::vector<float> dK(static_cast<std::size_t>(Bk) * hd, 0.0f), dV(dK.size(), 0.0f);
        for (int q0 = mask.causal ? k0 / Bq * Bq : 0; q0 < T; q0 += Bq) {
          const auto Q = flash_load_tile(rounding, q, ld, q0, Bq, T, hd);
          const auto dO = flash_load_tile(rounding, dy, C, q0, Bq, T, hd);
          const auto tiles =
              flash_backward_scores(rounding, Q, dO, K, V, row_lse, D, q0, k0, T, hd, scale, mask.causal, pad);
          add_product(dV, tiles.P, true, dO);  // dV += P^T dO
          add_product(dK, tiles.dS, true, Q);  // dK += dS^T Q
        }
        store(d_qkv + head + C, dK, k0);
        store(d_qkv + head + 2 * C, dV, k0);
      }
      // dQ per query tile (flash_backward_query_kernel)
      for (int q0 = 0; q0 < T; q0 += Bq) {
        const auto Q = flash_load_tile(rounding, q, ld, q0, Bq, T, hd);
        const auto dO = flash_load_tile(rounding, dy, C, q0, Bq, T, hd);
        std::vector<float> dQ(static_cast<std::size_t>(Bq) * hd, 0.0f);
        const int key_end = mask.causal ? std::min(T, q0 + Bq) : T;
        for (int k0 = 0; k0 < key_end; k0 += Bk) {
          const auto K = flash_load_tile(rounding, k, ld, k0, Bk, T, hd);
          const auto V = flash_load_tile(rounding, v, ld, k0, Bk, T, hd);
          const auto tiles =
              flash_backward_scores(rounding, Q, dO, K, V, row_lse, D, q0, k0, T, hd, scale, mask.causal, pad);
          add_product(dQ, tiles.dS, false, K);  // dQ += dS K
        }
        store(d_qkv + head, dQ, q0);
      }
    }
}

}  // namespace shardscope::test
