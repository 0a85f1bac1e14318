// SPDX-License-Identifier: GPL-3.0-or-later
// The mixture-of-experts MLP, forward and backward (the formulas are in the header).
// Routing and the gather/scatter between tokens and the experts' packed rows
// run on the host: MoE models train on CPU ranks (config/run_config.cpp). Each
// of those loops is a host_pass (ops/host_pass.h) with the bytes of
// moe_routing_traffic, so the GPU-profile clock prices them as the estimator
// does, on the rows the router really kept.
#include "model/mixture_of_experts.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "ops/host_pass.h"

namespace shardscope {

namespace {
// The routing passes' values are fp32 (the engine computes in fp32 at every precision).
constexpr double kValueBytes = 4.0;
}  // namespace

void MoeStats::add(const MoeStats& other) {
  aux_loss_sum += other.aux_loss_sum;
  aux_loss_terms += other.aux_loss_terms;
  routed += other.routed;
  dropped += other.dropped;
  if (tokens_per_expert.size() < other.tokens_per_expert.size())
    tokens_per_expert.resize(other.tokens_per_expert.size(), 0);
  for (std::size_t i = 0; i < other.tokens_per_expert.size(); ++i) tokens_per_expert[i] += other.tokens_per_expert[i];
}

int moe_capacity(const ModelConfig& config, int tokens) {
  const double places = static_cast<double>(config.capacity_factor) * tokens * config.top_k / config.experts;
  return static_cast<int>(std::ceil(places));
}

MoeRoutingTraffic moe_routing_traffic(double tokens, double experts, double top_k, double channels, double kept) {
  const double N = tokens, E = experts, k = top_k, C = channels;
  MoeRoutingTraffic t;
  t.route = 3 * N * E + 2 * N * k;
  t.permute = 2 * kept * C;
  t.combine = kept * C + N * C;
  t.combine_backward = N * C + 2 * kept * C;
  t.permute_backward = kept * C + N * C;
  t.route_backward = 4 * N * E + N * k;
  return t;
}

MixtureOfExperts::MixtureOfExperts(const ModelConfig& config, Backend& backend, MemoryLedger& ledger)
    : config_(config), backend_(backend), ledger_(ledger) {
  set_slots(1);
  reset_stats();
}

void MixtureOfExperts::set_slots(int count) {
  // A slot's routing (and its packed rows on the ledger) is made by its first forward.
  routing_.resize(static_cast<std::size_t>(count));
  for (auto& layers : routing_) layers.resize(static_cast<std::size_t>(config_.layers));
}

void MixtureOfExperts::reset_stats() {
  stats_ = MoeStats{};
  stats_.tokens_per_expert.assign(static_cast<std::size_t>(config_.moe_layer_count() * config_.experts), 0);
}

void MixtureOfExperts::bind_activations(Routing& r) {
  const std::int64_t C = config_.channels, R = static_cast<std::int64_t>(r.rows) * config_.top_k;
  // Expert parallelism: this rank's rows keep their input and output; the fc and
  // GELU kept for backward are those of the rows its experts receive, at most
  // E x capacity (each of ep peers sends at most capacity rows to each of E/ep experts).
  const bool parallel = expert_ranks() > 1;
  const std::int64_t received = parallel ? std::int64_t{config_.experts} * r.capacity : 0;
  const std::int64_t floats = parallel ? R * 2 * C + received * 9 * C : R * (C + 4 * C + 4 * C + C);
  if (r.activations.empty() || r.activations.bytes() != floats * 4) {
    r.activations = Buffer();
    r.activations = Buffer(ledger_, MemoryCategory::activations, floats * 4);
  }
  r.in = r.activations.floats();
  if (parallel) {
    r.out = r.in + R * C;
    r.fc = r.gelu = nullptr;
    r.expert_in = r.out + R * C;
    r.expert_fc = r.expert_in + received * C;
    r.expert_gelu = r.expert_fc + received * 4 * C;
    return;
  }
  r.fc = r.in + R * C;
  r.gelu = r.fc + R * 4 * C;
  r.out = r.gelu + R * 4 * C;
}

float* MixtureOfExperts::exchange_rows(const Routing& r) {
  const std::int64_t floats = 3 * std::int64_t{config_.experts} * r.capacity * config_.channels;
  if (exchange_.bytes() < floats * 4) {
    exchange_ = Buffer();
    exchange_ = Buffer(ledger_, MemoryCategory::communication, floats * 4);
  }
  return exchange_.floats();
}

// Router probabilities, each token's top-k and gates, and its place in an expert (or none).
void MixtureOfExperts::route(Routing& r, const float* x, const LayerWeights& w) {
  const int N = r.rows, E = config_.experts, k = config_.top_k, C = config_.channels;
  r.probs.resize(static_cast<std::size_t>(N) * E);
  backend_.linear_forward(r.probs.data(), x, w.router_w, nullptr, N, C, E);  // logits (N, E)
  // Softmax, top-k and places: one pass over the logits (its traffic does not depend on the kept rows).
  host_pass(backend_, "moe_route", kValueBytes * moe_routing_traffic(N, E, k, C, 0).route, [&] { choose_experts(r); });
}

void MixtureOfExperts::choose_experts(Routing& r) {
  const int N = r.rows, E = config_.experts, k = config_.top_k;
  r.choice.assign(static_cast<std::size_t>(N) * k, 0);
  r.gate.assign(static_cast<std::size_t>(N) * k, 0.0f);
  std::vector<int> order(static_cast<std::size_t>(E));
  for (int n = 0; n < N; ++n) {
    float* p = r.probs.data() + static_cast<std::ptrdiff_t>(n) * E;
    const float top = *std::max_element(p, p + E);
    float sum = 0.0f;
    for (int e = 0; e < E; ++e) sum += (p[e] = std::exp(p[e] - top));
    for (int e = 0; e < E; ++e) p[e] /= sum;
    for (int e = 0; e < E; ++e) order[static_cast<std::size_t>(e)] = e;
    std::stable_sort(order.begin(), order.end(), [p](int a, int b) { return p[a] > p[b]; });
    float chosen = 0.0f;
    for (int j = 0; j < k; ++j) chosen += p[order[static_cast<std::size_t>(j)]];
    for (int j = 0; j < k; ++j) {
      const int e = order[static_cast<std::size_t>(j)];
      r.choice[static_cast<std::size_t>(n) * k + j] = e;
      r.gate[static_cast<std::size_t>(n) * k + j] = k > 1 ? p[e] / chosen : p[e];
    }
  }
  // Places: first choices before second choices, tokens in order; over capacity: dropped.
  r.capacity = moe_capacity(config_, N);
  std::vector<int> taken(static_cast<std::size_t>(E), 0);
  std::vector<int> place(static_cast<std::size_t>(N) * k, -1);
  for (int j = 0; j < k; ++j)
    for (int n = 0; n < N; ++n) {
      const std::size_t i = static_cast<std::size_t>(n) * k + j;
      int& t = taken[static_cast<std::size_t>(r.choice[i])];
      if (t < r.capacity) place[i] = t++;
    }
  r.expert_begin.assign(static_cast<std::size_t>(E) + 1, 0);
  for (int e = 0; e < E; ++e) r.expert_begin[e + 1] = r.expert_begin[e] + taken[static_cast<std::size_t>(e)];
  r.packed.assign(place.size(), -1);
  for (std::size_t i = 0; i < place.size(); ++i)
    if (place[i] >= 0) r.packed[i] = r.expert_begin[static_cast<std::size_t>(r.choice[i])] + place[i];
}

void MixtureOfExperts::experts_forward(const LayerWeights& w, int first, const std::vector<std::int64_t>& rows,
                                       const float* in, float* fc, float* gelu, float* out) {
  const std::int64_t C = config_.channels, H = 4 * C;
  std::int64_t row = 0;
  for (std::size_t i = 0; i < rows.size(); row += rows[i], ++i) {
    const std::int64_t e = first + static_cast<std::int64_t>(i), n = rows[i];
    if (n == 0) continue;
    backend_.linear_forward(fc + row * H, in + row * C, w.fc_w + e * H * C, w.fc_b + e * H, static_cast<int>(n),
                            static_cast<int>(C), static_cast<int>(H));
    backend_.gelu_forward(gelu + row * H, fc + row * H, n * H, config_.gelu);
    backend_.linear_forward(out + row * C, gelu + row * H, w.fc_proj_w + e * C * H, w.fc_proj_b + e * C,
                            static_cast<int>(n), static_cast<int>(H), static_cast<int>(C));
  }
}

void MixtureOfExperts::experts_backward(LayerWeights& dw, const LayerWeights& w, int first,
                                        const std::vector<std::int64_t>& rows, const float* d_out, const float* in,
                                        const float* fc, const float* gelu, float* d_in) {
  const std::int64_t C = config_.channels, H = 4 * C;
  std::int64_t total = 0;
  for (std::int64_t n : rows) total += n;
  d_hidden_.assign(static_cast<std::size_t>(total * H), 0.0f);
  std::int64_t row = 0;
  for (std::size_t i = 0; i < rows.size(); row += rows[i], ++i) {
    const std::int64_t e = first + static_cast<std::int64_t>(i), n = rows[i];
    if (n == 0) continue;
    float* d_hidden = d_hidden_.data() + row * H;
    backend_.linear_backward(d_hidden, dw.fc_proj_w + e * C * H, dw.fc_proj_b + e * C, d_out + row * C, gelu + row * H,
                             w.fc_proj_w + e * C * H, static_cast<int>(n), static_cast<int>(H), static_cast<int>(C));
    backend_.gelu_backward(d_hidden, d_hidden, fc + row * H, n * H, config_.gelu);
    backend_.linear_backward(d_in + row * C, dw.fc_w + e * H * C, dw.fc_b + e * H, d_hidden, in + row * C,
                             w.fc_w + e * H * C, static_cast<int>(n), static_cast<int>(C), static_cast<int>(H));
  }
}

void MixtureOfExperts::forward(int slot, int place, int layer, float* y, const float* x, const LayerWeights& w,
                               int rows, bool count, const Event& context) {
  const int E = config_.experts, k = config_.top_k, C = config_.channels;
  Routing& r = routing_.at(static_cast<std::size_t>(slot)).at(static_cast<std::size_t>(place));
  r.rows = rows;
  route(r, x, w);
  bind_activations(r);
  const MoeRoutingTraffic traffic = routing_traffic(r);
  // Dispatch (the permute): each kept choice's token into its expert's packed rows.
  host_pass(backend_, "moe_permute", kValueBytes * traffic.permute, [&] {
    for (int n = 0; n < rows; ++n)
      for (int j = 0; j < k; ++j)
        if (const int row = r.packed[static_cast<std::size_t>(n) * k + j]; row >= 0)
          std::copy(x + static_cast<std::ptrdiff_t>(n) * C, x + static_cast<std::ptrdiff_t>(n + 1) * C,
                    r.in + static_cast<std::ptrdiff_t>(row) * C);
  });
  // Every expert's MLP on its rows: out = proj_e(gelu(fc_e(in))); under expert
  // parallelism on the experts' ranks, the rows travelling there and back. Each
  // expert's GEMMs run (and the GPU-profile clock prices them) on the rows it took,
  // however unbalanced the router made them, where the estimator assumes r·k/E each.
  if (expert_ranks() > 1) {
    parallel_experts_forward(r, w, context);
  } else {
    std::vector<std::int64_t> per_expert(static_cast<std::size_t>(E));
    for (int e = 0; e < E; ++e) per_expert[static_cast<std::size_t>(e)] = r.expert_begin[e + 1] - r.expert_begin[e];
    experts_forward(w, 0, per_expert, r.in, r.fc, r.gelu, r.out);
  }
  // Combine: y = sum of gate x expert output over the token's kept choices (choice order).
  host_pass(backend_, "moe_combine", kValueBytes * traffic.combine, [&] {
    std::fill(y, y + static_cast<std::ptrdiff_t>(rows) * C, 0.0f);
    for (int n = 0; n < rows; ++n)
      for (int j = 0; j < k; ++j) {
        const std::size_t i = static_cast<std::size_t>(n) * k + j;
        if (r.packed[i] < 0) continue;
        const float g = r.gate[i];
        const float* out = r.out + static_cast<std::ptrdiff_t>(r.packed[i]) * C;
        float* yn = y + static_cast<std::ptrdiff_t>(n) * C;
        for (int c = 0; c < C; ++c) yn[c] += g * out[c];
      }
  });
  if (count) count_routing(layer, r);
}

MoeRoutingTraffic MixtureOfExperts::routing_traffic(const Routing& r) const {
  // The choices the router kept (its packed rows), not the balanced N k: an expert over its
  // capacity drops the rest, and each expert's rows are those it took.
  const double kept = r.expert_begin[static_cast<std::size_t>(config_.experts)];
  return moe_routing_traffic(r.rows, config_.experts, config_.top_k, config_.channels, kept);
}

void MixtureOfExperts::count_routing(int layer, const Routing& r) {
  const int N = r.rows, E = config_.experts, k = config_.top_k;
  std::vector<double> chosen(static_cast<std::size_t>(E), 0.0), mean_p(static_cast<std::size_t>(E), 0.0);
  for (int n = 0; n < N; ++n) {
    for (int e = 0; e < E; ++e) mean_p[static_cast<std::size_t>(e)] += r.probs[static_cast<std::size_t>(n) * E + e];
    for (int j = 0; j < k; ++j) {
      const std::size_t i = static_cast<std::size_t>(n) * k + j;
      chosen[static_cast<std::size_t>(r.choice[i])] += 1.0;
      if (r.packed[i] < 0) ++stats_.dropped;
    }
  }
  double aux = 0.0;
  for (int e = 0; e < E; ++e)
    aux += (chosen[static_cast<std::size_t>(e)] / (static_cast<double>(N) * k)) *
           (mean_p[static_cast<std::size_t>(e)] / N);
  stats_.aux_loss_sum += E * aux;
  ++stats_.aux_loss_terms;
  stats_.routed += std::int64_t{N} * k;
  const std::size_t base = static_cast<std::size_t>(layer / config_.moe_every) * static_cast<std::size_t>(E);
  for (int e = 0; e < E; ++e) stats_.tokens_per_expert[base + e] += r.expert_begin[e + 1] - r.expert_begin[e];
}

void MixtureOfExperts::router_logit_gradient(const Routing& r, float aux_grad) {
  const int N = r.rows, E = config_.experts, k = config_.top_k;
  // The choices per expert (f_e N k): the load-balancing loss's gradient in p_e is
  // aux_grad E f_e / N, the same for every token.
  std::vector<float> chosen(static_cast<std::size_t>(E), 0.0f);
  for (std::int32_t e : r.choice) chosen[static_cast<std::size_t>(e)] += 1.0f;
  std::vector<float> d_p(static_cast<std::size_t>(E));
  d_logits_.assign(static_cast<std::size_t>(N) * E, 0.0f);
  const float n_f = static_cast<float>(N),
              per_choice = aux_grad * static_cast<float>(E) / (n_f * n_f * static_cast<float>(k));
  for (int n = 0; n < N; ++n) {
    for (int e = 0; e < E; ++e) d_p[static_cast<std::size_t>(e)] = per_choice * chosen[static_cast<std::size_t>(e)];
    const float* p = r.probs.data() + static_cast<std::ptrdiff_t>(n) * E;
    const float* g = r.gate.data() + static_cast<std::ptrdiff_t>(n) * k;
    const float* dg = d_gate_.data() + static_cast<std::ptrdiff_t>(n) * k;
    const std::int32_t* ch = r.choice.data() + static_cast<std::ptrdiff_t>(n) * k;
    if (k > 1) {  // gate_j = p_j / S: d p_j = (d gate_j - sum_m d gate_m gate_m) / S
      float chosen_p = 0.0f, weighted = 0.0f;
      for (int j = 0; j < k; ++j) {
        chosen_p += p[ch[j]];
        weighted += dg[j] * g[j];
      }
      for (int j = 0; j < k; ++j) d_p[static_cast<std::size_t>(ch[j])] += (dg[j] - weighted) / chosen_p;
    } else {
      d_p[static_cast<std::size_t>(ch[0])] += dg[0];
    }
    // Softmax: d logit_e = p_e (d p_e - sum_e' p_e' d p_e').
    float dot = 0.0f;
    for (int e = 0; e < E; ++e) dot += p[e] * d_p[static_cast<std::size_t>(e)];
    float* dl = d_logits_.data() + static_cast<std::ptrdiff_t>(n) * E;
    for (int e = 0; e < E; ++e) dl[e] = p[e] * (d_p[static_cast<std::size_t>(e)] - dot);
  }
}

void MixtureOfExperts::backward(int slot, int place, int layer, float* d_x, LayerWeights& dw, const float* d_y,
                                const float* x, const LayerWeights& w, int rows, float aux_weight,
                                const Event& context) {
  const int E = config_.experts, k = config_.top_k, C = config_.channels;
  Routing& r = routing_.at(static_cast<std::size_t>(slot)).at(static_cast<std::size_t>(place));
  if (r.rows != rows || r.expert_begin.empty())
    throw std::logic_error("MoE layer " + std::to_string(layer) + ": backward of " + std::to_string(rows) +
                           " rows in activation slot " + std::to_string(slot) + ", whose forward routed " +
                           std::to_string(r.rows));
  const std::int64_t R = r.expert_begin[static_cast<std::size_t>(E)];
  d_out_.assign(static_cast<std::size_t>(R * C), 0.0f);
  d_in_.assign(static_cast<std::size_t>(R * C), 0.0f);
  d_gate_.assign(static_cast<std::size_t>(rows) * k, 0.0f);
  const MoeRoutingTraffic traffic = routing_traffic(r);
  // Combine's backward: d out_row = gate d y_n, d gate = d y_n . out_row.
  host_pass(backend_, "moe_combine_backward", kValueBytes * traffic.combine_backward, [&] {
    for (int n = 0; n < rows; ++n)
      for (int j = 0; j < k; ++j) {
        const std::size_t i = static_cast<std::size_t>(n) * k + j;
        if (r.packed[i] < 0) continue;
        const float* dy = d_y + static_cast<std::ptrdiff_t>(n) * C;
        const float* out = r.out + static_cast<std::ptrdiff_t>(r.packed[i]) * C;
        float* d_out = d_out_.data() + static_cast<std::ptrdiff_t>(r.packed[i]) * C;
        float dot = 0.0f;
        for (int c = 0; c < C; ++c) {
          d_out[c] = r.gate[i] * dy[c];
          dot += dy[c] * out[c];
        }
        d_gate_[i] = dot;
      }
  });
  // The experts' backward, each on its packed rows (on its own rank under expert parallelism).
  if (expert_ranks() > 1) {
    parallel_experts_backward(r, dw, w, context);
  } else {
    std::vector<std::int64_t> per_expert(static_cast<std::size_t>(E));
    for (int e = 0; e < E; ++e) per_expert[static_cast<std::size_t>(e)] = r.expert_begin[e + 1] - r.expert_begin[e];
    experts_backward(dw, w, 0, per_expert, d_out_.data(), r.in, r.fc, r.gelu, d_in_.data());
  }
  // Dispatch's backward: each kept choice's input gradient back to its token.
  host_pass(backend_, "moe_permute_backward", kValueBytes * traffic.permute_backward, [&] {
    std::fill(d_x, d_x + static_cast<std::ptrdiff_t>(rows) * C, 0.0f);
    for (int n = 0; n < rows; ++n)
      for (int j = 0; j < k; ++j)
        if (const int row = r.packed[static_cast<std::size_t>(n) * k + j]; row >= 0) {
          const float* d_in = d_in_.data() + static_cast<std::ptrdiff_t>(row) * C;
          float* dx = d_x + static_cast<std::ptrdiff_t>(n) * C;
          for (int c = 0; c < C; ++c) dx[c] += d_in[c];
        }
  });
  // The router: logits = x Wr^T, from the gates and the load-balancing loss.
  const float aux_grad = aux_weight * config_.aux_loss_coef / static_cast<float>(config_.moe_layer_count());
  host_pass(backend_, "moe_route_backward", kValueBytes * traffic.route_backward,
            [&] { router_logit_gradient(r, aux_grad); });
  backend_.linear_backward(d_x, dw.router_w, nullptr, d_logits_.data(), x, w.router_w, rows, C, E,
                           /*accumulate=*/true);
}

}  // namespace shardscope
