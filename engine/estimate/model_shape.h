// SPDX-License-Identifier: GPL-3.0-or-later
// The model as the estimator sees it: its shape and exact parameter counts,
// split the way pipeline stages split it (embeddings on the first stage,
// layers in between, the head on the last). Built from a ShardScope preset
// (counts from the engine's own ParameterLayout) or a Hugging Face config.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/checked_math.h"
#include "io/hf_config.h"
#include "model/model_config.h"
#include "plan/sharding_plan.h"

namespace shardscope {

struct ModelShape {
  std::string name;          // preset name, or the config.json path
  std::string preset;        // what `train --model` takes to train it: a preset, or a config.json path; empty otherwise
  std::string architecture;  // "gpt2", "bert", "llama"
  std::int64_t vocab = 0, max_positions = 0, hidden = 0, layers = 0, heads = 0, intermediate = 0;
  bool tied_embeddings = true;
  // The queries' width a·d (heads × head_dim) where a file gives head_dim apart from
  // hidden / heads (Qwen3-0.6B: 16 × 128 = 2048 with hidden 1024); 0: the hidden size.
  std::int64_t attention_width = 0;
  double query_width() const { return static_cast<double>(attention_width > 0 ? attention_width : hidden); }
  std::int64_t embedding_parameters = 0;       // first stage: token (+ position, + type) embeddings
  std::int64_t layer_parameters = 0;           // one transformer layer
  // Of a file's layer, what every tp rank holds whole (HfModelConfig::replicated_layer_parameters:
  // norms, row-parallel biases, MLA's down-projections); the rest of the layer is split over the tp ranks.
  std::int64_t layer_replicated_parameters = 0;
  // A MoE layer's router (E·h), also whole on every tp rank (Megatron-LM's TopKRouter and torchtitan's
  // gate are not split); dense layers have none.
  std::int64_t router_parameters = 0;
  std::int64_t head_parameters = 0;            // last stage: final norm, head (tied matrix not counted again)
  std::int64_t lookup_only_parameters = 0;     // embedding tables no matmul reads (no FLOPs)
  std::int64_t largest_module_parameters = 0;  // DeepSpeed's largest_layer_params
  std::int64_t base_model_parameters = 0;      // Hugging Face AutoModel (no LM head); = parameters() for presets
  // A mixture of experts: the experts a token is not routed to (E - k per MoE
  // layer), held and trained but not read by that token's matmuls: total
  // parameters() against active parameters() - idle_expert_parameters. 0: dense.
  std::int64_t idle_expert_parameters = 0;
  std::int64_t experts = 0, top_k = 0;
  // Of layer_parameters, the experts' (every layer a MoE layer): what expert
  // parallelism splits over the ep ranks, E/ep experts on each.
  std::int64_t layer_expert_parameters = 0;
  // One expert's MLP width (moe_intermediate_size where the config has one, else intermediate),
  // and the always-on shared experts of that width each MoE layer also runs (DeepSeek-V3's).
  std::int64_t expert_intermediate = 0, shared_experts = 0;
  // The first dense_layers layers hold dense_layer_parameters instead (DeepSeek-V3's
  // first_k_dense_replace: a dense MLP before the MoE layers).
  std::int64_t dense_layers = 0, dense_layer_parameters = 0;
  std::int64_t moe_layers() const { return experts > 0 ? layers - dense_layers : 0; }
  // Layer l's parameters (of a file's model).
  std::int64_t layer_parameters_of(std::int64_t l) const {
    return l < dense_layers ? dense_layer_parameters : layer_parameters;
  }
  // Set when ShardScope's kernels implement this architecture: activations can
  // then be computed exactly (engine/model/activations.h).
  std::optional<ModelConfig> engine_config;

  // Ψ: every parameter of the model trained, counted once.
  std::int64_t parameters() const {
    return (CheckedSize(embedding_parameters) + CheckedSize(layers - dense_layers) * layer_parameters +
            CheckedSize(dense_layers) * dense_layer_parameters + head_parameters)
        .value();
  }
  // Which layers stage `stage` of `stages` holds (the engine's split rule), on one of `tp` ranks;
  // with virtual_stages v > 1 its v interleaved chunks (model_config.h, pipeline_stage_layers).
  StageLayers stage_layers(int stages, int stage, int tp = 1, int virtual_stages = 1) const;
  // Ψ_s: parameters stage `stage` holds (one tensor-parallel rank's share with tp > 1).
  // A last stage that does not embed keeps a copy of a tied token embedding for
  // its head (Megatron's embedding group).
  // ep > 1: with E/ep experts of each MoE layer (expert parallelism).
  std::int64_t stage_parameters(int stages, int stage, int tp = 1, int virtual_stages = 1, int ep = 1) const;
  // The vocabulary one tp group splits: a preset's own (the engine refuses one
  // that does not divide), a file's padded as Megatron-LM pads it (a multiple of 128·t).
  std::int64_t split_vocab(int tp) const;
  // The engine's config with that vocabulary (engine_config must be set).
  ModelConfig tp_config(int tp) const;
};

// Every pipeline stage's units (embeddings, layers, head) for the sharding
// plan: the engine's own layout for a preset, else from the counts above.
// With tp > 1, what one tensor-parallel rank holds: the split matrices' slices
// (QKV and MLP by columns, the projections by rows, the vocabulary by rows) and
// the replicated parameters (norms, the row-parallel biases, positions) whole.
// ep > 1: each rank's E/ep experts of every MoE layer.
std::vector<StageUnits> stage_units(const ModelShape& model, int pp, int tp = 1, int virtual_stages = 1, int ep = 1);
// The sharding plan of a layout on this model.
ShardingPlan make_sharding_plan(const ParallelLayout& layout, const ModelShape& model, int virtual_stages = 1,
                                int ep = 1);

ModelShape model_shape_from_config(const ModelConfig& config, std::string preset);
ModelShape model_shape_from_hf(const HfModelConfig& hf);
// A preset name, or a path to a config.json (a name ending in .json or an
// existing file). Import warnings are appended to `warnings`.
ModelShape load_model_shape(const std::string& preset_or_path, std::vector<std::string>* warnings);

}  // namespace shardscope
