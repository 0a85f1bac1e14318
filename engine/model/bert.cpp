// SPDX-License-Identifier: GPL-3.0-or-later
// The BERT training step, top to bottom. Per layer (post-LN):
//   res_mid = x + proj(attention(qkv(x)))         ln1_out = ln1(res_mid)
//   res_out = ln1_out + mlp.proj(gelu(mlp.fc(ln1_out)))   out = ln2(res_out)
// MLM head: logits = mlm.ln(gelu(mlm.dense(x_L))) @ tokens^T + decoder_bias.
// Under tensor parallelism (model/tensor_parallel.h) as GPT: column-parallel
// qkv and mlp.fc, row-parallel proj and mlp.proj, the embedding and the
// decoder (with its bias) vocabulary-parallel; mlm.dense and the pooler whole.
// Under sequence parallelism (model/sequence_parallel.cpp) embed_sum, res_mid,
// res_out and the encoder LayerNorms' statistics hold this rank's BT/t tokens;
// the LayerNorm outputs (each layer's output, and the next one's residual) are
// all-gathered whole, and the residual adds read this rank's tokens of them.
// The MLM head runs on whole tokens (its input, the last output, is gathered).
#include "model/bert.h"

#include <vector>

#include "model/sequence_tokens.h"

namespace shardscope {

void BertModel::layer_forward(int l, const float* x, const Batch& batch) {
  const int B = batch.B, T = batch.T, BT = B * T, C = config_.channels;
  const int Ct = C / tp_size(), H = config_.heads / tp_size();  // this tp rank's columns and heads
  const std::int64_t n = static_cast<std::int64_t>(BT) * C;
  const AttentionMask mask{false, batch.attention_mask};
  const LayerWeights& w = w_.layers[static_cast<std::size_t>(l)];
  LayerActivations& a = layer_acts(l);
  Backend& be = backend_;
  // out (this rank's tokens under SP) += the same tokens of whole
  const auto add_residual = [&](float* out, const float* whole) {
    if (sequence_parallel())
      copy_rank_tokens(be, out, whole, BT, T, tp_size(), stage_.tp_rank, C, /*add=*/true);
    else
      be.add(out, out, whole, n);
  };
  be.linear_forward(a.qkv, x, w.qkv_w, w.qkv_b, BT, C, 3 * Ct);
  if (cp_size() > 1)  // ring attention (context_parallel.cpp), the padding mask looked up per block
    attention_forward(a.attn_y, a.probs, a.qkv, B, T, Ct, H, l);
  else
    be.attention_forward(a.attn_y, a.probs, a.qkv, B, T, Ct, H, mask);
  stop_point();
  row_parallel_forward(a.res_mid, a.attn_y, w.proj_w, w.proj_b, BT, Ct, C, l);
  add_residual(a.res_mid, x);
  sequence_layernorm_forward(a.ln1_out, a.ln1_mean, a.ln1_rstd, a.res_mid, w.ln1_w, w.ln1_b, BT, C, l);
  be.linear_forward(a.fc, a.ln1_out, w.fc_w, w.fc_b, BT, C, 4 * Ct);
  stop_point();
  be.gelu_forward(a.gelu, a.fc, n * 4 / tp_size(), config_.gelu);
  row_parallel_forward(a.res_out, a.gelu, w.fc_proj_w, w.fc_proj_b, BT, 4 * Ct, C, l);
  add_residual(a.res_out, a.ln1_out);
  sequence_layernorm_forward(a.ln2_out, a.ln2_mean, a.ln2_rstd, a.res_out, w.ln2_w, w.ln2_b, BT, C, l);
}

void BertModel::forward_impl(const Batch& batch) {
  const int B = batch.B, T = batch.T, BT = B * T, C = config_.channels;
  const std::int64_t n = static_cast<std::int64_t>(BT) * C;
  Activations& a = acts();
  Backend& be = backend_;
  if (stage_.embedding) {
    gather_parameters(0);
    // Model::forward set the segments (0 where the batch gave none).
    token_embedding_forward(a.embed_sum, batch);
    sequence_layernorm_forward(a.embed_ln_out, a.embed_ln_mean, a.embed_ln_rstd, a.embed_sum, w_.embed_ln_w,
                               w_.embed_ln_b, BT, C, -1);
    release_parameters(0);
  }
  layers_forward(batch);
  if (!stage_.head) return;
  stop_point();  // before the head, the largest op for a large vocabulary
  gather_parameters(head_unit());
  gather_parameters(0);  // the tied token embedding
  const float* x = stage_output();
  be.linear_forward(a.head_dense, x, w_.head_dense_w, w_.head_dense_b, BT, C, C);
  be.gelu_forward(a.head_gelu, a.head_dense, n, config_.gelu);
  be.layernorm_forward(a.final_ln_out, a.final_ln_mean, a.final_ln_rstd, a.head_gelu, w_.final_ln_w, w_.final_ln_b,
                       BT, C, config_.ln_eps);
  be.linear_forward(a.logits, a.final_ln_out, w_.tokens, w_.decoder_bias, BT, C, config_.vocab / tp_size());
  if (a.pooled != nullptr) {
    // Pooler: tanh(dense(h_[CLS])) on the first position of each sequence.
    for (int b = 0; b < B; ++b)
      be.linear_forward(a.pooled + static_cast<std::int64_t>(b) * C, x + static_cast<std::int64_t>(b) * T * C,
                        w_.pooler_w, w_.pooler_b, 1, C, C);
    be.tanh_forward(a.pooled, a.pooled, static_cast<std::int64_t>(B) * C);
  }
  release_parameters(0);
  release_parameters(head_unit());
}

void BertModel::layer_backward(int l, const float* x, const Batch& batch) {
  const int B = batch.B, T = batch.T, BT = B * T, C = config_.channels;
  const int Ct = C / tp_size(), H = config_.heads / tp_size();
  const AttentionMask mask{false, batch.attention_mask};
  const LayerWeights& w = w_.layers[static_cast<std::size_t>(l)];
  LayerWeights& dw = dw_.layers[static_cast<std::size_t>(l)];
  const LayerActivations& a = layer_acts(l);
  BackwardScratch& s = scratch_;
  Backend& be = backend_;
  // out = ln2(res_out): d_a = d(res_out)
  // (Under SP d_res and d_a hold this rank's tokens; g's backward gathers them for the row-parallel linears.)
  sequence_layernorm_backward(s.d_a, dw.ln2_w, dw.ln2_b, s.d_res, a.res_out, w.ln2_w, a.ln2_mean, a.ln2_rstd, BT, C,
                              false);
  // res_out = ln1_out + mlp(ln1_out): d_a += mlp backward, giving d(ln1_out)
  layer_linear_backward(l, s.d_fc, dw.fc_proj_w, dw.fc_proj_b, sequence_gathered(s.d_a, BT, C, l), a.gelu, w.fc_proj_w,
                        BT, 4 * Ct, C);
  stop_point();
  be.gelu_backward(s.d_fc, s.d_fc, a.fc, static_cast<std::int64_t>(BT) * 4 * Ct, config_.gelu);
  // (d_res, read by ln2's backward above, is free until ln1's below: the partial sum's room)
  column_parallel_backward(s.d_a, dw.fc_w, dw.fc_b, s.d_fc, a.ln1_out, w.fc_w, BT, C, 4 * Ct, l,
                           /*accumulate=*/true, s.d_res);
  stop_point();
  // ln1_out = ln1(res_mid): d_res = d(res_mid)
  sequence_layernorm_backward(s.d_res, dw.ln1_w, dw.ln1_b, s.d_a, a.res_mid, w.ln1_w, a.ln1_mean, a.ln1_rstd, BT, C,
                              false);
  // res_mid = x + proj(attention(qkv(x))): d_res += attention backward, giving d(x)
  layer_linear_backward(l, s.d_a, dw.proj_w, dw.proj_b, sequence_gathered(s.d_res, BT, C, l), a.attn_y, w.proj_w, BT,
                        Ct, C);
  if (cp_size() > 1)
    attention_backward(s.d_qkv, s.d_probs, s.d_a, a.qkv, a.attn_y, a.probs, B, T, Ct, H, l);
  else
    be.attention_backward(s.d_qkv, s.d_probs, s.d_a, a.qkv, a.attn_y, a.probs, B, T, Ct, H, mask);
  stop_point();
  // (d_a, read by the attention's backward, is free: the partial sum's room)
  column_parallel_backward(s.d_res, dw.qkv_w, dw.qkv_b, s.d_qkv, x, w.qkv_w, BT, C, 3 * Ct, l, /*accumulate=*/true,
                           s.d_a);
}

void BertModel::backward_impl(const Batch& batch, float dloss_per_row) {
  const int BT = batch.B * batch.T, C = config_.channels, V = config_.vocab / tp_size();
  const std::int64_t n = static_cast<std::int64_t>(BT) * C;
  const Activations& a = acts();
  BackwardScratch& s = scratch_;
  Backend& be = backend_;
  gradients_needed(0);  // the token embedding's gradient builds up over the whole backward
  if (stage_.head) {
    gradients_needed(head_unit());
    gather_parameters(head_unit());
    gather_parameters(0);
    cross_entropy_backward(batch, dloss_per_row);
    stop_point();
    // MLM head, tied to the token embedding (its vocabulary slice: column-parallel). The pooler is not part of the
    // loss.
    column_parallel_backward(s.d_a, dw_.tokens, dw_.decoder_bias, s.d_logits, a.final_ln_out, w_.tokens, BT, C, V, -1);
    be.layernorm_backward(s.d_qkv, dw_.final_ln_w, dw_.final_ln_b, s.d_a, a.head_gelu, w_.final_ln_w,
                          a.final_ln_mean, a.final_ln_rstd, BT, C);
    be.gelu_backward(s.d_qkv, s.d_qkv, a.head_dense, n, config_.gelu);
    be.linear_backward(s.d_res, dw_.head_dense_w, dw_.head_dense_b, s.d_qkv, stage_output(), w_.head_dense_w, BT, C,
                       C);
    if (sequence_parallel()) {
      // The head's input was gathered and every rank ran the head on all of it: the
      // gradient is whole on every rank, and this rank's is its own tokens' block.
      float* whole = fit(sequence_head_, n);
      be.copy(whole, s.d_res, n * static_cast<std::int64_t>(sizeof(float)));
      copy_rank_tokens(be, s.d_res, whole, BT, batch.T, tp_size(), stage_.tp_rank, C);
    }
    release_parameters(0);
    release_parameters(head_unit());
    gradients_done(head_unit());
    gradients_ready(layout_.find_unit(head_unit())->begin);  // the pooler after it has no gradient
  }  // else d_res holds the gradient of this stage's output, received from the next stage
  layers_backward(batch);

  if (stage_.embedding) {
    gather_parameters(0);
    sequence_layernorm_backward(s.d_a, dw_.embed_ln_w, dw_.embed_ln_b, s.d_res, a.embed_sum, w_.embed_ln_w,
                                a.embed_ln_mean, a.embed_ln_rstd, BT, C, false);
    token_embedding_backward(s.d_a, batch);
    release_parameters(0);
  }
  gradients_done(0);
  gradients_ready(0);  // else d_res is now the gradient of this stage's input
}

}  // namespace shardscope
