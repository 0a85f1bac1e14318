// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face `config.json` import for the estimator: the shape of a GPT-2,
// BERT or Llama-family model (Llama, Mistral, Mixtral, DeepSeek-V3, Qwen2,
// Qwen3, Phi-3, Gemma, Gemma2) and its exact parameter count, tensor by tensor as Transformers
// builds the model. Unknown keys become warnings; a missing or ill-typed shape
// key is a ConfigError naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_config.h"

namespace shardscope {

enum class HfArchitecture { gpt2, bert, llama };

// Ranges of the shape keys (a value outside is a ConfigError naming the key and
// the range): far beyond any real model, and small enough that every count
// below fits in 64 bits. The parameter count itself is at most kHfMaxParameters
// (2^50, a thousand times today's largest models), so that bytes of every
// category (16 bytes a parameter and more) stay within 64 bits too.
inline constexpr std::int64_t kHfMaxVocab = 1ll << 30;         // vocab_size
inline constexpr std::int64_t kHfMaxPositions = 1ll << 30;     // n_positions, n_ctx, max_position_embeddings
inline constexpr std::int64_t kHfMaxHidden = 1ll << 20;        // n_embd, hidden_size
inline constexpr std::int64_t kHfMaxIntermediate = 1ll << 22;  // n_inner, intermediate_size
inline constexpr std::int64_t kHfMaxLayers = 1ll << 16;        // n_layer, num_hidden_layers
inline constexpr std::int64_t kHfMaxHeads = 1ll << 16;         // n_head, num_attention_heads
inline constexpr std::int64_t kHfMaxHeadDim = 1ll << 16;       // head_dim
inline constexpr std::int64_t kHfMaxTypeVocab = 1ll << 20;     // type_vocab_size
inline constexpr std::int64_t kHfMaxParameters = 1ll << 50;
std::string_view hf_architecture_name(HfArchitecture architecture);

struct HfModelConfig {
  std::string source;      // the file (for messages)
  std::string model_type;  // as written: "gpt2", "bert", "llama", "mistral", "qwen2", ...
  HfArchitecture architecture = HfArchitecture::gpt2;
  std::int64_t vocab = 0;          // vocab_size
  std::int64_t hidden = 0;         // n_embd / hidden_size (h)
  std::int64_t layers = 0;         // n_layer / num_hidden_layers (L)
  std::int64_t heads = 0;          // n_head / num_attention_heads (a)
  std::int64_t kv_heads = 0;       // num_key_value_heads (grouped-query attention); = heads otherwise
  std::int64_t head_dim = 0;       // head_dim, or hidden / heads
  std::int64_t intermediate = 0;   // n_inner / intermediate_size (MLP width)
  std::int64_t max_positions = 0;  // n_positions / max_position_embeddings
  std::int64_t type_vocab = 0;     // BERT type_vocab_size
  bool tie_word_embeddings = true;
  bool attention_bias = false;  // Llama: q/k/v/o biases
  bool mlp_bias = false;        // Llama: gate/up/down biases
  bool qkv_bias = false;        // Qwen2: q/k/v biases, none on o_proj
  bool qk_norm = false;         // Qwen3: q_norm and k_norm, an RMSNorm of head_dim on each head's query and key
  bool fused_projections = false;  // Phi-3: one qkv_proj and one gate_up_proj (Llama's parameters, fewer modules)
  bool feedforward_norms = false;  // Gemma2: an RMSNorm before and one after each MLP (4 norms a layer)
  std::string activation;       // activation_function / hidden_act
  double norm_eps = 0.0;        // layer_norm_epsilon / layer_norm_eps / rms_norm_eps
  // A mixture of experts in GPT-2's MLPs (model/mixture_of_experts.h): num_local_experts
  // (Mixtral) or num_experts, num_experts_per_tok, capacity_factor, moe_layer_freq
  // (Megatron's: MoE in layers 0, f, 2f, ...), router_aux_loss_coef. 0 experts: dense.
  // Mixtral (model_type "mixtral", Llama's tensors otherwise): num_local_experts in every layer.
  std::int64_t experts = 0, top_k = 0, moe_every = 1;
  double capacity_factor = 1.25, aux_loss_coef = 0.01;
  // DeepSeek-V3 (model_type "deepseek_v3": Llama's norms and SwiGLU MLPs otherwise). Multi-head
  // latent attention (MLA): queries through a rank-q_lora_rank bottleneck (0: a plain q_proj),
  // keys and values through a shared rank-kv_lora_rank latent plus a qk_rope_head_dim RoPE key;
  // each head's query/key has qk_nope_head_dim + qk_rope_head_dim values, its value v_head_dim.
  // The first first_dense_layers layers have a dense MLP (intermediate); the others n_routed_experts
  // experts of expert_intermediate (moe_intermediate_size), shared_experts always-on ones of the
  // same width, and a router.
  std::int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  std::int64_t expert_intermediate = 0, shared_experts = 0, first_dense_layers = 0;
  std::string math_not_run;     // "<file> line L: key: value (why)" when a key changes the math the engine runs
  std::vector<std::string> warnings;

  // Exact counts (tensors of the PyTorch module; a tied matrix counted once):
  // AutoModel's base model: GPT2Model, BertModel (with its pooler), LlamaModel.
  std::int64_t base_model_parameters() const;
  // The language model trained: GPT2LMHeadModel (= base, head tied),
  // LlamaForCausalLM (+ lm_head unless tied), and for BERT ShardScope's masked
  // LM: the base model + the MLM head (dense, LayerNorm, decoder bias; decoder tied).
  std::int64_t training_parameters() const;
  // Of those, the ones one token's forward uses: a MoE layer's k experts of E
  // (Mixtral 8x7B: 12.9B of 46.7B); training_parameters() for a dense model.
  std::int64_t active_training_parameters() const;
  std::int64_t embedding_parameters() const;       // token (+ position, + token type, + embedding LayerNorm)
  std::int64_t layer_parameters() const;           // one transformer layer (its experts too when every layer has them)
  // Of one layer, what tensor parallelism keeps whole on every tp rank (Megatron-LM's
  // replicated tensors): the norms (Gemma2's feed-forward ones and Qwen3's head_dim-wide q/k
  // norms too, shared by every head) and the biases of the row-parallel o/c_proj and down projections.
  std::int64_t replicated_layer_parameters() const;
  std::int64_t dense_layer_parameters() const;  // one of the first_dense_layers (DeepSeek-V3), else layer_parameters()
  std::int64_t head_parameters() const;            // final norm, untied lm_head, BERT pooler + MLM head
  std::int64_t lookup_only_parameters() const;     // embeddings no matmul reads: positions, types, untied input
  std::int64_t largest_module_parameters() const;  // the largest module's own tensors (DeepSpeed's "largest layer")

  // The same model as a ShardScope ModelConfig when ShardScope's kernels
  // implement this architecture exactly (GPT-2 with a 4h GELU MLP; BERT with
  // 4h and GELU), so activations can be computed exactly; nullopt for Llama.
  std::optional<ModelConfig> engine_config() const;
};

// `source` names the file in messages. FormatError for malformed JSON,
// ConfigError for a missing/ill-typed/out-of-range key, a parameter count out
// of range, or an unsupported model_type.
HfModelConfig parse_hf_config(std::string_view json_text, const std::string& source);
HfModelConfig load_hf_config(const std::string& path);

}  // namespace shardscope
