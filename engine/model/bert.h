// SPDX-License-Identifier: GPL-3.0-or-later
// BERT style encoder (Devlin et al. 2019): embedding LayerNorm, post-LN blocks,
// bidirectional attention with a padding mask, GELU (erf), masked-LM head
// tied to the token embedding, optional [CLS] pooler.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"

namespace shardscope {

class BertModel final : public Model {
 public:
  using Model::Model;

 private:
  void forward_impl(const Batch& batch) override;
  void backward_impl(const Batch& batch, float dloss_per_row) override;
  void layer_forward(int l, const float* x, const Batch& batch) override;
  // d_res: d(layer output) in, d(layer input) out
  void layer_backward(int l, const float* x, const Batch& batch) override;
};

}  // namespace shardscope
