// SPDX-License-Identifier: GPL-3.0-or-later
// Ring attention's per-block math (context parallelism, model/context_parallel.h),
// written once for the CPU backend's loops and the CUDA backend's kernels
// (ops/cuda/cuda_ring_attention.cu), as ops/math.h is for the other ops.
//
// A rank holds T tokens of each of B sequences (its cp rank's share) and, at
// one step of the ring, the keys and values of cp rank `owner`'s T tokens.
// For one query row (b, h, i) the block's partial softmax is merged into the
// running output with the log-sum-exp rule
//   lse = max + log(1 + e^-|lse_a - lse_b|),  out = out_a e^(lse_a - lse) + out_b e^(lse_b - lse);
// backward, with D_i = dY_i . Y_i and P_ij = e^(scale Q_i . K_j - lse_i),
//   dV_j += P_ij dY_i,  dS_ij = P_ij (dY_i . V_j - D_i) scale,  dQ_i += dS_ij K_j,  dK_j += dS_ij Q_i,
// dQ_i summed over j in key order and dK_j, dV_j over i in query order, so a
// thread per row (dQ) and a thread per key (dK, dV) add in the CPU's order.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/half.h"  // SS_HD

namespace shardscope {

// One block of ring attention: whose queries, whose keys, and the masks.
struct RingAttentionBlock {
  int B = 0, T = 0, C = 0, H = 0;         // T: tokens per cp rank; C, H: this tp rank's channels and heads
  int rank = 0, owner = 0, cp = 1;        // the queries' cp rank, the key/value block's, the ring's size
  bool zigzag = true;                     // the split (ring_position)
  bool causal = true;                     // GPT; BERT masks keys by the padding alone
  const std::int32_t* padding = nullptr;  // (B, T cp) the whole batch's padding mask (1 = real), or null
};

// The position in its sequence of local token t (0 .. local - 1) of cp rank
// `rank`: zig-zag gives rank i chunks i and 2 size - 1 - i of 2 size (so causal
// attention costs every rank the same), contiguous the rank-th local tokens.
SS_HD int ring_position(int t, int local, int rank, int size, bool zigzag) {
  if (!zigzag) return rank * local + t;
  const int chunk = local / 2;
  return t < chunk ? rank * chunk + t : (2 * size - 1 - rank) * chunk + (t - chunk);
}

namespace ring_math {

SS_HD float dot(const float* a, const float* b, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Whether sequence b's key at key_position is seen by its query at query_position.
SS_HD bool key_visible(const RingAttentionBlock& k, int b, int key_position, int query_position) {
  if (k.causal && key_position > query_position) return false;
  return k.padding == nullptr || k.padding[static_cast<std::int64_t>(b) * k.T * k.cp + key_position] != 0;
}

SS_HD float head_scale(int hd) {
  return 1.0f / sqrtf(static_cast<float>(hd));
}

// Query row (b, h, i) against the block: out (B, T, C) and lse (B, H, T) merged
// in place; `partial` is hd floats of workspace. qkv (B, T, 3C), kv (B, T, 2C).
SS_HD void forward_row(const RingAttentionBlock& k, float* out, float* lse_all, const float* qkv, const float* kv,
                       float* partial, int b, int h, int i) {
  const int T = k.T, C = k.C, hd = C / k.H;
  const float scale = head_scale(hd);
  const float* q = qkv + (static_cast<std::int64_t>(b) * T + i) * 3 * C + h * hd;
  const float* keys = kv + static_cast<std::int64_t>(b) * T * 2 * C + h * hd;
  const int at = ring_position(i, T, k.rank, k.cp, k.zigzag);
  float top = -INFINITY;
  for (int j = 0; j < T; ++j)
    if (key_visible(k, b, ring_position(j, T, k.owner, k.cp, k.zigzag), at)) {
      const float w = dot(q, keys + static_cast<std::int64_t>(j) * 2 * C, hd) * scale;
      top = w > top ? w : top;
    }
  if (top == -INFINITY) return;  // every key of this block lies after the query (or is padding)
  float sum = 0.0f;
  for (int d = 0; d < hd; ++d) partial[d] = 0.0f;
  for (int j = 0; j < T; ++j) {
    if (!key_visible(k, b, ring_position(j, T, k.owner, k.cp, k.zigzag), at)) continue;
    const float* key = keys + static_cast<std::int64_t>(j) * 2 * C;
    const float w = dot(q, key, hd) * scale;
    const float e = expf(w - top);
    sum += e;
    for (int d = 0; d < hd; ++d) partial[d] += e * key[C + d];
  }
  const float block_lse = top + logf(sum);
  float& lse = lse_all[(static_cast<std::int64_t>(b) * k.H + h) * T + i];
  const bool first = lse == -INFINITY;
  const float merged = first ? block_lse : fmaxf(lse, block_lse) + log1pf(expf(-fabsf(lse - block_lse)));
  const float keep = first ? 0.0f : expf(lse - merged), add = expf(block_lse - merged) / sum;
  float* y = out + (static_cast<std::int64_t>(b) * T + i) * C + h * hd;
  for (int d = 0; d < hd; ++d) y[d] = y[d] * keep + partial[d] * add;
  lse = merged;
}

// P_ij and dS_ij of query row (b, h, i) and key j (visible), from the forward's lse and D.
struct BackwardTerms {
  float p, ds;
};
SS_HD BackwardTerms backward_terms(const RingAttentionBlock& k, const float* qkv, const float* kv, const float* d_out,
                                   float lse, float row_dot, int b, int h, int i, int j) {
  const int T = k.T, C = k.C, hd = C / k.H;
  const float scale = head_scale(hd);
  const float* q = qkv + (static_cast<std::int64_t>(b) * T + i) * 3 * C + h * hd;
  const float* key = kv + (static_cast<std::int64_t>(b) * T + j) * 2 * C + h * hd;
  const float* dy = d_out + (static_cast<std::int64_t>(b) * T + i) * C + h * hd;
  const float p = expf(dot(q, key, hd) * scale - lse);
  return {p, p * (dot(dy, key + C, hd) - row_dot) * scale};
}

// dQ of query row (b, h, i): d_qkv's Q columns (B, T, 3C), set from 0 on the first block, else added to.
SS_HD void backward_query_row(const RingAttentionBlock& k, float* d_qkv, const float* qkv, const float* kv,
                              const float* d_out, const float* lse, const float* row_dot, bool first_block, int b,
                              int h, int i) {
  const int T = k.T, C = k.C, hd = C / k.H;
  float* dq = d_qkv + (static_cast<std::int64_t>(b) * T + i) * 3 * C + h * hd;
  if (first_block)
    for (int d = 0; d < hd; ++d) dq[d] = 0.0f;
  const std::int64_t row = (static_cast<std::int64_t>(b) * k.H + h) * T + i;
  if (lse[row] == -INFINITY) return;  // a query that sees no key (all padding) has no gradient
  const int at = ring_position(i, T, k.rank, k.cp, k.zigzag);
  for (int j = 0; j < T; ++j) {
    if (!key_visible(k, b, ring_position(j, T, k.owner, k.cp, k.zigzag), at)) continue;
    const BackwardTerms t = backward_terms(k, qkv, kv, d_out, lse[row], row_dot[row], b, h, i, j);
    const float* key = kv + (static_cast<std::int64_t>(b) * T + j) * 2 * C + h * hd;
    for (int d = 0; d < hd; ++d) dq[d] += t.ds * key[d];
  }
}

// dK, dV of the block's key j (b, h): d_kv (B, T, 2C) added to, over the queries in order.
SS_HD void backward_key_row(const RingAttentionBlock& k, float* d_kv, const float* qkv, const float* kv,
                            const float* d_out, const float* lse, const float* row_dot, int b, int h, int j) {
  const int T = k.T, C = k.C, hd = C / k.H;
  float* dk = d_kv + (static_cast<std::int64_t>(b) * T + j) * 2 * C + h * hd;
  float* dv = dk + C;
  const int key_position = ring_position(j, T, k.owner, k.cp, k.zigzag);
  for (int i = 0; i < T; ++i) {
    const std::int64_t row = (static_cast<std::int64_t>(b) * k.H + h) * T + i;
    if (lse[row] == -INFINITY || !key_visible(k, b, key_position, ring_position(i, T, k.rank, k.cp, k.zigzag)))
      continue;
    const BackwardTerms t = backward_terms(k, qkv, kv, d_out, lse[row], row_dot[row], b, h, i, j);
    const float* q = qkv + (static_cast<std::int64_t>(b) * T + i) * 3 * C + h * hd;
    const float* dy = d_out + (static_cast<std::int64_t>(b) * T + i) * C + h * hd;
    for (int d = 0; d < hd; ++d) {
      dv[d] += t.p * dy[d];
      dk[d] += t.ds * q[d];
    }
  }
}

}  // namespace ring_math

}  // namespace shardscope
