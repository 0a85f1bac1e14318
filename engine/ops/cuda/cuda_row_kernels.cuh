// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to the CUDA backend: the per-row ops (layernorm, attention softmax,
// cross-entropy) with a warp or a block per row, and the sums over rows
// (bias, layernorm weight and embedding gradients) as tiled two-pass column
// reductions. Every launcher queues its kernels on `stream` and checks the
// launch; `op` names the backend op in errors. Kernels: cuda_row_kernels.cu
// and cuda_column_sums.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace shardscope::cuda_detail {

// ---- one warp or block per row (cuda_row_kernels.cu) ----------------------------------------
// out (rows, C), mean (rows), rstd (rows)
void layernorm_forward_rows(cudaStream_t stream, float* out, float* mean, float* rstd, const float* in,
                            const float* weight, const float* bias, int rows, int C, float eps);
// d_in (rows, C) overwritten, or += when accumulate.
void layernorm_backward_rows(cudaStream_t stream, float* d_in, const float* d_out, const float* in, const float* weight,
                             const float* mean, const float* rstd, int rows, int C, bool accumulate);
// scores (B, H, T, T) in place to probabilities; padding (B, T) may be null.
void attention_softmax_rows(cudaStream_t stream, float* scores, int B, int H, int T, bool causal,
                            const std::int32_t* padding, float scale);
// d (rows, T) in place: dS = scale P o (dP - rowsum(P o dP)).
void attention_softmax_backward_rows(cudaStream_t stream, const float* probs, float* d, long long rows, int T,
                                     float scale);
// losses (rows), logits (rows, V)
void cross_entropy_rows(cudaStream_t stream, float* losses, const float* logits, const std::int32_t* targets, int rows,
                        int V);
// d_logits (rows, V), may alias logits.
void cross_entropy_backward_rows(cudaStream_t stream, float* d_logits, const float* logits, const std::int32_t* targets,
                                 int rows, int V, float dloss);

// ---- sums over rows (cuda_column_sums.cu) ----------------------------------------------------
// Device scratch the column sums need for `outputs` sums of (rows, C).
std::size_t column_partials_bytes(int rows, int C, int outputs);
// out (C) += sum over rows of x (rows, C); partials: column_partials_bytes(rows, C, 1).
void column_sums(cudaStream_t stream, float* out, const float* x, int rows, int C, float* partials, const char* op);
// d_weight (C) += sum_r d_out * xhat, d_bias (C) += sum_r d_out; partials: column_partials_bytes(rows, C, 2).
void layernorm_param_grads(cudaStream_t stream, float* d_weight, float* d_bias, const float* d_out, const float* in,
                           const float* mean, const float* rstd, int rows, int C, float* partials);
// Device scratch embedding_backward needs for B*T rows.
std::size_t embedding_backward_bytes(long long rows);
// As Backend::embedding_backward; workspace: embedding_backward_bytes(B * T).
void embedding_backward(cudaStream_t stream, float* d_tokens, float* d_positions, float* d_types, const float* d_out,
                        const std::int32_t* ids, const std::int32_t* type_ids, int B, int T, int C, void* workspace);

}  // namespace shardscope::cuda_detail
