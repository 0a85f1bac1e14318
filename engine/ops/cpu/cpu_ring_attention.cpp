// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend's ring attention ops (ops/backend.h): ops/ring_attention.h's
// rows in loops on the rank's thread, in the order the model's host loops ran
// them before they became ops (so CPU context-parallel runs keep their bits).
#include <algorithm>
#include <vector>

#include "ops/cpu/cpu_backend.h"

namespace shardscope {

void CpuBackend::ring_attention_forward(float* out, float* lse, const float* qkv, const float* kv,
                                        const RingAttentionBlock& block) {
  std::vector<float> partial(static_cast<std::size_t>(block.C / block.H));
  for (int b = 0; b < block.B; ++b)
    for (int h = 0; h < block.H; ++h)
      for (int i = 0; i < block.T; ++i) ring_math::forward_row(block, out, lse, qkv, kv, partial.data(), b, h, i);
}

void CpuBackend::ring_attention_backward(float* d_qkv, float* d_kv, const float* d_out, const float* qkv,
                                         const float* kv, const float* lse, const float* row_dot, bool first_block,
                                         const RingAttentionBlock& block) {
  for (int b = 0; b < block.B; ++b)
    for (int h = 0; h < block.H; ++h) {
      for (int i = 0; i < block.T; ++i)
        ring_math::backward_query_row(block, d_qkv, qkv, kv, d_out, lse, row_dot, first_block, b, h, i);
      for (int j = 0; j < block.T; ++j) ring_math::backward_key_row(block, d_kv, qkv, kv, d_out, lse, row_dot, b, h, j);
    }
}

void CpuBackend::attention_row_dot(float* row_dot, const float* d_out, const float* out, int B, int T, int C, int H) {
  const int hd = C / H;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < T; ++i) {
        const std::int64_t at = (static_cast<std::int64_t>(b) * T + i) * C + h * hd;
        row_dot[(static_cast<std::int64_t>(b) * H + h) * T + i] = ring_math::dot(d_out + at, out + at, hd);
      }
}

void CpuBackend::copy_columns(float* dst, int dst_stride, const float* src, int src_stride, std::int64_t rows,
                              int width) {
  for (std::int64_t r = 0; r < rows; ++r) std::copy_n(src + r * src_stride, width, dst + r * dst_stride);
}

}  // namespace shardscope
