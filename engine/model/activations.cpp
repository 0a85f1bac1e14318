// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/activations.h"

#include <algorithm>

namespace shardscope {

namespace {
// Hands out consecutive views of a float buffer; with a null buffer it only counts.
struct Carver {
  float* base;
  std::int64_t used = 0;
  float* take(std::int64_t n) {
    float* p = base != nullptr ? base + used : nullptr;
    used += n;
    return p;
  }
};

void carve_activations(Activations& a, const ModelConfig& c, int B, int T, bool checkpointing,
                       const StageLayers& stage, AttentionKernel kernel, Carver& k) {
  const std::int64_t BT = static_cast<std::int64_t>(B) * T, C = c.channels;
  const bool bert = c.kind == ModelKind::bert;
  const bool embed = stage.embedding, head = stage.head;
  // Tensor parallelism: the split layers' activations are this rank's heads
  // and MLP columns, the logits its vocabulary slice; the rest whole.
  const std::int64_t t = stage.tp_size, H = c.heads / t, V = c.vocab / t;
  // Sequence parallelism (model/sequence_parallel.cpp): the residual stream
  // (a layer's input, res_mid, res_out) and the LayerNorms' statistics hold
  // this rank's BT/t tokens; the LayerNorm outputs, all-gathered for the
  // column-parallel linears (and kept for their weight gradients), stay whole.
  const std::int64_t mine = stage.sequence_parallel && t > 1 ? BT / t : BT;
  a.B = B;
  a.T = T;
  // BERT's layer output is its (gathered) ln2_out, its head's LayerNorm on whole tokens.
  const std::int64_t output = bert ? BT : mine, head_rows = bert ? BT : mine;
  // A stage of several chunks (interleaved) receives the input of its later chunks even where chunk 0 embeds.
  a.stage_input = embed && stage.chunks == 1 ? nullptr : k.take(output * C);
  a.embed_sum = embed ? k.take(mine * C) : nullptr;
  a.embed_ln_out = embed && bert ? k.take(BT * C) : nullptr;
  a.embed_ln_mean = embed && bert ? k.take(mine) : nullptr;
  a.embed_ln_rstd = embed && bert ? k.take(mine) : nullptr;
  a.checkpointing = checkpointing;
  const auto layers = static_cast<std::size_t>(stage.layer_count());
  a.layers.resize(checkpointing ? std::min<std::size_t>(1, layers) : layers);
  a.layer_outputs.assign(checkpointing ? layers : 0, nullptr);
  for (auto& out : a.layer_outputs) out = k.take(output * C);
  for (auto& l : a.layers) {
    l.ln1_out = k.take(BT * C);
    l.ln1_mean = k.take(mine);
    l.ln1_rstd = k.take(mine);
    l.qkv = k.take(BT * 3 * C / t);
    l.probs = k.take(attention_saved_floats(kernel, B, static_cast<int>(H), T));
    l.attn_y = k.take(BT * C / t);
    l.res_mid = k.take(mine * C);
    l.ln2_out = k.take(BT * C);
    l.ln2_mean = k.take(mine);
    l.ln2_rstd = k.take(mine);
    l.fc = k.take(BT * 4 * C / t);
    l.gelu = k.take(BT * 4 * C / t);
    l.res_out = k.take(mine * C);
  }
  a.head_dense = head && bert ? k.take(BT * C) : nullptr;
  a.head_gelu = head && bert ? k.take(BT * C) : nullptr;
  a.final_ln_out = head ? k.take(BT * C) : nullptr;
  a.final_ln_mean = head ? k.take(head_rows) : nullptr;
  a.final_ln_rstd = head ? k.take(head_rows) : nullptr;
  a.logits = head ? k.take(BT * V) : nullptr;
  a.losses = head ? k.take(BT) : nullptr;
  a.log_sum_exp = head && t > 1 ? k.take(BT) : nullptr;
  a.pooled = head && bert && c.pooler ? k.take(static_cast<std::int64_t>(B) * C) : nullptr;
}

void carve_scratch(BackwardScratch& s, const ModelConfig& c, int B, int T, bool head, AttentionKernel kernel, int tp,
                   Carver& k) {
  const std::int64_t BT = static_cast<std::int64_t>(B) * T, C = c.channels;
  s.d_res = k.take(BT * C);
  s.d_a = k.take(BT * C);
  s.d_qkv = k.take(BT * std::max<std::int64_t>(3 * C / tp, C));  // BERT's head backward uses it as (B, T, C)
  s.d_fc = k.take(BT * 4 * C / tp);
  s.d_probs = k.take(attention_scratch_floats(kernel, B, c.heads / tp, T));
  s.d_logits = head ? k.take(BT * (c.vocab / tp)) : nullptr;
}
}  // namespace

std::int64_t Activations::layer_floats(const ModelConfig& c, int batch, int seq, AttentionKernel kernel) {
  const std::int64_t BT = static_cast<std::int64_t>(batch) * seq;
  return BT * (16 * static_cast<std::int64_t>(c.channels) + 4) + attention_saved_floats(kernel, batch, c.heads, seq);
}

std::int64_t Activations::total_floats(const ModelConfig& config, int batch, int seq, bool keep_outputs_only,
                                       const StageLayers& stage, AttentionKernel kernel) {
  Activations a;
  Carver k{nullptr};
  carve_activations(a, config, batch, seq, keep_outputs_only, stage, kernel, k);
  return k.used;
}

void Activations::bind(const ModelConfig& config, int batch, int seq, bool keep_outputs_only, const StageLayers& stage,
                       float* buffer, AttentionKernel kernel) {
  Carver k{buffer};
  carve_activations(*this, config, batch, seq, keep_outputs_only, stage, kernel, k);
}

std::int64_t BackwardScratch::total_floats(const ModelConfig& config, int B, int T, bool head, AttentionKernel kernel,
                                           int tp) {
  BackwardScratch s;
  Carver k{nullptr};
  carve_scratch(s, config, B, T, head, kernel, tp, k);
  return k.used;
}

void BackwardScratch::bind(const ModelConfig& config, int B, int T, bool head, float* buffer, AttentionKernel kernel,
                           int tp) {
  Carver k{buffer};
  carve_scratch(*this, config, B, T, head, kernel, tp, k);
}

}  // namespace shardscope
