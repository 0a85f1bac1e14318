// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/model_config.h"

#include <algorithm>

#include "core/did_you_mean.h"
#include "core/error.h"

namespace shardscope {

namespace {
// Byte-level tokenizer: 256 bytes + [PAD] [MASK] [CLS] [SEP].
constexpr int kByteVocab = 260;

ModelConfig gpt(std::string name, int vocab, int max_seq, int C, int L, int H) {
  return ModelConfig{std::move(name), ModelKind::gpt, vocab, max_seq, C, L, H, 2, false, 1e-5f,
                     math::GeluKind::tanh_approx};
}
// The same shape with E experts and top-k routing in every layer's MLP.
ModelConfig gpt_moe(std::string name, ModelConfig dense, int experts, int top_k) {
  dense.name = std::move(name);
  dense.experts = experts;
  dense.top_k = top_k;
  return dense;
}
ModelConfig bert(std::string name, int vocab, int max_seq, int C, int L, int H, bool pooler) {
  return ModelConfig{std::move(name), ModelKind::bert, vocab, max_seq, C, L, H, 2, pooler, 1e-12f,
                     math::GeluKind::exact_erf};
}
}  // namespace

int extra_embedding_gathers(ModelKind kind) {
  return kind == ModelKind::bert ? 2 : 1;
}

std::string_view model_kind_name(ModelKind kind) { return kind == ModelKind::gpt ? "gpt" : "bert"; }

const std::vector<ModelConfig>& model_presets() {
  static const std::vector<ModelConfig> presets = {
      gpt("gpt-tiny", kByteVocab, 256, 128, 4, 4),    // 0.8M parameters: seconds on 2 cores
      gpt("gpt-mini", kByteVocab, 512, 256, 6, 8),    // 4.9M
      gpt("gpt2-124m", 50257, 1024, 768, 12, 12),     // GPT-2 small shape (124M)
      gpt("gpt2-medium", 50257, 1024, 1024, 24, 16),  // GPT-2 medium shape (355M)
      gpt_moe("gpt-tiny-moe", gpt("gpt-tiny-moe", kByteVocab, 256, 128, 4, 4), 4, 2),  // 4 experts, top-2: 2.4M
      bert("bert-tiny", kByteVocab, 256, 128, 2, 2, false),
      bert("bert-mini", kByteVocab, 512, 256, 4, 4, false),
      bert("bert-base", 30522, 512, 768, 12, 12, true),  // BERT-base shape (110M)
  };
  return presets;
}

ModelConfig find_model_preset(std::string_view name) {
  std::string known;
  std::vector<std::string> names;
  for (const auto& preset : model_presets()) {
    if (preset.name == name) return preset;
    known += (known.empty() ? "" : ", ") + preset.name;
    names.push_back(preset.name);
  }
  throw ConfigError("unknown model preset '" + std::string(name) + "'" + did_you_mean(name, names) +
                    " (known presets: " + known + ")");
}

void validate_model_config(const ModelConfig& c) {
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw ConfigError("model '" + c.name + "': " + what);
  };
  require(c.vocab > 0, "vocab must be positive");
  require(c.max_seq > 0, "max_seq must be positive");
  require(c.channels > 0, "channels must be positive");
  require(c.layers > 0, "layers must be positive");
  require(c.heads > 0, "heads must be positive");
  require(c.channels % c.heads == 0, "channels (" + std::to_string(c.channels) + ") must be divisible by heads (" +
                                         std::to_string(c.heads) + ")");
  require(c.type_vocab > 0, "type_vocab must be positive");
  require(c.ln_eps > 0.0f, "ln_eps must be positive");
  if (c.experts == 0) return;
  require(c.kind == ModelKind::gpt, "mixture of experts is built for GPT models only");
  require(c.experts > 0, "experts must be positive (or 0: dense)");
  require(c.top_k >= 1 && c.top_k <= c.experts, "top_k (" + std::to_string(c.top_k) + ") must be between 1 and " +
                                                    "the expert count (" + std::to_string(c.experts) + ")");
  require(c.capacity_factor > 0.0f, "capacity_factor must be positive");
  require(c.moe_every >= 1, "moe_every must be at least 1");
  require(c.aux_loss_coef >= 0.0f, "aux_loss_coef must not be negative");
}

StageLayers whole_model_stage(const ModelConfig& config) { return StageLayers{0, config.layers, true, true}; }

StageLayers StageLayers::chunk(int c) const {
  StageLayers one = *this;
  one.first_layer += c * chunk_stride;
  one.end_layer += c * chunk_stride;
  one.embedding = embedding && c == 0;
  one.head = head && c == chunks - 1;
  one.chunks = 1;
  one.chunk_stride = 0;
  return one;
}

StageLayers pipeline_stage_layers(const ModelConfig& config, int stages, int stage, int virtual_stages) {
  if (virtual_stages > 1) {  // virtual stage c·p + s holds layers [(c·p + s)·k, (c·p + s + 1)·k)
    const int parts = stages * virtual_stages, k = parts > 0 ? config.layers / parts : 0;
    if (k == 0 || config.layers % parts != 0)
      throw ConfigError(config.name + "'s " + std::to_string(config.layers) + " layers do not split into --pp " +
                        std::to_string(stages) + " x --virtual-stages " + std::to_string(virtual_stages) +
                        " equal chunks");
    StageLayers s{stage * k, stage * k + k, stage == 0, stage == stages - 1};
    s.chunks = virtual_stages;
    s.chunk_stride = stages * k;
    return s;
  }
  const int base = config.layers / stages, extra = config.layers % stages;
  const int first = stage * base + std::min(stage, extra);
  return StageLayers{first, first + base + (stage < extra ? 1 : 0), stage == 0, stage == stages - 1};
}

std::int64_t analytic_parameter_count(const ModelConfig& config) {
  const std::int64_t V = config.vocab, T = config.max_seq, C = config.channels, L = config.layers;
  const std::int64_t per_layer = 12 * C * C + 13 * C;
  if (config.kind == ModelKind::gpt) {
    // A MoE layer holds E expert MLPs (8 C^2 + 5 C each) and a router (E, C) instead of one MLP.
    const std::int64_t E = config.experts, moe = config.moe_layer_count();
    return V * C + T * C + L * per_layer + moe * ((E - 1) * (8 * C * C + 5 * C) + E * C) + 2 * C;
  }
  std::int64_t n = V * C + T * C + config.type_vocab * C + 2 * C + L * per_layer + (C * C + 3 * C + V);
  if (config.pooler) n += C * C + C;
  return n;
}

std::int64_t active_parameter_count(const ModelConfig& config) {
  if (config.experts == 0) return analytic_parameter_count(config);
  const std::int64_t C = config.channels, idle = config.experts - config.top_k;
  return analytic_parameter_count(config) - config.moe_layer_count() * idle * (8 * C * C + 5 * C);
}

}  // namespace shardscope
