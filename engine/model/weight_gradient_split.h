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
// or 16C under checkpointing. Under tensor parallelism t (C divisible by t) a
// rank keeps its slice: the column-parallel linears' output gradients (qkv 3C/t,
// mlp.fc 4C/t) and the row-parallel ones' whole (attn.proj C, mlp.proj C, the
// input gradient g's backward hands every rank), 2C + 7C/t; under checkpointing
// the inputs as the linears read them, ln1 and ln2 whole (all-gathered under
// sequence parallelism, so W needs no collective), attention C/t, gelu 4C/t:
// 2C + 5C/t more. At t = 1 these are the 9C and 7C above.
inline std::int64_t weight_split_kept_floats(std::int64_t layers, std::int64_t tokens, std::int64_t channels,
                                             bool checkpointing = false, int tp = 1) {
  const std::int64_t whole = 2 * channels;  // attn.proj, mlp.proj (or, kept inputs, ln1, ln2)
  const std::int64_t outputs = whole + (kKeptChannelsPerLayer - 2) * channels / tp;
  const std::int64_t inputs = checkpointing ? whole + (kKeptInputChannelsPerLayer - 2) * channels / tp : 0;
  return layers * tokens * (outputs + inputs);
}

}  // namespace shardscope
