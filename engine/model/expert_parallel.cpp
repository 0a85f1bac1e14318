// SPDX-License-Identifier: GPL-3.0-or-later
// Expert parallelism as the MoE layer runs it (model/mixture_of_experts.h):
// this rank's packed rows are already grouped by expert, so by the rank that
// owns the expert (peer q owns experts [q E/ep, (q + 1) E/ep)). Three
// all-to-alls per forward: the rows per (peer, expert), the rows themselves
// (dispatch), and the experts' outputs back (combine); backward sends the
// outputs' gradients and brings the inputs' gradients back.
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
}  // namespace

void MixtureOfExperts::parallel_experts_forward(Routing& r, const LayerWeights& w, const Event& context) {
  const int ep = group_->size(), me = group_->rank(), L = config_.experts / ep;
  const std::int64_t C = config_.channels, H = 4 * C;
  // The rows this rank sends each peer for each of the peer's experts; those it gets.
  std::vector<float> sending(static_cast<std::size_t>(ep * L)), getting(sending.size());
  for (int e = 0; e < config_.experts; ++e)
    sending[static_cast<std::size_t>(e)] = static_cast<float>(r.expert_begin[e + 1] - r.expert_begin[e]);
  const std::vector<std::int64_t> per_peer(static_cast<std::size_t>(ep), L);
  group_->all_to_all(sending.data(), per_peer, getting.data(), per_peer, context);
  r.received.assign(getting.begin(), getting.end());
  std::vector<std::int64_t> send_floats(static_cast<std::size_t>(ep)), recv_floats(send_floats.size());
  std::vector<std::int64_t> mine(static_cast<std::size_t>(L), 0);  // rows per expert of this rank
  std::int64_t total = 0;
  for (std::size_t q = 0; q < static_cast<std::size_t>(ep); ++q) {
    send_floats[q] = (r.expert_begin[(q + 1) * L] - r.expert_begin[q * L]) * C;
    for (std::size_t i = 0; i < static_cast<std::size_t>(L); ++i) {
      recv_floats[q] += r.received[q * L + i] * C;
      mine[i] += r.received[q * L + i];
      total += r.received[q * L + i];
    }
  }
  // Dispatch: the rows to their experts' ranks; the experts run on them, expert by expert.
  std::vector<float> arrived(static_cast<std::size_t>(total * C));
  group_->all_to_all(r.in, send_floats, arrived.data(), recv_floats, context);
  r.expert_in.resize(arrived.size());
  r.expert_fc.resize(static_cast<std::size_t>(total * H));
  r.expert_gelu.resize(r.expert_fc.size());
  regroup(arrived.data(), r.expert_in.data(), r.received, ep, L, C, true);
  std::vector<float> expert_out(arrived.size());
  experts_forward(w, me * L, mine, r.expert_in.data(), r.expert_fc.data(), r.expert_gelu.data(), expert_out.data());
  // Combine: the outputs back to the ranks their tokens live on, in the order they came.
  regroup(expert_out.data(), arrived.data(), r.received, ep, L, C, false);
  group_->all_to_all(arrived.data(), recv_floats, r.out, send_floats, context);
}

void MixtureOfExperts::parallel_experts_backward(Routing& r, LayerWeights& dw, const LayerWeights& w,
                                                 const Event& context) {
  const int ep = group_->size(), me = group_->rank(), L = config_.experts / ep;
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
  std::vector<float> arrived(r.expert_in.size()), d_out(arrived.size()), d_in(arrived.size());
  group_->all_to_all(d_out_.data(), send_floats, arrived.data(), recv_floats, context);
  regroup(arrived.data(), d_out.data(), r.received, ep, L, C, true);
  experts_backward(dw, w, me * L, mine, d_out.data(), r.expert_in.data(), r.expert_fc.data(), r.expert_gelu.data(),
                   d_in.data());
  regroup(d_in.data(), arrived.data(), r.received, ep, L, C, false);
  group_->all_to_all(arrived.data(), recv_floats, d_in_.data(), send_floats, context);
}

}  // namespace shardscope
