// SPDX-License-Identifier: GPL-3.0-or-later
// Expert parallelism as the MoE layer runs it (model/mixture_of_experts.h):
// this rank's packed rows are already grouped by expert, so by the rank that
// owns the expert (peer q owns experts [q E/ep, (q + 1) E/ep)). Three
// all-to-alls per forward: the rows per (peer, expert), the rows themselves
// (dispatch), and the experts' outputs back (combine); backward sends the
// outputs' gradients and brings the inputs' gradients back. The rank stores
// only its own E/ep experts (model/parameter_layout.h), local experts 0..E/ep.
#include "model/mixture_of_experts.h"

namespace shardscope {

namespace {
// Rows held peer by peer (peer s, then expert i) regrouped expert by expert
// (expert i, then peer s), or back: counts (peers x experts) rows of `width` floats.
void regroup(const float* from, float* to, const std::vector<std::int64_t>& counts, int peers, int experts,
             std::int64_t width, bool to_expert_major) {
  std::vector<std::int64_t> by_peer(counts.size()), by_expert(counts.size());
  std::int64_t at = 0;
  for (std::size_t s = 0; s < static_cast<std::size_t>(peers); ++s)
    for (std::size_t i = 0; i < static_cast<std::size_t>(experts); ++i)
      at += counts[s * experts + i], by_peer[s * experts + i] = at - counts[s * experts + i];
  at = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(experts); ++i)
    for (std::size_t s = 0; s < static_cast<std::size_t>(peers); ++s)
      at += counts[s * experts + i], by_expert[s * experts + i] = at - counts[s * experts + i];
  for (std::size_t b = 0; b < counts.size(); ++b) {
    const std::int64_t src = to_expert_major ? by_peer[b] : by_expert[b];
    const std::int64_t dst = to_expert_major ? by_expert[b] : by_peer[b];
    std::copy(from + src * width, from + (src + counts[b]) * width, to + dst * width);
  }
}

std::int64_t recv_total(const std::vector<std::int64_t>& floats) {
  std::int64_t n = 0;
  for (std::int64_t f : floats) n += f;
  return n;
}
}  // namespace

void MixtureOfExperts::parallel_experts_forward(Routing& r, const LayerWeights& w, const Event& context) {
  const int ep = group_->size(), L = config_.experts / ep;
  const std::int64_t C = config_.channels;
  // The rows this rank sends each peer for each of the peer's experts; those it gets.
  std::vector<float> sending(static_cast<std::size_t>(ep * L)), getting(sending.size());
  for (int e = 0; e < config_.experts; ++e)
    sending[static_cast<std::size_t>(e)] = static_cast<float>(r.expert_begin[e + 1] - r.expert_begin[e]);
  const std::vector<std::int64_t> per_peer(static_cast<std::size_t>(ep), L);
  group_->all_to_all(sending.data(), per_peer, getting.data(), per_peer, context);
  r.received.assign(getting.begin(), getting.end());
  std::vector<std::int64_t> send_floats(static_cast<std::size_t>(ep)), recv_floats(send_floats.size());
  std::vector<std::int64_t> mine(static_cast<std::size_t>(L), 0);  // rows per expert of this rank
  for (std::size_t q = 0; q < static_cast<std::size_t>(ep); ++q) {
    send_floats[q] = (r.expert_begin[(q + 1) * L] - r.expert_begin[q * L]) * C;
    for (std::size_t i = 0; i < static_cast<std::size_t>(L); ++i) {
      recv_floats[q] += r.received[q * L + i] * C;
      mine[i] += r.received[q * L + i];
    }
  }
  // Dispatch: the rows to their experts' ranks; the experts run on them, expert by expert.
  // (At most E x capacity rows arrive: the staging and the kept rows are laid out for that.)
  float* arrived = exchange_rows(r);
  float* expert_out = arrived + std::int64_t{config_.experts} * r.capacity * C;
  group_->all_to_all(r.in, send_floats, arrived, recv_floats, context);
  regroup(arrived, r.expert_in, r.received, ep, L, C, true);
  experts_forward(w, 0, mine, r.expert_in, r.expert_fc, r.expert_gelu, expert_out);
  // Combine: the outputs back to the ranks their tokens live on, in the order they came.
  regroup(expert_out, arrived, r.received, ep, L, C, false);
  group_->all_to_all(arrived, recv_floats, r.out, send_floats, context);
}

void MixtureOfExperts::parallel_experts_backward(Routing& r, LayerWeights& dw, const LayerWeights& w,
                                                 const Event& context) {
  const int ep = group_->size(), L = config_.experts / ep;
  const std::int64_t C = config_.channels;
  std::vector<std::int64_t> send_floats(static_cast<std::size_t>(ep)), recv_floats(send_floats.size());
  std::vector<std::int64_t> mine(static_cast<std::size_t>(L), 0);
  for (std::size_t q = 0; q < static_cast<std::size_t>(ep); ++q) {
    send_floats[q] = (r.expert_begin[(q + 1) * L] - r.expert_begin[q * L]) * C;
    for (std::size_t i = 0; i < static_cast<std::size_t>(L); ++i) {
      recv_floats[q] += r.received[q * L + i] * C;
      mine[i] += r.received[q * L + i];
    }
  }
  // The outputs' gradients to the experts' ranks; the inputs' gradients back.
  const std::int64_t bound = std::int64_t{config_.experts} * r.capacity * C, rows_here = recv_total(recv_floats);
  float* arrived = exchange_rows(r);
  float* d_out = arrived + bound;
  float* d_in = d_out + bound;
  group_->all_to_all(d_out_.data(), send_floats, arrived, recv_floats, context);
  regroup(arrived, d_out, r.received, ep, L, C, true);
  // The experts' weight gradients over 1/ep: each rank's loss is weighted as one
  // of dp data-parallel ranks' (the dp average divides by dp), and these experts
  // took the tokens of ep of them, while their gradients are averaged over the
  // dp/ep ranks that hold them (the expert-data-parallel group). The inputs'
  // gradients are scaled back (exact for ep a power of two).
  const float share = 1.0f / static_cast<float>(ep);
  for (std::int64_t i = 0; i < rows_here; ++i) d_out[i] *= share;
  experts_backward(dw, w, 0, mine, d_out, r.expert_in, r.expert_fc, r.expert_gelu, d_in);
  for (std::int64_t i = 0; i < rows_here; ++i) d_in[i] *= static_cast<float>(ep);
  regroup(d_in, arrived, r.received, ep, L, C, false);
  group_->all_to_all(arrived, recv_floats, d_in_.data(), send_floats, context);
}

}  // namespace shardscope
