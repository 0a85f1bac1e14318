// SPDX-License-Identifier: GPL-3.0-or-later
// Scaled dot-product attention on the CPU, one (sequence, head) pair per task:
//   S = Q K^T / sqrt(hd);  P = softmax(S + mask);  Y = P V
// Q, K and V are read in place from the fused qkv buffer (leading dimension 3C),
// so no head is ever copied out. Small heads (cpu_attention_small.h) run in one
// kernel per pair; larger ones as BLAS products and softmax passes.
#include <cmath>
#include <vector>

#include "ops/cpu/cpu_attention_small.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/cpu_kernels.h"

namespace shardscope {

void CpuBackend::attention_forward(float* out, float* probs, const float* qkv, int B, int T, int C, int H,
                                   const AttentionMask& mask) {
  const int hd = C / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const std::int64_t TT = static_cast<std::int64_t>(T) * T;
  if (cpu::small_attention_applies(T, hd)) {
    pool_.parallel_for(static_cast<std::int64_t>(B) * H, 1, [&](std::int64_t p0, std::int64_t p1) {
      std::vector<float> work(static_cast<std::size_t>(cpu::small_attention_work_floats(T, hd)));
      for (std::int64_t pair = p0; pair < p1; ++pair) {
        const std::int64_t b = pair / H;
        const float* q = qkv + b * T * 3 * C + pair % H * hd;
        const cpu::SmallAttentionHead head{q, q + C, q + 2 * C, 3 * C, T, hd, scale};
        const std::int32_t* pad = mask.padding != nullptr ? mask.padding + b * T : nullptr;
        cpu::small_attention_forward(head, mask.causal, pad, out + b * T * C + pair % H * hd, C, probs + pair * TT,
                                     work.data());
      }
    });
    return;
  }
  pool_.parallel_for(static_cast<std::int64_t>(B) * H, 1, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t pair = p0; pair < p1; ++pair) {
      const std::int64_t b = pair / H;
      const std::int64_t h = pair % H;
      const float* q = qkv + b * T * 3 * C + h * hd;  // (T, hd), ld 3C
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* p = probs + pair * TT;  // (T, T)
      blas_sgemm(Transpose::no, Transpose::yes, T, T, hd, 1.0f, q, 3 * C, k, 3 * C, 0.0f, p, T);
      const std::int32_t* pad = mask.padding != nullptr ? mask.padding + b * T : nullptr;
      cpu::attention_softmax_rows(p, T, mask.causal, pad, scale);
      blas_sgemm(Transpose::no, Transpose::no, T, hd, T, 1.0f, p, T, v, 3 * C, 0.0f, out + b * T * C + h * hd, C);
    }
  });
}

// Materialized, so `out` is not needed: probs holds P with the mask applied
// (the small kernel asks the mask only where it may skip the causal zeros).
void CpuBackend::attention_backward(float* d_qkv, float* scratch, const float* d_out, const float* qkv,
                                    const float* /*out*/, const float* probs, int B, int T, int C, int H,
                                    const AttentionMask& mask) {
  const int hd = C / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const std::int64_t TT = static_cast<std::int64_t>(T) * T;
  if (cpu::small_attention_applies(T, hd)) {
    pool_.parallel_for(static_cast<std::int64_t>(B) * H, 1, [&](std::int64_t p0, std::int64_t p1) {
      std::vector<float> work(static_cast<std::size_t>(cpu::small_attention_work_floats(T, hd)));
      for (std::int64_t pair = p0; pair < p1; ++pair) {
        const std::int64_t head_at = pair / H * T * 3 * C + pair % H * hd;
        const float* q = qkv + head_at;
        const cpu::SmallAttentionHead head{q, q + C, q + 2 * C, 3 * C, T, hd, scale};
        float* dq = d_qkv + head_at;
        const float* dy = d_out + pair / H * T * C + pair % H * hd;
        cpu::small_attention_backward(head, mask.causal, dy, C, probs + pair * TT, scratch + pair * TT, dq, dq + C,
                                      dq + 2 * C, work.data());
      }
    });
    return;
  }
  pool_.parallel_for(static_cast<std::int64_t>(B) * H, 1, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t pair = p0; pair < p1; ++pair) {
      const std::int64_t b = pair / H;
      const std::int64_t h = pair % H;
      const std::int64_t head = b * T * 3 * C + h * hd;
      const float* q = qkv + head;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* dq = d_qkv + head;
      float* dk = dq + C;
      float* dv = dq + 2 * C;
      const float* dy = d_out + b * T * C + h * hd;  // (T, hd), ld C
      const float* p = probs + pair * TT;
      float* dp = scratch + pair * TT;
      blas_sgemm(Transpose::no, Transpose::yes, T, T, hd, 1.0f, dy, C, v, 3 * C, 0.0f, dp, T);   // dP = dY V^T
      blas_sgemm(Transpose::yes, Transpose::no, T, hd, T, 1.0f, p, T, dy, C, 0.0f, dv, 3 * C);   // dV = P^T dY
      cpu::attention_softmax_backward_rows(p, dp, T, scale);  // dS = scale P o (dP - rowsum(P o dP))
      blas_sgemm(Transpose::no, Transpose::no, T, hd, T, 1.0f, dp, T, k, 3 * C, 0.0f, dq, 3 * C);   // dQ = dS K
      blas_sgemm(Transpose::yes, Transpose::no, T, hd, T, 1.0f, dp, T, q, 3 * C, 0.0f, dk, 3 * C);  // dK = dS^T Q
    }
  });
}

}  // namespace shardscope
