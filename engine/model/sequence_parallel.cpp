// SPDX-License-Identifier: GPL-3.0-or-later
// Sequence parallelism (Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models") on top of tensor parallelism
// (model/tensor_parallel.h). The ops outside the column- and row-parallel
// matmuls (LayerNorm, residual adds) are per token, so tp rank r keeps only
// tokens [r T/t, (r + 1) T/t) of every sequence there: f becomes an all-gather
// of the tokens before a column-parallel linear (its backward a reduce-scatter
// of the input gradient) and g a reduce-scatter after a row-parallel one (its
// backward an all-gather). A ring all-gather or reduce-scatter sends (t - 1)/t
// of b·s·h per rank, half an all-reduce: 2 + 2 of them per layer forward and
// the same backward send what TP's 4 all-reduces send.
//
// Megatron's activations are (s, b, h), so a rank's tokens are one contiguous
// block. This engine's are (b, s, h): a rank's shard is (b, s/t, h), and the
// gather and scatter copy token blocks between (b, s, h) and the collectives'
// rank-major (t, b, s/t, h) with strided copies (sequence_chunks_).
#include "model/model.h"
#include "model/sequence_tokens.h"

namespace shardscope {

namespace {
Event at_layer(Event base, int layer) {
  base.layer = layer;
  return base;
}

// Copies token blocks between (B, T, C) and the rank-major (t, B, T/t, C):
// to_chunks true reads `full` into `chunks`, false writes `chunks` into `full`.
// One backend copy per block, so the blocks stay in the backend's memory.
void copy_token_blocks(Backend& backend, float* full, float* chunks, int rows, int T, int t, int C, bool to_chunks) {
  const int B = rows / T, block = T / t;
  const std::int64_t span = static_cast<std::int64_t>(block) * C;
  const auto bytes = span * static_cast<std::int64_t>(sizeof(float));
  for (int r = 0; r < t; ++r)
    for (int b = 0; b < B; ++b) {
      float* f = full + (static_cast<std::int64_t>(b) * T + static_cast<std::int64_t>(r) * block) * C;
      float* c = chunks + (static_cast<std::int64_t>(r) * B + b) * span;
      if (to_chunks)
        backend.copy(c, f, bytes);
      else
        backend.copy(f, c, bytes);
    }
}
}  // namespace

void copy_rank_tokens(Backend& backend, float* shard, const float* whole, int rows, int T, int t, int rank, int C,
                      bool add) {
  const int B = rows / T, block = T / t;
  const std::int64_t span = static_cast<std::int64_t>(block) * C;
  for (int b = 0; b < B; ++b) {
    const float* from = whole + (static_cast<std::int64_t>(b) * T + static_cast<std::int64_t>(rank) * block) * C;
    float* to = shard + b * span;
    if (add)
      backend.add(to, to, from, span);
    else
      backend.copy(to, from, span * static_cast<std::int64_t>(sizeof(float)));
  }
}

void Model::sequence_all_gather(float* full, const float* shard, int rows, int C, int layer) {
  const int t = tp_size();
  const std::int64_t n = static_cast<std::int64_t>(rows) * C;
  float* chunks = fit(sequence_chunks_, n);
  tp_group_->all_gather(shard, chunks, n / t, at_layer(event_base_, layer));
  copy_token_blocks(backend_, full, chunks, rows, sequence_length_, t, C, false);
}

void Model::sequence_reduce_scatter(float* shard, const float* full, int rows, int C, int layer) {
  const int t = tp_size();
  const std::int64_t n = static_cast<std::int64_t>(rows) * C;
  float* chunks = fit(sequence_chunks_, n);
  copy_token_blocks(backend_, const_cast<float*>(full), chunks, rows, sequence_length_, t, C, true);
  tp_group_->reduce_scatter_sum(chunks, shard, n / t, at_layer(event_base_, layer));
}

void Model::sequence_layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* weight,
                                       const float* bias, int rows, int C, int layer) {
  if (!sequence_parallel()) {
    backend_.layernorm_forward(out, mean, rstd, x, weight, bias, rows, C, config_.ln_eps);
    return;
  }
  const int mine = sequence_rows(rows);
  float* shard = fit(sequence_shard_, static_cast<std::int64_t>(mine) * C);
  backend_.layernorm_forward(shard, mean, rstd, x, weight, bias, mine, C, config_.ln_eps);
  sequence_all_gather(out, shard, rows, C, layer);  // f: the column-parallel linear's whole input
}

void Model::sequence_layernorm_backward(float* d_in, float* d_weight, float* d_bias, const float* d_out,
                                        const float* in, const float* weight, const float* mean, const float* rstd,
                                        int rows, int C, bool accumulate) {
  if (!sequence_parallel()) {
    backend_.layernorm_backward(d_in, d_weight, d_bias, d_out, in, weight, mean, rstd, rows, C, accumulate);
    return;
  }
  // The gradients of this micro-batch's tokens on this rank, summed over the
  // group before they join d_weight and d_bias (which may already hold the
  // earlier micro-batches' whole sums). Tagged outside the layers (layer -1):
  // the per-layer traffic counts the f and g collectives only.
  float* partial = fit(sequence_shard_, 2 * static_cast<std::int64_t>(C));
  backend_.fill(partial, 0.0f, 2 * static_cast<std::int64_t>(C));
  backend_.layernorm_backward(d_in, partial, partial + C, d_out, in, weight, mean, rstd, sequence_rows(rows), C,
                              accumulate);
  tp_group_->all_reduce_sum(partial, 2 * C, at_layer(event_base_, -1));
  backend_.add(d_weight, d_weight, partial, C);
  backend_.add(d_bias, d_bias, partial + C, C);
}

const float* Model::sequence_gathered(const float* d, int rows, int C, int layer) {
  if (!sequence_parallel()) return d;
  float* whole = fit(sequence_gathered_, static_cast<std::int64_t>(rows) * C);
  sequence_all_gather(whole, d, rows, C, layer);  // g's backward
  return whole;
}

}  // namespace shardscope
