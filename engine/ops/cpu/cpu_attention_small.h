// SPDX-License-Identifier: GPL-3.0-or-later
// Attention for one (sequence, head) when the whole head is small enough to
// stay in the L1/L2 caches (T up to a few hundred, as GPT-2 and BERT train on
// this CPU). One kernel runs the forward (S = Q K^T, softmax, Y = P V) or the
// backward of a head in 8-row x 16-column register tiles, with no BLAS call
// and, for a causal mask, no tile above the diagonal. P is still written
// whole, so the materialized layout of AttentionKernel stays as it is.
#pragma once

#include <cstdint>

namespace shardscope::cpu {

// Where the small kernels apply: a CPU with AVX-512 (x86-64-v4), a head
// dimension in whole 16-float vectors and at most kSmallAttentionMaxT tokens;
// other shapes and CPUs take the BLAS path. The tiles are written for 32
// vector registers of 16 floats: compiled for AVX2 they ran 6x slower than
// for AVX-512 (one core, gpt-tiny's heads), slower than the BLAS path.
inline constexpr int kSmallAttentionMaxT = 256;
bool small_attention_cpu();
inline bool small_attention_applies(int T, int head_dim) {
  return T > 0 && T <= kSmallAttentionMaxT && head_dim > 0 && head_dim % 16 == 0 && small_attention_cpu();
}

// One head of one sequence. q, k, v (T, hd) with row stride ld (3C, in place in
// qkv); y (T, hd) with stride ldy; p (T, T) probabilities, the mask applied.
// work holds small_attention_work_floats(T, hd) floats.
struct SmallAttentionHead {
  const float* q;
  const float* k;
  const float* v;
  std::int64_t ld;
  int T;
  int hd;
  float scale;  // 1/sqrt(hd), applied to the scores inside the softmax
};
std::int64_t small_attention_work_floats(int T, int head_dim);

void small_attention_forward(const SmallAttentionHead& head, bool causal, const std::int32_t* padding, float* y,
                             std::int64_t ldy, float* p, float* work);

// dq, dk, dv (T, hd) with stride ld overwritten; dy (T, hd) with stride ldy;
// ds (T, T) workspace that ends holding dS.
void small_attention_backward(const SmallAttentionHead& head, bool causal, const float* dy, std::int64_t ldy,
                              const float* p, float* ds, float* dq, float* dk, float* dv, float* work);

}  // namespace shardscope::cpu
