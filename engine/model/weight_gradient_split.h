// SPDX-License-Identifier: GPL-3.0-or-later
// What the split backward (model.h, backward_input and backward_weights) keeps
// between a layer's B and its W: the output gradient of each of its linears,
// since W computes dW = dy^T x from it (x, the linear's input, is kept for the
// backward anyway). Written once here for the model (weight_gradient_split.cpp)
// and the estimator (estimate/split_backward_schedules.cpp), which must agree.
#pragma once

#include <cstdint>

namespace shardscope {

// Output-gradient floats each layer keeps from B to W, per token and per
// channel C: qkv 3C + attn.proj C + mlp.fc 4C + mlp.proj C.
inline constexpr int kKeptChannelsPerLayer = 9;
// Under activation checkpointing the linears' inputs too (the recompute's set is
// shared and the next layer's recompute overwrites it): ln1 C + attention C +
// ln2 C + gelu 4C.
inline constexpr int kKeptInputChannelsPerLayer = 7;

// Floats a stage keeps from one micro-batch's B to its W: layers × tokens × 9C,
// or 16C under checkpointing.
inline std::int64_t weight_split_kept_floats(std::int64_t layers, std::int64_t tokens, std::int64_t channels,
                                             bool checkpointing = false) {
  return layers * tokens * (kKeptChannelsPerLayer + (checkpointing ? kKeptInputChannelsPerLayer : 0)) * channels;
}

}  // namespace shardscope
