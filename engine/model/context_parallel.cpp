// SPDX-License-Identifier: GPL-3.0-or-later
// The model's context-parallel pieces (model/context_parallel.h): this cp
// rank's tokens of a batch, and ring attention forward and backward. With
// cp 1 attention is the backend's op and nothing else runs.
//
// The ring's blocks are (B, T, 2C): each local token's keys then values,
// packed from the fused qkv rows (T: this rank's tokens, C: this tp rank's
// channels). The block loops run on host memory (the CPU backend); the run
// refuses --cp with --device cuda until they have device kernels. A block
// exchange is a call on the rank's compute stream between two block
// computations: this engine does not overlap it with the next block's
// compute as real implementations do (each send goes out while the block
// before it is computed), so the virtual clock counts its link time in full.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "model/model.h"

namespace shardscope {

namespace {

constexpr float kNoKeys = -std::numeric_limits<float>::infinity();

// Where one (sequence, head)'s queries and one block's keys and values sit.
struct BlockView {
  const float* qkv;  // (B, T, 3C) this rank's fused rows
  const float* kv;   // (B, T, 2C) the block held at this ring step
  int B, T, C, H, hd;
  float scale;
  const float* q(int b, int h, int t) const { return qkv + (static_cast<std::int64_t>(b) * T + t) * 3 * C + h * hd; }
  const float* k(int b, int h, int t) const { return kv + (static_cast<std::int64_t>(b) * T + t) * 2 * C + h * hd; }
  const float* v(int b, int h, int t) const { return k(b, h, t) + C; }
};

float dot(const float* a, const float* b, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

float* Model::cp_block_floats(std::int64_t floats) {
  if (cp_blocks_.bytes() < floats * 4) {
    cp_blocks_ = Buffer();
    cp_blocks_ = Buffer(ledger_, MemoryCategory::communication, floats * 4);
  }
  return cp_blocks_.floats();
}

// The slot keeps this rank's ids, targets, segments and padding mask ((B, T) each),
// then the whole batch's padding mask (B, T cp): attention looks up every block's keys in it.
void Model::context_parallel_embedding_forward(float* rows, const Batch& batch, std::int64_t first,
                                               std::int64_t owned) {
  const int T = batch.T, C = config_.channels;
  const bool bert = config_.kind == ModelKind::bert;
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(batch.B) * T; ++r) {
    const std::int64_t local = batch.input_ids[r] - first;
    float* row = rows + r * C;
    const bool mine = local >= 0 && local < owned;
    const float* token = w_.tokens + local * C;
    const float* position = w_.positions + static_cast<std::int64_t>(global_position(static_cast<int>(r % T), T)) * C;
    for (int c = 0; c < C; ++c) row[c] = mine ? token[c] + position[c] : 0.0f;
    if (!bert || !mine) continue;
    const float* type = w_.token_types + static_cast<std::int64_t>(batch.token_type_ids[r]) * C;
    for (int c = 0; c < C; ++c) row[c] += type[c];
  }
}

void Model::context_parallel_embedding_backward(const float* d_out, const Batch& batch, std::int64_t first,
                                                std::int64_t owned) {
  const int T = batch.T, C = config_.channels;
  const bool bert = config_.kind == ModelKind::bert;
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(batch.B) * T; ++r) {
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
  Batch local = whole;
  local.T = T;
  std::int32_t* base = s.cp_tokens.data();
  local.input_ids = base;
  local.targets = whole.targets != nullptr ? base + n : nullptr;
  local.token_type_ids = whole.token_type_ids != nullptr ? base + 2 * n : nullptr;
  local.attention_mask = whole.attention_mask != nullptr ? base + 3 * n : nullptr;
  return local;
}

bool Model::context_parallel_key_visible(int b, int key_position, int query_position, int T) const {
  if (config_.kind == ModelKind::gpt && key_position > query_position) return false;  // causal
  const std::vector<std::int32_t>& tokens = slot().cp_tokens;
  const std::size_t whole_mask = 4 * static_cast<std::size_t>(acts().B) * T;  // BERT's padding, if given
  return tokens.size() == whole_mask ||
         tokens[whole_mask + static_cast<std::size_t>(b) * T * cp_size() + key_position] != 0;
}

// Forward: out (B, T, C) and each row's log-sum-exp (B, H, T) in probs, merged
// block by block: lse = max + log(1 + e^-|lse_a - lse_b|), out weighted by e^(lse_x - lse).
void Model::attention_forward(float* out, float* probs, const float* qkv, int B, int T, int C, int H, int layer) {
  if (cp_size() == 1) {
    backend_.attention_forward(out, probs, qkv, B, T, C, H, AttentionMask{true, nullptr});
    return;
  }
  const int cp = cp_size(), me = cp_group_->rank(), hd = C / H;
  const std::int64_t block = static_cast<std::int64_t>(B) * T * 2 * C;
  float* held = cp_block_floats(4 * block);
  float* arriving = held + block;
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(B) * T; ++r)
    std::copy(qkv + r * 3 * C + C, qkv + r * 3 * C + 3 * C, held + r * 2 * C);
  std::fill(out, out + static_cast<std::int64_t>(B) * T * C, 0.0f);
  std::fill(probs, probs + static_cast<std::int64_t>(B) * H * T, kNoKeys);
  Event context = event_base_;
  context.layer = layer;
  std::vector<float> weights(static_cast<std::size_t>(T)), partial(static_cast<std::size_t>(hd));
  for (int step = 0; step < cp; ++step) {
    const int owner = (me - step + cp) % cp;
    if (step + 1 < cp)
      cp_group_->ring_exchange(held, arriving, block, context, ComputeKind::forward, owner, step, false);
    const BlockView view{qkv, held, B, T, C, H, hd, 1.0f / std::sqrt(static_cast<float>(hd))};
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < T; ++i) {
          const int at = global_position(i, T);
          float top = kNoKeys;
          for (int j = 0; j < T; ++j) {
            const bool seen =
                context_parallel_key_visible(b, context_parallel_position(j, T, owner, cp, cp_group_->zigzag()), at, T);
            weights[j] = seen ? dot(view.q(b, h, i), view.k(b, h, j), hd) * view.scale : kNoKeys;
            top = std::max(top, weights[j]);
          }
          if (top == kNoKeys) continue;  // every key of this block lies after the query
          float sum = 0.0f;
          std::fill(partial.begin(), partial.end(), 0.0f);
          for (int j = 0; j < T; ++j) {
            if (weights[j] == kNoKeys) continue;
            const float e = std::exp(weights[j] - top);
            sum += e;
            const float* v = view.v(b, h, j);
            for (int d = 0; d < hd; ++d) partial[d] += e * v[d];
          }
          const float block_lse = top + std::log(sum);
          float& lse = probs[(static_cast<std::int64_t>(b) * H + h) * T + i];
          const float merged =
              lse == kNoKeys ? block_lse : std::max(lse, block_lse) + std::log1p(std::exp(-std::abs(lse - block_lse)));
          const float keep = lse == kNoKeys ? 0.0f : std::exp(lse - merged), add = std::exp(block_lse - merged) / sum;
          float* y = out + (static_cast<std::int64_t>(b) * T + i) * C + h * hd;
          for (int d = 0; d < hd; ++d) y[d] = y[d] * keep + partial[d] * add;
          lse = merged;
        }
    std::swap(held, arriving);
  }
}

// Backward: with D = rowsum(dY o Y) and P = e^(S - lse) per block,
//   dV_j += P_ij dY_i,  dS_ij = P_ij (dY_i . V_j - D_i),  dQ_i += scale dS_ij K_j,  dK_j += scale dS_ij Q_i.
// The blocks go round again; each block's dK, dV accumulator travels with
// it and reaches its owner after cp exchanges.
void Model::attention_backward(float* d_qkv, float* scratch, const float* d_out, const float* qkv, const float* out,
                               const float* probs, int B, int T, int C, int H, int layer) {
  if (cp_size() == 1) {
    backend_.attention_backward(d_qkv, scratch, d_out, qkv, out, probs, B, T, C, H, AttentionMask{true, nullptr});
    return;
  }
  const int cp = cp_size(), me = cp_group_->rank(), hd = C / H;
  const std::int64_t block = static_cast<std::int64_t>(B) * T * 2 * C, rows = static_cast<std::int64_t>(B) * T;
  float* held = cp_block_floats(4 * block);
  float* arriving = held + block;
  float* grads = arriving + block;
  float* grads_arriving = grads + block;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::copy(qkv + r * 3 * C + C, qkv + r * 3 * C + 3 * C, held + r * 2 * C);
    std::fill(d_qkv + r * 3 * C, d_qkv + r * 3 * C + C, 0.0f);  // dQ adds up over the blocks
  }
  std::fill(grads, grads + block, 0.0f);
  float* row_dot = scratch;  // D (B, H, T)
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < T; ++i) {
        const std::int64_t at = (static_cast<std::int64_t>(b) * T + i) * C + h * hd;
        row_dot[(static_cast<std::int64_t>(b) * H + h) * T + i] = dot(d_out + at, out + at, hd);
      }
  Event context = event_base_;
  context.layer = layer;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int step = 0; step < cp; ++step) {
    const int owner = (me - step + cp) % cp;
    if (step + 1 < cp)
      cp_group_->ring_exchange(held, arriving, block, context, ComputeKind::backward, owner, step, false);
    const BlockView view{qkv, held, B, T, C, H, hd, scale};
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < T; ++i) {
          const int at = global_position(i, T);
          const std::int64_t row = (static_cast<std::int64_t>(b) * H + h) * T + i;
          const float* dy = d_out + (static_cast<std::int64_t>(b) * T + i) * C + h * hd;
          float* dq = d_qkv + (static_cast<std::int64_t>(b) * T + i) * 3 * C + h * hd;
          const float* q = view.q(b, h, i);
          if (probs[row] == kNoKeys) continue;  // a query that sees no key (all padding) has no gradient
          for (int j = 0; j < T; ++j) {
            if (!context_parallel_key_visible(b, context_parallel_position(j, T, owner, cp, cp_group_->zigzag()), at,
                                              T))
              continue;
            const float p = std::exp(dot(q, view.k(b, h, j), hd) * scale - probs[row]);
            const float ds = p * (dot(dy, view.v(b, h, j), hd) - row_dot[row]) * scale;
            float* dk = grads + (static_cast<std::int64_t>(b) * T + j) * 2 * C + h * hd;
            float* dv = dk + C;
            const float* k = view.k(b, h, j);
            for (int d = 0; d < hd; ++d) {
              dv[d] += p * dy[d];
              dq[d] += ds * k[d];
              dk[d] += ds * q[d];
            }
          }
        }
    cp_group_->ring_exchange(grads, grads_arriving, block, context, ComputeKind::backward, owner, step, true);
    std::swap(held, arriving);
    std::swap(grads, grads_arriving);
  }
  for (std::int64_t r = 0; r < rows; ++r)  // this rank's own block's dK, dV, home complete
    std::copy(grads + r * 2 * C, grads + r * 2 * C + 2 * C, d_qkv + r * 3 * C + C);
}

}  // namespace shardscope
