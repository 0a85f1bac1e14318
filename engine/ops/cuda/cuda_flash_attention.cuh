// SPDX-License-Identifier: GPL-3.0-or-later
// Fused ("flash") attention on tensor cores (cuda_flash_attention.cu), the
// CUDA backend's attention in bf16/fp16 math (backend.h's AttentionKernel::fused).
// Internal to the CUDA backend's sources. Shapes as backend.h's attention ops;
// hd = C / H must satisfy cuda_attention_kernel (a multiple of 16, at most 128).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace shardscope::cuda_detail {

enum class Flash16 { bf16, fp16 };  // the 16-bit type of the tensor-core operands

// out (B, T, C) and lse (B, H, T): each query row's log-sum-exp (+inf: no live key).
void flash_attention_forward(cudaStream_t stream, Flash16 type, float* out, float* lse, const float* qkv, int B, int T,
                             int C, int H, bool causal, const std::int32_t* padding);

// d_qkv (B, T, 3C) overwritten; row_dot (B, H, T) is workspace for D = rowsum(dO o O).
// out and lse are the forward's.
void flash_attention_backward(cudaStream_t stream, Flash16 type, float* d_qkv, float* row_dot, const float* d_out,
                              const float* qkv, const float* out, const float* lse, int B, int T, int C, int H,
                              bool causal, const std::int32_t* padding);

}  // namespace shardscope::cuda_detail
