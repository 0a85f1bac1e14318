// SPDX-License-Identifier: GPL-3.0-or-later
// HfModelConfig's parameter counts (io/hf_config.h): the embeddings, a layer
// (dense, mixture of experts, latent attention), what a tp rank keeps whole,
// the head, and the totals training and the base model hold.
#include <algorithm>

#include "core/checked_math.h"
#include "io/hf_config.h"

namespace shardscope {

// The counts below use CheckedSize (core/checked_math.h): parse_hf_config has
// computed them all once, so a shape it accepted never overflows here.
std::int64_t HfModelConfig::embedding_parameters() const {
  const CheckedSize h = hidden, v = vocab, positions = max_positions;
  switch (architecture) {
    case HfArchitecture::gpt2:
      return (v * h + positions * h).value();  // wte, wpe
    case HfArchitecture::bert:
      return ((v + positions + type_vocab) * h + 2 * h).value();  // word, position, type, LayerNorm
    case HfArchitecture::llama:
      return (v * h).value();  // embed_tokens (RoPE: no table)
  }
  return 0;
}

namespace {
// One MLP: GPT-2's c_fc and c_proj with biases; Llama's gate, up and down (SwiGLU).
CheckedSize mlp_parameters(const HfModelConfig& c) {
  const CheckedSize h = c.hidden, I = c.intermediate;
  if (c.architecture == HfArchitecture::gpt2) return h * I + I + I * h + h;
  return 3 * h * I + (c.mlp_bias ? 2 * I + h : CheckedSize(0));
}

// One expert: an MLP of the experts' own width where the config gives one (DeepSeek-V3).
CheckedSize expert_parameters(const HfModelConfig& c) {
  return c.expert_intermediate > 0 ? 3 * CheckedSize(c.hidden) * c.expert_intermediate : mlp_parameters(c);
}

CheckedSize moe_layers(const HfModelConfig& c) {
  if (c.experts == 0) return CheckedSize(0);
  return CheckedSize((c.layers - c.first_dense_layers + c.moe_every - 1) / c.moe_every);
}

// DeepSeek-V3's multi-head latent attention (no biases):
//   q_a (h, q_lora) + its RMSNorm + q_b (q_lora, H (nope + rope))   [or q_proj (h, H (nope + rope))]
//   kv_a (h, kv_lora + rope) + its RMSNorm + kv_b (kv_lora, H (nope + v)) + o (H v, h)
CheckedSize latent_attention_parameters(const HfModelConfig& c) {
  const CheckedSize h = c.hidden, H = c.heads, qk = c.qk_nope_head_dim + c.qk_rope_head_dim;
  const CheckedSize q =
      c.q_lora_rank > 0 ? h * c.q_lora_rank + c.q_lora_rank + CheckedSize(c.q_lora_rank) * H * qk : h * H * qk;
  const CheckedSize kv = h * (c.kv_lora_rank + c.qk_rope_head_dim) + c.kv_lora_rank +
                         CheckedSize(c.kv_lora_rank) * H * (c.qk_nope_head_dim + c.v_head_dim);
  return q + kv + H * c.v_head_dim * h;
}

// A DeepSeek-V3 layer: MLA, two RMSNorms, and a MoE MLP (E experts, the shared ones, the
// router (E, h); its e_score_correction_bias is a buffer) or, `dense`, a SwiGLU of intermediate.
CheckedSize deepseek_layer_parameters(const HfModelConfig& c, bool dense) {
  const CheckedSize h = c.hidden, norms = 2 * h;
  if (dense || c.experts == 0) return latent_attention_parameters(c) + 3 * h * c.intermediate + norms;
  return latent_attention_parameters(c) + CheckedSize(c.experts + c.shared_experts) * expert_parameters(c) +
         CheckedSize(c.experts) * h + norms;
}

// A MoE layer's MLP is E experts and a router (E, h, no bias) instead of one MLP: what that adds to a layer.
CheckedSize moe_layer_extra(const HfModelConfig& c) {
  if (c.experts == 0) return CheckedSize(0);
  return CheckedSize(c.experts - 1) * mlp_parameters(c) + CheckedSize(c.experts) * c.hidden;
}

// What MoE in every moe_every-th layer adds to L dense layers, when not every
// layer has it (with every layer, layer_parameters() counts it).
CheckedSize sparse_moe_extra(const HfModelConfig& c) {
  return c.moe_every > 1 ? moe_layers(c) * moe_layer_extra(c) : CheckedSize(0);
}
}  // namespace

std::int64_t HfModelConfig::dense_layer_parameters() const {
  return kv_lora_rank > 0 ? deepseek_layer_parameters(*this, true).value() : layer_parameters();
}

std::int64_t HfModelConfig::layer_parameters() const {
  if (kv_lora_rank > 0) return deepseek_layer_parameters(*this, false).value();
  const CheckedSize h = hidden, I = intermediate;
  const CheckedSize moe = moe_every == 1 ? moe_layer_extra(*this) : CheckedSize(0);  // every layer's experts
  switch (architecture) {
    case HfArchitecture::gpt2:  // ln_1, c_attn (h, 3h) + 3h, c_proj (h, h) + h, ln_2, c_fc (h, I) + I, c_proj (I, h) +
                                // h
      return (2 * h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * I + I) + (I * h + h) + moe).value();
    case HfArchitecture::bert:  // q, k, v, attention.output.dense, LayerNorm, intermediate.dense, output.dense,
                                // LayerNorm
      return (4 * (h * h + h) + 2 * h + (h * I + I) + (I * h + h) + 2 * h).value();
    case HfArchitecture::llama: {  // q (h, a d), k and v (h, kv d), o (a d, h); gate, up (h, I), down (I, h); 2
                                   // RMSNorms
      const CheckedSize q = CheckedSize(heads) * head_dim, kv = CheckedSize(kv_heads) * head_dim;
      CheckedSize n = h * q + 2 * h * kv + q * h + 3 * h * I + 2 * h;
      if (attention_bias) n += q + 2 * kv + h;
      if (qkv_bias) n += q + 2 * kv;                // Qwen2: none on o_proj
      if (qk_norm) n += 2 * CheckedSize(head_dim);  // Qwen3: q_norm, k_norm
      if (feedforward_norms) n += 2 * h;            // Gemma2: pre- and post-feedforward norms
      if (mlp_bias) n += 2 * I + h;
      return (n + moe).value();
    }
  }
  return 0;
}

std::int64_t HfModelConfig::replicated_layer_parameters() const {
  const CheckedSize h = hidden;
  // DeepSeek-V3: its two RMSNorms and the latents' (q_a_layernorm, kv_a_layernorm), and the down-projections
  // into the latents (q_a_proj, kv_a_proj_with_mqa), which Megatron-LM's Transformer Engine layers build
  // "duplicated" (multi_latent_attention.py) and torchtitan leaves unsplit (NoParallel).
  if (kv_lora_rank > 0)
    return (2 * h + CheckedSize(q_lora_rank) + kv_lora_rank + h * q_lora_rank +
            h * (CheckedSize(kv_lora_rank) + qk_rope_head_dim))
        .value();
  switch (architecture) {
    case HfArchitecture::gpt2:  // ln_1 and ln_2 (weight and bias), the biases of attn.c_proj and mlp.c_proj
    case HfArchitecture::bert:  // two LayerNorms (weight and bias), the biases of attention.output and output.dense
      return (6 * h).value();
    case HfArchitecture::llama: {  // input and post-attention RMSNorms
      CheckedSize n = 2 * h;
      if (feedforward_norms) n += 2 * h;            // Gemma2: pre- and post-feedforward norms
      if (qk_norm) n += 2 * CheckedSize(head_dim);  // Qwen3: q_norm, k_norm, one head_dim vector for all heads
      if (attention_bias) n += h;                   // o_proj's bias, added after the row-parallel sum
      if (mlp_bias) n += h;                         // down_proj's bias, likewise
      return n.value();
    }
  }
  return 0;
}

std::int64_t HfModelConfig::head_parameters() const {
  const CheckedSize h = hidden, v = vocab;
  const CheckedSize untied = tie_word_embeddings ? CheckedSize(0) : v * h;
  switch (architecture) {
    case HfArchitecture::gpt2:
      return (2 * h + untied).value();  // ln_f (+ lm_head unless tied)
    case HfArchitecture::bert:          // pooler dense + MLM transform dense, LayerNorm, decoder bias
      return ((h * h + h) + (h * h + h) + 2 * h + v + untied).value();
    case HfArchitecture::llama:
      return (h + untied).value();  // norm (+ lm_head)
  }
  return 0;
}

namespace {
// The decoder layers: L of layer_parameters(), but the first dense ones (DeepSeek-V3) and sparse MoE.
CheckedSize layers_parameters(const HfModelConfig& c) {
  return CheckedSize(c.layers - c.first_dense_layers) * c.layer_parameters() +
         CheckedSize(c.first_dense_layers) * c.dense_layer_parameters() + sparse_moe_extra(c);
}
}  // namespace

std::int64_t HfModelConfig::training_parameters() const {
  return (CheckedSize(embedding_parameters()) + layers_parameters(*this) + head_parameters()).value();
}

std::int64_t HfModelConfig::active_training_parameters() const {
  const CheckedSize idle = CheckedSize(experts > 0 ? experts - top_k : 0) * expert_parameters(*this);
  return (CheckedSize(training_parameters()) - moe_layers(*this) * idle).value();
}

std::int64_t HfModelConfig::base_model_parameters() const {
  const CheckedSize h = hidden;
  const CheckedSize body = CheckedSize(embedding_parameters()) + layers_parameters(*this);
  switch (architecture) {
    case HfArchitecture::gpt2:
      return (body + 2 * h).value();  // + ln_f
    case HfArchitecture::bert:
      return (body + (h * h + h)).value();  // + pooler
    case HfArchitecture::llama:
      return (body + h).value();  // + norm
  }
  return 0;
}

std::int64_t HfModelConfig::lookup_only_parameters() const {
  const CheckedSize h = hidden;
  switch (architecture) {
    case HfArchitecture::gpt2:
      return (CheckedSize(max_positions) * h).value();
    case HfArchitecture::bert:
      return ((CheckedSize(max_positions) + type_vocab) * h).value();
    case HfArchitecture::llama:
      return tie_word_embeddings ? 0 : (CheckedSize(vocab) * h).value();
  }
  return 0;
}

std::int64_t HfModelConfig::largest_module_parameters() const {
  const CheckedSize h = hidden, I = intermediate, v = vocab;
  CheckedSize largest = std::max(v * h, CheckedSize(max_positions) * h);  // an embedding table is usually the largest
  switch (architecture) {
    case HfArchitecture::gpt2:
      largest = std::max({largest, 3 * h * h + 3 * h, h * I + I});
      break;
    case HfArchitecture::bert:
      largest = std::max(largest, h * I + I);
      break;
    case HfArchitecture::llama:
      largest = std::max({v * h, h * I + (mlp_bias ? I : CheckedSize(0)),
                          CheckedSize(heads) * head_dim * (h + (qkv_bias ? 1 : 0))});  // q_proj (+ Qwen2's bias)
      if (fused_projections)  // Phi-3's qkv_proj (h, (a + 2 kv) d) and gate_up_proj (h, 2I)
        largest = std::max({largest, h * (CheckedSize(heads) + 2 * kv_heads) * head_dim, 2 * h * I});
      break;
  }
  // A layer's experts are one module holding all E (transformers' stacked MixtralExperts).
  if (experts > 0) largest = std::max(largest, CheckedSize(experts) * expert_parameters(*this));
  return largest.value();
}

}  // namespace shardscope
