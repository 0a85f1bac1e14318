// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate/model_shape.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>

#include "config/run_config.h"
#include "core/did_you_mean.h"
#include "core/error.h"
#include "estimate/stage_placement.h"  // defined here, beside the split rule and the file units
#include "io/model_aliases.h"
#include "model/parameter_layout.h"
#include "plan/placed_stage_units.h"
#include "plan/zb_v_schedule.h"

namespace shardscope {

namespace {
bool ends_with(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}
// "layer3.attn.qkv.weight" -> "layer3.attn.qkv": a weight and its bias form one module.
std::string module_of(const std::string& name) {
  for (std::string_view suffix : {".weight", ".bias"})
    if (ends_with(name, suffix)) return name.substr(0, name.size() - suffix.size());
  return name;
}
}  // namespace

StageLayers ModelShape::stage_layers(int stages, int stage, int tp, int virtual_stages) const {
  StageLayers s;
  if (engine_config) {
    s = pipeline_stage_layers(*engine_config, stages, stage, virtual_stages);
  } else {
    ModelConfig layers_only;  // the split rule only reads the layer count (and names the model)
    layers_only.layers = static_cast<int>(layers);
    layers_only.name = name;
    s = pipeline_stage_layers(layers_only, stages, stage, virtual_stages);
  }
  s.tp_size = tp;
  return s;
}

std::int64_t ModelShape::split_vocab(int tp) const {
  if (!preset.empty() || tp == 1) return vocab;
  const std::int64_t multiple = 128LL * tp;  // Megatron-LM's --make-vocab-size-divisible-by 128, times t
  return (vocab + multiple - 1) / multiple * multiple;
}

ModelConfig ModelShape::tp_config(int tp) const {
  ModelConfig config = *engine_config;
  config.vocab = static_cast<int>(split_vocab(tp));
  return config;
}

namespace {
// One tp rank's share of a model from a file: `split` parameters divided over
// the tp ranks (ceil), `whole` replicated on every one.
std::int64_t tp_share(std::int64_t whole, std::int64_t split, int tp) {
  return whole + (split + tp - 1) / tp;
}

// A file's parameters per unit on one tp rank. The replicated part of a layer
// (layer_replicated_parameters): its norms, and the row-parallel projections' biases.
struct FileUnits {
  std::int64_t embedding, layer, head, tied_copy, dense_layer;
  std::int64_t layer_of(const ModelShape& m, std::int64_t l) const { return l < m.dense_layers ? dense_layer : layer; }
  std::int64_t experts = 0;  // a MoE layer's E/ep experts, told apart under expert parallelism (tp 1)
  std::int64_t experts_of(const ModelShape& m, std::int64_t l) const { return l < m.dense_layers ? 0 : experts; }
};
FileUnits file_units(const ModelShape& m, int tp, int ep = 1) {
  const std::int64_t vh = m.vocab * m.hidden, split_vh = m.split_vocab(tp) * m.hidden;
  const std::int64_t replicated_layer = m.layer_replicated_parameters;
  // Expert parallelism: a layer keeps E/ep of its experts.
  const std::int64_t layer = m.layer_parameters - m.layer_expert_parameters + m.layer_expert_parameters / ep;
  if (tp == 1)
    return {m.embedding_parameters,   layer,
            m.head_parameters,        vh,
            m.dense_layer_parameters, ep > 1 ? m.layer_expert_parameters / ep : 0};
  return {tp_share(m.embedding_parameters - vh, split_vh, tp),
          tp_share(replicated_layer + m.router_parameters, layer - replicated_layer - m.router_parameters, tp),
          m.tied_embeddings ? m.head_parameters : tp_share(m.head_parameters - vh, split_vh, tp),
          split_vh / tp,
          tp_share(replicated_layer, m.dense_layer_parameters - replicated_layer, tp),
          0};
}
}  // namespace

namespace {
// The parameters a stage holding `s` keeps on one tp rank, E/ep experts of each MoE layer.
std::int64_t held_parameters(const ModelShape& m, StageLayers s, int tp, int ep) {
  s.expert_ranks = ep;
  if (m.engine_config) return ParameterLayout(m.tp_config(tp), s).total();  // the engine's own layout
  const FileUnits u = file_units(m, tp, ep);
  CheckedSize n = 0;
  for (int c = 0; c < s.chunks; ++c)
    for (int l = s.chunk(c).first_layer; l < s.chunk(c).end_layer; ++l) n += u.layer_of(m, l);
  if (s.embedding) n += u.embedding;
  if (s.head) n += u.head;
  if (s.head && !s.embedding && m.tied_embeddings) n += u.tied_copy;  // the head's copy of the token embedding
  return n.value();
}

// Every stage's units, stage s holding layers_of(s): the engine's layout for its
// models (plan/placed_stage_units.h), else from the file's counts.
std::vector<StageUnits> units_of_stages(const ModelShape& model, int pp, int tp, int ep,
                                        const std::function<StageLayers(int)>& layers_of) {
  if (model.engine_config) return placed_stage_units(model.tp_config(tp), pp, tp, ep, layers_of);
  const FileUnits u = file_units(model, tp, ep);
  std::vector<StageUnits> stages;
  for (int s = 0; s < pp; ++s) {
    StageUnits su;
    su.layers = layers_of(s);
    if (su.layers.embedding) su.units.push_back(PlanUnit{0, u.embedding, 0});
    for (int c = 0; c < su.layers.chunks; ++c)  // several chunks: interleaved 1F1B, ZB-V
      for (int l = su.layers.chunk(c).first_layer; l < su.layers.chunk(c).end_layer; ++l)
        su.units.push_back(PlanUnit{1 + l, u.layer_of(model, l), u.experts_of(model, l)});
    if (su.layers.head) {
      const bool tied_copy = !su.layers.embedding && model.tied_embeddings;  // the head's copy of the token embedding
      const CheckedSize copy = tied_copy ? CheckedSize(u.tied_copy) : CheckedSize(0);
      su.units.push_back(PlanUnit{static_cast<int>(model.layers) + 1, (u.head + copy).value(), 0});
    }
    stages.push_back(std::move(su));
  }
  return stages;
}
}  // namespace

std::int64_t ModelShape::stage_parameters(int stages, int stage, int tp, int virtual_stages, int ep) const {
  return held_parameters(*this, stage_layers(stages, stage, tp, virtual_stages), tp, ep);
}

std::vector<StageUnits> stage_units(const ModelShape& model, int pp, int tp, int virtual_stages, int ep) {
  if (model.engine_config) return stage_units(model.tp_config(tp), pp, tp, virtual_stages, ep);
  return units_of_stages(model, pp, tp, ep, [&](int s) { return model.stage_layers(pp, s, tp, virtual_stages); });
}

ShardingPlan make_sharding_plan(const ParallelLayout& layout, const ModelShape& model, int virtual_stages, int ep) {
  return ShardingPlan(layout, stage_units(model, layout.axes.pp(), layout.axes.tp(), virtual_stages, ep));
}

StageLayers placed_stage_layers(const ModelShape& model, const EstimateSettings& s, int stage) {
  const int pp = s.layout.pp(), tp = s.layout.tp();
  if (s.schedule != PipelineScheduleKind::zb_v) return model.stage_layers(pp, stage, tp, s.virtual_stages);
  ModelConfig layers_only;  // the V's rule reads the layer count (and names the model)
  layers_only.layers = static_cast<int>(model.layers);
  layers_only.name = model.name;
  StageLayers v = zb_v_stage_layers(model.engine_config ? *model.engine_config : layers_only, pp, stage);
  v.tp_size = tp;
  return v;
}

std::int64_t placed_stage_parameters(const ModelShape& model, const EstimateSettings& s, int stage) {
  if (s.schedule != PipelineScheduleKind::zb_v)
    return model.stage_parameters(s.layout.pp(), stage, s.layout.tp(), s.virtual_stages, s.expert_parallel);
  return held_parameters(model, placed_stage_layers(model, s, stage), s.layout.tp(), s.expert_parallel);
}

std::vector<StageUnits> placed_stage_units(const ModelShape& model, const EstimateSettings& s) {
  if (s.schedule != PipelineScheduleKind::zb_v)
    return stage_units(model, s.layout.pp(), s.layout.tp(), s.virtual_stages, s.expert_parallel);
  return units_of_stages(model, s.layout.pp(), s.layout.tp(), s.expert_parallel,
                         [&](int stage) { return placed_stage_layers(model, s, stage); });
}

ShardingPlan placed_sharding_plan(const ModelShape& model, const EstimateSettings& s) {
  return ShardingPlan(s.plan_layout(), placed_stage_units(model, s));
}

ModelShape model_shape_from_config(const ModelConfig& config, std::string preset) {
  // Layer 0 stands for every layer below: true of a mixture of experts only when every layer is one.
  if (config.experts > 0 && config.moe_every > 1)
    throw ConfigError("model '" + config.name + "': the estimator does not model MoE in every " +
                      std::to_string(config.moe_every) + " layers yet (only in every layer)");
  ModelShape m;
  m.name = preset.empty() ? config.name : preset;
  m.preset = std::move(preset);
  m.architecture = config.kind == ModelKind::gpt ? "gpt2" : "bert";
  m.vocab = config.vocab;
  m.max_positions = config.max_seq;
  m.hidden = config.channels;
  m.layers = config.layers;
  m.heads = config.heads;
  m.intermediate = 4 * static_cast<std::int64_t>(config.channels);
  m.tied_embeddings = true;
  m.engine_config = config;
  // Counts from the engine's ParameterLayout: embeddings, layer 0, the rest is the head.
  std::map<std::string, std::int64_t> modules;
  const ParameterLayout layout(config);
  for (const auto& e : layout.entries()) {
    if (e.name.rfind("embed.", 0) == 0)
      m.embedding_parameters += e.numel;
    else if (e.name.rfind("layer0.", 0) == 0)
      (e.expert ? m.layer_expert_parameters : m.layer_parameters) += e.numel;
    else if (e.name.rfind("layer", 0) != 0)
      m.head_parameters += e.numel;
    if (e.name == "embed.positions" || e.name == "embed.token_types") m.lookup_only_parameters += e.numel;
    modules[module_of(e.name)] += e.numel;
  }
  m.layer_parameters += m.layer_expert_parameters;
  for (const auto& [name, numel] : modules) m.largest_module_parameters = std::max(m.largest_module_parameters, numel);
  m.base_model_parameters = m.parameters();
  m.experts = config.experts;
  m.top_k = config.top_k;
  m.expert_intermediate = config.experts > 0 ? m.intermediate : 0;  // each expert a GPT MLP (mixture_of_experts.h)
  m.idle_expert_parameters = analytic_parameter_count(config) - active_parameter_count(config);
  return m;
}

ModelShape model_shape_from_hf(const HfModelConfig& hf) {
  ModelShape m;
  if (const auto config = hf.engine_config()) {
    m = model_shape_from_config(*config, "");
  } else {
    m.architecture = std::string(hf_architecture_name(hf.architecture));
    m.vocab = hf.vocab;
    m.max_positions = hf.max_positions;
    m.hidden = hf.hidden;
    m.layers = hf.layers;
    m.heads = hf.heads;
    m.intermediate = hf.intermediate;
    m.tied_embeddings = hf.tie_word_embeddings;
    // MLA's heads (DeepSeek-V3) are not a·d wide on both sides: they keep the hidden size's.
    if (hf.kv_lora_rank == 0) m.attention_width = hf.heads * hf.head_dim;
    m.embedding_parameters = hf.embedding_parameters();
    m.layer_parameters = hf.layer_parameters();
    m.layer_replicated_parameters = hf.replicated_layer_parameters();
    m.head_parameters = hf.head_parameters();
    m.lookup_only_parameters = hf.lookup_only_parameters();
    m.largest_module_parameters = hf.largest_module_parameters();
  }
  m.name = hf.source;
  m.base_model_parameters = hf.base_model_parameters();
  m.experts = hf.experts;
  m.top_k = hf.top_k;
  m.idle_expert_parameters = hf.training_parameters() - hf.active_training_parameters();
  // Every layer a MoE layer (Mixtral), or every one after the first dense ones (DeepSeek-V3):
  // E experts per MoE layer, of which E - k idle per token.
  if (!hf.engine_config()) {
    m.dense_layers = hf.first_dense_layers;
    if (m.experts > 0) m.expert_intermediate = hf.expert_intermediate > 0 ? hf.expert_intermediate : hf.intermediate;
    m.shared_experts = hf.shared_experts;
    m.dense_layer_parameters = hf.dense_layer_parameters();
    if (m.experts > 0 && m.moe_layers() > 0) {
      // One expert: the idle parameters over the idle experts; where a token runs every expert (k = E),
      // its SwiGLU of the experts' width (with Llama's MLP biases when it is the dense MLP's).
      const std::int64_t expert =
          m.experts > m.top_k
              ? m.idle_expert_parameters / m.moe_layers() / (m.experts - m.top_k)
              : (3 * CheckedSize(m.hidden) * m.expert_intermediate +
                 (hf.mlp_bias && hf.expert_intermediate == 0 ? 2 * CheckedSize(hf.intermediate) + hf.hidden : 0))
                    .value();
      m.layer_expert_parameters = expert * m.experts;
      m.router_parameters = (CheckedSize(m.experts) * m.hidden).value();
    }
  }
  return m;
}

namespace {
// A path when it ends in .json or is a regular file; else a preset or alias name
// when one matches; else a path again when it names anything on disk or has a folder
// in it, so a directory, a FIFO or /dev/null is refused as what it is, not
// called an unknown preset.
bool names_a_file(const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (ends_with(text, ".json") || fs::is_regular_file(text, ec)) return true;
  for (const auto& preset : model_presets())
    if (preset.name == text) return false;
  if (find_model_alias(text) != nullptr) return false;
  return text.find('/') != std::string::npos || fs::exists(fs::symlink_status(text, ec));
}

// A config.json that `train --model` trains: the shape of the very model train
// builds from it (run_model_config: a BERT's pooler as its weights say, the
// vocabulary split unpadded), named by the path train takes, so the estimate
// covers every layout train runs and is engine-exact where the ledger is. Any
// other file (a name train refuses, a model its kernels do not run) is counted
// from its keys alone; nullopt then.
std::optional<ModelShape> trained_file_shape(const HfModelConfig& hf) {
  RunConfig run;
  run.model = hf.source;
  ModelConfig config;
  try {
    config = run_model_config(run);
  } catch (const ConfigError&) {
    return std::nullopt;
  } catch (const FormatError&) {  // a model.safetensors beside it that train cannot read either
    return std::nullopt;
  }
  ModelShape m = model_shape_from_config(config, hf.source);
  m.base_model_parameters = hf.base_model_parameters();
  return m;
}
}  // namespace

ModelShape load_model_shape(const std::string& preset_or_path, std::vector<std::string>* warnings) {
  if (names_a_file(preset_or_path)) {
    HfModelConfig hf = load_hf_config(preset_or_path);
    if (warnings != nullptr) warnings->insert(warnings->end(), hf.warnings.begin(), hf.warnings.end());
    if (std::optional<ModelShape> trained = trained_file_shape(hf)) return *trained;
    return model_shape_from_hf(hf);
  }
  if (const ModelAlias* alias = find_model_alias(preset_or_path)) {
    HfModelConfig hf = parse_hf_config(alias->config_json, std::string(alias->name));
    if (warnings != nullptr) warnings->insert(warnings->end(), hf.warnings.begin(), hf.warnings.end());
    return model_shape_from_hf(hf);
  }
  std::vector<std::string> presets, aliases;
  for (const auto& preset : model_presets()) presets.push_back(preset.name);
  for (const ModelAlias& alias : model_aliases()) aliases.emplace_back(alias.name);
  if (std::find(presets.begin(), presets.end(), preset_or_path) != presets.end())
    return model_shape_from_config(find_model_preset(preset_or_path), preset_or_path);
  const auto listed = [](const std::vector<std::string>& names) {
    std::string text;
    for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
    return text;
  };
  std::vector<std::string> known = presets;
  known.insert(known.end(), aliases.begin(), aliases.end());
  throw ConfigError("unknown model preset '" + preset_or_path + "'" + did_you_mean(preset_or_path, known) +
                    " (known presets: " + listed(presets) + "; shipped model configs: " + listed(aliases) +
                    "; or a path to a config.json)");
}

}  // namespace shardscope
