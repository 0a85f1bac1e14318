// SPDX-License-Identifier: GPL-3.0-or-later
// Where every parameter lives in the one flat parameter buffer. The same layout
// serves the gradients, the optimizer states, checkpoints and (later) the DDP
// buckets and ZeRO shards: computed once, here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "model/model_config.h"

namespace shardscope {

// How tensor parallelism splits a parameter over the tp ranks (Megatron-LM):
// by output rows (column-parallel weights and their biases, the vocabulary
// rows of the embedding), by input columns (row-parallel weights), or not at
// all (LayerNorm, row-parallel biases, positions: every rank holds them whole).
enum class TensorSplit { replicated, rows, columns };

struct ParameterEntry {
  std::string name;     // e.g. "layer3.attn.qkv.weight"
  Shape shape;          // e.g. (3C, C); this rank's slice under tensor parallelism
  std::int64_t offset;  // in elements from the start of the flat buffer
  std::int64_t numel;
  bool weight_decay;    // AdamW decay: matrices and embeddings yes, biases and LayerNorm no
  int unit;             // the block it belongs to: 0 embeddings, 1 + l layer l, L + 1 head
  TensorSplit split = TensorSplit::replicated;
  int split_parts = 1;  // rows in this many equal blocks, each split alike (QKV: q, k and v)
  Shape full_shape{};   // the whole tensor's shape (== shape without tensor parallelism)
  // One of a MoE layer's stacked expert tensors (E, ...): under expert
  // parallelism the rank's E/ep experts, block expert_rank of the whole.
  bool expert = false;
};

// Rank tp_rank's slice (entry.numel values) of the whole tensor `whole`
// (entry.full_shape values): how a tp rank takes its part of an initialisation.
void take_tensor_slice(const ParameterEntry& entry, int tp_rank, int tp_size, const float* whole, float* slice);

// How one tp rank's slice sits in the whole tensor: what a checkpoint records
// beside a slice's elements, so a reader at any tp puts them back.
struct TensorSliceOf {
  TensorSplit split = TensorSplit::replicated;
  int parts = 1;  // ParameterEntry::split_parts
  int tp_rank = 0, tp_size = 1;
  bool whole() const { return split == TensorSplit::replicated || tp_size == 1; }
};
// Element `local` (row-major in the slice) as an index of the whole tensor of
// `rows` rows of `inner` elements: take_tensor_slice's inverse, element by element.
std::int64_t whole_tensor_index(const TensorSliceOf& of, std::int64_t rows, std::int64_t inner, std::int64_t local);

// A unit is the contiguous run of parameters that forward uses together: the
// embeddings, one layer, or the head. ZeRO-3 gathers and releases parameters
// unit by unit; ZeRO-2/3 reduce-scatter gradients unit by unit.
struct ParameterUnit {
  int id;
  std::int64_t begin, end;  // flat range
  std::int64_t numel() const { return end - begin; }
};

class ParameterLayout {
 public:
  // The whole model, or the part one pipeline stage holds. A last stage that
  // does not also embed keeps its own copy of embed.tokens for the tied output
  // head (Megatron's "embedding group": the two copies' gradients are summed).
  // Under tensor parallelism (stage.tp_size > 1) the split parameters have
  // their slice's shape (TensorSplit).
  explicit ParameterLayout(const ModelConfig& config);
  ParameterLayout(const ModelConfig& config, const StageLayers& stage);

  const std::vector<ParameterEntry>& entries() const { return entries_; }
  std::int64_t total() const { return total_; }
  const std::vector<ParameterUnit>& units() const { return units_; }
  // The unit with this id, or null if this (stage's) layout does not hold it.
  const ParameterUnit* find_unit(int id) const;
  // Throws std::out_of_range naming the parameter if absent.
  const ParameterEntry& find(std::string_view name) const;
  const ParameterEntry* try_find(std::string_view name) const;

 private:
  void add(std::string name, Shape shape, bool weight_decay, TensorSplit split = TensorSplit::replicated,
           int split_parts = 1);

  int layers_ = 0;
  int tp_size_ = 1;
  int expert_ranks_ = 1;
  std::vector<ParameterEntry> entries_;
  std::vector<ParameterUnit> units_;
  std::int64_t total_ = 0;
};

// Named pointers into a flat buffer laid out by a ParameterLayout: bound once
// to the parameters and once to the gradients, so forward and backward read
// like the math (w.layers[l].qkv_w) instead of looking names up.
struct LayerWeights {
  float* ln1_w;      // (C)
  float* ln1_b;      // (C)
  float* qkv_w;      // (3C, C)
  float* qkv_b;      // (3C)
  float* proj_w;     // (C, C)
  float* proj_b;     // (C)
  float* ln2_w;      // (C)
  float* ln2_b;      // (C)
  float* fc_w;       // (4C, C)
  float* fc_b;       // (4C)
  float* fc_proj_w;  // (C, 4C)
  float* fc_proj_b;  // (C)
  // A mixture-of-experts layer: fc_* and fc_proj_* hold E experts stacked,
  // (E, 4C, C) (E, 4C) (E, C, 4C) (E, C), and the router picks among them.
  float* router_w = nullptr;  // (E, C)
};

struct WeightViews {
  float* tokens;        // (V, C), tied with the output head
  float* positions;     // (Tmax, C)
  float* token_types;   // (types, C)  BERT
  float* embed_ln_w;    // (C)         BERT
  float* embed_ln_b;    // (C)         BERT
  std::vector<LayerWeights> layers;
  float* final_ln_w;    // (C) GPT final_ln / BERT mlm.ln
  float* final_ln_b;    // (C)
  float* head_dense_w;  // (C, C)      BERT mlm.dense
  float* head_dense_b;  // (C)
  float* decoder_bias;  // (V)         BERT
  float* pooler_w;      // (C, C)      BERT with pooler
  float* pooler_b;      // (C)

  // Views of every parameter of `layout` in the flat buffer at `base` (null: all null).
  static WeightViews bind(const ParameterLayout& layout, const ModelConfig& config, float* base);
  // Points the views of one unit's parameters into `unit_base`, which holds the
  // unit's flat range [unit.begin, unit.end) (null: unbinds them).
  void bind_unit(const ParameterLayout& layout, const ParameterUnit& unit, float* unit_base);
};

}  // namespace shardscope
