// SPDX-License-Identifier: GPL-3.0-or-later
// BERT's masked-LM corruption (Devlin et al. 2019, sec. 3.1): each position is
// chosen with probability 15%; a chosen token becomes [MASK] 80% of the time,
// a random token 10%, and stays unchanged 10%; only chosen positions are
// scored. A sequence where nothing was chosen gets one chosen position, so
// every sequence contributes to the loss.
#pragma once

#include <cstdint>

#include "core/rng.h"

namespace shardscope {

struct MaskedLmOptions {
  float select_prob = 0.15f;
  float mask_prob = 0.8f;    // of the chosen: replaced by [MASK]
  float random_prob = 0.1f;  // of the chosen: replaced by a random token
  std::int32_t mask_id = 257;
  std::int32_t random_vocab = 256;  // random replacements are drawn from [0, random_vocab)
};

// tokens (T) in, inputs (T) and targets (T, -1 = not chosen) out.
void mask_tokens(const std::int32_t* tokens, std::int32_t* inputs, std::int32_t* targets, int T, Rng& rng,
                 const MaskedLmOptions& options = {});

}  // namespace shardscope
