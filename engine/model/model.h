// SPDX-License-Identifier: GPL-3.0-or-later
// A transformer language model: parameters and gradients in one flat buffer
// each (named views from ParameterLayout), activations sized for the batch.
// GptModel (causal LM, gpt.cpp) and BertModel (masked LM, bert.cpp) differ
// only in how forward and backward wire the same ops.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "core/buffer.h"
#include "core/memory_ledger.h"
#include "core/tensor.h"
#include "model/activations.h"
#include "model/model_config.h"
#include "model/parameter_layout.h"
#include "ops/backend.h"

namespace shardscope {

// One batch of token ids, row-major (B, T). Pointers stay valid through backward.
struct Batch {
  int B = 0, T = 0;
  const std::int32_t* input_ids = nullptr;       // (B, T)
  const std::int32_t* targets = nullptr;         // (B, T), -1 = not scored; null: no loss
  const std::int32_t* token_type_ids = nullptr;  // (B, T) BERT segments; null = all 0
  const std::int32_t* attention_mask = nullptr;  // (B, T) BERT padding, 1 = real; null = all real
};

class Model {
 public:
  Model(const ModelConfig& config, Backend& backend, MemoryLedger& ledger);
  virtual ~Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return config_; }
  const ParameterLayout& layout() const { return layout_; }
  Backend& backend() { return backend_; }

  float* params() { return params_.floats(); }
  float* grads() { return grads_.floats(); }
  const float* params() const { return params_.floats(); }
  const float* grads() const { return grads_.floats(); }
  std::int64_t parameter_count() const { return layout_.total(); }
  Tensor param(std::string_view name) const;  // view into params
  Tensor grad(std::string_view name) const;   // view into grads

  // GPT-2 style init, deterministic from the seed: weights N(0, 0.02), residual
  // projections N(0, 0.02 / sqrt(2 L)) (GPT-2 paper, sec. 2.3), biases 0,
  // LayerNorm weights 1.
  void init_weights(std::uint64_t seed);
  void zero_grads();

  // Runs the forward pass and keeps activations for backward. Returns the mean
  // loss over scored positions (0 when batch.targets is null). Throws
  // ConfigError if T exceeds max_seq or an id is outside the vocabulary.
  float forward(const Batch& batch);
  // Accumulates the loss gradient into grads(); needs the last forward's batch
  // (with targets) and activations.
  void backward();

  // After forward: number of hidden states (L + 1) and a (B, T, C) view of one.
  // GPT: index l < L is the input of layer l, index L the final LayerNorm output.
  // BERT: index 0 is the embedding LayerNorm output, index l + 1 the output of layer l.
  int hidden_state_count() const { return config_.layers + 1; }
  Tensor hidden_state(int index) const;
  const Activations& activations() const { return acts_; }
  // Floats of activations and backward scratch this model needs for (B, T).
  std::int64_t activation_floats(int B, int T) const { return Activations::total_floats(config_, B, T); }

 protected:
  virtual void forward_impl(const Batch& batch) = 0;
  virtual void backward_impl(const Batch& batch, float dloss_per_row) = 0;

  ModelConfig config_;
  ParameterLayout layout_;
  Backend& backend_;
  MemoryLedger& ledger_;
  Buffer params_;   // parameters
  Buffer grads_;    // gradients
  Buffer act_buffer_;      // activations, sized for the last (B, T)
  Buffer scratch_buffer_;  // workspace for backward
  WeightViews w_;   // views into params_
  WeightViews dw_;  // the same views into grads_
  Activations acts_;
  BackwardScratch scratch_;

 private:
  void ensure_activations(int B, int T);
  void check_batch(const Batch& batch) const;

  Batch last_batch_;
  int scored_rows_ = 0;
  bool have_forward_ = false;
};

std::unique_ptr<Model> make_model(const ModelConfig& config, Backend& backend, MemoryLedger& ledger);

}  // namespace shardscope
