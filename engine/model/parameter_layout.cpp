// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/parameter_layout.h"

#include <stdexcept>

namespace shardscope {

ParameterLayout::ParameterLayout(const ModelConfig& config) : ParameterLayout(config, whole_model_stage(config)) {}

ParameterLayout::ParameterLayout(const ModelConfig& config, const StageLayers& stage) {
  const std::int64_t V = config.vocab, T = config.max_seq, C = config.channels;
  const bool gpt = config.kind == ModelKind::gpt;
  if (stage.embedding) {
    add("embed.tokens", {V, C}, true);
    add("embed.positions", {T, C}, true);
    if (!gpt) {
      add("embed.token_types", {config.type_vocab, C}, true);
      add("embed.ln.weight", {C}, false);
      add("embed.ln.bias", {C}, false);
    }
  } else if (stage.head) {
    add("embed.tokens", {V, C}, true);  // the tied head's copy
  }
  for (int l = stage.first_layer; l < stage.end_layer; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    if (gpt) {  // pre-LN: ln1 -> attn, ln2 -> mlp
      add(p + "ln1.weight", {C}, false);
      add(p + "ln1.bias", {C}, false);
    }
    add(p + "attn.qkv.weight", {3 * C, C}, true);
    add(p + "attn.qkv.bias", {3 * C}, false);
    add(p + "attn.proj.weight", {C, C}, true);
    add(p + "attn.proj.bias", {C}, false);
    if (gpt) {
      add(p + "ln2.weight", {C}, false);
      add(p + "ln2.bias", {C}, false);
    } else {  // post-LN: attn -> ln1, mlp -> ln2
      add(p + "ln1.weight", {C}, false);
      add(p + "ln1.bias", {C}, false);
    }
    add(p + "mlp.fc.weight", {4 * C, C}, true);
    add(p + "mlp.fc.bias", {4 * C}, false);
    add(p + "mlp.proj.weight", {C, 4 * C}, true);
    add(p + "mlp.proj.bias", {C}, false);
    if (!gpt) {
      add(p + "ln2.weight", {C}, false);
      add(p + "ln2.bias", {C}, false);
    }
  }
  if (!stage.head) return;
  if (gpt) {
    add("final_ln.weight", {C}, false);
    add("final_ln.bias", {C}, false);
  } else {
    add("mlm.dense.weight", {C, C}, true);
    add("mlm.dense.bias", {C}, false);
    add("mlm.ln.weight", {C}, false);
    add("mlm.ln.bias", {C}, false);
    add("mlm.decoder_bias", {V}, false);
    if (config.pooler) {
      add("pooler.dense.weight", {C, C}, true);
      add("pooler.dense.bias", {C}, false);
    }
  }
}

void ParameterLayout::add(std::string name, Shape shape, bool weight_decay) {
  const std::int64_t n = shape.numel();
  entries_.push_back({std::move(name), shape, total_, n, weight_decay});
  total_ += n;
}

const ParameterEntry* ParameterLayout::try_find(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

const ParameterEntry& ParameterLayout::find(std::string_view name) const {
  if (const auto* e = try_find(name)) return *e;
  throw std::out_of_range("no parameter named '" + std::string(name) + "'");
}

WeightViews WeightViews::bind(const ParameterLayout& layout, const ModelConfig& config, float* base) {
  auto at = [&](const std::string& name) -> float* {
    const auto* e = layout.try_find(name);
    return e != nullptr ? base + e->offset : nullptr;
  };
  WeightViews w{};
  w.tokens = at("embed.tokens");
  w.positions = at("embed.positions");
  w.token_types = at("embed.token_types");
  w.embed_ln_w = at("embed.ln.weight");
  w.embed_ln_b = at("embed.ln.bias");
  for (int l = 0; l < config.layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    w.layers.push_back(LayerWeights{at(p + "ln1.weight"), at(p + "ln1.bias"), at(p + "attn.qkv.weight"),
                                    at(p + "attn.qkv.bias"), at(p + "attn.proj.weight"), at(p + "attn.proj.bias"),
                                    at(p + "ln2.weight"), at(p + "ln2.bias"), at(p + "mlp.fc.weight"),
                                    at(p + "mlp.fc.bias"), at(p + "mlp.proj.weight"), at(p + "mlp.proj.bias")});
  }
  const bool gpt = config.kind == ModelKind::gpt;
  w.final_ln_w = at(gpt ? "final_ln.weight" : "mlm.ln.weight");
  w.final_ln_b = at(gpt ? "final_ln.bias" : "mlm.ln.bias");
  w.head_dense_w = at("mlm.dense.weight");
  w.head_dense_b = at("mlm.dense.bias");
  w.decoder_bias = at("mlm.decoder_bias");
  w.pooler_w = at("pooler.dense.weight");
  w.pooler_b = at("pooler.dense.bias");
  return w;
}

}  // namespace shardscope
