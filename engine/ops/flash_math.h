// SPDX-License-Identifier: GPL-3.0-or-later
// The per-row and per-element math of fused ("flash") attention, written once
// for the CUDA kernels (ops/cuda/cuda_flash_attention.cu) and the host
// reference of the same tiled algorithm that the CPU tests check
// (tests/engine/flash_reference.h).
//
// Online softmax (Milakov & Gimelshein 2018; FlashAttention, Dao et al. 2022):
// a query row sees its keys one tile at a time and keeps a running max m and a
// running sum l = sum_j e^(s_j - m). A new tile with max m_t moves the max to
// m' = max(m, m_t); what was summed so far is rescaled by e^(m - m'):
//   l' = l e^(m - m') + sum_tile e^(s_j - m'),  O' = O e^(m - m') + P_tile V_tile.
// After the last tile, out = O / l and the row's log-sum-exp lse = m + log l is
// all that backward needs to recompute P = e^(s - lse) (FlashAttention-2's
// backward, Dao 2023).
//
// Masked scores are -inf. They match math::softmax_row: a masked key gets
// probability exactly 0, and a row with no live key (all keys padding) has
// out = 0, lse = +inf (the marker), and P = 0 in backward.
#pragma once

#include "ops/math.h"

namespace shardscope::math {

// Tile sizes of the fused kernels, shared with the host reference so both run
// the same iteration order. Forward: a block of 4 warps takes 64 query rows
// (16 per warp in the P V product) and walks the keys 32 at a time. Backward:
// 32 keys per block for dK, dV (walking queries 32 at a time) and 32 queries per
// block for dQ (walking keys 32 at a time). Shared memory at head dim 128 stays
// under the 99 KB an sm_86/sm_89 block may have.
inline constexpr int kFlashForwardQueries = 64;
inline constexpr int kFlashForwardKeys = 32;
inline constexpr int kFlashBackwardKeys = 32;
inline constexpr int kFlashBackwardQueries = 32;

// A score that no query may see (causal future, padding, past the sequence).
SS_HD float flash_masked() {
  return -INFINITY;
}

// The running max after a tile whose largest (scaled) score is tile_max.
SS_HD float flash_running_max(float m, float tile_max) {
  return max_f(m, tile_max);
}

// e^(m_old - m_new), by which O and l are rescaled; 0 while nothing was live
// before (m_old = -inf), so no exp ever sees -inf - -inf.
SS_HD float flash_rescale(float m_old, float m_new) {
  return m_old == -INFINITY ? 0.0f : exp_approx(m_old - m_new);
}

// e^(s - m) for a live score s, exactly 0 for a masked one.
SS_HD float flash_exp(float s, float m) {
  return s == -INFINITY ? 0.0f : exp_approx(s - m);
}

// The row's log-sum-exp after its last tile; +inf when no key was live.
SS_HD float flash_log_sum_exp(float m, float l) {
  return l > 0.0f ? m + logf(l) : INFINITY;
}

// 1 / l for out = O / l; 0 for a row with no live key (out = 0 as softmax_row gives).
SS_HD float flash_inverse_sum(float l) {
  return l > 0.0f ? 1.0f / l : 0.0f;
}

// Backward: P recomputed from the saved lse; 0 for masked scores and dead rows.
SS_HD float flash_prob(float s, float lse) {
  return s == -INFINITY || lse == INFINITY ? 0.0f : exp_approx(s - lse);
}

// Backward: dS = scale P o (dP - D) with D = rowsum(dO o O) = rowsum(P o dP),
// the same element as the materialized softmax backward.
SS_HD float flash_score_grad(float p, float dp, float D, float scale) {
  return softmax_backward_element(p, dp, D, scale);
}

// D = rowsum(dO o O) of one query row (n = head dim), summed in index order.
SS_HD float flash_output_dot(const float* d_out, const float* out, int n) {
  float dot = 0.0f;
  for (int i = 0; i < n; ++i) dot += d_out[i] * out[i];
  return dot;
}

// Whether query q may see key j: inside the sequence, not in q's future when
// causal, not padding. padding is the sequence's (T) row, or null.
SS_HD bool flash_key_live(int q, int j, int T, bool causal, const std::int32_t* padding) {
  return j < T && (!causal || j <= q) && (padding == nullptr || padding[j] != 0);
}

}  // namespace shardscope::math
