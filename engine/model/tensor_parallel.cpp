// SPDX-License-Identifier: GPL-3.0-or-later
// The model's tensor-parallel pieces (model/tensor_parallel.h): Megatron-LM's
// g after a row-parallel linear, f's backward before a column-parallel one,
// the vocabulary-parallel embedding and cross-entropy. With tp 1 each runs
// the one backend op the model ran before, and nothing else.
// The vocabulary-parallel pieces are backend ops (ops/backend.h), on the
// CPU and on a GPU alike.
// Under context parallelism the embeddings loop over host memory instead (each
// token at its position in the whole sequence, model/context_parallel.cpp).
#include "model/model.h"

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
    float* full = fit(sequence_full_, static_cast<std::int64_t>(rows) * out_f);
    backend_.linear_forward(full, in, weight, nullptr, rows, in_f, out_f);
    sequence_reduce_scatter(out, full, rows, out_f, layer);
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
    float* full = fit(sequence_full_, n);
    linear_backward(full, false);
    float* mine = accumulate ? partial : d_in;
    sequence_reduce_scatter(mine, full, rows, in_f, layer);
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
  const std::int32_t* type_ids = bert ? batch.token_type_ids : nullptr;
  const float* types = bert ? w_.token_types : nullptr;
  if (tp_size() == 1 && cp_size() == 1) {
    backend_.embedding_forward(out, batch.input_ids, type_ids, w_.tokens, w_.positions, types, B, T, C);
    return;
  }
  // Rank i holds token rows [i V/t, (i + 1) V/t): the rank that owns a token
  // writes its row plus the position (and segment), the others 0, and the sum
  // over the group is the whole embedding (the replicated tables added once, by the owner).
  // Under sequence parallelism the sum is a reduce-scatter: out gets this rank's tokens only.
  const std::int64_t n = static_cast<std::int64_t>(B) * T * C;
  float* rows = sequence_parallel() ? fit(sequence_full_, n) : out;
  const int owned = config_.vocab / tp_size();
  if (cp_size() == 1)
    backend_.vocab_embedding_forward(rows, batch.input_ids, type_ids, w_.tokens, w_.positions, types, B, T, C,
                                     stage_.tp_rank * owned, owned);
  else
    context_parallel_embedding_forward(rows, batch, stage_.tp_rank * owned, owned);
  if (tp_size() == 1) return;  // context parallelism alone: every row is this rank's
  if (sequence_parallel())
    sequence_reduce_scatter(out, rows, B * T, C, -1);
  else
    tp_group_->all_reduce_sum(out, n, at_layer(event_base_, -1));
}

void Model::token_embedding_backward(const float* d_out, const Batch& batch) {
  const int B = batch.B, T = batch.T, C = config_.channels;
  const bool bert = config_.kind == ModelKind::bert;
  const std::int32_t* type_ids = bert ? batch.token_type_ids : nullptr;
  float* d_types = bert ? dw_.token_types : nullptr;
  if (tp_size() == 1 && cp_size() == 1) {
    backend_.embedding_backward(dw_.tokens, dw_.positions, d_types, d_out, batch.input_ids, type_ids, B, T, C);
    return;
  }
  // d_out is whole on every rank (under sequence parallelism once all-gathered):
  // each adds it to the token rows it owns, and to the (replicated) positions and segments.
  d_out = sequence_gathered(d_out, B * T, C, -1);
  const int owned = config_.vocab / tp_size();
  if (cp_size() == 1)
    backend_.vocab_embedding_backward(dw_.tokens, dw_.positions, d_types, d_out, batch.input_ids, type_ids, B, T, C,
                                      stage_.tp_rank * owned, owned);
  else
    context_parallel_embedding_backward(d_out, batch, stage_.tp_rank * owned, owned);
}

// Vocabulary-parallel cross-entropy (Megatron's vocab_parallel_cross_entropy):
//   loss = log sum_j e^(z_j - m) + m - z_target,   m = max_j z_j,
// each rank holding V/t of every row's logits z: the maximum over the group
// (an all-gather of the t local maxima), then the sum of e^(z_j - m) and the
// target logit (0 on the ranks that do not own it) summed over the group.
// The pieces are backend ops on scratch in its memory, so a GPU rank's
// logits never leave the device.
float Model::cross_entropy_forward(const Batch& batch) {
  Activations& a = acts();
  const int rows = batch.B * batch.T, t = tp_size();
  if (t == 1) return backend_.cross_entropy_forward(a.losses, a.logits, batch.targets, rows, config_.vocab);
  const int V = config_.vocab / t;
  // [local maxima (rows) | the group's (t, rows) | row maxima (rows) | sums of exponentials, target logits (2, rows)]
  float* local_max = fit(tp_loss_, static_cast<std::int64_t>(rows) * (t + 4));
  float* maxima = local_max + rows;
  float* row_max = maxima + static_cast<std::int64_t>(t) * rows;
  float* sums = row_max + rows;
  backend_.row_max(local_max, a.logits, rows, V);
  const Event context = at_layer(event_base_, -1);
  tp_group_->all_gather(local_max, maxima, rows, context);
  backend_.vocab_cross_entropy_sums(sums, row_max, maxima, t, a.logits, batch.targets, rows, V, stage_.tp_rank * V);
  tp_group_->all_reduce_sum(sums, 2 * static_cast<std::int64_t>(rows), context);
  // log_sum_exp is kept for backward
  return backend_.vocab_cross_entropy_losses(a.losses, a.log_sum_exp, sums, row_max, batch.targets, rows);
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
  backend_.vocab_cross_entropy_backward(scratch_.d_logits, a.logits, a.log_sum_exp, batch.targets, rows, V,
                                        stage_.tp_rank * V, dloss_per_row);
}

}  // namespace shardscope
