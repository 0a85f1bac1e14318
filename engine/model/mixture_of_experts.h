// SPDX-License-Identifier: GPL-3.0-or-later
// A mixture-of-experts MLP (Shazeer et al. 2017; Switch Transformer, Fedus et
// al. 2021; Mixtral, Jiang et al. 2024): E expert MLPs, of which a linear
// router picks k per token.
//   p      = softmax(x Wr^T)                         (N, E) router probabilities
//   top-k  = the k largest p of a token, ties to the lower expert index
//   gate_j = p_j / sum of the token's top-k p        (k > 1: renormalised, as Mixtral)
//   gate   = p                                       (k = 1: the probability, as Switch)
//   y      = sum over kept choices of gate_j expert_j(x),  expert = proj(gelu(fc(x)))
// Each expert takes at most capacity = ceil(capacity_factor N k / E) tokens; a
// choice over it is dropped (it adds nothing to y: the token's residual passes)
// and counted. Choices claim places first choice first (every token's first
// choice before any second choice, as GShard), in token order within a choice.
// The Switch load-balancing loss, generalised to k as Megatron-LM does:
//   aux = E sum_e f_e P_e,  f_e = (choices of e) / (N k),  P_e = mean over tokens of p_e
// (1 when the routing is uniform). The model adds aux_loss_coef times its mean
// over the MoE layers to the training loss; f is a count, so only P carries a gradient.
//
// Expert parallelism (GShard; Megatron-LM's and torchtitan's EP) splits the
// experts over the ep ranks of a group: rank q computes experts [q E/ep,
// (q + 1) E/ep) for every token of the group. Each rank routes its own tokens,
// then an all-to-all sends each kept choice's input row to its expert's rank
// (dispatch) and a second brings the outputs back (combine); backward sends
// the outputs' gradients out and the inputs' gradients back the same ways.
// A rank stores only its E/ep experts (their parameters, gradients and
// optimizer states: model/parameter_layout.h), whose gradients cover the
// group's tokens and are averaged over the dp/ep ranks holding the same
// experts (the expert-data-parallel group; the ep ranks are data-parallel
// ranks: ep borrows dp). The dense parameters stay whole on every rank.
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "core/memory_ledger.h"
#include "events/event.h"
#include "model/model_config.h"
#include "model/parameter_layout.h"
#include "ops/backend.h"

namespace shardscope {

// Routing figures summed over the forwards since the last reset (a training step's micro-batches).
struct MoeStats {
  double aux_loss_sum = 0.0;  // E sum f P, summed over (MoE layer, forward)
  std::int64_t aux_loss_terms = 0;
  std::int64_t routed = 0;                      // token-expert choices made: tokens x k per MoE layer
  std::int64_t dropped = 0;                     // of those, over their expert's capacity
  std::vector<std::int64_t> tokens_per_expert;  // (MoE layers, E): choices each expert took (kept)
  double aux_loss() const { return aux_loss_terms > 0 ? aux_loss_sum / static_cast<double>(aux_loss_terms) : 0.0; }
  void add(const MoeStats& other);
};

// The places each expert has for a forward of `tokens` tokens: ceil(capacity_factor tokens k / E).
int moe_capacity(const ModelConfig& config, int tokens);

// The memory-bound routing passes of one MoE layer over `tokens` rows of `channels`, of which
// `kept` choices went to an expert's packed rows, in values each pass reads and writes once (a GPU
// kernel's least traffic). The estimator (estimate/moe_kernels.cpp) takes the balanced share of
// kept choices; the GPU-profile clock takes the counts the router made (MixtureOfExperts).
struct MoeRoutingTraffic {
  // Forward.
  double route = 0;    // softmax over the (N, E) logits (read, write), top-k (read; write k gates, k indices)
  double permute = 0;  // each kept choice's row copied to its expert's packed rows (read, write)
  double combine = 0;  // the kept outputs read, each token's gated sum written
  // Backward.
  double combine_backward = 0;  // d y read, the kept rows' d out written and their outputs read (d gate)
  double permute_backward = 0;  // the kept rows' d in read, summed into each token's d x
  double route_backward = 0;    // d gate into (N, E) (read k, write E), softmax's (read p, d p; write d logits)
  double forward() const { return route + permute + combine; }
  double backward() const { return combine_backward + permute_backward + route_backward; }
};
MoeRoutingTraffic moe_routing_traffic(double tokens, double experts, double top_k, double channels, double kept);

// The ranks one MoE layer's experts are split over, as the model sees them
// (parallel/expert_parallel.h implements it over a communicator).
class ExpertParallelGroup {
 public:
  virtual ~ExpertParallelGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Peer q gets send's block q (send_counts[q] floats, blocks in peer order);
  // recv gets every peer's block for this rank (recv_counts[q] floats each, in
  // peer order). A rank's own block is copied. context: step, micro-batch, layer.
  virtual void all_to_all(const float* send, const std::vector<std::int64_t>& send_counts, float* recv,
                          const std::vector<std::int64_t>& recv_counts, const Event& context) = 0;
};

class MixtureOfExperts {
 public:
  MixtureOfExperts(const ModelConfig& config, Backend& backend, MemoryLedger& ledger);

  // Micro-batches in flight (pipeline schedules): each of the model's activation
  // slots (model/activation_slots.h) keeps its own routing of every layer, from
  // its forward to its backward, as the dense layers keep their activations. A
  // slot serves any of a stage's chunks (interleaved, ZB-V), so its routing is
  // kept by the layer's place in the running chunk, as the dense activations are:
  // one chunk's routing a slot, not every chunk's it has served.
  void set_slots(int count);
  int slots() const { return static_cast<int>(routing_.size()); }

  // y (N, C) := the MoE MLP of x (N, C) in layer `layer` (w: its weights), the
  // routing kept in activation slot `slot` at `place` (the layer's place in the
  // running chunk: layer - the chunk's first layer) for the backward.
  // count: add this forward's routing to stats() (not for a checkpointed recompute).
  // context: the step, micro-batch and layer the expert-parallel all-to-alls are tagged with.
  void forward(int slot, int place, int layer, float* y, const float* x, const LayerWeights& w, int rows, bool count,
               const Event& context);
  // d_x (N, C) := d(loss)/d(x) given d_y (N, C), from slot `slot`'s routing; dw's router and experts +=.
  // aux_weight: the weight of this forward's loss in the step's objective (the
  // load-balancing loss's gradient is aux_weight * aux_loss_coef / MoE layers * d aux).
  void backward(int slot, int place, int layer, float* d_x, LayerWeights& dw, const float* d_y, const float* x,
                const LayerWeights& w, int rows, float aux_weight, const Event& context);
  // Expert parallelism: the group this rank's experts are a share of (null: all experts here).
  void set_expert_parallel_group(ExpertParallelGroup* group) { group_ = group; }
  int expert_ranks() const { return group_ != nullptr ? group_->size() : 1; }

  const MoeStats& stats() const { return stats_; }
  void reset_stats();

  // The last forward's routing of one layer in one activation slot, as forward made it.
  struct Routing {
    int rows = 0, capacity = 0;
    std::vector<float> probs;                // (N, E)
    std::vector<std::int32_t> choice;        // (N, k) expert of each choice
    std::vector<float> gate;                 // (N, k)
    std::vector<std::int32_t> packed;        // (N, k) row in the experts' packed batch, -1: dropped
    std::vector<std::int32_t> expert_begin;  // (E + 1) first packed row of each expert
    Buffer activations;                      // packed rows: in (R, C), fc (R, 4C), gelu (R, 4C), out (R, C)
    float* in = nullptr;
    float* fc = nullptr;
    float* gelu = nullptr;
    float* out = nullptr;
    // Expert parallelism: rows each peer sent for each of this rank's experts (peer-major,
    // ep x E/ep), and this rank's experts' rows, expert by expert: in, fc, gelu, in
    // `activations` after in and out (this rank's own rows keep no fc or gelu),
    // laid out for the most a rank can receive: E x capacity rows (ep peers x E/ep experts).
    std::vector<std::int64_t> received;
    float* expert_in = nullptr;
    float* expert_fc = nullptr;
    float* expert_gelu = nullptr;
  };
  // (`place`: the layer's place in its chunk; the layer itself on one pipeline stage.)
  const Routing& routing(int place, int slot = 0) const {
    return routing_[static_cast<std::size_t>(slot)][static_cast<std::size_t>(place)];
  }

 private:
  void route(Routing& r, const float* x, const LayerWeights& w);
  // route's host part: softmax of the logits in r.probs, each token's top-k and gates, the places.
  void choose_experts(Routing& r);
  // The traffic of the routing passes on the rows r kept (the clock's price of each host loop).
  MoeRoutingTraffic routing_traffic(const Routing& r) const;
  void bind_activations(Routing& r);
  void count_routing(int layer, const Routing& r);
  // Experts [first, first + rows.size()) on rows grouped expert by expert (rows[i] each).
  void experts_forward(const LayerWeights& w, int first, const std::vector<std::int64_t>& rows, const float* in,
                       float* fc, float* gelu, float* out);
  // Their backward: d_in from d_out; the experts' weight gradients +=.
  void experts_backward(LayerWeights& dw, const LayerWeights& w, int first, const std::vector<std::int64_t>& rows,
                        const float* d_out, const float* in, const float* fc, const float* gelu, float* d_in);
  // Expert parallelism: out (the packed rows' outputs) from in, through this rank's experts
  // and two all-to-alls; and the same way back for the gradients.
  void parallel_experts_forward(Routing& r, const LayerWeights& w, const Event& context);
  void parallel_experts_backward(Routing& r, LayerWeights& dw, const LayerWeights& w, const Event& context);
  // The all-to-all's staging for a layer routed as r: three blocks of E x capacity rows (C floats).
  float* exchange_rows(const Routing& r);
  // d(loss)/d(router logits) (N, E) from the gates' gradients and the load-balancing loss.
  void router_logit_gradient(const Routing& r, float aux_grad);

  ModelConfig config_;
  ExpertParallelGroup* group_ = nullptr;
  Backend& backend_;
  MemoryLedger& ledger_;
  std::vector<std::vector<Routing>> routing_;  // [activation slot][place of the layer in its chunk]
  MoeStats stats_;
  // Backward workspace, used within one call (shared by the slots).
  std::vector<float> d_out_, d_hidden_, d_in_, d_gate_, d_logits_;
  Buffer exchange_;  // expert parallelism: the all-to-all's rows, on the ledger as communication
};

}  // namespace shardscope
