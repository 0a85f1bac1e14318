// SPDX-License-Identifier: GPL-3.0-or-later
// The hidden states of one token sequence, as transformers returns them with
// output_hidden_states=True: hidden_states[0] is the embeddings' output and
// hidden_states[l + 1] the output of layer l (GPT-2: the last one after the
// final LayerNorm; Model::hidden_state). For `shardscope-cli hidden-states`
// and the BERT lesson's views.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"

namespace shardscope {

struct HiddenStates {
  int tokens = 0;                          // T
  int channels = 0;                        // C
  std::vector<std::vector<float>> states;  // L + 1 of them, each (T, C) row-major
};

// One forward pass of the whole model (batch of one, no padding, token type 0,
// no loss) over `ids`; the states are copied to the host. Throws ConfigError
// when the sequence is empty, longer than max_seq or has an id outside the vocabulary.
HiddenStates compute_hidden_states(Model& model, const std::vector<std::int32_t>& ids);

}  // namespace shardscope
