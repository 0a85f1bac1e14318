// SPDX-License-Identifier: GPL-3.0-or-later
// Shapes and layouts the GPU time model's tests share: Llama 3.1 8B and torchtitan's benchmark layout.
#pragma once

#include <cmath>

#include "config/run_schema.h"
#include "estimate/estimate.h"
#include "io/hf_config.h"

namespace shardscope::test {

// Llama 3.1 8B's shape: grouped-query attention (8 of 32 heads for k and v), SwiGLU.
inline ModelShape llama_8b() {
  return model_shape_from_hf(parse_hf_config(
      R"({"model_type": "llama", "vocab_size": 128256, "hidden_size": 4096, "intermediate_size": 14336,
          "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8})",
      "llama-3.1-8b.json"));
}

// torchtitan's benchmark micro-batch, 2 × 8192 tokens in bf16 on `dp` ranks, with the fused attention
// kernel, under the kernel model.
inline EstimateSettings torchtitan_settings(int dp = 8) {
  EstimateSettings s;
  s.layout[Axis::dp] = dp;
  s.micro_batch_size = 2;
  s.seq = 8192;
  s.precision = Precision::bf16;
  s.activations = ActivationMode::formula;
  s.measured_kernels = true;
  s.flash_attention = true;
  return s;
}

// Equal to 1e-9 of b: two sums of the same terms in another order.
inline bool near(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::abs(b);
}

}  // namespace shardscope::test
