// SPDX-License-Identifier: GPL-3.0-or-later
// GPT-2 style decoder (Radford et al. 2019): pre-LN blocks, causal attention,
// GELU (tanh), output head tied to the token embedding; causal LM loss.
#pragma once

#include "model/model.h"

namespace shardscope {

class GptModel final : public Model {
 public:
  using Model::Model;

 private:
  void forward_impl(const Batch& batch) override;
  void backward_impl(const Batch& batch, float dloss_per_row) override;
  void layer_forward(int l, const float* x, const Batch& batch) override;
  // d_res: d(layer output) in, d(layer input) out
  void layer_backward(int l, const float* x, const Batch& batch) override;
  Event moe_context(int l) const;  // what layer l's expert-parallel all-to-alls are tagged with
};

}  // namespace shardscope
