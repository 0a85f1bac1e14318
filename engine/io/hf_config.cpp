// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/hf_config.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "core/checked_math.h"
#include "core/error.h"
#include "core/json_text.h"
#include "io/config_reader.h"

namespace shardscope {

namespace {
using Keys = std::set<std::string, std::less<>>;

// clang-format off
// Keys every Transformers PretrainedConfig may carry (generation, labels,
// bookkeeping): none of them changes the parameter count.
const Keys kCommonKeys = {"_name_or_path", "architectures", "model_type", "torch_dtype", "dtype",
    "transformers_version", "auto_map", "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id",
    "decoder_start_token_id", "initializer_range", "use_cache", "tie_word_embeddings", "task_specific_params",
    "id2label", "label2id", "num_labels", "problem_type", "gradient_checkpointing", "return_dict",
    "output_hidden_states", "output_attentions", "torchscript", "pruned_heads", "chunk_size_feed_forward",
    "is_encoder_decoder", "is_decoder", "add_cross_attention", "tie_encoder_decoder", "prefix", "finetuning_task",
    "tokenizer_class", "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "temperature", "top_k",
    "top_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size", "bad_words_ids", "num_return_sequences",
    "output_scores", "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
    "quantization_config", "classifier_dropout", "use_return_dict"};

const Keys kGpt2Keys = {"vocab_size", "n_positions", "n_ctx", "n_embd", "n_layer", "n_head", "n_inner",
    "activation_function", "resid_pdrop", "embd_pdrop", "attn_pdrop", "layer_norm_epsilon", "summary_type",
    "summary_use_proj", "summary_activation", "summary_proj_to_labels", "summary_first_dropout", "scale_attn_weights",
    "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "num_local_experts", "num_experts",
    "num_experts_per_tok", "capacity_factor", "moe_layer_freq", "router_aux_loss_coef"};
const Keys kBertKeys = {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
    "layer_norm_eps", "position_embedding_type"};
const Keys kLlamaKeys = {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "hidden_act", "max_position_embeddings", "rms_norm_eps", "pretraining_tp", "rope_theta",
    "rope_scaling", "attention_bias", "attention_dropout", "mlp_bias", "head_dim", "sliding_window",
    "max_window_layers", "use_sliding_window", "num_local_experts", "num_experts_per_tok", "router_aux_loss_coef",
    "output_router_logits", "router_jitter_noise"};
// Qwen2 and Qwen3 (Qwen2Config, Qwen3Config): Llama's shape keys, a sliding window, the RoPE
// options; no mlp_bias or pretraining_tp. Qwen2 has no attention_bias key (its q, k and v
// always have biases); Qwen3's attention_bias puts them on q, k, v and o, as Llama's does.
const Keys kQwenKeys = {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "hidden_act", "max_position_embeddings", "rms_norm_eps", "rope_theta",
    "rope_scaling", "rope_parameters", "use_mrope", "attention_dropout", "use_sliding_window", "sliding_window",
    "max_window_layers", "layer_types"};
const Keys kDeepseekV3Keys = {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
    "num_attention_heads", "num_key_value_heads", "hidden_act", "max_position_embeddings", "rms_norm_eps",
    "pretraining_tp", "rope_theta", "rope_scaling", "rope_interleave", "attention_bias", "attention_dropout",
    "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_routed_experts",
    "num_experts_per_tok", "n_shared_experts", "moe_intermediate_size", "first_k_dense_replace", "moe_layer_freq",
    "n_group", "topk_group", "topk_method", "routed_scaling_factor", "scoring_func", "norm_topk_prob",
    "aux_loss_alpha", "seq_aux", "ep_size", "num_nextn_predict_layers"};
// Phi-3 (Phi3Config): Llama's shape keys with its own dropouts and RoPE options; no biases
// (attention_bias is read only to say that transformers ignores it).
const Keys kPhi3Keys = {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "hidden_act", "max_position_embeddings", "original_max_position_embeddings",
    "rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor", "resid_pdrop",
    "embd_pdrop", "attention_dropout", "attention_bias", "sliding_window"};
// Gemma and Gemma2 (GemmaConfig, Gemma2Config): head_dim 256 and a tied head by default; Gemma2
// adds the logit soft-capping, the query scale and a sliding window on every other layer.
const Keys kGemmaKeys = {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "hidden_act", "hidden_activation", "max_position_embeddings", "rms_norm_eps",
    "rope_theta", "rope_scaling", "rope_parameters", "attention_bias", "attention_dropout"};
const Keys kGemma2Keys = {"query_pre_attn_scalar", "sliding_window", "sliding_window_size", "layer_types",
    "final_logit_softcapping", "attn_logit_softcapping", "cache_implementation"};
// clang-format on

std::int64_t required(const JsonConfig& json, const std::string& key, std::int64_t max) {
  const auto value = json.get_int({key}, 1, max);
  if (!value) throw ConfigError(json.source() + ": missing key '" + key + "' (needed for the model's shape)");
  return *value;
}

// LayerNorm's or RMSNorm's epsilon (x / sqrt(variance + eps)): positive, or a
// constant row divides by zero; at most 1, or the engine's float holds a value
// (1e300 became inf) that scales every activation to nothing without a word;
// and positive as that float too (1e-50 would become 0).
double norm_epsilon(const JsonConfig& json, const std::string& key, double fallback) {
  const double eps = json.get_number({key}).value_or(fallback);
  if (!(eps > 0.0 && eps <= 1.0))
    json.fail({key}, json.find({key})->dump() + " is out of range (0, 1] (the norm divides by sqrt(variance + eps))");
  if (!(static_cast<float>(eps) > 0.0f))
    json.fail({key}, json.find({key})->dump() + " is too small for the engine's 32-bit float (it would be 0)");
  return eps;
}

std::string shape_keys(HfArchitecture architecture) {
  if (architecture == HfArchitecture::gpt2) return "vocab_size, n_embd, n_inner, n_layer and n_positions";
  const std::string keys = "vocab_size, hidden_size, intermediate_size, num_hidden_layers";
  return keys +
         (architecture == HfArchitecture::bert ? " and max_position_embeddings" : ", num_attention_heads and head_dim");
}

// A key whose value changes the math from the GPT-2 / BERT the engine runs
// (attention scaling, relative positions, a causal BERT): "" when none. The
// estimator still counts such a model (the bytes are the same); training and
// hidden states refuse it rather than print numbers transformers would not.
std::string math_the_engine_lacks(const JsonConfig& json, HfArchitecture architecture) {
  if (architecture == HfArchitecture::gpt2) {
    if (!json.get_bool({"scale_attn_weights"}).value_or(true))
      return json.where({"scale_attn_weights"}) + ": false (attention without the 1/sqrt(head_dim) scale)";
    if (json.get_bool({"scale_attn_by_inverse_layer_idx"}).value_or(false))
      return json.where({"scale_attn_by_inverse_layer_idx"}) + ": true (attention scaled by 1/(layer+1))";
  } else if (architecture == HfArchitecture::bert) {
    if (const auto type = json.get_string({"position_embedding_type"}); type && *type != "absolute")
      return json.where({"position_embedding_type"}) + ": '" + bounded_excerpt(*type) +
             "' (only absolute position embeddings)";
    if (json.get_bool({"is_decoder"}).value_or(false))
      return json.where({"is_decoder"}) + ": true (a causal BERT; ShardScope's BERT attends both ways)";
  }
  return {};
}

// Every count the estimator reads, computed once with checked arithmetic: a
// shape whose counts do not fit in 64 bits, or exceed kHfMaxParameters, is
// refused here, naming the file and the keys, so later uses cannot overflow.
void check_parameter_counts(const HfModelConfig& c, const std::string& shape_keys) {
  try {
    const std::int64_t total = std::max(c.training_parameters(), c.base_model_parameters());
    (void)c.largest_module_parameters();
    (void)c.lookup_only_parameters();
    if (total > kHfMaxParameters)
      throw SizeOverflow(std::to_string(total) + " parameters is more than the estimator counts (" +
                         std::to_string(kHfMaxParameters) + ", 2^50)");
  } catch (const SizeOverflow& e) {
    throw ConfigError(c.source + ": the model's parameter count is out of range (" + e.what() + "); check " +
                      shape_keys);
  }
}
}  // namespace

std::string_view hf_architecture_name(HfArchitecture architecture) {
  switch (architecture) {
    case HfArchitecture::gpt2:
      return "gpt2";
    case HfArchitecture::bert:
      return "bert";
    case HfArchitecture::llama:
      return "llama";
  }
  return "?";
}

namespace {
// GPT-2 with its MLPs as a mixture of experts (the keys Mixtral and Megatron-LM use).
void read_gpt2_experts(const JsonConfig& json, HfModelConfig& c) {
  const char* experts_key = json.get_int({"num_local_experts"}, 0, 1 << 16) ? "num_local_experts" : "num_experts";
  c.experts = json.get_int({experts_key}, 0, 1 << 16).value_or(0);
  if (c.experts == 0) return;
  c.top_k = json.get_int({"num_experts_per_tok"}, 1, c.experts).value_or(std::min<std::int64_t>(2, c.experts));
  c.moe_every = json.get_int({"moe_layer_freq"}, 1, c.layers).value_or(1);
  c.capacity_factor = json.get_number({"capacity_factor"}).value_or(1.25);
  if (!(c.capacity_factor > 0.0 && c.capacity_factor <= 1e6))
    json.fail({"capacity_factor"}, std::to_string(c.capacity_factor) + " must be positive");
  c.aux_loss_coef = json.get_number({"router_aux_loss_coef"}).value_or(0.01);
  if (!(c.aux_loss_coef >= 0.0 && c.aux_loss_coef <= 1e6))
    json.fail({"router_aux_loss_coef"}, std::to_string(c.aux_loss_coef) + " must not be negative");
}

// Mixtral: every layer's MLP is num_local_experts SwiGLU experts (MixtralConfig's defaults: 8, top-2).
void read_mixtral_experts(const JsonConfig& json, HfModelConfig& c) {
  c.experts = json.get_int({"num_local_experts"}, 1, 1 << 16).value_or(8);
  c.top_k = json.get_int({"num_experts_per_tok"}, 1, c.experts).value_or(2);
  c.aux_loss_coef = json.get_number({"router_aux_loss_coef"}).value_or(0.001);
}

// The model types with Llama's shape keys, norms and SwiGLU MLPs.
bool llama_family(std::string_view type) {
  return type == "llama" || type == "mistral" || type == "mixtral" || type == "deepseek_v3" || type == "qwen2" ||
         type == "qwen3" || type == "phi3" || type == "gemma" || type == "gemma2";
}

// max_position_embeddings when the file omits it, as each family's config class defaults it.
std::int64_t default_positions(std::string_view type) {
  if (type == "qwen2" || type == "qwen3") return 32768;
  if (type == "phi3") return 4096;
  if (type == "gemma" || type == "gemma2") return 8192;
  return 2048;
}

// What a sliding-window warning says after naming the key: the window changes no tensor, and
// the estimator prices full causal attention.
std::string priced_as_full_attention(std::int64_t window) {
  // Appended in steps: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
  std::string text = " tokens): the estimate prices full causal attention, more time than it takes when --seq exceeds ";
  text += std::to_string(window);
  return text + "; the parameter counts are exact";
}

// Whether layer_types names a "sliding_attention" layer; nullopt when the file has no layer_types.
std::optional<bool> names_sliding_layer(const JsonConfig& json) {
  const nlohmann::json* types = json.find({"layer_types"});
  if (types == nullptr || !types->is_array()) return std::nullopt;
  return std::any_of(types->begin(), types->end(), [](const nlohmann::json& t) { return t == "sliding_attention"; });
}

// Qwen2's and Qwen3's sliding window: transformers applies it only with use_sliding_window true
// and a sliding_window, to the layers layer_types names "sliding_attention" (by default those
// from max_window_layers on). It changes no tensor; the estimator prices those layers'
// attention as full causal attention, which this warning says.
void warn_sliding_window(const JsonConfig& json, HfModelConfig& c) {
  const auto window = json.get_int({"sliding_window"}, 1, kHfMaxPositions);
  if (!json.get_bool({"use_sliding_window"}).value_or(false) || !window) return;
  const bool sliding =
      names_sliding_layer(json).value_or(json.get_int({"max_window_layers"}, 0, kHfMaxLayers).value_or(28) < c.layers);
  if (sliding)
    c.warnings.push_back(json.where({"use_sliding_window"}) + ": true (some layers attend only to the last " +
                         std::to_string(*window) + priced_as_full_attention(*window));
}

// Qwen2: q, k and v with biases, o_proj without (whatever attention_bias says). Qwen3: an RMSNorm
// of head_dim on each head's query and key, head_dim 128 unless given, attention_bias as Llama's.
void read_qwen(const JsonConfig& json, HfModelConfig& c, Keys& known) {
  if (c.model_type == "qwen2") {
    c.qkv_bias = true;
  } else {
    c.qk_norm = true;
    known.insert("attention_bias");
    c.head_dim = json.get_int({"head_dim"}, 1, kHfMaxHeadDim).value_or(128);
    c.attention_bias = json.get_bool({"attention_bias"}).value_or(false);
  }
  warn_sliding_window(json, c);
}

// DeepSeek-V3: MLA and the MoE keys (HfModelConfig's comment). transformers builds
// num_hidden_layers decoder layers and leaves the multi-token-prediction layers
// (num_nextn_predict_layers) out; so does this count. Its Llama keys are read before this.
void read_deepseek_v3(const JsonConfig& json, HfModelConfig& c, Keys& known) {
  known.insert(kDeepseekV3Keys.begin(), kDeepseekV3Keys.end());
  c.q_lora_rank = json.get_int({"q_lora_rank"}, 1, kHfMaxHidden).value_or(0);  // null: a plain q_proj
  c.kv_lora_rank = required(json, "kv_lora_rank", kHfMaxHidden);
  c.qk_nope_head_dim = required(json, "qk_nope_head_dim", kHfMaxHeadDim);
  c.qk_rope_head_dim = required(json, "qk_rope_head_dim", kHfMaxHeadDim);
  c.v_head_dim = required(json, "v_head_dim", kHfMaxHeadDim);
  c.head_dim = c.qk_nope_head_dim + c.qk_rope_head_dim;
  c.experts = json.get_int({"n_routed_experts"}, 1, 1 << 16).value_or(0);
  if (c.experts == 0) return;
  c.top_k = json.get_int({"num_experts_per_tok"}, 1, c.experts).value_or(std::min<std::int64_t>(8, c.experts));
  c.shared_experts = json.get_int({"n_shared_experts"}, 0, 1 << 16).value_or(0);
  c.expert_intermediate = required(json, "moe_intermediate_size", kHfMaxIntermediate);
  c.first_dense_layers = json.get_int({"first_k_dense_replace"}, 0, c.layers).value_or(0);
  if (json.get_int({"moe_layer_freq"}, 1, 1 << 16).value_or(1) != 1)
    json.fail({"moe_layer_freq"}, "only 1 (every layer after first_k_dense_replace a MoE layer) is counted");
  if (c.attention_bias) json.fail({"attention_bias"}, "true: MLA's biases are not counted yet");
  c.aux_loss_coef = json.get_number({"aux_loss_alpha"}).value_or(0.001);
}

// Phi-3: Llama's tensors fused, q, k and v in one qkv_proj, gate and up in one gate_up_proj (the
// same parameters, fewer and larger modules). Its sliding_window applies to every layer.
void read_phi3(const JsonConfig& json, HfModelConfig& c) {
  c.fused_projections = true;
  if (json.get_bool({"attention_bias"}).value_or(false))
    c.warnings.push_back(json.where({"attention_bias"}) +
                         ": true is ignored, as transformers' Phi3 ignores it (its linears have no biases)");
  if (const auto window = json.get_int({"sliding_window"}, 1, kHfMaxPositions))
    c.warnings.push_back(json.where({"sliding_window"}) + ": " + std::to_string(*window) +
                         " (every layer attends only to the last " + std::to_string(*window) +
                         priced_as_full_attention(*window));
}

// Gemma: Llama's tensors (its RMSNorm scales by 1 + weight: the same weights), head_dim 256 by
// default. Gemma2 adds a pre- and a post-feedforward RMSNorm to each layer, and slides a window
// (sliding_window, 4096 by default; null: none) over the layers layer_types names, by default
// every other one.
void read_gemma(const JsonConfig& json, HfModelConfig& c, Keys& known) {
  c.head_dim = json.get_int({"head_dim"}, 1, kHfMaxHeadDim).value_or(256);
  c.attention_bias = json.get_bool({"attention_bias"}).value_or(false);
  c.activation = json.get_string({"hidden_activation"}).value_or(c.activation);
  if (c.model_type != "gemma2") return;
  known.insert(kGemma2Keys.begin(), kGemma2Keys.end());
  c.feedforward_norms = true;
  const auto window = json.root().contains("sliding_window") ? json.get_int({"sliding_window"}, 1, kHfMaxPositions)
                                                             : std::optional<std::int64_t>(4096);
  if (window && names_sliding_layer(json).value_or(true))
    c.warnings.push_back(json.where({"sliding_window"}) + ": " + std::to_string(*window) +
                         " (the layers layer_types names sliding_attention, by default every other one, attend only "
                         "to the last " +
                         std::to_string(*window) + priced_as_full_attention(*window));
}

// Llama's keys; Mistral has Llama's tensors (plus a sliding window); Mixtral's and DeepSeek-V3's
// MLPs are experts; Qwen2 and Qwen3 differ in the attention's biases and norms, Phi-3 fuses
// the projections, Gemma widens the heads (head_dim 256) and Gemma2 adds two norms a layer.
void read_llama_family(const JsonConfig& json, HfModelConfig& c, Keys& known) {
  c.architecture = HfArchitecture::llama;
  const bool qwen = c.model_type == "qwen2" || c.model_type == "qwen3", phi3 = c.model_type == "phi3";
  const bool gemma = c.model_type == "gemma" || c.model_type == "gemma2";
  const Keys& keys = qwen ? kQwenKeys : phi3 ? kPhi3Keys : gemma ? kGemmaKeys : kLlamaKeys;
  known.insert(keys.begin(), keys.end());
  c.vocab = required(json, "vocab_size", kHfMaxVocab);
  c.hidden = required(json, "hidden_size", kHfMaxHidden);
  c.layers = required(json, "num_hidden_layers", kHfMaxLayers);
  c.heads = required(json, "num_attention_heads", kHfMaxHeads);
  c.intermediate = required(json, "intermediate_size", kHfMaxIntermediate);
  c.max_positions =
      json.get_int({"max_position_embeddings"}, 1, kHfMaxPositions).value_or(default_positions(c.model_type));
  c.kv_heads = json.get_int({"num_key_value_heads"}, 1, c.heads).value_or(c.heads);
  c.head_dim = json.get_int({"head_dim"}, 1, kHfMaxHeadDim).value_or(0);
  c.activation = json.get_string({"hidden_act"}).value_or("silu");
  c.norm_eps = norm_epsilon(json, "rms_norm_eps", phi3 ? 1e-5 : 1e-6);
  if (qwen) return read_qwen(json, c, known);
  if (phi3) return read_phi3(json, c);
  if (gemma) return read_gemma(json, c, known);
  c.attention_bias = json.get_bool({"attention_bias"}).value_or(false);
  c.mlp_bias = json.get_bool({"mlp_bias"}).value_or(false);
  if (c.model_type == "mixtral") read_mixtral_experts(json, c);
  if (c.model_type == "deepseek_v3") read_deepseek_v3(json, c, known);
}
}  // namespace

HfModelConfig parse_hf_config(std::string_view json_text, const std::string& source) {
  const JsonConfig json{std::string(json_text), source};
  HfModelConfig c;
  c.source = source;
  const auto type = json.get_string({"model_type"});
  if (!type)
    throw ConfigError(source +
                      ": missing key 'model_type' (a Hugging Face config.json names its model type, "
                      "e.g. \"gpt2\", \"bert\", \"llama\")");
  c.model_type = *type;
  Keys known = kCommonKeys;
  if (c.model_type == "gpt2") {
    c.architecture = HfArchitecture::gpt2;
    known.insert(kGpt2Keys.begin(), kGpt2Keys.end());
    c.vocab = required(json, "vocab_size", kHfMaxVocab);
    c.hidden = required(json, "n_embd", kHfMaxHidden);
    c.layers = required(json, "n_layer", kHfMaxLayers);
    c.heads = required(json, "n_head", kHfMaxHeads);
    c.max_positions = required(json, "n_positions", kHfMaxPositions);
    c.intermediate = json.get_int({"n_inner"}, 1, kHfMaxIntermediate).value_or(4 * c.hidden);  // null: 4 n_embd
    c.activation = json.get_string({"activation_function"}).value_or("gelu_new");
    c.norm_eps = norm_epsilon(json, "layer_norm_epsilon", 1e-5);
    read_gpt2_experts(json, c);
  } else if (c.model_type == "bert") {
    c.architecture = HfArchitecture::bert;
    known.insert(kBertKeys.begin(), kBertKeys.end());
    c.vocab = required(json, "vocab_size", kHfMaxVocab);
    c.hidden = required(json, "hidden_size", kHfMaxHidden);
    c.layers = required(json, "num_hidden_layers", kHfMaxLayers);
    c.heads = required(json, "num_attention_heads", kHfMaxHeads);
    c.intermediate = required(json, "intermediate_size", kHfMaxIntermediate);
    c.max_positions = required(json, "max_position_embeddings", kHfMaxPositions);
    c.type_vocab = json.get_int({"type_vocab_size"}, 1, kHfMaxTypeVocab).value_or(2);
    c.activation = json.get_string({"hidden_act"}).value_or("gelu");
    c.norm_eps = norm_epsilon(json, "layer_norm_eps", 1e-12);
  } else if (llama_family(c.model_type)) {
    read_llama_family(json, c, known);
  } else {
    json.fail({"model_type"},
              "'" + bounded_excerpt(c.model_type) +
                  "' is not supported (supported: gpt2, bert, llama, mistral, mixtral, deepseek_v3, qwen2, qwen3, "
                  "phi3, gemma, gemma2)");
  }
  if (c.kv_heads == 0) c.kv_heads = c.heads;
  if (c.head_dim == 0) {
    if (c.hidden % c.heads != 0)
      json.fail({c.architecture == HfArchitecture::gpt2 ? "n_head" : "num_attention_heads"},
                std::to_string(c.heads) + " does not divide the hidden size " + std::to_string(c.hidden));
    c.head_dim = c.hidden / c.heads;
  }
  if (c.heads % c.kv_heads != 0)
    json.fail({"num_key_value_heads"},
              std::to_string(c.kv_heads) + " does not divide num_attention_heads " + std::to_string(c.heads));
  // GPT-2 and BERT always tie the output head to the token embedding; Llama defaults to untied, Gemma to tied.
  const bool tie_default = c.architecture != HfArchitecture::llama || c.model_type.starts_with("gemma");
  c.tie_word_embeddings = json.get_bool({"tie_word_embeddings"}).value_or(tie_default);
  if (c.architecture == HfArchitecture::gpt2) {
    if (const auto ctx = json.get_int({"n_ctx"}, 1, kHfMaxPositions); ctx && *ctx != c.max_positions)
      c.warnings.push_back(json.where({"n_ctx"}) + ": " + std::to_string(*ctx) + " differs from n_positions " +
                           std::to_string(c.max_positions) + "; the position table has n_positions rows");
  }
  c.math_not_run = math_the_engine_lacks(json, c.architecture);
  check_parameter_counts(c, shape_keys(c.architecture));
  json.report_unknown_keys({}, known, "not a " + c.model_type + " config key the estimator knows", c.warnings);
  return c;
}

HfModelConfig load_hf_config(const std::string& path) {
  return parse_hf_config(read_config_file(path, "--model"), path);
}

std::optional<ModelConfig> HfModelConfig::engine_config() const {
  if (architecture == HfArchitecture::llama || intermediate != 4 * hidden || hidden > (1 << 30)) return std::nullopt;
  // Past 4096 layers the engine's exact layout (a named entry per tensor, rebuilt per stage) costs seconds per
  // use; the counts above are exact too.
  if (vocab > (1 << 30) || max_positions > (1 << 30) || layers > 4096 || heads > (1 << 20)) return std::nullopt;
  ModelConfig m;
  m.name = source;
  m.vocab = static_cast<int>(vocab);
  m.max_seq = static_cast<int>(max_positions);
  m.channels = static_cast<int>(hidden);
  m.layers = static_cast<int>(layers);
  m.heads = static_cast<int>(heads);
  if (architecture == HfArchitecture::gpt2) {
    if ((activation != "gelu_new" && activation != "gelu_pytorch_tanh") || !tie_word_embeddings) return std::nullopt;
    m.kind = ModelKind::gpt;
    m.ln_eps = static_cast<float>(norm_eps);
    m.gelu = math::GeluKind::tanh_approx;
    m.experts = static_cast<int>(experts);
    m.top_k = static_cast<int>(top_k);
    m.moe_every = static_cast<int>(moe_every);
    m.capacity_factor = static_cast<float>(capacity_factor);
    m.aux_loss_coef = static_cast<float>(aux_loss_coef);
  } else {
    if (activation != "gelu" || !tie_word_embeddings) return std::nullopt;
    m.kind = ModelKind::bert;
    m.type_vocab = static_cast<int>(type_vocab);
    m.pooler = true;
    m.ln_eps = static_cast<float>(norm_eps);
    m.gelu = math::GeluKind::exact_erf;
  }
  return m;
}

}  // namespace shardscope
