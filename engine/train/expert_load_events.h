// SPDX-License-Identifier: GPL-3.0-or-later
// A mixture-of-experts step's routing as events (EventKind::expert_load), so
// the GUI's Experts view and a recording see what the router did: one event
// per MoE layer and expert, with the expert's kept choices, its places over
// the step and its layer's choices made and dropped.
#pragma once

#include <cstdint>
#include <vector>

#include "events/event.h"
#include "model/mixture_of_experts.h"
#include "model/model_config.h"

namespace shardscope {

// stats: the step's routing summed over its forwards (every micro-batch of
// every rank counted), as Trainer::moe_step_stats gives it. Each forward
// routes the same number of tokens, so tokens per forward = routed /
// (forwards x k), where forwards = aux_loss_terms / MoE layers counted; an
// expert's places over the step are moe_capacity(tokens per forward) x forwards.
// The layer's dropped choices are its choices made less those its experts kept.
// The layers counted are those whose experts kept a choice (every forward keeps
// one): all of them, but for ranks as processes on pipeline stages, where
// process 0's stats hold its own stage's layers only and the others get no event.
std::vector<Event> expert_load_events(const ModelConfig& model, const MoeStats& stats, std::int64_t step,
                                      std::int64_t time_ns);

}  // namespace shardscope
