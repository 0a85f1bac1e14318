// SPDX-License-Identifier: GPL-3.0-or-later
// The model's tensor-parallel pieces (model/tensor_parallel.h): Megatron-LM's
// g after a row-parallel linear, f's backward before a column-parallel one,
// the vocabulary-parallel embedding and cross-entropy. With tp 1 each runs
// the one backend op the model ran before, and nothing else.
//
// The vocabulary-parallel pieces loop over host memory (the CPU backend), and
// so do the embeddings under context parallelism (each token at its position
// in the whole sequence, model/context_parallel.h);
// the trainer refuses --tp with --device cuda until they have device kernels.
#include <cmath>
#include <vector>

#include "model/model.h"
#include "ops/math.h"

namespace shardscope {

namespace {
// The collective's context: the model's step and micro-batch, and the layer (-1: embedding or head).
Event at_layer(Event base, int layer) {
  base.layer = layer;
  return base;
}
}  // namespace

void Model::row_parallel_forward(float* out, const float* in, const float* weight, const float* bias, int rows,
                                 int in_f, int out_f, int layer) {
  if (tp_size() == 1) {
    backend_.linear_forward(out, in, weight, bias, rows, in_f, out_f);
    return;
  }
  // Each rank multiplies its input columns by its rows of the weight: a partial
  // sum of the output. g: the sum over the group, then the (whole) bias once.
  // Under sequence parallelism g is a reduce-scatter: out gets this rank's tokens only.
  if (sequence_parallel()) {
    sequence_full_.resize(static_cast<std::size_t>(rows) * out_f);
    backend_.linear_forward(sequence_full_.data(), in, weight, nullptr, rows, in_f, out_f);
    sequence_reduce_scatter(out, sequence_full_.data(), rows, out_f, layer);
    if (bias != nullptr) backend_.add_bias_rows(out, bias, sequence_rows(rows), out_f);
    return;
  }
  backend_.linear_forward(out, in, weight, nullptr, rows, in_f, out_f);
  tp_group_->all_reduce_sum(out, static_cast<std::int64_t>(rows) * out_f, at_layer(event_base_, layer));
  if (bias != nullptr) backend_.add_bias_rows(out, bias, rows, out_f);
}

void Model::column_parallel_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out, const float* in,
                                     const float* weight, int rows, int in_f, int out_f, int layer, bool accumulate,
                                     float* partial) {
  // A layer's linear may leave its weight gradient to W (zero-bubble schedules); the head's (layer -1) stays in B.
  const auto linear_backward = [&](float* dx, bool add) {
    if (layer >= 0)
      layer_linear_backward(layer, dx, d_weight, d_bias, d_out, in, weight, rows, in_f, out_f, add);
    else
      backend_.linear_backward(dx, d_weight, d_bias, d_out, in, weight, rows, in_f, out_f, add);
  };
  if (tp_size() == 1) {
    linear_backward(d_in, accumulate);
    return;
  }
  // f's backward: every rank's output columns contributed to the input's
  // gradient, so the partial sums are summed over the group (and only they:
  // a residual gradient already in d_in is whole on every rank).
  const std::int64_t n = static_cast<std::int64_t>(rows) * in_f;
  // Under SP f's backward is a reduce-scatter: d_in gets this rank's tokens only. (Not BERT's
  // decoder: the MLM transform before it runs on whole tokens, so its input gradient stays whole.)
  if (sequence_parallel() && !(layer < 0 && config_.kind == ModelKind::bert)) {
    sequence_full_.resize(static_cast<std::size_t>(n));
    linear_backward(sequence_full_.data(), false);
    float* mine = accumulate ? partial : d_in;
    sequence_reduce_scatter(mine, sequence_full_.data(), rows, in_f, layer);
    if (accumulate) backend_.add(d_in, d_in, mine, n / tp_size());
    return;
  }
  float* sum = accumulate ? partial : d_in;
  linear_backward(sum, false);
  tp_group_->all_reduce_sum(sum, n, at_layer(event_base_, layer));
  if (accumulate) backend_.add(d_in, d_in, sum, n);
}

void Model::token_embedding_forward(float* out, const Batch& batch) {
  const int B = batch.B, T = batch.T, C = config_.channels;
  const bool bert = config_.kind == ModelKind::bert;  // BERT adds segment (token type) embeddings
  if (tp_size() == 1 && cp_size() == 1) {
    backend_.embedding_forward(out, batch.input_ids, bert ? batch.token_type_ids : nullptr, w_.tokens, w_.positions,
                               bert ? w_.token_types : nullptr, B, T, C);
    return;
  }
  // Rank i holds token rows [i V/t, (i + 1) V/t): the rank that owns a token
  // writes its row plus the position (and segment), the others 0, and the sum
  // over the group is the whole embedding (the replicated tables added once, by the owner).
  // Under sequence parallelism the sum is a reduce-scatter: out gets this rank's tokens only.
  float* whole = out;
  if (sequence_parallel()) {
    sequence_full_.resize(static_cast<std::size_t>(B) * T * C);
    out = sequence_full_.data();
  }
  const std::int64_t first = static_cast<std::int64_t>(stage_.tp_rank) * (config_.vocab / tp_size());
  const std::int64_t owned = config_.vocab / tp_size();
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(B) * T; ++r) {
    const std::int64_t local = batch.input_ids[r] - first;
    float* row = out + r * C;
    const bool mine = local >= 0 && local < owned;
    const float* token = w_.tokens + local * C;
    const float* position = w_.positions + static_cast<std::int64_t>(global_position(static_cast<int>(r % T), T)) * C;
    for (int c = 0; c < C; ++c) row[c] = mine ? token[c] + position[c] : 0.0f;
    if (!bert || !mine) continue;
    const float* type = w_.token_types + static_cast<std::int64_t>(batch.token_type_ids[r]) * C;
    for (int c = 0; c < C; ++c) row[c] += type[c];
  }
  if (tp_size() == 1) return;  // context parallelism alone: every row is this rank's
  if (sequence_parallel())
    sequence_reduce_scatter(whole, out, B * T, C, -1);
  else
    tp_group_->all_reduce_sum(out, static_cast<std::int64_t>(B) * T * C, at_layer(event_base_, -1));
}

void Model::token_embedding_backward(const float* d_out, const Batch& batch) {
  const int B = batch.B, T = batch.T, C = config_.channels;
  const bool bert = config_.kind == ModelKind::bert;
  if (tp_size() == 1 && cp_size() == 1) {
    backend_.embedding_backward(dw_.tokens, dw_.positions, bert ? dw_.token_types : nullptr, d_out, batch.input_ids,
                                bert ? batch.token_type_ids : nullptr, B, T, C);
    return;
  }
  // d_out is whole on every rank (under sequence parallelism once all-gathered):
  // each adds it to the token rows it owns, and to the (replicated) positions and segments.
  d_out = sequence_gathered(d_out, B * T, C, -1);
  const std::int64_t first = static_cast<std::int64_t>(stage_.tp_rank) * (config_.vocab / tp_size());
  const std::int64_t owned = config_.vocab / tp_size();
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(B) * T; ++r) {
    const float* g = d_out + r * C;
    float* position = dw_.positions + static_cast<std::int64_t>(global_position(static_cast<int>(r % T), T)) * C;
    for (int c = 0; c < C; ++c) position[c] += g[c];
    if (bert) {
      float* type = dw_.token_types + static_cast<std::int64_t>(batch.token_type_ids[r]) * C;
      for (int c = 0; c < C; ++c) type[c] += g[c];
    }
    const std::int64_t local = batch.input_ids[r] - first;
    if (local < 0 || local >= owned) continue;
    float* token = dw_.tokens + local * C;
    for (int c = 0; c < C; ++c) token[c] += g[c];
  }
}

// Vocabulary-parallel cross-entropy (Megatron's vocab_parallel_cross_entropy):
//   loss = log sum_j e^(z_j - m) + m - z_target,   m = max_j z_j,
// each rank holding V/t of every row's logits z: the maximum over the group
// (an all-gather of the t local maxima), then the sum of e^(z_j - m) and the
// target logit (0 on the ranks that do not own it) summed over the group.
float Model::cross_entropy_forward(const Batch& batch) {
  Activations& a = acts();
  const int rows = batch.B * batch.T, t = tp_size();
  if (t == 1) return backend_.cross_entropy_forward(a.losses, a.logits, batch.targets, rows, config_.vocab);
  const int V = config_.vocab / t;
  const std::int64_t first = static_cast<std::int64_t>(stage_.tp_rank) * V;
  const auto n = static_cast<std::size_t>(rows);
  std::vector<float> local_max(n, -INFINITY), maxima(n * static_cast<std::size_t>(t));
  for (std::size_t r = 0; r < n; ++r)
    for (int j = 0; j < V; ++j) local_max[r] = math::max_f(local_max[r], a.logits[r * V + j]);
  const Event context = at_layer(event_base_, -1);
  tp_group_->all_gather(local_max.data(), maxima.data(), rows, context);
  std::vector<float> row_max(n, -INFINITY), sums(2 * n, 0.0f);  // [sum of exponentials | target logit]
  for (std::size_t r = 0; r < n; ++r) {
    for (int k = 0; k < t; ++k) row_max[r] = math::max_f(row_max[r], maxima[k * n + r]);
    for (int j = 0; j < V; ++j) sums[r] += math::exp_approx(a.logits[r * V + j] - row_max[r]);
    const std::int64_t target = batch.targets[r] - first;
    if (batch.targets[r] >= 0 && target >= 0 && target < V) sums[n + r] = a.logits[r * V + target];
  }
  tp_group_->all_reduce_sum(sums.data(), 2 * rows, context);
  double total = 0.0;
  int counted = 0;
  for (std::size_t r = 0; r < n; ++r) {
    a.log_sum_exp[r] = std::log(sums[r]) + row_max[r];  // kept for backward
    a.losses[r] = batch.targets[r] < 0 ? 0.0f : math::cross_entropy_loss(sums[r], row_max[r], sums[n + r]);
    if (batch.targets[r] < 0) continue;
    total += a.losses[r];
    ++counted;
  }
  return counted > 0 ? static_cast<float>(total / counted) : 0.0f;
}

// d z_j = (softmax_j - [j == target]) dloss, for this rank's V/t logits: the
// softmax needs only the row's log-sum-exp that forward combined.
void Model::cross_entropy_backward(const Batch& batch, float dloss_per_row) {
  const Activations& a = acts();
  const int rows = batch.B * batch.T, t = tp_size();
  if (t == 1) {
    backend_.cross_entropy_backward(scratch_.d_logits, a.logits, batch.targets, rows, config_.vocab, dloss_per_row);
    return;
  }
  const int V = config_.vocab / t;
  const std::int64_t first = static_cast<std::int64_t>(stage_.tp_rank) * V;
  for (std::int64_t r = 0; r < rows; ++r) {
    float* d = scratch_.d_logits + r * V;
    const float* z = a.logits + r * V;
    const bool scored = batch.targets[r] >= 0;
    for (int j = 0; j < V; ++j) d[j] = scored ? math::exp_approx(z[j] - a.log_sum_exp[r]) * dloss_per_row : 0.0f;
    const std::int64_t target = batch.targets[r] - first;
    if (scored && target >= 0 && target < V) d[target] -= dloss_per_row;
  }
}

}  // namespace shardscope
