// SPDX-License-Identifier: GPL-3.0-or-later
// What a fused attention kernel (FlashAttention) reaches of a GPU's dense 16-bit peak, from one
// microbenchmark: FlashAttention-2's own (Dao 2023, "FlashAttention-2: Faster Attention with Better
// Parallelism and Work Partitioning", arXiv 2307.08691, section 4.1). The GEMM table of
// clock/kernel_model.h times plain GEMMs; an attention kernel interleaves its two matmuls with the
// softmax's exponentials and row sums on the same SMs, so it runs at its own, lower rate:
//   A100 SXM4 80GB: "up to 230 TFLOPs/s, 73% of the theoretical maximum" (of 312);
//   H100 SXM5: "up to 335 TFLOPs/s" (of 989.4) running the same kernels without Hopper's TMA and
//     wgmma instructions: the kernel PyTorch's scaled_dot_product_attention ran in 2024.
// The paper counts FLOPs as the kernel runs them: 4·s²·hd per head forward, halved under a causal
// mask (only the lower triangle is computed), and 2.5 times that backward (five matmuls to the
// forward's two, S recomputed). estimate/step_kernels.h counts the same way.
// Profiles without a figure from that paper (H100 PCIe, B200, RTX 4090, MI300X) keep the GEMM
// fraction of clock/kernel_model.h (0, "not measured"); H200 is the H100's die and takes its figure.
// FlashAttention in Triton (--attention triton: llm-foundry's attn_impl "triton") is priced from the
// same section's comparison on an A100: "FlashAttention-2 is around 1.3-1.5× faster than FlashAttention
// in Triton in the forward pass and around 2× faster in the backward pass". The same kernels' seconds,
// forward × 1.4 (the middle of the range) and backward × 2.
#pragma once

#include <string_view>

namespace shardscope {

struct AttentionKernelRate {
  double fraction = 0;      // of the profile's dense 16-bit peak; 0: not measured
  std::string_view source;  // "" when not measured
};

// By GPU profile name (config/gpu_profiles.h).
AttentionKernelRate flash_attention_rate(std::string_view gpu);

// How many times FlashAttention-2's seconds the Triton kernel takes (section 4.1, above).
inline constexpr double triton_forward_slowdown = 1.4;
inline constexpr double triton_backward_slowdown = 2.0;

}  // namespace shardscope
