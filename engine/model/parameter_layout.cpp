// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/parameter_layout.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace shardscope {

ParameterLayout::ParameterLayout(const ModelConfig& config) : ParameterLayout(config, whole_model_stage(config)) {}

ParameterLayout::ParameterLayout(const ModelConfig& config, const StageLayers& stage)
    : layers_(config.layers), tp_size_(stage.tp_size), expert_ranks_(stage.expert_ranks) {
  const std::int64_t V = config.vocab, T = config.max_seq, C = config.channels;
  const bool gpt = config.kind == ModelKind::gpt;
  // Megatron-LM's splits: the vocabulary rows of the (tied) embedding, the
  // column-parallel QKV (heads) and MLP fc by output rows, the row-parallel
  // projections by input columns; everything else whole on every tp rank.
  constexpr TensorSplit rows = TensorSplit::rows, columns = TensorSplit::columns, whole = TensorSplit::replicated;
  if (stage.embedding) {
    add("embed.tokens", {V, C}, true, rows);
    add("embed.positions", {T, C}, true);
    if (!gpt) {
      add("embed.token_types", {config.type_vocab, C}, true);
      add("embed.ln.weight", {C}, false);
      add("embed.ln.bias", {C}, false);
    }
  } else if (stage.head) {
    add("embed.tokens", {V, C}, true, rows);  // the tied head's copy
  }
  std::vector<int> layers;  // the stage's layers in model order (several chunks: interleaved pipelines)
  for (int c = 0; c < stage.chunks; ++c)
    for (int l = stage.chunk(c).first_layer; l < stage.chunk(c).end_layer; ++l) layers.push_back(l);
  for (const int l : layers) {
    const std::string p = "layer" + std::to_string(l) + ".";
    if (gpt) {  // pre-LN: ln1 -> attn, ln2 -> mlp
      add(p + "ln1.weight", {C}, false);
      add(p + "ln1.bias", {C}, false);
    }
    add(p + "attn.qkv.weight", {3 * C, C}, true, rows, 3);
    add(p + "attn.qkv.bias", {3 * C}, false, rows, 3);
    add(p + "attn.proj.weight", {C, C}, true, columns);
    add(p + "attn.proj.bias", {C}, false, whole);
    if (gpt) {
      add(p + "ln2.weight", {C}, false);
      add(p + "ln2.bias", {C}, false);
    } else {  // post-LN: attn -> ln1, mlp -> ln2
      add(p + "ln1.weight", {C}, false);
      add(p + "ln1.bias", {C}, false);
    }
    if (config.moe_layer(l)) {  // a router and E expert MLPs, stacked (model/mixture_of_experts.h)
      const std::int64_t E = config.experts;
      add(p + "mlp.router.weight", {E, C}, true);
      add(p + "mlp.experts.fc.weight", {E, 4 * C, C}, true);
      add(p + "mlp.experts.fc.bias", {E, 4 * C}, false);
      add(p + "mlp.experts.proj.weight", {E, C, 4 * C}, true);
      add(p + "mlp.experts.proj.bias", {E, C}, false);
    } else {
      add(p + "mlp.fc.weight", {4 * C, C}, true, rows);
      add(p + "mlp.fc.bias", {4 * C}, false, rows);
      add(p + "mlp.proj.weight", {C, 4 * C}, true, columns);
      add(p + "mlp.proj.bias", {C}, false, whole);
    }
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
    add("mlm.decoder_bias", {V}, false, rows);  // the bias of this rank's vocabulary slice of the logits
    if (config.pooler) {
      add("pooler.dense.weight", {C, C}, true);
      add("pooler.dense.bias", {C}, false);
    }
  }
}

void ParameterLayout::add(std::string name, Shape full_shape, bool weight_decay, TensorSplit split, int split_parts) {
  Shape shape = full_shape;
  if (split == TensorSplit::rows) shape.dims[0] /= tp_size_;
  if (split == TensorSplit::columns) shape.dims[1] /= tp_size_;
  // Expert parallelism: a stacked expert tensor (E, ...) keeps this rank's E/ep experts.
  const bool expert = name.find(".mlp.experts.") != std::string::npos;
  if (expert) shape.dims[0] /= expert_ranks_;
  const std::int64_t n = shape.numel();
  int unit = layers_ + 1;  // the head
  if (name.starts_with("embed.")) {
    unit = 0;
  } else if (name.starts_with("layer")) {
    unit = 1 + std::stoi(name.substr(5, name.find('.') - 5));
  }
  if (units_.empty() || units_.back().id != unit) units_.push_back({unit, total_, total_});
  units_.back().end += n;
  entries_.push_back({std::move(name), shape, total_, n, weight_decay, unit, split, split_parts, full_shape, expert});
  total_ += n;
}

const ParameterUnit* ParameterLayout::find_unit(int id) const {
  for (const auto& u : units_)
    if (u.id == id) return &u;
  return nullptr;
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

void take_tensor_slice(const ParameterEntry& e, int tp_rank, int tp_size, const float* whole, float* slice) {
  const std::int64_t rows = e.full_shape[0], inner = e.full_shape.numel() / rows;
  if (e.split == TensorSplit::replicated || tp_size == 1) {
    std::copy(whole, whole + e.numel, slice);
  } else if (e.split == TensorSplit::rows) {  // in each of the parts, rows [r R/(p t), (r + 1) R/(p t))
    const std::int64_t part_rows = rows / e.split_parts, mine = part_rows / tp_size;
    for (int part = 0; part < e.split_parts; ++part) {
      const float* from = whole + (part * part_rows + tp_rank * mine) * inner;
      std::copy(from, from + mine * inner, slice + part * mine * inner);
    }
  } else {  // columns [r K/t, (r + 1) K/t) of every row
    const std::int64_t mine = inner / tp_size;
    for (std::int64_t row = 0; row < rows; ++row) {
      const float* from = whole + row * inner + tp_rank * mine;
      std::copy(from, from + mine, slice + row * mine);
    }
  }
}

std::int64_t whole_tensor_index(const TensorSliceOf& of, std::int64_t rows, std::int64_t inner, std::int64_t local) {
  if (of.whole()) return local;
  if (of.split == TensorSplit::rows) {  // part p's rows [r R/(p t), (r + 1) R/(p t)), parts one after another
    const std::int64_t part_rows = rows / of.parts, mine = part_rows / of.tp_size;
    const std::int64_t row = local / inner, part = row / mine;
    return (part * part_rows + of.tp_rank * mine + row % mine) * inner + local % inner;
  }
  const std::int64_t mine = inner / of.tp_size;  // columns [r K/t, (r + 1) K/t) of every row
  return (local / mine) * inner + of.tp_rank * mine + local % mine;
}

namespace {
// The field of `w` that holds the parameter `name` (null if the views have none).
float** field_for(WeightViews& w, const std::string& name) {
  static const std::map<std::string, float* WeightViews::*> top = {
      {"embed.tokens", &WeightViews::tokens},        {"embed.positions", &WeightViews::positions},
      {"embed.token_types", &WeightViews::token_types}, {"embed.ln.weight", &WeightViews::embed_ln_w},
      {"embed.ln.bias", &WeightViews::embed_ln_b},    {"final_ln.weight", &WeightViews::final_ln_w},
      {"final_ln.bias", &WeightViews::final_ln_b},    {"mlm.ln.weight", &WeightViews::final_ln_w},
      {"mlm.ln.bias", &WeightViews::final_ln_b},      {"mlm.dense.weight", &WeightViews::head_dense_w},
      {"mlm.dense.bias", &WeightViews::head_dense_b}, {"mlm.decoder_bias", &WeightViews::decoder_bias},
      {"pooler.dense.weight", &WeightViews::pooler_w}, {"pooler.dense.bias", &WeightViews::pooler_b}};
  static const std::map<std::string, float* LayerWeights::*> layer = {
      {"ln1.weight", &LayerWeights::ln1_w},
      {"ln1.bias", &LayerWeights::ln1_b},
      {"attn.qkv.weight", &LayerWeights::qkv_w},
      {"attn.qkv.bias", &LayerWeights::qkv_b},
      {"attn.proj.weight", &LayerWeights::proj_w},
      {"attn.proj.bias", &LayerWeights::proj_b},
      {"ln2.weight", &LayerWeights::ln2_w},
      {"ln2.bias", &LayerWeights::ln2_b},
      {"mlp.fc.weight", &LayerWeights::fc_w},
      {"mlp.fc.bias", &LayerWeights::fc_b},
      {"mlp.proj.weight", &LayerWeights::fc_proj_w},
      {"mlp.proj.bias", &LayerWeights::fc_proj_b},
      {"mlp.router.weight", &LayerWeights::router_w},
      {"mlp.experts.fc.weight", &LayerWeights::fc_w},
      {"mlp.experts.fc.bias", &LayerWeights::fc_b},
      {"mlp.experts.proj.weight", &LayerWeights::fc_proj_w},
      {"mlp.experts.proj.bias", &LayerWeights::fc_proj_b}};
  if (auto it = top.find(name); it != top.end()) return &(w.*(it->second));
  if (name.starts_with("layer")) {
    const auto dot = name.find('.');
    const auto l = static_cast<std::size_t>(std::stoi(name.substr(5, dot - 5)));
    if (auto it = layer.find(name.substr(dot + 1)); it != layer.end() && l < w.layers.size())
      return &(w.layers[l].*(it->second));
  }
  return nullptr;
}
}  // namespace

WeightViews WeightViews::bind(const ParameterLayout& layout, const ModelConfig& config, float* base) {
  WeightViews w{};
  w.layers.resize(static_cast<std::size_t>(config.layers), LayerWeights{});
  if (base == nullptr) return w;  // storage not held here (ZeRO-3): units are bound when gathered
  for (const auto& e : layout.entries())
    if (float** field = field_for(w, e.name)) *field = base + e.offset;
  return w;
}

void WeightViews::bind_unit(const ParameterLayout& layout, const ParameterUnit& unit, float* unit_base) {
  for (const auto& e : layout.entries())
    if (e.unit == unit.id)
      if (float** field = field_for(*this, e.name))
        *field = unit_base != nullptr ? unit_base + (e.offset - unit.begin) : nullptr;
}

}  // namespace shardscope
