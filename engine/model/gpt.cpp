// SPDX-License-Identifier: GPL-3.0-or-later
// The GPT training step, top to bottom. Per layer (pre-LN):
//   res_mid = x + proj(attention(qkv(ln1(x))))
//   out     = res_mid + mlp.proj(gelu(mlp.fc(ln2(res_mid))))
// logits = final_ln(x_L) @ tokens^T (tied).
// Under tensor parallelism (model/tensor_parallel.h) qkv and mlp.fc are
// column-parallel (this rank's H/t heads, 4C/t columns), proj and mlp.proj
// row-parallel (g: their partial outputs summed over the group), the embedding
// and the tied head vocabulary-parallel; with tp 1 every helper is the plain op.
// Under sequence parallelism (model/sequence_parallel.cpp) x, res_mid, res_out
// and the LayerNorms' statistics hold this rank's BT/t tokens (the first rows
// of their buffers); ln1_out, ln2_out and final_ln_out are all-gathered whole.
// Under context parallelism (model/context_parallel.h) T is this cp rank's
// tokens of every sequence and attention passes keys and values round the ring.
#include "model/gpt.h"

#include "model/mixture_of_experts.h"

namespace shardscope {

Event GptModel::moe_context(int l) const {
  Event context = event_context();  // the step and micro-batch; the layer's all-to-alls carry its unit
  context.layer = l;
  return context;
}

void GptModel::layer_forward(int l, const float* x, const Batch& batch) {
  const int B = batch.B, T = batch.T, BT = B * T, C = config_.channels;
  const int Ct = C / tp_size(), H = config_.heads / tp_size();  // this tp rank's columns and heads
  const LayerWeights& w = w_.layers[static_cast<std::size_t>(l)];
  LayerActivations& a = layer_acts(l);
  Backend& be = backend_;
  const std::int64_t mine = static_cast<std::int64_t>(sequence_rows(BT)) * C;  // this rank's tokens' elements
  sequence_layernorm_forward(a.ln1_out, a.ln1_mean, a.ln1_rstd, x, w.ln1_w, w.ln1_b, BT, C, l);
  be.linear_forward(a.qkv, a.ln1_out, w.qkv_w, w.qkv_b, BT, C, 3 * Ct);
  attention_forward(a.attn_y, a.probs, a.qkv, B, T, Ct, H, l);  // under cp, ring attention (context_parallel.cpp)
  stop_point();
  row_parallel_forward(a.res_mid, a.attn_y, w.proj_w, w.proj_b, BT, Ct, C, l);
  be.add(a.res_mid, a.res_mid, x, mine);
  sequence_layernorm_forward(a.ln2_out, a.ln2_mean, a.ln2_rstd, a.res_mid, w.ln2_w, w.ln2_b, BT, C, l);
  if (config_.moe_layer(l)) {  // the experts chosen by the router instead of one MLP (mixture_of_experts.h)
    moe_->forward(slot_index(), l - stage_.first_layer, l, a.res_out, a.ln2_out, w, BT, !recomputing_, moe_context(l));
  } else {
    be.linear_forward(a.fc, a.ln2_out, w.fc_w, w.fc_b, BT, C, 4 * Ct);
    stop_point();
    be.gelu_forward(a.gelu, a.fc, static_cast<std::int64_t>(BT) * 4 * Ct, config_.gelu);
    row_parallel_forward(a.res_out, a.gelu, w.fc_proj_w, w.fc_proj_b, BT, 4 * Ct, C, l);
  }
  be.add(a.res_out, a.res_out, a.res_mid, mine);
}

void GptModel::forward_impl(const Batch& batch) {
  const int B = batch.B, T = batch.T, BT = B * T, C = config_.channels;
  Activations& a = acts();
  if (stage_.embedding) {
    gather_parameters(0);
    token_embedding_forward(a.embed_sum, batch);
    release_parameters(0);
  }
  layers_forward(batch);
  if (!stage_.head) return;
  stop_point();  // before the head, the largest op for a large vocabulary
  gather_parameters(head_unit());
  gather_parameters(0);  // the tied token embedding
  sequence_layernorm_forward(a.final_ln_out, a.final_ln_mean, a.final_ln_rstd, stage_output(), w_.final_ln_w,
                             w_.final_ln_b, BT, C, -1);
  backend_.linear_forward(a.logits, a.final_ln_out, w_.tokens, nullptr, BT, C, config_.vocab / tp_size());
  release_parameters(0);
  release_parameters(head_unit());
}

void GptModel::layer_backward(int l, const float* x, const Batch& batch) {
  const int B = batch.B, T = batch.T, BT = B * T, C = config_.channels;
  const int Ct = C / tp_size(), H = config_.heads / tp_size();
  const LayerWeights& w = w_.layers[static_cast<std::size_t>(l)];
  LayerWeights& dw = dw_.layers[static_cast<std::size_t>(l)];
  const LayerActivations& a = layer_acts(l);
  BackwardScratch& s = scratch_;
  Backend& be = backend_;
  // MLP branch: d_res holds d(out) = d(res_mid) through the residual.
  // (Under sequence parallelism d_res holds this rank's tokens; g's backward gathers them.)
  if (config_.moe_layer(l)) {
    moe_->backward(slot_index(), l - stage_.first_layer, l, s.d_a, dw, s.d_res, a.ln2_out, w, BT, moe_aux_weight_,
                   moe_context(l));
  } else {
    layer_linear_backward(l, s.d_fc, dw.fc_proj_w, dw.fc_proj_b, sequence_gathered(s.d_res, BT, C, l), a.gelu,
                          w.fc_proj_w, BT, 4 * Ct, C);
    stop_point();
    be.gelu_backward(s.d_fc, s.d_fc, a.fc, static_cast<std::int64_t>(BT) * 4 * Ct, config_.gelu);
    column_parallel_backward(s.d_a, dw.fc_w, dw.fc_b, s.d_fc, a.ln2_out, w.fc_w, BT, C, 4 * Ct, l);
  }
  stop_point();
  sequence_layernorm_backward(s.d_res, dw.ln2_w, dw.ln2_b, s.d_a, a.res_mid, w.ln2_w, a.ln2_mean, a.ln2_rstd, BT, C,
                              /*accumulate=*/true);
  // Attention branch: d_res now holds d(res_mid) = d(x) through the residual.
  layer_linear_backward(l, s.d_a, dw.proj_w, dw.proj_b, sequence_gathered(s.d_res, BT, C, l), a.attn_y, w.proj_w, BT,
                        Ct, C);
  attention_backward(s.d_qkv, s.d_probs, s.d_a, a.qkv, a.attn_y, a.probs, B, T, Ct, H, l);
  stop_point();
  column_parallel_backward(s.d_a, dw.qkv_w, dw.qkv_b, s.d_qkv, a.ln1_out, w.qkv_w, BT, C, 3 * Ct, l);
  sequence_layernorm_backward(s.d_res, dw.ln1_w, dw.ln1_b, s.d_a, x, w.ln1_w, a.ln1_mean, a.ln1_rstd, BT, C,
                              /*accumulate=*/true);
}

void GptModel::backward_impl(const Batch& batch, float dloss_per_row) {
  const int BT = batch.B * batch.T, C = config_.channels, V = config_.vocab / tp_size();
  const Activations& a = acts();
  BackwardScratch& s = scratch_;
  gradients_needed(0);  // the token embedding's gradient builds up over the whole backward
  if (stage_.head) {
    gradients_needed(head_unit());
    gather_parameters(head_unit());
    gather_parameters(0);
    cross_entropy_backward(batch, dloss_per_row);
    stop_point();
    // logits = final_ln_out @ tokens^T: the tied head adds its gradient to the
    // token embedding (its vocabulary slice: a column-parallel layer).
    column_parallel_backward(s.d_a, dw_.tokens, nullptr, s.d_logits, a.final_ln_out, w_.tokens, BT, C, V, -1);
    sequence_layernorm_backward(s.d_res, dw_.final_ln_w, dw_.final_ln_b, s.d_a, stage_output(), w_.final_ln_w,
                                a.final_ln_mean, a.final_ln_rstd, BT, C, /*accumulate=*/false);
    release_parameters(0);
    release_parameters(head_unit());
    gradients_done(head_unit());
    gradients_ready(layout_.find_unit(head_unit())->begin);
  }  // else d_res holds the gradient of this stage's output, received from the next stage
  layers_backward(batch);

  if (stage_.embedding) token_embedding_backward(s.d_res, batch);
  gradients_done(0);
  gradients_ready(0);  // else d_res is now the gradient of this stage's input
}

}  // namespace shardscope
