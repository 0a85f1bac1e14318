// SPDX-License-Identifier: GPL-3.0-or-later
// The model's context-parallel pieces (model/context_parallel.h): this cp
// rank's tokens of a batch, and ring attention forward and backward. With
// cp 1 attention is the backend's op and nothing else runs.
//
// The ring's blocks are (B, T, 2C): each local token's keys then values,
// packed from the fused qkv rows (T: this rank's tokens, C: this tp rank's
// channels). Each block's work is a backend op (ops/ring_attention.h: the
// CPU's loops, the CUDA backend's kernels), so the blocks live in the
// backend's memory and the ring exchanges them there. A block
// exchange is a call on the rank's compute stream between two block
// computations: this engine does not overlap it with the next block's
// compute as real implementations do (each send goes out while the block
// before it is computed), so the virtual clock counts its link time in full.
#include <algorithm>
#include <cmath>
#include <utility>

#include "model/model.h"

namespace shardscope {

float* Model::cp_block_floats(std::int64_t floats) {
  if (cp_blocks_.bytes() < floats * 4) {
    cp_blocks_ = Buffer();
    cp_blocks_ = Buffer(ledger_, MemoryCategory::communication, floats * 4);
  }
  return cp_blocks_.floats();
}

// The vocabulary-parallel embedding ops with this rank's position rows: the
// rows of its tokens' places in the whole sequence gathered into (T, C) for the
// lookup, and for the gradient gathered, added to and put back (the places are
// distinct, so each position row sees the additions the loop over rows made).
float* Model::context_parallel_positions(int T, bool gather_gradients) {
  const int C = config_.channels;
  float* rows = fit(cp_positions_, static_cast<std::int64_t>(T) * C);
  const float* from = gather_gradients ? dw_.positions : w_.positions;
  for (int t = 0; t < T; ++t)
    backend_.copy(rows + static_cast<std::int64_t>(t) * C, from + static_cast<std::int64_t>(global_position(t, T)) * C,
                  std::int64_t{4} * C);
  return rows;
}

void Model::context_parallel_embedding_forward(float* rows, const Batch& batch, std::int64_t first,
                                               std::int64_t owned) {
  const bool bert = config_.kind == ModelKind::bert;
  backend_.vocab_embedding_forward(rows, batch.input_ids, bert ? batch.token_type_ids : nullptr, w_.tokens,
                                   context_parallel_positions(batch.T, false), bert ? w_.token_types : nullptr, batch.B,
                                   batch.T, config_.channels, static_cast<int>(first), static_cast<int>(owned));
}

void Model::context_parallel_embedding_backward(const float* d_out, const Batch& batch, std::int64_t first,
                                                std::int64_t owned) {
  const int T = batch.T, C = config_.channels;
  const bool bert = config_.kind == ModelKind::bert;
  float* positions = context_parallel_positions(T, true);
  backend_.vocab_embedding_backward(dw_.tokens, positions, bert ? dw_.token_types : nullptr, d_out, batch.input_ids,
                                    bert ? batch.token_type_ids : nullptr, batch.B, T, C, static_cast<int>(first),
                                    static_cast<int>(owned));
  for (int t = 0; t < T; ++t)
    backend_.copy(dw_.positions + static_cast<std::int64_t>(global_position(t, T)) * C,
                  positions + static_cast<std::int64_t>(t) * C, std::int64_t{4} * C);
}

// The slot keeps this rank's ids, targets, segments and padding mask ((B, T) each),
// then the whole batch's padding mask (B, T cp): attention looks up every block's keys in it.
Batch Model::context_parallel_batch(const Batch& whole) {
  const int T = whole.T / cp_size(), B = whole.B;
  const auto n = static_cast<std::size_t>(B) * T;
  const std::size_t mask_size = whole.attention_mask != nullptr ? static_cast<std::size_t>(B) * whole.T : 0;
  Slot& s = slot();
  s.cp_tokens.assign(4 * n + mask_size, 0);
  const std::int32_t* from_whole[4] = {whole.input_ids, whole.targets, whole.token_type_ids, whole.attention_mask};
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const std::size_t from = static_cast<std::size_t>(b) * whole.T + global_position(t, T);
      const std::size_t to = static_cast<std::size_t>(b) * T + t;
      for (std::size_t k = 0; k < 4; ++k)
        if (from_whole[k] != nullptr) s.cp_tokens[k * n + to] = from_whole[k][from];
    }
  if (mask_size > 0) std::copy(whole.attention_mask, whole.attention_mask + mask_size, s.cp_tokens.begin() + 4 * n);
  if (mask_size > 0 && !backend_.host_memory()) {
    const auto bytes = static_cast<std::int64_t>(mask_size * sizeof(std::int32_t));
    if (s.cp_device_mask.bytes() != bytes) {
      s.cp_device_mask = Buffer();
      s.cp_device_mask = Buffer(ledger_, MemoryCategory::activations, bytes);
    }
    backend_.upload(s.cp_device_mask.data(), whole.attention_mask, bytes);
  }
  Batch local = whole;
  local.T = T;
  std::int32_t* base = s.cp_tokens.data();
  local.input_ids = base;
  local.targets = whole.targets != nullptr ? base + n : nullptr;
  local.token_type_ids = whole.token_type_ids != nullptr ? base + 2 * n : nullptr;
  local.attention_mask = whole.attention_mask != nullptr ? base + 3 * n : nullptr;
  return local;
}

// Block `owner` of the ring against this rank's queries: GPT causal, BERT by the
// padding mask of the whole batch (B, T cp), which the slot keeps after this
// rank's tokens (on a device backend, uploaded by context_parallel_batch).
RingAttentionBlock Model::ring_block(int B, int T, int C, int H, int owner) const {
  RingAttentionBlock k;
  k.B = B, k.T = T, k.C = C, k.H = H;
  k.rank = cp_group_->rank(), k.owner = owner, k.cp = cp_size();
  k.zigzag = cp_group_->zigzag();
  k.causal = config_.kind == ModelKind::gpt;
  const Slot& s = slot();
  const std::size_t whole_mask = 4 * static_cast<std::size_t>(B) * T;
  if (s.cp_tokens.size() > whole_mask)
    k.padding = backend_.host_memory() ? s.cp_tokens.data() + whole_mask
                                       : static_cast<const std::int32_t*>(s.cp_device_mask.data());
  return k;
}

// Forward: out (B, T, C) and each row's log-sum-exp (B, H, T) in probs, merged
// block by block (the backend's ring_attention_forward).
void Model::attention_forward(float* out, float* probs, const float* qkv, int B, int T, int C, int H, int layer) {
  if (cp_size() == 1) {
    backend_.attention_forward(out, probs, qkv, B, T, C, H, AttentionMask{true, nullptr});
    return;
  }
  const int cp = cp_size(), me = cp_group_->rank();
  const std::int64_t block = static_cast<std::int64_t>(B) * T * 2 * C;
  float* held = cp_block_floats(4 * block);
  float* arriving = held + block;
  backend_.copy_columns(held, 2 * C, qkv + C, 3 * C, static_cast<std::int64_t>(B) * T, 2 * C);  // K, V
  backend_.fill(out, 0.0f, static_cast<std::int64_t>(B) * T * C);
  backend_.fill(probs, -INFINITY, static_cast<std::int64_t>(B) * H * T);
  Event context = event_base_;
  context.layer = layer;
  for (int step = 0; step < cp; ++step) {
    const int owner = (me - step + cp) % cp;
    if (step + 1 < cp)
      cp_group_->ring_exchange(held, arriving, block, context, ComputeKind::forward, owner, step, false);
    backend_.ring_attention_forward(out, probs, qkv, held, ring_block(B, T, C, H, owner));
    std::swap(held, arriving);
  }
}

// Backward: D = rowsum(dY o Y), then per block dQ, dK, dV from the saved
// log-sum-exp (the backend's ring_attention_backward). The blocks go round
// again; each block's dK, dV accumulator travels with it and reaches its
// owner after cp exchanges.
void Model::attention_backward(float* d_qkv, float* scratch, const float* d_out, const float* qkv, const float* out,
                               const float* probs, int B, int T, int C, int H, int layer) {
  if (cp_size() == 1) {
    backend_.attention_backward(d_qkv, scratch, d_out, qkv, out, probs, B, T, C, H, AttentionMask{true, nullptr});
    return;
  }
  const int cp = cp_size(), me = cp_group_->rank();
  const std::int64_t block = static_cast<std::int64_t>(B) * T * 2 * C, rows = static_cast<std::int64_t>(B) * T;
  float* held = cp_block_floats(4 * block);
  float* arriving = held + block;
  float* grads = arriving + block;
  float* grads_arriving = grads + block;
  backend_.copy_columns(held, 2 * C, qkv + C, 3 * C, rows, 2 * C);
  backend_.fill(grads, 0.0f, block);
  float* row_dot = scratch;  // D (B, H, T)
  backend_.attention_row_dot(row_dot, d_out, out, B, T, C, H);
  Event context = event_base_;
  context.layer = layer;
  for (int step = 0; step < cp; ++step) {
    const int owner = (me - step + cp) % cp;
    if (step + 1 < cp)
      cp_group_->ring_exchange(held, arriving, block, context, ComputeKind::backward, owner, step, false);
    backend_.ring_attention_backward(d_qkv, grads, d_out, qkv, held, probs, row_dot, step == 0,
                                     ring_block(B, T, C, H, owner));
    cp_group_->ring_exchange(grads, grads_arriving, block, context, ComputeKind::backward, owner, step, true);
    std::swap(held, arriving);
    std::swap(grads, grads_arriving);
  }
  backend_.copy_columns(d_qkv + C, 3 * C, grads, 2 * C, rows, 2 * C);  // this rank's own dK, dV, home complete
}

}  // namespace shardscope
