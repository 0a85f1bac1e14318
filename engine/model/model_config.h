// SPDX-License-Identifier: GPL-3.0-or-later
// Model shapes and the named presets, from tiny (trains in seconds on two
// cores) to the GPT-2 124M and BERT-base shapes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ops/math.h"

namespace shardscope {

enum class ModelKind { gpt, bert };

struct ModelConfig {
  std::string name;
  ModelKind kind = ModelKind::gpt;
  int vocab = 0;     // V
  int max_seq = 0;   // Tmax: positions the model has embeddings for
  int channels = 0;  // C
  int layers = 0;    // L
  int heads = 0;     // H (head dim C / H)
  int type_vocab = 2;        // BERT token types (segments)
  bool pooler = false;       // BERT: tanh(dense(h_[CLS])), not used by the MLM loss
  float ln_eps = 1e-5f;      // GPT-2 1e-5, BERT 1e-12
  math::GeluKind gelu = math::GeluKind::tanh_approx;
  // Mixture of experts (model/mixture_of_experts.h); experts 0: every MLP dense.
  int experts = 0;                // E expert MLPs in each MoE layer
  int top_k = 0;                  // k experts per token
  float capacity_factor = 1.25f;  // capacity per expert = ceil(factor * tokens * k / E)
  int moe_every = 1;              // MoE in layers 0, every, 2 every, ... (Megatron's moe_layer_freq)
  float aux_loss_coef = 0.01f;    // alpha of the Switch load-balancing loss

  int head_dim() const { return channels / heads; }
  bool moe_layer(int l) const { return experts > 0 && l % moe_every == 0; }
  int moe_layer_count() const { return experts > 0 ? (layers + moe_every - 1) / moe_every : 0; }
};

std::string_view model_kind_name(ModelKind kind);
// ZeRO-3 gathers each unit twice per micro-batch (forward, backward), the
// embedding unit more often on a stage that also runs the tied head: the head
// gathers it again in forward and in backward, while only BERT's own backward
// needs it (its embedding layernorm; GPT's embedding backward reads no
// parameter): GPT 3 gathers, BERT 4 (gpt.cpp, bert.cpp). The extra ones: 1, 2.
int extra_embedding_gathers(ModelKind kind);

// All presets, in the order --help lists them.
const std::vector<ModelConfig>& model_presets();
// Throws ConfigError naming the unknown preset and listing the known ones.
ModelConfig find_model_preset(std::string_view name);
// Throws ConfigError naming the first field that is out of range.
void validate_model_config(const ModelConfig& config);

// The part of the model one pipeline stage holds: layers [first_layer,
// end_layer), plus the embeddings on the first stage and the output head on
// the last. With one stage, everything. Under tensor parallelism (tp_size > 1)
// a rank holds slice tp_rank of the stage's split matrices (heads, MLP
// columns, vocabulary rows: model/tensor_parallel.h) and the rest whole.
struct StageLayers {
  int first_layer = 0;
  int end_layer = 0;
  bool embedding = true;
  bool head = true;
  int tp_rank = 0;
  int tp_size = 1;
  // Sequence parallelism: the LayerNorm regions hold T / tp_size tokens of every sequence.
  bool sequence_parallel = false;
  // Interleaved pipelines (Megatron-LM's virtual stages): the stage holds
  // `chunks` model chunks of layer_count() layers each, chunk c starting at
  // first_layer + c * chunk_stride; the embeddings belong to chunk 0 and the
  // head to the last chunk. [first_layer, end_layer) is chunk 0's.
  int chunks = 1;
  int chunk_stride = 0;
  // Expert parallelism: the rank holds experts [expert_rank E/expert_ranks,
  // (expert_rank + 1) E/expert_ranks) of every MoE layer, the rest of the stage whole.
  int expert_rank = 0;
  int expert_ranks = 1;
  int layer_count() const { return end_layer - first_layer; }  // per chunk
  // Chunk c alone, as a one-chunk stage (its layers, and the ends it runs).
  StageLayers chunk(int c) const;
  bool whole_model(const ModelConfig& config) const {
    return embedding && head && first_layer == 0 && end_layer == config.layers && tp_size == 1 && expert_ranks == 1;
  }
};

StageLayers whole_model_stage(const ModelConfig& config);
// Layers split as evenly as possible over `stages`, the earlier stages taking
// one more when they do not divide (stage 0 also embeds, the last also runs the head).
// With virtual_stages v > 1 the layers split into p·v equal chunks and stage s
// holds chunks s, p + s, 2p + s, ... (interleaved 1F1B); throws ConfigError
// naming --virtual-stages when they do not split evenly.
StageLayers pipeline_stage_layers(const ModelConfig& config, int stages, int stage, int virtual_stages = 1);

// Parameters of the model, counted in closed form (not from the layout):
//   GPT:  V C + Tmax C + L (12 C^2 + 13 C) + 2 C
//   (a MoE layer's MLP, 8 C^2 + 5 C, becomes E (8 C^2 + 5 C) + E C with its router)
//   BERT: V C + Tmax C + types C + 2 C + L (12 C^2 + 13 C) + (C^2 + 3 C + V) [+ C^2 + C pooler]
std::int64_t analytic_parameter_count(const ModelConfig& config);
// The parameters one token's forward uses: a MoE layer's k experts of E (and
// its router); the whole count for a dense model.
std::int64_t active_parameter_count(const ModelConfig& config);

}  // namespace shardscope
