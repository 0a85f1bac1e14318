// SPDX-License-Identifier: GPL-3.0-or-later
// What the forward pass keeps for backward (category `activations`) and the
// scratch the backward pass writes (category `workspace`), as views into one
// buffer each. Sizes are computed once, in activations.cpp, for a (B, T).
// GPT (pre-LN) and BERT (post-LN) keep the same fields per layer; only the
// wiring differs (see gpt.cpp and bert.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "model/model_config.h"
#include "ops/backend.h"

namespace shardscope {

struct LayerActivations {
  float* ln1_out;   // (B, T, C)
  float* ln1_mean;  // (B, T)
  float* ln1_rstd;  // (B, T)
  float* qkv;       // (B, T, 3C/tp): this tensor-parallel rank's heads (tp = 1: all)
  float* probs;     // (B, H, T, T) attention probabilities; fused attention: (B, H, T) log-sum-exp
  float* attn_y;    // (B, T, C/tp) attention output, heads concatenated, before proj
  float* res_mid;   // (B, T, C) residual sum after attention
  float* ln2_out;   // (B, T, C)
  float* ln2_mean;  // (B, T)
  float* ln2_rstd;  // (B, T)
  float* fc;        // (B, T, 4C/tp) before GELU
  float* gelu;      // (B, T, 4C/tp)
  float* res_out;   // (B, T, C) residual sum after the MLP
};

struct Activations {
  int B = 0, T = 0;
  float* stage_input;    // (B, T, C) a later pipeline stage's input, received from the previous stage
  // Activation checkpointing: `layers` holds one shared set, reused by every
  // layer (forward, then recompute in backward), and only each layer's output
  // is kept, in layer_outputs (L x (B, T, C)).
  bool checkpointing = false;
  std::vector<float*> layer_outputs;
  float* embed_sum;      // (B, T, C) token + position (+ type) embeddings
  float* embed_ln_out;   // (B, T, C) BERT only
  float* embed_ln_mean;  // (B, T)    BERT only
  float* embed_ln_rstd;  // (B, T)    BERT only
  std::vector<LayerActivations> layers;
  float* head_dense;     // (B, T, C) BERT MLM head: dense output before GELU
  float* head_gelu;      // (B, T, C) BERT MLM head: after GELU
  float* final_ln_out;   // (B, T, C) GPT final_ln / BERT mlm.ln output
  float* final_ln_mean;  // (B, T)
  float* final_ln_rstd;  // (B, T)
  float* logits;         // (B, T, V/tp) this rank's vocabulary slice
  float* losses;         // (B, T) per-position cross-entropy
  float* log_sum_exp;    // (B, T) tensor parallelism: log sum exp of each row's whole logits (null otherwise)
  float* pooled;         // (B, C) BERT pooler output, if the model has one

  // Floats each layer keeps: B T (16 C + 4) + B H T^2 (B H T with fused attention).
  // `kernel`: how the backend runs attention (Backend::attention_kernel), which
  // decides what probs keeps (attention_saved_floats).
  static std::int64_t layer_floats(const ModelConfig& config, int batch, int seq,
                                   AttentionKernel kernel = AttentionKernel::materialized);
  // Floats of one forward pass of `stage` for (B, T). With checkpointing each
  // layer keeps B T C (its output) and one layer's full set is shared. Fields
  // a stage does not run (embeddings, head) take no space and stay null.
  static std::int64_t total_floats(const ModelConfig& config, int batch, int seq, bool checkpointing,
                                   const StageLayers& stage, AttentionKernel kernel = AttentionKernel::materialized);
  static std::int64_t total_floats(const ModelConfig& config, int batch, int seq, bool checkpointing = false) {
    return total_floats(config, batch, seq, checkpointing, whole_model_stage(config));
  }
  // Carves the views out of `buffer`, which holds total_floats floats.
  void bind(const ModelConfig& config, int batch, int seq, bool checkpointing, const StageLayers& stage,
            float* buffer, AttentionKernel kernel = AttentionKernel::materialized);
};

// Scratch of backward: activation gradients, reused layer after layer.
struct BackwardScratch {
  float* d_res;      // (B, T, C) gradient flowing down the residual stream
  float* d_a;        // (B, T, C)
  float* d_qkv;      // (B, T, 3C)
  float* d_fc;       // (B, T, 4C)
  float* d_probs;    // (B, H, T, T); fused attention: (B, H, T), D = rowsum(dO o O)
  float* d_logits;   // (B, T, V)
  // Under tensor parallelism (tp > 1) d_qkv, d_fc, d_probs and d_logits are
  // this rank's slice: 3C/tp, 4C/tp, H/tp heads, V/tp.

  static std::int64_t total_floats(const ModelConfig& config, int B, int T, bool head = true,
                                   AttentionKernel kernel = AttentionKernel::materialized, int tp = 1);
  void bind(const ModelConfig& config, int B, int T, bool head, float* buffer,
            AttentionKernel kernel = AttentionKernel::materialized, int tp = 1);
};

}  // namespace shardscope
