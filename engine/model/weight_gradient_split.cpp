// SPDX-License-Identifier: GPL-3.0-or-later
// The backward in two phases, B and W (model.h, backward_input and
// backward_weights), as the zero-bubble schedules run it (Qi et al. 2024,
// "Zero Bubble Pipeline Parallelism"). For a linear y = x W^T + b:
//   B:  dx  = dy W           (needed now, by the layer below and the previous stage)
//   W:  dW += dy^T x,  db += sum over rows of dy   (needed only by the optimizer)
// so B keeps dy (x is already kept for the backward) and W runs later.
// Under activation checkpointing x is not kept: B recomputes each layer's
// forward into one shared set, which the next layer's recompute overwrites,
// so B copies x beside dy and W reads both (W never recomputes the forward).
// Under tensor parallelism (tensor_parallel.h) every collective of a layer's
// backward belongs to B: f's all-reduce (or, with sequence parallelism, its
// reduce-scatter) of the input gradient, g's backward all-gather of the
// residual gradient, the LayerNorm sums. W is local: each rank's dW of its own
// slice, from its own dy and x. The x of a column-parallel linear is the
// LayerNorm output, kept whole (gathered under SP) in the slot, so W gathers
// nothing again; B ran the collectives in backward()'s order on every tp rank
// of the stage, and the tp ranks of a stage run the same list, so the order
// agrees across the group whichever bubble W lands in.
#include "model/weight_gradient_split.h"  // what B keeps for W, shared with the estimator

#include <stdexcept>
#include <string>

#include "model/model.h"

namespace shardscope {

void Model::check_weight_split(const char* phase) const {
  // B runs the layers' tensor-parallel collectives (W none): the group must be connected.
  if (tp_size() > 1 && tp_group_ == nullptr)
    throw std::logic_error(std::string("Model::") + phase + ": tensor parallelism (tp " + std::to_string(tp_size()) +
                           ") without its group (set_tensor_parallel_group)");
}

void Model::backward_input(double loss_rows) {
  check_weight_split("backward_input");
  Slot& s = slot();
  if (!s.deferred_linears.empty())
    throw std::logic_error("Model::backward_input: the weight gradients of the previous B are still owed (run W)");
  const std::int64_t floats =
      weight_split_kept_floats(stage_.end_layer - stage_.first_layer, static_cast<std::int64_t>(s.acts.B) * s.acts.T,
                               config_.channels, checkpointing_, tp_size());
  if (s.kept_output_gradients.bytes() != floats * 4)
    s.kept_output_gradients = Buffer(ledger_, MemoryCategory::activations, floats * 4);
  s.kept_floats = 0;
  deferring_weights_ = true;
  try {
    backward(loss_rows);
  } catch (...) {
    deferring_weights_ = false;
    s.deferred_linears.clear();
    s.held_gradients.clear();
    throw;
  }
  deferring_weights_ = false;
}

void Model::defer_linear_weights(int l, float* d_in, float* d_weight, float* d_bias, const float* d_out,
                                 const float* in, const float* weight, int rows, int in_f, int out_f, bool accumulate) {
  Slot& s = slot();
  const std::int64_t count = static_cast<std::int64_t>(rows) * (out_f + (checkpointing_ ? in_f : 0));
  if ((s.kept_floats + count) * 4 > s.kept_output_gradients.bytes())
    throw std::logic_error("Model::backward_input: layer " + std::to_string(l) + " keeps " + std::to_string(count) +
                           " output-gradient floats past the " + std::to_string(s.kept_output_gradients.bytes() / 4) +
                           " sized for the stage (" + std::to_string(s.kept_floats) + " kept)");
  float* kept = s.kept_output_gradients.floats() + s.kept_floats;
  s.kept_floats += count;
  const std::int64_t out_floats = static_cast<std::int64_t>(rows) * out_f;
  backend_.copy(kept, d_out, out_floats * 4);  // d_out lives in the shared scratch, rewritten by the next op
  const float* kept_in = in;
  if (checkpointing_) {  // in lives in the recomputed set the next layer's recompute overwrites
    backend_.copy(kept + out_floats, in, (count - out_floats) * 4);
    kept_in = kept + out_floats;
  }
  backend_.linear_backward(d_in, nullptr, nullptr, d_out, in, weight, rows, in_f, out_f, accumulate);
  s.deferred_linears.push_back({l, d_weight, d_bias, kept, kept_in, weight, rows, in_f, out_f});
}

void Model::backward_weights() {
  check_weight_split("backward_weights");
  Slot& s = slot();
  if (s.deferred_linears.empty())
    throw std::logic_error("Model::backward_weights: no weight gradients are owed (run backward_input first)");
  if (stage_.head) gradients_ready(layout_.find_unit(head_unit())->begin);  // computed in B
  // With a unit storage (16-bit gradients, ZeRO-2/3) B set each layer's fp32
  // unit gradient aside for this W (hold_gradients: its LayerNorm gradients in
  // it, the deferred linears pointing into it), and later B's of the layer
  // started fresh ones; W adds the linears' weight gradients and hands it over
  // (rounded to 16 bits and added to the stored gradient, or reduce-scattered).
  // So each micro-batch's gradient is rounded on its own, in the order of the
  // W's, as the whole backward rounds it in the order of its backwards.
  const auto held_gradient = [&s](int layer) -> float* {
    for (const auto& [l, held] : s.held_gradients)
      if (l == layer) return held;
    return nullptr;
  };
  const auto& list = s.deferred_linears;
  std::int64_t start = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Slot::DeferredLinear& d = list[i];
    if (i == 0 || list[i - 1].layer != d.layer) {
      stop_point();
      start = now_ns();
    }
    backend_.linear_backward(nullptr, d.d_weight, d.d_bias, d.d_out, d.in, d.weight, d.rows, d.in_f, d.out_f);
    if (i + 1 == list.size() || list[i + 1].layer != d.layer) {  // the layer's last linear
      emit_span(ComputeKind::weight_gradient, d.layer, start);
      if (float* held = held_gradient(d.layer)) storage_->held_gradients_done(*this, 1 + d.layer, held);
      gradients_ready(layout_.find_unit(1 + d.layer)->begin);     // DDP: this layer's bucket may go
    }
  }
  s.deferred_linears.clear();
  s.held_gradients.clear();
  s.kept_output_gradients = Buffer();  // the ledger sees the kept gradients only from B to W
  s.kept_floats = 0;
  gradients_ready(0);
}

}  // namespace shardscope
